#!/usr/bin/env bash
# The "kaio" lab: renders an install-config with --flavor upstream, boots it on this machine with a real kubelet
# and containerd (test/e2e's node, in private network, mount and PID namespaces), and leaves you a shell inside
# the node's namespaces with KUBECONFIG set, on this terminal. Exiting the shell stops the node and removes
# everything; so does Ctrl-C (or SIGTERM) before the shell is up.
#
#   hack/lab.sh                                   # the bundled IPv4 example (test/e2e/testdata/upstream)
#   hack/lab.sh install-config.yaml 192.168.126.10
#   LAB_CMD="kubectl get nodes" hack/lab.sh       # no shell: runs the command (no input), prints its output and
#                                                 # exit code, stops the node, exits with the command's code
#
# Without a terminal on standard input (CI, a script) and without LAB_CMD it refuses at once: nobody could type.
# Needs root. The first run builds the upstream binaries (10-27 min on 2 cores, cached under ~/go/cache).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$HOME/go/bin:$PATH"
if [[ $# -ne 0 && $# -ne 2 ]]; then
	echo "usage: hack/lab.sh [INSTALL_CONFIG NODE_IP]" >&2
	exit 2
fi
if [[ -z "${LAB_CMD:-}" && ! -t 0 ]]; then
	cat >&2 <<'MSG'
lab: standard input is not a terminal, so there is nobody to type into the lab's shell.
Give it a command to run instead: make lab LAB_CMD="kubectl get nodes" (it runs with no input inside the node's
namespaces; its output and exit code are printed, then the node stops).
MSG
	exit 2
fi
./hack/install-test-deps.sh
mkdir -p bin
go test -c -o bin/e2e.test ./test/e2e
ic=""
if [[ $# -eq 2 ]]; then
	ic=$(realpath "$1")
fi
result=$(mktemp)
trap 'rm -f "$result"' EXIT
cd test/e2e
# The upstream binaries: hack/e2e-build.sh's test, run by the binary just built (one link of the harness, not two).
RENDER_STATIC_E2E=1 ../../bin/e2e.test -test.run '^TestBuildTools$' -test.v -test.count=1 -test.timeout 85m
rc=0
RENDER_STATIC_LAB=1 RENDER_STATIC_E2E=1 RENDER_STATIC_LAB_INSTALL_CONFIG="$ic" RENDER_STATIC_LAB_NODE_IP="${2:-}" \
	RENDER_STATIC_LAB_RESULT="$result" ../../bin/e2e.test -test.run '^TestLab$' -test.v -test.timeout 24h || rc=$?
# The lab itself failed: its code. Otherwise, with LAB_CMD, the command's.
if [[ $rc -eq 0 && -s $result ]]; then
	rc=$(<"$result")
fi
exit "$rc"
