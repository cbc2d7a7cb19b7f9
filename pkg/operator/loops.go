// Package operator is what the control-plane operators build the same way, used by every component
// package (no component package imports another): static resources, the node controller, target-config steps, the
// service-account CA, the localhost-recovery token check, the api-int kubeconfig, pod templates and pod
// configmaps, TLS and proxy settings of the observed config, image tags, --flag=value arguments, the config
// observers' listers, the inputs a component reads from others, and the embeddable component Base.
package operator

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/openshift/library-go/pkg/controller/factory"
	"github.com/openshift/library-go/pkg/operator/certrotation"
	"github.com/openshift/library-go/pkg/operator/events"
	"github.com/openshift/library-go/pkg/operator/resource/resourceapply"
	"github.com/openshift/library-go/pkg/operator/resource/resourceread"
	"github.com/openshift/library-go/pkg/operator/resourcesynccontroller"
	"github.com/openshift/library-go/pkg/operator/staticpod/controller/node"
	"github.com/openshift/library-go/pkg/operator/staticresourcecontroller"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/manifests"
	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/loops"
)

// This file holds the loops and target-config steps the operators build the same way.

// StaticResourceController is library-go's static resource controller over files (paths below manifests/), applied
// in the order given, with the kube and dynamic clients (custom resources such as a ServiceMonitor). instanceName
// names its <instanceName>Degraded condition, as in the operator.
func StaticResourceController(c *loops.Cluster, instanceName string, files []string, op loops.StaticPodOperator, recorder events.Recorder) *staticresourcecontroller.StaticResourceController {
	clients := resourceapply.NewKubeClientHolder(c.Kube).WithDynamicClient(c.Dynamic)
	return staticresourcecontroller.NewStaticResourceController(instanceName, ReadAsJSON, files, clients, op, recorder)
}

// UnchangedStaticResources is l, library-go's static resource controller over files (StaticResourceController),
// skipped in a later pass while nothing it reads changed since its last run that succeeded (loops.Loop.Unchanged):
// it reads and writes the objects of its manifests, reads of the operator's spec only the management state, and in
// the operator's status sets only its own <instanceName>Degraded condition (staticresourcecontroller Sync).
// Applied again right after a run, every manifest finds its object as it left it and writes nothing
// (resourceapply compares what it would write with what is stored).
func UnchangedStaticResources(l loops.Loop, files []string, op *loops.OperatorClient) loops.Loop {
	objs, err := StaticResourceObjects(files, op)
	if err != nil {
		l.Sync = func(context.Context) error { return err }
		return l
	}
	return l.Watches(objs...).Unchanged()
}

// StaticResourceObjects names what library-go's static resource controller over files reads and writes besides
// the operator's status (loops.Loop.Watches): each manifest's object, by the resource the clients name its kind
// by (meta.UnsafeGuessKindToResource, the fakes' own mapping; a misnamed object shows as a write outside the
// declaration when the controller creates it), and the operator's management state.
func StaticResourceObjects(files []string, op *loops.OperatorClient) ([]loops.Object, error) {
	var out []loops.Object
	for _, f := range files {
		raw, err := ReadAsJSON(f)
		if err != nil {
			return nil, err
		}
		var u unstructured.Unstructured
		if err := u.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		gvr, _ := meta.UnsafeGuessKindToResource(u.GroupVersionKind())
		out = append(out, loops.Object{Resource: gvr.Resource, Namespace: u.GetNamespace(), Name: u.GetName()})
	}
	return append(out, op.ManagementState()), nil
}

// jsonAssets holds the embedded manifests ReadAsJSON converted, by name.
var jsonAssets sync.Map

// ReadAsJSON is manifests.Read with a YAML manifest converted to JSON once (sigs.k8s.io/yaml.YAMLToJSON, the
// conversion the YAML decoder makes before it decodes JSON): the static resource controller decodes every
// manifest on every pass, and JSON decodes the same objects without the YAML parser. A manifest the
// conversion fails on is returned as it is (the decoder then reports the error).
func ReadAsJSON(name string) ([]byte, error) {
	if b, ok := jsonAssets.Load(name); ok {
		return bytes.Clone(b.([]byte)), nil
	}
	raw, err := manifests.Read(name)
	if err != nil {
		return nil, err
	}
	out := raw
	if j, err := yaml.YAMLToJSON(raw); err == nil && len(bytes.TrimSpace(j)) > 0 && j[0] == '{' {
		out = j
	}
	jsonAssets.Store(name, out)
	return bytes.Clone(out), nil
}

