package controllermanager

import (
	"context"
	"crypto/x509"
	"fmt"
	"strings"
	"time"

	kubecontrolplanev1 "github.com/openshift/api/kubecontrolplane/v1"
	openshiftcontrolplanev1 "github.com/openshift/api/openshiftcontrolplane/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/openshift/library-go/pkg/crypto"
	"github.com/openshift/library-go/pkg/operator/resource/resourceapply"
	"github.com/openshift/library-go/pkg/operator/resource/resourceread"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	certutil "k8s.io/client-go/util/cert"

	"github.com/render-static/render-static/pkg/loops"
	"github.com/render-static/render-static/pkg/operator"
)

// UseMoreSecureServiceCA is the KubeControllerManager spec.useMoreSecureServiceCA of a new cluster (the installer's
// manifest sets it): the controller manager publishes only the service CA in service-ca.crt, so the pod does not get
// OPENSHIFT_USE_VULNERABLE_LEGACY_SERVICE_CA_CRT.
const UseMoreSecureServiceCA = true

// targetConfig is the operator's target config controller, one loop per output, in the operator's order. Like the
// operator, nothing is written before the observed config has the cluster name and the feature gates.
func (k *Component) targetConfig() []loops.Loop {
	steps := []operator.Step{
		{Name: "config", Sync: k.manageConfig},
		{Name: "cluster-policy-controller-config", Sync: k.manageCPCConfig},
		{Name: "recycler-config", Sync: k.manageRecycler},
		{Name: "csr-signer-ca", Sync: k.manageCSRSignerCA},
		{Name: "csr-controller-ca", Sync: k.manageCSRControllerCA},
		{Name: "csr-signer", Sync: k.manageCSRSigner},
		{Name: "serviceaccount-ca", Sync: k.manageServiceAccountCA},
		{Name: "localhost-recovery-client-token", Sync: k.checkRecoveryToken},
		{Name: "controller-manager-kubeconfig", Sync: k.manageKubeconfig},
		{Name: "kube-controller-manager-pod", Sync: operator.ByFlavor(k.In, k.managePod, k.manageUpstreamPod)},
		{Name: "trusted-ca-bundle", Sync: k.manageTrustedCA},
	}
	return k.TargetConfigLoops(steps, k.requiredConfigPresent)
}

// requiredConfigPresent: the cluster name and both feature-gate lists are observed.
func (k *Component) requiredConfigPresent(context.Context) error {
	obs, _, err := k.ObservedConfig()
	if err != nil {
		return err
	}
	for _, p := range [][]string{clusterNamePath, featureGatesArg, featureGatesPath} {
		v, found, _ := unstructured.NestedFieldNoCopy(obs, p...)
		if l, ok := v.([]interface{}); !found || v == nil || (ok && len(l) == 0) {
			return fmt.Errorf("observedConfig: %s missing", strings.Join(p, "."))
		}
	}
	return nil
}

// manageConfig: config.yaml is the default config, then the observed config, then unsupported overrides, pruned
// to KubeControllerManagerConfig (servingInfo and featureGates of the observed config stay out).
func (k *Component) manageConfig(ctx context.Context) error {
	return k.applyConfig(ctx, &kubecontrolplanev1.KubeControllerManagerConfig{}, "config", "defaultconfig.yaml")
}

// cpcServingCertSecret is the secret service-ca-operator issues for the kube-controller-manager service (see
// static/svc.yaml); until it exists cluster-policy-controller serves with a self-signed certificate.
const cpcServingCertSecret = "serving-cert"

