package certs

import (
	"crypto/x509"

	"github.com/render-static/render-static/pkg/loops"
)

// A component's certificate table is data: one Rotation per library-go cert-rotation controller its operator runs.
// Adding or changing a row needs only this file's types; rotationloop.go turns a row into a loop of the engine.

// Location is a namespace/name pair.
type Location struct{ Namespace, Name string }

func (l Location) String() string { return l.Namespace + "/" + l.Name }

// TargetKind says what a rotation's target certificate is.
type TargetKind int

const (
	// Client is a client certificate for User in Groups.
	Client TargetKind = iota
	// Serving is a serving certificate for the hostnames Hostnames returns.
	Serving
	// IntermediateSigner is a CA signed by the signer (SignerName is its CN prefix).
	IntermediateSigner
)

// Rotation is one row of a component's certificate table: a signer, the CA bundle it is published in, and a
// target it signs. Several rows may share a signer and bundle, as in the operators.
type Rotation struct {
	Name   string // the operator's controller name, e.g. "AggregatorProxyClientCert"
	Signer Location
	Bundle Location
	Target Location
	Kind   TargetKind
	User   string
	Groups []string
	// Hostnames returns the serving names; an error means an input is not there yet (the loop retries).
	Hostnames func() ([]string, error)
	// Inputs are the objects Hostnames reads (the loop reads them before its turn, see pkg/loops turn.go).
	Inputs     []loops.Object
	SignerName string
	// ExtKeyUsages, when set, replace a serving certificate's extended key usages (etcd's peer and serving
	// certificates are used both as client and as server certificates).
	ExtKeyUsages []x509.ExtKeyUsage
	// Description and JiraComponent become the operators' TLS artifact annotations.
	Description   string
	JiraComponent string
}