// StaticFiles lists the YAML files of an embedded manifests directory as paths below manifests/: the files named
// in first (in that order), then the others sorted.
func StaticFiles(dir string, first ...string) ([]string, error) {
	entries, err := fs.ReadDir(manifests.FS, dir)
	if err != nil {
		return nil, fmt.Errorf("static resources %s: %w", dir, err)
	}
	isFirst := map[string]bool{}
	var head, files []string
	for _, f := range first {
		isFirst[f] = true
		head = append(head, path.Join(dir, f))
	}
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".yaml") && !isFirst[e.Name()] {
			files = append(files, path.Join(dir, e.Name()))
		}
	}
	if len(files)+len(head) == 0 {
		return nil, fmt.Errorf("static resources %s: no YAML files", dir)
	}
	sort.Strings(files)
	return append(head, files...), nil
}

// NodeController is library-go's node controller (the loop "node/<component>"): it lists the master nodes (the
// emulated Node, see emulate.NodeEmulation) and keeps status.nodeStatuses in step, as every static-pod
// operator does.
func NodeController(c *loops.Cluster, component string, op loops.StaticPodOperator, recorder events.Recorder) factory.Controller {
	return node.NewNodeController(component, op, c.KubeInformers.InformersFor(""), recorder, nil)
}

// Step is one output of a target-config controller, run as a loop of its own named
// "target-config/<component>/<Name>".
type Step struct {
	Name string
	Sync func(ctx context.Context) error
}

// TargetConfigLoops turns steps into loops named "target-config/<component>/<step>", each skipped while ready
// fails (nil: never skipped).
func TargetConfigLoops(component string, steps []Step, ready func(context.Context) error) []loops.Loop {
	out := make([]loops.Loop, 0, len(steps))
	for _, s := range steps {
		l := loops.Loop{Name: loops.LoopName("target-config", component, s.Name), Sync: s.Sync}
		if ready != nil {
			l = l.Before(ready)
		}
		out = append(out, l)
	}
	return out
}

// serviceAccountCAInputs are the bundles serviceaccount-ca is the union of: what verifies kube-apiserver's
// serving certificates (published by kube-apiserver's operator) and the default ingress certificate (published by
// the ingress operator, absent in a render). The controller manager hands it to every pod as the service-account
// ca.crt, and the kubeconfigs use it to verify api-int.
var serviceAccountCAInputs = []certs.Location{
	{Namespace: ManagedNamespace, Name: "kube-apiserver-server-ca"},
	{Namespace: ManagedNamespace, Name: "default-ingress-cert"},
}

// ManagedNamespace is where the operators publish what other components read.
const ManagedNamespace = "openshift-config-managed"

// ServiceAccountCAInput is kube-apiserver's serving CA bundle ServiceAccountCA waits for.
var ServiceAccountCAInput = Input{Namespace: ManagedNamespace, Name: "kube-apiserver-server-ca", Key: "ca-bundle.crt", From: "kube-apiserver"}

// ServiceAccountCA builds <namespace>/serviceaccount-ca from serviceAccountCAInputs; kube-apiserver's serving CA
// bundle must be there first (an empty bundle would verify nothing).
func ServiceAccountCA(ctx context.Context, c *loops.Cluster, namespace, owner string, recorder events.Recorder) error {
	first := serviceAccountCAInputs[0]
	if cm, err := c.KubeInformers.ConfigMapLister().ConfigMaps(first.Namespace).Get(first.Name); err != nil {
		return fmt.Errorf("waiting for %s: %w", first, err)
	} else if cm.Data["ca-bundle.crt"] == "" {
		return fmt.Errorf("waiting for %s: no ca-bundle.crt yet", first)
	}
	return CombineCABundles(ctx, c, owner, recorder, certs.Location{Namespace: namespace, Name: "serviceaccount-ca"}, serviceAccountCAInputs...)
}