// manageCPCConfig: cluster-policy-controller's config.yaml from its default config, the observed config (feature
// gates, TLS profile) and unsupported overrides, pruned to OpenShiftControllerManagerConfig.
func (k *Component) manageCPCConfig(ctx context.Context) error {
	var selfSigned [][]byte
	_, err := k.Cluster.KubeInformers.SecretLister().Secrets(TargetNamespace).Get(cpcServingCertSecret)
	switch {
	case apierrors.IsNotFound(err):
		selfSigned = append(selfSigned, []byte(`{"servingInfo":{"certFile":"","keyFile":""}}`))
	case err != nil:
		return err
	}
	return k.applyConfig(ctx, &openshiftcontrolplanev1.OpenShiftControllerManagerConfig{}, "cluster-policy-controller-config",
		"cluster-policy-controller-defaultconfig.yaml", selfSigned...)
}

// applyConfig applies configmap <name> of the operand namespace with config.yaml: the default config (manifest
// <component>/<defaultConfig>), the observed config, layers and the unsupported overrides merged in that order,
// pruned to schema.
func (k *Component) applyConfig(ctx context.Context, schema runtime.Object, name, defaultConfig string, layers ...[]byte) error {
	_, spec, err := k.ObservedConfig()
	if err != nil {
		return err
	}
	def, err := operator.ReadConfigLayer(ComponentName + "/" + defaultConfig)
	if err != nil {
		return err
	}
	layers = append(append([][]byte{def, spec.ObservedConfig.Raw}, layers...), spec.UnsupportedConfigOverrides.Raw)
	return k.ApplyMergedConfig(ctx, schema, operator.ConfigMap(TargetNamespace, name), layers...)
}

// manageRecycler: the persistent-volume recycler pod template, with the payload's tools image.
func (k *Component) manageRecycler(ctx context.Context) error {
	raw, err := operator.ReadManifest(ComponentName + "/recycler-config.yaml")
	if err != nil {
		return err
	}
	cm := resourceread.ReadConfigMapV1OrDie([]byte(strings.ReplaceAll(string(raw), "${TOOLS_IMAGE}", k.In.Images.Image("tools"))))
	_, _, err = resourceapply.ApplyConfigMap(ctx, k.Cluster.Kube.CoreV1(), k.Recorder, cm)
	return err
}

// csrSigner returns the operator namespace's csr-signer CA, or nil while cert rotation has not made it.
func (k *Component) csrSigner() (*crypto.CA, error) {
	s, err := k.Cluster.KubeInformers.SecretLister().Secrets(OperatorNamespace).Get("csr-signer")
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(s.Data["tls.crt"]) == 0 || len(s.Data["tls.key"]) == 0 {
		return nil, nil
	}
	crt, key := s.Data["tls.crt"], s.Data["tls.key"]
	return k.signer.Get(func() (*crypto.CA, error) { return crypto.GetCAFromBytes(crt, key) }, crt, key)
}

// manageCSRSignerCA: csr-signer-ca accumulates every unexpired csr-signer certificate, so that kubelet
// certificates signed by a previous intermediate stay trusted after a rotation.
func (k *Component) manageCSRSignerCA(ctx context.Context) error {
	ca, err := k.csrSigner()
	if ca == nil || err != nil {
		return err
	}
	cm, err := k.Cluster.KubeInformers.ConfigMapLister().ConfigMaps(OperatorNamespace).Get("csr-signer-ca")
	if apierrors.IsNotFound(err) {
		cm = operator.ConfigMap(OperatorNamespace, "csr-signer-ca")
		cm.Annotations = map[string]string{"openshift.io/owning-component": jira}
	} else if err != nil {
		return err
	} else {
		cm = cm.DeepCopy()
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
	}
	var all []*x509.Certificate
	if b := cm.Data["ca-bundle.crt"]; b != "" {
		if all, err = certutil.ParseCertsPEM([]byte(b)); err != nil {
			return fmt.Errorf("%s/csr-signer-ca: %w", OperatorNamespace, err)
		}
	}
	all = crypto.FilterExpiredCerts(append(all, ca.Config.Certs...)...)
	var unique []*x509.Certificate
	seen := map[string]bool{}
	for _, c := range all {
		if !seen[string(c.Raw)] {
			seen[string(c.Raw)] = true
			unique = append(unique, c)
		}
	}
	pem, err := crypto.EncodeCertificates(unique...)
	if err != nil {
		return err
	}
	cm.Data["ca-bundle.crt"] = string(pem)
	_, _, err = resourceapply.ApplyConfigMap(ctx, k.Cluster.Kube.CoreV1(), k.Recorder, cm)
	return err
}

