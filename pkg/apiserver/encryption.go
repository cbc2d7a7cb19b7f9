package apiserver

import (
	"context"
	"fmt"
	"time"

	"github.com/openshift/library-go/pkg/operator/encryption"
	"github.com/openshift/library-go/pkg/operator/encryption/encryptionconfig"
	"github.com/openshift/library-go/pkg/operator/encryption/statemachine"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/render-static/render-static/pkg/loops"
)

// EncryptedResources are the resources kube-apiserver encrypts at rest.
var EncryptedResources = encryption.StaticEncryptionProvider{
	{Group: "", Resource: "secrets"},
	{Group: "", Resource: "configmaps"},
}

// EncryptionConfigPath is where the installer puts the revisioned encryption-config secret for the pod.
const EncryptionConfigPath = "/etc/kubernetes/static-pod-resources/secrets/encryption-config/encryption-config"

// encryptionLoops are library-go's encryption controllers (key, state, prune, migration, condition) for
// openshift-kube-apiserver, with two offline stand-ins for what needs a running cluster:
//   - the deployer reports the current openshift-config-managed/encryption-config-openshift-kube-apiserver as
//     deployed on every instance (there is no pod yet: what the revision will carry is what is deployed);
//   - the migrator finishes every migration at once (there is no data to migrate in a cluster that never ran).
//
// With APIServer spec.encryption.type aescbc the state machine goes key → config with the key as read key →
// "deployed" → write key → migrated, within the converge fixpoint; the encryption-config secret the resource sync
// copies into the operand namespace then carries an aescbc write key.
func (k *Component) encryptionLoops() []loops.Loop {
	secrets := k.Cluster.KubeInformers.InformersFor(ManagedNamespace).Core().V1().Secrets()
	dep := &offlineDeployer{lister: secrets.Lister(), informer: secrets.Informer()}
	ctrls, err := encryption.NewControllers(TargetNamespace, nil, EncryptedResources, dep, instantMigrator{},
		k.Op, k.Cluster.Config.ConfigV1().APIServers(), k.Cluster.ConfigInformers.Config().V1().APIServers(),
		k.Cluster.KubeInformers, k.Cluster.Kube.CoreV1(), k.Recorder, k.Syncer)
	if err != nil {
		return []loops.Loop{{Name: "encryption", Sync: func(context.Context) error { return err }}}
	}
	names := []string{"key", "state", "prune", "migration", "condition"}
	var out []loops.Loop
	for i, c := range ctrls {
		name := fmt.Sprintf("encryption/%d", i)
		if i < len(names) {
			name = "encryption/" + names[i]
		}
		out = append(out, loops.ControllerLoop(name, c, k.Recorder))
	}
	return out
}

// offlineDeployer is a statemachine.Deployer for a cluster that does not run yet: the encryption configuration
// the state controller last wrote is the one deployed, on every (no) instance.
type offlineDeployer struct {
	lister   corev1listers.SecretLister
	informer cache.SharedIndexInformer
}

var _ statemachine.Deployer = &offlineDeployer{}

func (d *offlineDeployer) DeployedEncryptionConfigSecret(context.Context) (*corev1.Secret, bool, error) {
	name := fmt.Sprintf("%s-%s", encryptionconfig.EncryptionConfSecretName, TargetNamespace)
	s, err := d.lister.Secrets(ManagedNamespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	return s.DeepCopy(), true, nil
}

func (d *offlineDeployer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return d.informer.AddEventHandler(h)
}

func (d *offlineDeployer) HasSynced() bool { return true }

// instantMigrator finishes every storage migration as soon as it is asked for: nothing is stored yet.
type instantMigrator struct{}

func (instantMigrator) EnsureMigration(schema.GroupResource, string) (bool, error, time.Time, error) {
	return true, nil, time.Now(), nil
}

func (instantMigrator) PruneMigration(schema.GroupResource) error { return nil }

func (instantMigrator) AddEventHandler(cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return nil, nil
}

func (instantMigrator) HasSynced() bool { return true }
