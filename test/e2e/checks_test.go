package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

// Every wait in the checks is bounded by one of these.
const (
	shortWait = 60 * time.Second
	longWait  = 2 * time.Minute
)

// clients builds client-go clients from a kubeconfig (its server resolves through the namespace's /etc/hosts).
func clients(t *testing.T, kubeconfig string) (*kubernetes.Clientset, *rest.Config) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig %s: %v", kubeconfig, err)
	}
	cfg.Timeout = 15 * time.Second
	cfg.QPS, cfg.Burst = 50, 100
	cfg.Proxy = nil
	t.Logf("API server (from %s): %s", kubeconfig, cfg.Host)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs, cfg
}

// checkHealth: /readyz and /livez answer ok through the admin kubeconfig, and the server is v1.34.3.
func checkHealth(t *testing.T, cs *kubernetes.Clientset) {
	t.Helper()
	ctx := context.Background()
	for _, p := range []string{"/readyz", "/livez"} {
		var body []byte
		err := poll(ctx, shortWait, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
			b, err := cs.Discovery().RESTClient().Get().AbsPath(p).DoRaw(ctx)
			body = b
			return err == nil && string(b) == "ok", err
		})
		if err != nil {
			t.Errorf("GET %s: %v (%s)", p, err, body)
		} else {
			t.Logf("GET %s: %s", p, body)
		}
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Errorf("server version: %v", err)
	} else if v.GitVersion != KubeVersion {
		t.Errorf("server version %s, want %s", v.GitVersion, KubeVersion)
	}
}

// checkKubernetesEndpoint: the apiserver advertises the node IP (env fieldRef expansion worked): the
// kubernetes service's EndpointSlice holds exactly the node IP.
func checkKubernetesEndpoint(t *testing.T, cs *kubernetes.Clientset, nodeIP string) {
	t.Helper()
	var got []string
	err := poll(context.Background(), shortWait, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
		l, err := cs.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=kubernetes"})
		if err != nil {
			return false, err
		}
		got = nil
		for _, s := range l.Items {
			for _, e := range s.Endpoints {
				got = append(got, e.Addresses...)
			}
		}
		return len(got) == 1 && got[0] == nodeIP, nil
	})
	if err != nil {
		t.Errorf("EndpointSlice of service default/kubernetes has %v, want [%s]: %v", got, nodeIP, err)
	} else {
		t.Logf("service default/kubernetes → %s", got[0])
	}
}

// checkNamespace creates a namespace; with wantSA it waits for its default ServiceAccount (made by
// kube-controller-manager's serviceaccount controller).
func checkNamespace(t *testing.T, cs *kubernetes.Clientset, wantSA bool) string {
	t.Helper()
	ctx := context.Background()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	if !wantSA {
		return ns.Name
	}
	start := time.Now()
	err = poll(ctx, shortWait, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Errorf("namespace %s: no default ServiceAccount (kube-controller-manager): %v", ns.Name, err)
	} else {
		t.Logf("namespace %s: default ServiceAccount after %.1fs", ns.Name, time.Since(start).Seconds())
	}
	return ns.Name
}

// checkLeases: kube-controller-manager and kube-scheduler hold their leader-election leases.
func checkLeases(t *testing.T, cs *kubernetes.Clientset) {
	t.Helper()
	for _, name := range []string{"kube-controller-manager", "kube-scheduler"} {
		var holder string
		start := time.Now()
		err := poll(context.Background(), longWait, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
			l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			if err != nil {
				return false, err
			}
			if l.Spec.HolderIdentity != nil {
				holder = *l.Spec.HolderIdentity
			}
			return holder != "" && l.Spec.RenewTime != nil, nil
		})
		if err != nil {
			t.Errorf("lease kube-system/%s not held: %v", name, err)
		} else {
			t.Logf("lease kube-system/%s held by %s (waited %.1fs)", name, holder, time.Since(start).Seconds())
		}
	}
}