// manageCSRControllerCA: csr-controller-ca verifies every certificate the CSR signer chain issued: the
// intermediates (csr-signer-ca) and their signer (csr-controller-signer-ca). Resource sync publishes it in
// openshift-config-managed, where kube-apiserver reads it for its client CA and kubelet serving CA.
func (k *Component) manageCSRControllerCA(ctx context.Context) error {
	return operator.CombineCABundles(ctx, k.Cluster, jira, k.Recorder, loc(OperatorNamespace, "csr-controller-ca"),
		loc(OperatorNamespace, "csr-signer-ca"), loc(OperatorNamespace, "csr-controller-signer-ca"))
}

// csrSignerPropagation is how long the operator waits after a new intermediate's notBefore before the controller
// manager signs with it, so that kube-apiserver trusts it first.
const csrSignerPropagation = 5 * time.Minute

// manageCSRSigner copies the intermediate into the operand namespace (cert directory), where
// --cluster-signing-cert-file/--cluster-signing-key-file read it. The first copy is immediate; a replacement
// waits until the new certificate is csrSignerPropagation old, unless the current one has expired.
func (k *Component) manageCSRSigner(ctx context.Context) error {
	ca, err := k.csrSigner()
	if ca == nil || err != nil {
		return err
	}
	certPEM, err := crypto.EncodeCertificates(ca.Config.Certs[0])
	if err != nil {
		return err
	}
	src, err := k.Cluster.KubeInformers.SecretLister().Secrets(OperatorNamespace).Get("csr-signer")
	if err != nil {
		return err
	}
	now := time.Now()
	cur, err := k.Cluster.KubeInformers.SecretLister().Secrets(TargetNamespace).Get("csr-signer")
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	default:
		if cc, perr := certutil.ParseCertsPEM(cur.Data["tls.crt"]); perr == nil && len(cc) > 0 && cc[0].NotAfter.After(now) &&
			now.Before(ca.Config.Certs[0].NotBefore.Add(csrSignerPropagation)) {
			return nil // the operator requeues until the new intermediate is old enough
		}
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: TargetNamespace, Name: "csr-signer", Annotations: src.Annotations},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{"tls.crt": certPEM, "tls.key": src.Data["tls.key"]},
	}
	_, _, err = resourceapply.ApplySecret(ctx, k.Cluster.Kube.CoreV1(), k.Recorder, secret)
	return err
}

func (k *Component) manageServiceAccountCA(ctx context.Context) error {
	return operator.ServiceAccountCA(ctx, k.Cluster, TargetNamespace, jira, k.Recorder)
}

func (k *Component) checkRecoveryToken(context.Context) error {
	return operator.CheckRecoveryToken(k.Cluster, TargetNamespace)
}

func (k *Component) manageKubeconfig(ctx context.Context) error {
	return operator.InternalKubeconfig(ctx, k.Cluster, ComponentName+"/kubeconfig.yaml", k.Recorder)
}

