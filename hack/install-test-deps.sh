#!/usr/bin/env bash
# Installs the external tools the test suite uses (Debian/Ubuntu, via apt).
# Idempotent: a tool that is already on PATH is skipped, and `apt-get update`
# runs at most once per invocation, only when something must be installed.
#
# To add a tool, append a "binary:debian-package" entry to TOOLS.
set -euo pipefail

TOOLS=(
	"ignition-validate:ignition"
	"ip:iproute2"
	"systemd-analyze:systemd"
	"openssl:openssl"
	"shellcheck:shellcheck"
)

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
	if command -v "$bin" >/dev/null 2>&1; then
		echo "install-test-deps: $bin already installed ($(command -v "$bin"))"
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
"${SUDO[@]}" apt-get update
"${SUDO[@]}" apt-get install -y --no-install-recommends "${missing[@]}"

for entry in "${TOOLS[@]}"; do
	bin="${entry%%:*}"
	if ! command -v "$bin" >/dev/null 2>&1; then
		echo "install-test-deps: $bin still not on PATH after installing its package" >&2
		exit 1
	fi
done
