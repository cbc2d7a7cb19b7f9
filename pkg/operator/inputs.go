package operator

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/render-static/render-static/pkg/loops"
)

// Input is an object a component reads that another component (or the installer's seeds, or an emulation of an
// operator that does not run here) produces. Every component declares its inputs (Base.Inputs): they say in which
// order the registry must list the components and what a component waits for.
type Input struct {
	// Kind is "configmap", "secret" or a config.openshift.io kind ("Infrastructure", ...); "" is "configmap".
	Kind            string
	Namespace, Name string
	// Key, when set, must be present and non-empty (a token secret exists before the token controller fills it).
	Key string
	// From names who produces it: a component's name, "installer" (the seeds, pkg/clusterconfig) or an
	// emulation loop ("emulate/<what>").
	From string
}

// Secret is a secret input.
func Secret(namespace, name, key, from string) Input {
	return Input{Kind: "secret", Namespace: namespace, Name: name, Key: key, From: from}
}

// ConfigMapInput is a configmap input.
func ConfigMapInput(namespace, name, key, from string) Input {
	return Input{Kind: "configmap", Namespace: namespace, Name: name, Key: key, From: from}
}

// RecoveryTokenInput is the namespace's localhost-recovery-client-token secret, filled by the legacy
// service-account token controller (emulated) for the static pod's recovery clients.
func RecoveryTokenInput(namespace string) Input {
	return Secret(namespace, "localhost-recovery-client-token", "token", "emulate/legacy-serviceaccount-token-controller")
}

func (i Input) kind() string {
	if i.Kind == "" {
		return "configmap"
	}
	return i.Kind
}

// Checkable says whether Missing can look the input up (configmaps and secrets).
func (i Input) Checkable() bool { return i.kind() == "configmap" || i.kind() == "secret" }

func (i Input) String() string {
	s := i.kind()
	switch {
	case i.Namespace != "":
		s += " " + i.Namespace + "/" + i.Name
	case i.Name != "":
		s += " " + i.Name
	}
	if i.Key != "" {
		s += " key " + i.Key
	}
	return s + " (from " + i.From + ")"
}

// Missing returns the configmap and secret inputs that are not there yet, read through the listers, sorted.
func Missing(c *loops.Cluster, in ...Input) ([]string, error) {
	var out []string
	for _, i := range in {
		if !i.Checkable() {
			continue
		}
		core := c.KubeInformers.InformersFor(i.Namespace).Core().V1()
		data := map[string]bool{}
		var err error
		if i.kind() == "secret" {
			sec, gerr := core.Secrets().Lister().Secrets(i.Namespace).Get(i.Name)
			err = gerr
			if err == nil {
				for key, v := range sec.Data {
					data[key] = len(v) > 0
				}
			}
		} else {
			cm, gerr := core.ConfigMaps().Lister().ConfigMaps(i.Namespace).Get(i.Name)
			err = gerr
			if err == nil {
				for key, v := range cm.Data {
					data[key] = len(v) > 0
				}
			}
		}
		switch {
		case apierrors.IsNotFound(err):
			out = append(out, i.String())
		case err != nil:
			return nil, err
		case i.Key != "" && !data[i.Key]:
			out = append(out, i.String())
		}
	}
	sort.Strings(out)
	return out, nil
}

// WhenInputs returns the loop with a guard: while one of the inputs (made by another component) is missing, the
// sync is skipped without an error, so the other components' loops still reach their fixpoint.
func WhenInputs(c *loops.Cluster, l loops.Loop, in ...Input) loops.Loop {
	inner := l.Sync
	l.Sync = func(ctx context.Context) error {
		m, err := Missing(c, in...)
		if err != nil {
			return err
		}
		if len(m) > 0 {
			return nil
		}
		return inner(ctx)
	}
	return l
}

// WaitFor is a Loop.Before check that fails, naming them, while inputs are missing.
func WaitFor(c *loops.Cluster, in ...Input) func(context.Context) error {
	return func(context.Context) error {
		m, err := Missing(c, in...)
		if err != nil {
			return err
		}
		if len(m) > 0 {
			return fmt.Errorf("waiting for %v", m)
		}
		return nil
	}
}