// checkUnschedulable: the scheduler marks a pod no node fits Unschedulable (so it runs and evaluates the nodes).
func checkUnschedulable(t *testing.T, cs *kubernetes.Clientset, ns string) {
	t.Helper()
	ctx := context.Background()
	// A node selector no node matches: the node is Ready (issue 37's pod network), so nothing else keeps it off.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "unschedulable"}, Spec: corev1.PodSpec{
		NodeSelector: map[string]string{"e2e.render-static.io/no-such-node": "true"},
		Containers:   []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10"}}}}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Errorf("create pod: %v", err)
		return
	}
	var msg string
	err := poll(ctx, longWait, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				msg = c.Message
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("pod %s/%s never marked Unschedulable (kube-scheduler): %v", ns, pod.Name, err)
	} else {
		t.Logf("pod %s/%s: Unschedulable: %s", ns, pod.Name, msg)
	}
}

// readSecretFromEtcd creates a Secret through the API and reads its bytes straight from etcd with the etcd client
// library (CA, client certificate and key files, endpoints, key prefix as kube-apiserver uses them): they must
// start with k8s:enc:aescbc:v1: and not hold the plaintext.
func readSecretFromEtcd(t *testing.T, cs *kubernetes.Clientset, caFile, certFile, keyFile string, endpoints []string, prefix string) {
	t.Helper()
	ctx := context.Background()
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("no CA in --etcd-cafile")
	}
	if prefix == "" {
		prefix = "/registry"
	}
	name := fmt.Sprintf("e2e-%d", time.Now().UnixNano())
	const plain = "plaintext-that-must-not-reach-etcd"
	if _, err := cs.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name},
		StringData: map[string]string{"k": plain}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create secret: %v", err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 10 * time.Second,
		TLS: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("etcd client for %v: %v", endpoints, err)
	}
	defer cli.Close()
	key := prefix + "/secrets/default/" + name
	gctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	resp, err := cli.Get(gctx, key)
	if err != nil {
		t.Fatalf("etcd get %s: %v", key, err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("etcd has %d values at %s", len(resp.Kvs), key)
	}
	v := resp.Kvs[0].Value
	if !bytes.HasPrefix(v, []byte("k8s:enc:aescbc:v1:")) {
		t.Errorf("secret %s stored as %q..., want the k8s:enc:aescbc:v1: prefix", key, v[:min(len(v), 40)])
	} else {
		t.Logf("secret %s in etcd starts with %q", key, v[:bytes.IndexByte(v[len("k8s:enc:aescbc:v1:"):], ':')+len("k8s:enc:aescbc:v1:")+1])
	}
	if bytes.Contains(v, []byte(plain)) {
		t.Errorf("secret %s holds its plaintext in etcd", key)
	}
}

// kubeletClientCN is the subject CN of the client certificate in the kubeconfig the kubelet's --kubeconfig names.
func kubeletClientCN(argv []string) (string, error) {
	path := ""
	for _, a := range argv {
		if v, ok := strings.CutPrefix(a, "--kubeconfig="); ok {
			path = v
		}
	}
	if path == "" {
		return "", errors.New("the kubelet has no --kubeconfig")
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return "", err
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil {
		return "", fmt.Errorf("%s: no current context", path)
	}
	ai := cfg.AuthInfos[ctx.AuthInfo]
	if ai == nil {
		return "", fmt.Errorf("%s: no user %s", path, ctx.AuthInfo)
	}
	data := ai.ClientCertificateData
	if len(data) == 0 && ai.ClientCertificate != "" {
		if data, err = os.ReadFile(ai.ClientCertificate); err != nil {
			return "", err
		}
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return "", fmt.Errorf("%s: no client certificate", path)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return "", err
	}
	return cert.Subject.CommonName, nil
}

// overrideEnv returns env (KEY=VALUE, in order) with the given settings replacing or added to it.
func overrideEnv(env []string, set ...string) []string {
	out := append([]string(nil), env...)
	for _, kv := range set {
		k, _, _ := strings.Cut(kv, "=")
		replaced := false
		for i, e := range out {
			if strings.HasPrefix(e, k+"=") {
				out[i], replaced = kv, true
			}
		}
		if !replaced {
			out = append(out, kv)
		}
	}
	return out
}

// checkObjectsExist: every object (read from the exported manifests) exists on the live API.
func checkObjectsExist(t *testing.T, cs *kubernetes.Clientset, cfg *rest.Config, objs []*unstructured.Unstructured) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cached := memory.NewMemCacheClient(cs.Discovery())
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cached)
	missing := map[string]error{}
	for _, o := range objs {
		missing[objKey(o)] = nil
	}
	err = poll(context.Background(), 20*time.Second, time.Second, func(ctx context.Context) (bool, error) {
		cached.Invalidate()
		mapper.Reset()
		for _, o := range objs {
			k := objKey(o)
			if _, ok := missing[k]; !ok {
				continue
			}
			gvk := o.GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				missing[k] = err
				continue
			}
			var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
			if m.Scope.Name() == meta.RESTScopeNameNamespace {
				ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
			}
			if _, err := ri.Get(ctx, o.GetName(), metav1.GetOptions{}); err != nil {
				missing[k] = err
				continue
			}
			delete(missing, k)
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		for _, k := range sortedKeys(missing) {
			t.Errorf("manifest object %s not on the API: %v", k, missing[k])
		}
	}
	t.Logf("%d of %d exported objects exist on the API", len(objs)-len(missing), len(objs))
	if len(missing) > 0 {
		t.Errorf("%d exported objects missing from the API", len(missing))
	}
}