// manageTrustedCA: an empty trusted-ca-bundle the network operator fills with the cluster's trusted CAs (label
// config.openshift.io/inject-trusted-cabundle); optional in the cert directory.
func (k *Component) manageTrustedCA(ctx context.Context) error {
	const label = "config.openshift.io/inject-trusted-cabundle"
	cms := k.Cluster.Kube.CoreV1().ConfigMaps(TargetNamespace)
	cm, err := cms.Get(ctx, "trusted-ca-bundle", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cm = operator.ConfigMap(TargetNamespace, "trusted-ca-bundle")
		cm.Data = nil
		cm.Labels = map[string]string{label: "true"}
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	if cm.Labels[label] == "true" {
		return nil
	}
	cm = cm.DeepCopy()
	if cm.Labels == nil {
		cm.Labels = map[string]string{}
	}
	cm.Labels[label] = "true"
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}

// ExtendedArgs flattens a config.yaml's extendedArguments into sorted --key=value flags.
func ExtendedArgs(configYAML string) ([]string, error) {
	ext, err := configExtendedArguments(configYAML)
	if err != nil {
		return nil, err
	}
	return operator.ListArgs(ext), nil
}

// managePod completes the pod template (see manifests/kube-controller-manager/pod.yaml) and applies the
// kube-controller-manager-pod configmap.
func (k *Component) managePod(ctx context.Context) error {
	obs, spec, err := k.ObservedConfig()
	if err != nil {
		return err
	}
	operatorImage := k.In.Images.Image("cluster-kube-controller-manager-operator")
	pod, err := operator.ReadPodTemplate(ComponentName+"/pod.yaml",
		map[string]string{"${OPERATOR_IMAGE_VERSION}": k.In.OperatorVersion(operatorImage)},
		map[string]string{
			"${IMAGE}":                           k.In.Images.Image("hyperkube"),
			"${OPERATOR_IMAGE}":                  operatorImage,
			"${CLUSTER_POLICY_CONTROLLER_IMAGE}": k.In.Images.Image("cluster-policy-controller"),
		})
	if err != nil {
		return err
	}
	v := fmt.Sprintf(" -v=%d", verbosity(spec.LogLevel))
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		switch c.Name {
		case "kube-controller-manager", "cluster-policy-controller", "kube-controller-manager-recovery-controller":
			if len(c.Args) != 1 {
				return fmt.Errorf("pod template: container %s: want one script argument, got %d", c.Name, len(c.Args))
			}
			c.Args[0] = strings.TrimSpace(c.Args[0]) + v
		}
	}
	main := &pod.Spec.Containers[0]
	if main.Name != "kube-controller-manager" || !strings.Contains(main.Args[0], "exec hyperkube kube-controller-manager") {
		return fmt.Errorf("pod template: the first container must exec hyperkube kube-controller-manager")
	}
	var extra []string
	if ok, err := operator.HasServingCert(k.Cluster, TargetNamespace); err != nil {
		return err
	} else if ok {
		extra = append(extra, "--tls-cert-file="+operator.ServingCertFile, "--tls-private-key-file="+operator.ServingKeyFile)
	}
	if cfg, err := k.Cluster.KubeInformers.ConfigMapLister().ConfigMaps(TargetNamespace).Get("config"); err == nil {
		args, err := ExtendedArgs(cfg.Data["config.yaml"])
		if err != nil {
			return err
		}
		extra = append(extra, args...)
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	tls, err := operator.TLSArgs(obs)
	if err != nil {
		return err
	}
	extra = append(extra, tls...)
	if len(extra) > 0 {
		main.Args[0] += " " + strings.Join(extra, " ")
	}
	env, err := operator.ProxyEnv(obs, operator.ProxyPath...)
	if err != nil {
		return err
	}
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].Env = append(pod.Spec.Containers[i].Env, env...)
		if !UseMoreSecureServiceCA {
			pod.Spec.Containers[i].Env = append(pod.Spec.Containers[i].Env, corev1.EnvVar{Name: "OPENSHIFT_USE_VULNERABLE_LEGACY_SERVICE_CA_CRT", Value: "true"})
		}
	}
	return k.ApplyPodConfigMap(ctx, TargetNamespace, "kube-controller-manager-pod", pod, spec)
}

// verbosity is the operand's -v: TraceAll is 8 (cluster-kube-controller-manager-operator
// pkg/operator/targetconfigcontroller/targetconfigcontroller.go, managePod).
func verbosity(l operatorv1.LogLevel) int { return operator.Verbosity(l, 8) }
