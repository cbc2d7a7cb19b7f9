package controllermanager

import (
	"context"
	"fmt"

	"github.com/openshift/library-go/pkg/operator/resource/resourceapply"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/render-static/render-static/pkg/loops"
)

// Service-account token signing key locations.
var (
	initialSAKey = loc(ConfigNamespace, "initial-service-account-private-key")
	saKey        = loc(TargetNamespace, "service-account-private-key")
)

// saTokenSigner is the operator's service-account token signer controller in the only mode a render can be in.
//
// The operator must not rotate the token signing key while a bootstrap kube-apiserver may still serve: it would
// reject tokens signed with the new key. It tells by the default/kubernetes endpoints: while they do not list only
// the control-plane kube-apiserver pods, it stays in bootstrap mode and only primes
// openshift-kube-controller-manager/service-account-private-key from the installer's
// openshift-config/initial-service-account-private-key (whose public half kube-apiserver trusts through
// openshift-config-managed/sa-token-signing-certs). Offline no API server has ever published endpoints, so the
// render is always in bootstrap mode; rotation (next-service-account-private-key, promoted after kube-apiserver
// picked up its public key) is left to the operator running on the node.
//
// Where the operator keeps reporting the missing endpoints as an error, this loop settles once the key is primed:
// bootstrap mode is the final state of a render, not a failure.
func (k *Component) saTokenSigner() loops.Loop {
	kube := k.Cluster.Kube.CoreV1()
	secrets := k.Cluster.KubeInformers.SecretLister()
	return loops.Loop{Name: "sa-token-signer", Sync: func(ctx context.Context) error {
		if _, err := kube.Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{}); err == nil {
			return fmt.Errorf("default/kubernetes endpoints exist: rotating the service-account signing key is left to the running operator")
		} else if !apierrors.IsNotFound(err) {
			return err
		}
		if _, err := secrets.Secrets(saKey.Namespace).Get(saKey.Name); err == nil {
			return nil
		} else if !apierrors.IsNotFound(err) {
			return err
		}
		if _, err := secrets.Secrets(initialSAKey.Namespace).Get(initialSAKey.Name); err != nil {
			return fmt.Errorf("waiting for %s: %w", initialSAKey, err)
		}
		_, _, err := resourceapply.SyncSecret(ctx, kube, k.Recorder, initialSAKey.Namespace, initialSAKey.Name,
			saKey.Namespace, saKey.Name, nil)
		return err
	}}
}
