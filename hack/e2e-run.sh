#!/usr/bin/env bash
# Runs the end-to-end tests: the runner self-test (hand-written upstream static pods booted from an Ignition
# config) and, once `render-static --flavor upstream` exists, the full e2e (render → Ignition → boot in a
# private network namespace → client-go checks). Needs root. Missing tools fail instead of skipping.
#
#   hack/e2e-run.sh                       # everything in test/e2e
#   hack/e2e-run.sh TestUpstreamE2E       # one test (a -run regexp)
#   RENDER_STATIC_E2E_CASES=ipv4 hack/e2e-run.sh TestUpstreamE2E
#   RENDER_STATIC_E2E_WORK=/tmp/e2e hack/e2e-run.sh   # keep roots and container logs there
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$HOME/go/bin:$PATH"
./hack/install-test-deps.sh
./hack/e2e-build.sh
RENDER_STATIC_E2E=1 exec go test -count=1 -v -timeout 60m -run "${1:-.}" ./test/e2e/
