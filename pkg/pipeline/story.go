package pipeline

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/podnetwork"
	"github.com/render-static/render-static/pkg/state"
)

// story is what a render did, beyond its figures, for the summary: whether it continued the saved cluster, the
// inputs it took from the state and those that changed, the revisions it rolled and why, the signers it made anew.
type story struct {
	dir       *Dir
	fromState []string
	// problems are the saved inputs that cannot be read.
	problems installconfig.ErrorList
}

// tell puts the story into s.
func (st *story) tell(s *Summary, saved *state.State, e *Settled) {
	in := e.Inputs
	var ips []string
	for _, ip := range in.NodeIPs {
		ips = append(ips, ip.String())
	}
	s.Node = in.NodeName + ", " + strings.Join(ips, ", ")
	for _, w := range in.Workers {
		s.Workers = append(s.Workers, w.Name+" "+joinIPs(w.IPs))
	}
	s.Cluster = fmt.Sprintf("%s.%s, infra ID %s", in.InstallConfig.Metadata.Name, in.InstallConfig.BaseDomain, in.InfraID)
	s.Site = Site{ClusterDomain: in.InstallConfig.ClusterDomain(), NodeIPs: ips, Arch: in.InstallConfig.Architecture()}
	for _, w := range in.Workers {
		s.Site.Workers = append(s.Site.Workers, w.Name)
	}
	s.Flavor = string(in.Flavor)
	s.Network = podnetwork.Describe(in)
	s.Continued = st.dir.State != nil
	s.FromState = st.fromState
	if st.dir.State != nil {
		s.Changed = changedInputs(st.dir.State, saved)
	}
	s.Revisions = revisionLines(e)
	s.NewSigners = newSigners(st.dir.State, e)
	s.PendingUpdate = pendingUpdate(st.dir.Path)
}

// revisionLines says each component's revision, and for one that rolled, from which and which of its revisioned
// resources changed (what made library-go's revision controller make the new revision).
func revisionLines(e *Settled) []string {
	var out []string
	for _, comp := range e.Components {
		from, to := e.PreviousRevisions[comp.Name()], e.Revisions[comp.Name()]
		switch {
		case from == 0 || from == to:
			out = append(out, fmt.Sprintf("%s %d", comp.Name(), to))
		default:
			out = append(out, fmt.Sprintf("%s %d->%d (changed: %s)", comp.Name(), from, to, strings.Join(changedRevisioned(e, comp, from, to), ", ")))
		}
	}
	return out
}

// changedRevisioned names the revisioned configmaps and secrets of comp whose revision from and revision to copies
// differ.
func changedRevisioned(e *Settled, comp Component, from, to int) []string {
	sp := comp.StaticPod()
	core := e.Cluster.Kube.CoreV1()
	get := func(secret bool, name string, rev int) (map[string][]byte, bool) {
		n := fmt.Sprintf("%s-%d", name, rev)
		if secret {
			s, err := core.Secrets(sp.Namespace).Get(context.Background(), n, metav1.GetOptions{})
			if err != nil {
				return nil, false
			}
			return s.Data, true
		}
		cm, err := core.ConfigMaps(sp.Namespace).Get(context.Background(), n, metav1.GetOptions{})
		if err != nil {
			return nil, false
		}
		out := map[string][]byte{}
		for k, v := range cm.Data {
			out[k] = []byte(v)
		}
		maps.Copy(out, cm.BinaryData)
		return out, true
	}
	var out []string
	for _, r := range sp.ConfigMaps {
		a, oka := get(false, r.Name, from)
		b, okb := get(false, r.Name, to)
		if oka != okb || !maps.EqualFunc(a, b, bytes.Equal) {
			out = append(out, "configmap "+r.Name)
		}
	}
	for _, r := range sp.Secrets {
		a, oka := get(true, r.Name, from)
		b, okb := get(true, r.Name, to)
		if oka != okb || !maps.EqualFunc(a, b, bytes.Equal) {
			out = append(out, "secret "+r.Name)
		}
	}
	if len(out) == 0 {
		out = append(out, "nothing revisioned")
	}
	return out
}

// newSigners names the signers (CA certificates in Secrets) that are not the saved state's: made by library-go's
// rotation rules (a signer past 80% of its validity), never silently otherwise (the state is whole, state.Load).
func newSigners(st *state.State, e *Settled) []string {
	if st == nil {
		return nil
	}
	saved := map[string][]byte{}
	for _, o := range st.Objects {
		if s, ok := o.(*corev1.Secret); ok {
			saved[s.Namespace+"/"+s.Name] = s.Data[corev1.TLSCertKey]
		}
	}
	list, err := e.Cluster.Kube.CoreV1().Secrets(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return []string{"unknown: " + err.Error()}
	}
	var out []string
	for _, s := range list.Items {
		crt := s.Data[corev1.TLSCertKey]
		key := s.Namespace + "/" + s.Name
		if len(crt) == 0 || bytes.Equal(saved[key], crt) || !isCA(crt) {
			continue
		}
		out = append(out, "secret "+key)
	}
	slices.Sort(out)
	return out
}

func isCA(crt []byte) bool {
	b, _ := pem.Decode(crt)
	if b == nil {
		return false
	}
	c, err := x509.ParseCertificate(b.Bytes)
	return err == nil && c.IsCA
}

// updateHead is what the summary reads of DIR/update/update.json (pkg/renew's Update).
type updateHead struct {
	ID         string    `json:"id"`
	Created    time.Time `json:"created"`
	Components []struct {
		Name string `json:"name"`
		From int    `json:"from"`
		To   int    `json:"to"`
	} `json:"components"`
}

func readUpdateHead(b []byte) (*updateHead, error) {
	u := &updateHead{}
	if err := json.Unmarshal(b, u); err != nil {
		return nil, err
	}
	return u, nil
}
