#!/usr/bin/env bash
# Installs the external tools the test suite uses (Debian/Ubuntu, via apt).
# Idempotent: a tool that is already on PATH is skipped, and `apt-get update`
# runs at most once per invocation, only when something must be installed.
#
# To add a tool, append a "binary:debian-package" entry to TOOLS (an absolute path instead of a binary name for
# a file that is not on PATH).
set -euo pipefail

TOOLS=(
	"nmcli:network-manager"
	"xz:xz-utils"
	"cpio:cpio"
	"ignition-validate:ignition"
	"ip:iproute2"
	"systemd-analyze:systemd"
	"openssl:openssl"
	"shellcheck:shellcheck"
	"containerd:containerd"
	"runc:runc"
	# The e2e node's pod network (issue 37): the CNI reference plugins containerd runs (bridge, host-local,
	# portmap, loopback), nft for the rendered aio-pod-network script, iptables-nft for kube-proxy's image.
	"/usr/lib/cni/bridge:containernetworking-plugins"
	"nft:nftables"
	"xtables-nft-multi:iptables"
	# The conformance run's agnhost image (test/e2e/conformance.go): the tools upstream's image adds to its base.
	"nc.openbsd:netcat-openbsd"
	"dig:bind9-dnsutils"
	"curl:curl"
	"wget:wget"
)

have() {
	if [[ "$1" == /* ]]; then
		[[ -x "$1" ]]
	else
		command -v "$1" >/dev/null 2>&1
	fi
}

SUDO=()
if [[ "$(id -u)" -ne 0 ]]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=(sudo)
	else
		echo "install-test-deps: not root and sudo is not available" >&2
		exit 1
	fi
fi

missing=()
for entry in "${TOOLS[@]}"; do
	bin="${entry%%:*}"
	pkg="${entry#*:}"
	if have "$bin"; then
		echo "install-test-deps: $bin already installed ($(command -v "$bin" || echo "$bin"))"
	else
		missing+=("$pkg")
	fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
	exit 0
fi

# Deduplicate (several binaries may come from one package).
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)

echo "install-test-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Bounded and retried: a stalled mirror must not eat CI's time.
for attempt in 1 2 3; do
	if timeout 300 "${SUDO[@]}" apt-get update &&
		timeout 600 "${SUDO[@]}" apt-get install -y --no-install-recommends "${missing[@]}"; then
		break
	fi
	if ((attempt == 3)); then
		echo "install-test-deps: apt-get failed three times" >&2
		exit 1
	fi
	echo "install-test-deps: apt-get failed (attempt $attempt of 3); retrying" >&2
	sleep 10
done

for entry in "${TOOLS[@]}"; do
	bin="${entry%%:*}"
	if ! have "$bin"; then
		echo "install-test-deps: $bin still not on PATH after installing its package" >&2
		exit 1
	fi
done