// CheckRecoveryToken is the operators' check that the token controller filled the localhost-recovery-client-token
// secret for the current localhost-recovery-client service account (it is a revisioned input: without it there is
// no revision).
func CheckRecoveryToken(c *loops.Cluster, namespace string) error {
	sa, err := c.KubeInformers.InformersFor(namespace).Core().V1().ServiceAccounts().Lister().ServiceAccounts(namespace).Get("localhost-recovery-client")
	if err != nil {
		return fmt.Errorf("serviceaccount %s/localhost-recovery-client: %w", namespace, err)
	}
	token, err := c.KubeInformers.SecretLister().Secrets(namespace).Get("localhost-recovery-client-token")
	if err != nil {
		return fmt.Errorf("secret %s/localhost-recovery-client-token: %w", namespace, err)
	}
	switch uid := token.Annotations[corev1.ServiceAccountUIDKey]; {
	case uid == "":
		return fmt.Errorf("secret %s/localhost-recovery-client-token hasn't been populated with SA token yet: missing SA UID", namespace)
	case uid != string(sa.UID):
		return fmt.Errorf("secret %s/localhost-recovery-client-token hasn't been populated with current SA token yet: SA UID mismatch", namespace)
	}
	for _, key := range []string{"token", "ca.crt"} {
		if len(token.Data[key]) == 0 {
			return fmt.Errorf("secret %s/localhost-recovery-client-token has no %s yet", namespace, key)
		}
	}
	return nil
}

// InternalKubeconfig applies the kubeconfig configmap template (manifests/<template>) with $LB_INT_URL replaced by
// Infrastructure status.apiServerInternalURL.
func InternalKubeconfig(ctx context.Context, c *loops.Cluster, template string, recorder events.Recorder) error {
	infra, err := c.ConfigInformers.Config().V1().Infrastructures().Lister().Get("cluster")
	if err != nil {
		return err
	}
	if infra.Status.APIServerInternalURL == "" {
		return fmt.Errorf("infrastructures.config.openshift.io/cluster: missing status.apiServerInternalURL")
	}
	raw, err := ReadManifest(template)
	if err != nil {
		return err
	}
	cm := resourceread.ReadConfigMapV1OrDie([]byte(strings.ReplaceAll(string(raw), "$LB_INT_URL", infra.Status.APIServerInternalURL)))
	_, _, err = resourceapply.ApplyConfigMap(ctx, c.Kube.CoreV1(), recorder, cm)
	return err
}

// RL is a certs.Location as library-go's resource location.
func RL(l certs.Location) resourcesynccontroller.ResourceLocation {
	return resourcesynccontroller.ResourceLocation{Namespace: l.Namespace, Name: l.Name}
}

// ReadConfigLayer is ReadManifest of a config layer merged with resourcemerge.MergeProcessConfig, as JSON
// (ReadAsJSON): the merge converts a YAML layer to JSON (sigs.k8s.io/yaml.YAMLToJSON, the conversion ReadAsJSON
// makes once) on every merge, and takes a JSON one as it is.
func ReadConfigLayer(name string) ([]byte, error) {
	b, err := ReadAsJSON(name)
	if err != nil {
		return nil, fmt.Errorf("embedded manifest %s: %w", name, err)
	}
	return b, nil
}

// ReadManifest reads an embedded manifest (a path below manifests/), naming it in the error.
func ReadManifest(name string) ([]byte, error) {
	b, err := manifests.Read(name)
	if err != nil {
		return nil, fmt.Errorf("embedded manifest %s: %w", name, err)
	}
	return b, nil
}

// CombineCABundles applies the union of the CA bundles inputs as dest (missing inputs are skipped), stamped with
// the owning component.
func CombineCABundles(ctx context.Context, c *loops.Cluster, owner string, recorder events.Recorder, dest certs.Location, inputs ...certs.Location) error {
	var in []resourcesynccontroller.ResourceLocation
	for _, l := range inputs {
		in = append(in, RL(l))
	}
	cm, err := resourcesynccontroller.CombineCABundleConfigMaps(RL(dest), c.KubeInformers.ConfigMapLister(),
		certrotation.AdditionalAnnotations{JiraComponent: owner}, in...)
	if err != nil {
		return err
	}
	_, _, err = resourceapply.ApplyConfigMap(ctx, c.Kube.CoreV1(), recorder, cm)
	return err
}

// MustStaticFiles is StaticFiles for a directory of the embedded manifests, which are part of the binary: an
// error is a programming error and panics.
func MustStaticFiles(dir string, first ...string) []string {
	files, err := StaticFiles(dir, first...)
	if err != nil {
		panic(err)
	}
	return files
}