func objKey(o *unstructured.Unstructured) string {
	ns := o.GetNamespace()
	if ns == "" {
		ns = "-"
	}
	return fmt.Sprintf("%s %s/%s", o.GroupVersionKind().String(), ns, o.GetName())
}

// checkSecretsData: every exported Secret (objs: the manifests aio.ign laid down), read back from the node's API
// server, holds in data exactly the bytes the render meant: its manifest's data, base64-decoded, with its
// stringData (the text values render-static writes as text, export.SecretsAsText) merged over it, as the API
// server's conversion merges them. A legacy service-account token Secret is exported without the keys the live
// token controller fills (node.FilterExport): only the keys the manifest has are compared for it.
func checkSecretsData(t *testing.T, cs *kubernetes.Clientset, objs []*unstructured.Unstructured) {
	t.Helper()
	var secrets, text, keys int
	for _, o := range objs {
		if o.GetAPIVersion() != "v1" || o.GetKind() != "Secret" {
			continue
		}
		secrets++
		want := map[string][]byte{}
		data, _, err := unstructured.NestedStringMap(o.Object, "data")
		if err != nil {
			t.Errorf("secret %s/%s: data: %v", o.GetNamespace(), o.GetName(), err)
			continue
		}
		for k, v := range data {
			b, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				t.Errorf("secret %s/%s: data.%s: %v", o.GetNamespace(), o.GetName(), k, err)
			}
			want[k] = b
		}
		stringData, found, err := unstructured.NestedStringMap(o.Object, "stringData")
		if err != nil {
			t.Errorf("secret %s/%s: stringData: %v", o.GetNamespace(), o.GetName(), err)
			continue
		}
		if found {
			text++
		}
		for k, v := range stringData {
			want[k] = []byte(v)
		}
		live, err := cs.CoreV1().Secrets(o.GetNamespace()).Get(context.Background(), o.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Errorf("secret %s/%s: %v", o.GetNamespace(), o.GetName(), err)
			continue
		}
		for k, v := range want {
			keys++
			if got, ok := live.Data[k]; !ok || !bytes.Equal(got, v) {
				t.Errorf("secret %s/%s: data.%s on the API server is %d bytes (present: %v), the render meant %d bytes", o.GetNamespace(), o.GetName(), k, len(got), ok, len(v))
			}
		}
		if live.Type != corev1.SecretTypeServiceAccountToken && len(live.Data) != len(want) {
			t.Errorf("secret %s/%s: %d keys on the API server, the manifest has %d", o.GetNamespace(), o.GetName(), len(live.Data), len(want))
		}
	}
	if secrets == 0 {
		t.Errorf("no exported Secret to compare")
	}
	t.Logf("%d exported Secrets (%d of them with stringData), %d keys: data on the API server byte-identical to what the render meant", secrets, text, keys)
}
