//go:build tools

// Package tools pins the CoreDNS command the e2e test builds (the cluster DNS image of issue 37).
package tools

import (
	_ "github.com/coredns/coredns"
)
