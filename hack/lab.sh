#!/usr/bin/env bash
# The "kaio" lab: renders an install-config with --flavor upstream, boots it on this machine with a real kubelet
# and containerd (test/e2e's node, in private network, mount and PID namespaces), and leaves you a shell inside
# the node's namespaces with KUBECONFIG set. Exiting the shell stops the node and removes everything.
#
#   hack/lab.sh                                   # the bundled IPv4 example (test/e2e/testdata/upstream)
#   hack/lab.sh install-config.yaml 192.168.126.10
#
# Needs root. The first run builds the upstream binaries (10-27 min on 2 cores, cached under ~/go/cache).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$HOME/go/bin:$PATH"
if [[ $# -ne 0 && $# -ne 2 ]]; then
	echo "usage: hack/lab.sh [INSTALL_CONFIG NODE_IP]" >&2
	exit 2
fi
./hack/install-test-deps.sh
./hack/e2e-build.sh
mkdir -p bin
go test -c -o bin/e2e.test ./test/e2e
ic=""
if [[ $# -eq 2 ]]; then
	ic=$(realpath "$1")
fi
cd test/e2e
RENDER_STATIC_LAB=1 RENDER_STATIC_E2E=1 RENDER_STATIC_LAB_INSTALL_CONFIG="$ic" RENDER_STATIC_LAB_NODE_IP="${2:-}" \
	exec ../../bin/e2e.test -test.run '^TestLab$' -test.v -test.timeout 24h
