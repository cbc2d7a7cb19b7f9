package etcd

import (
	"context"
	"fmt"
	"strings"

	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/openshift/library-go/pkg/operator/resource/resourceapply"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/render-static/render-static/manifests"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/loops"
	"github.com/render-static/render-static/pkg/operator"
)

// Scripts are the etcd-scripts keys besides etcd.env, as files under manifests/etcd/scripts/. The *.sh ones are
// installed into /usr/local/bin by the pod's etcd-resources-copy container; etcd-common-tools is sourced by them
// from the cert directory.
var Scripts = []string{"cluster-backup.sh", "cluster-restore.sh", "disable-etcd.sh", "etcd-common-tools", "quorum-restore.sh"}

// podData is what the pod templates under manifests/etcd/ are rendered with.
type podData struct {
	Image         string // etcd
	OperatorImage string // cluster-etcd-operator
	Env           EnvVars
	LogLevel      string
	// ListenAddress and LocalhostAddress are 0.0.0.0 and 127.0.0.1 on every IP family, as the operator fills them
	// (cluster-etcd-operator pkg/operator/ceohelpers/podsubstitution.go, and targetconfigcontroller.go's
	// LISTEN_ON_ALL_IPS/LOCALHOST_IP for the restore pods): etcd, a Go program, listens on both families on 0.0.0.0.
	ListenAddress, LocalhostAddress string
	// CipherSuites is the comma-separated list of ETCD_CIPHER_SUITES ("" when only TLS 1.3 is allowed).
	CipherSuites string
	// The probes allow more time for a larger backend quota.
	LivenessFailureThreshold, StartupFailureThreshold int
}

func (k *Component) podData() (*podData, error) {
	env, err := k.envVars()
	if err != nil {
		return nil, err
	}
	spec, _, _, err := k.Op.GetOperatorState()
	if err != nil {
		return nil, err
	}
	d := &podData{
		Image:                    k.In.Images.Image("etcd"),
		OperatorImage:            k.In.Images.Image("cluster-etcd-operator"),
		Env:                      env,
		LogLevel:                 "info",
		ListenAddress:            "0.0.0.0",
		LocalhostAddress:         "127.0.0.1",
		LivenessFailureThreshold: 20 * QuotaGiB / 8,
		StartupFailureThreshold:  30 * QuotaGiB / 8,
	}
	switch spec.LogLevel {
	case operatorv1.Debug, operatorv1.Trace, operatorv1.TraceAll:
		d.LogLevel = "debug"
	}
	d.CipherSuites, _ = env.Get("ETCD_CIPHER_SUITES")
	return d, nil
}

// renderPod renders a pod template of manifests/etcd/ and checks that the result is a pod.
func renderPod(name string, d *podData) (string, error) {
	_, raw, err := manifests.Pod("etcd/"+name, operator.TemplateFuncs, d)
	return string(raw), err
}

// versionData is the keys every pod configmap of the operator carries besides its pods: the operator spec's
// forceRedeploymentReason, and the operator's version (empty: no operator binary made this render).
func (k *Component) versionData(data map[string]string) (map[string]string, error) {
	spec, _, _, err := k.Op.GetStaticPodOperatorState()
	if err != nil {
		return nil, err
	}
	data["forceRedeploymentReason"] = spec.ForceRedeploymentReason
	data["version"] = ""
	return data, nil
}

func (k *Component) applyConfigMap(ctx context.Context, name string, data map[string]string) error {
	_, _, err := resourceapply.ApplyConfigMap(ctx, k.Cluster.Kube.CoreV1(), k.Recorder, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: TargetNamespace, Name: name, Annotations: ownedBy()},
		Data:       data,
	})
	return err
}

// EnvFile is etcd.env: one `export NAME="VALUE"` line per variable, sorted, for the scripts to source.
func EnvFile(env EnvVars) string {
	var b strings.Builder
	q := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`")
	for _, v := range env {
		fmt.Fprintf(&b, "export %s=\"%s\"\n", v.Name, q.Replace(v.Value))
	}
	return b.String()
}

// scriptsLoop is the operator's script controller: configmap etcd-scripts with etcd.env and the backup and restore
// scripts (our own, under manifests/etcd/scripts/).
func (k *Component) scriptsLoop() loops.Loop {
	return loops.Loop{Name: "target-config/" + ScriptsName, Sync: func(ctx context.Context) error {
		env, err := k.envVars()
		if err != nil {
			return err
		}
		data := map[string]string{"etcd.env": EnvFile(env)}
		for _, s := range Scripts {
			raw, err := manifests.Read("etcd/scripts/" + s)
			if err != nil {
				return err
			}
			data[s] = string(raw)
		}
		return k.applyConfigMap(ctx, ScriptsName, data)
	}}
}

// restorePodLoop is configmap restore-etcd-pod: the pod cluster-restore.sh puts in place of etcd to restore a
// snapshot (pod.yaml), and the pod quorum-restore.sh uses to restart the member as a new single-member cluster
// (quorum-restore-pod.yaml).
func (k *Component) restorePodLoop() loops.Loop {
	return loops.Loop{Name: "target-config/" + RestorePodName, Sync: func(ctx context.Context) error {
		d, err := k.podData()
		if err != nil {
			return err
		}
		data := map[string]string{}
		for key, tmpl := range map[string]string{"pod.yaml": "restore-pod.yaml", "quorum-restore-pod.yaml": "quorum-restore-pod.yaml"} {
			if data[key], err = renderPod(tmpl, d); err != nil {
				return err
			}
		}
		if data, err = k.versionData(data); err != nil {
			return err
		}
		return k.applyConfigMap(ctx, RestorePodName, data)
	}}
}

// podLoop is the target config of the static pod: configmap etcd-pod with pod.yaml rendered from
// manifests/etcd/pod.yaml (the installer substitutes REVISION, NODE_NAME and NODE_ENVVAR_NAME on the node).
func (k *Component) podLoop() loops.Loop {
	if k.In.Flavor == clusterconfig.FlavorUpstream {
		return k.podConfigMapLoop(k.upstreamPod) // upstream.go
	}
	return k.podConfigMapLoop(func() (string, error) {
		d, err := k.podData()
		if err != nil {
			return "", err
		}
		return renderPod("pod.yaml", d)
	})
}

// podConfigMapLoop is target-config/etcd-pod of either flavor: configmap etcd-pod with the pod.yaml that pod
// renders, and the version.
func (k *Component) podConfigMapLoop(pod func() (string, error)) loops.Loop {
	return loops.Loop{Name: "target-config/" + PodConfigMap, Sync: func(ctx context.Context) error {
		p, err := pod()
		if err != nil {
			return err
		}
		data, err := k.versionData(map[string]string{"pod.yaml": p})
		if err != nil {
			return err
		}
		return k.applyConfigMap(ctx, PodConfigMap, data)
	}}
}
