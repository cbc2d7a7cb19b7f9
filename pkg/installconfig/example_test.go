package installconfig_test

import (
	"fmt"

	"github.com/render-static/render-static/pkg/installconfig"
)

func ExampleLoad() {
	ips, err := installconfig.ParseNodeIPs("192.168.126.10")
	if err != nil {
		fmt.Println(err)
		return
	}
	ic, err := installconfig.Load("../../testdata/installconfig/good/ipv4.yaml", ips)
	if err != nil {
		fmt.Println(err) // one problem per line
		return
	}
	fmt.Println(ic.APIServerURL())
	fmt.Println(ic.ServiceIPs(), ic.DualStack())
	for _, w := range ic.Warnings() {
		fmt.Println("warning:", w)
	}
	// Output:
	// https://api.sno.example.com:6443
	// [172.30.0.1] false
	// warning: sshKey: line 1: ssh-ed25519 key data does not parse (ssh: short read); it is installed as written
	// warning: sshKey: no key sshd can use (no line's key data parses): nobody can log in to the node as core (it has no password), and renew's updates reach the node over ssh (aio-update apply, and aio-update recover after a power-off past the earliest expiry): add your public key to sshKey and render again before you install (docs/renew.md, "Without SSH")
}

func ExampleLoad_errors() {
	_, err := installconfig.Load("../../testdata/installconfig/bad/several-errors.yaml", nil)
	if list, ok := err.(installconfig.ErrorList); ok {
		fmt.Println(len(list), "problems; the first:", list[0])
	}
	// Output:
	// 10 problems; the first: apiVersion: unsupported value "v2"; must be v1
}
