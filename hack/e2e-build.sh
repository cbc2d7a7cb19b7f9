#!/usr/bin/env bash
# Builds (or finds cached) the upstream binaries the e2e tests boot: kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl v1.34.3 and etcd, etcdctl 3.6.5, from the Go module proxy through the wrapper modules
# in test/e2e/tools. Cache: ~/go/cache/render-static-e2e/<key>/bin (override: RENDER_STATIC_E2E_CACHE).
#
# A cold build takes ~10 min on an idle 2-core machine and up to ~27 min under contention; run it first and
# alone (e.g. before `go test ./...`), so that it is outside the tests' timeout and does not compete with them.
# With the cache present it takes a second.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$HOME/go/bin:$PATH"
RENDER_STATIC_E2E=1 exec go test -count=1 -v -timeout 85m -run '^TestBuildTools$' ./test/e2e/
