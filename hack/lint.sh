#!/usr/bin/env bash
# make lint: gofmt, go vet, staticcheck, shellcheck over every script, and `go mod tidy` changing nothing.
# staticcheck is installed once into $(go env GOPATH)/bin (bounded, retried); shellcheck comes from
# hack/install-test-deps.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
PATH="/usr/local/go/bin:$PATH"
gopath=$(go env GOPATH)
export PATH="$gopath/bin:$PATH"

# The newest staticcheck the module proxy serves that supports go1.26 (2026.x releases).
STATICCHECK_VERSION=v0.8.2
fail=0

echo "lint: gofmt"
mapfile -t gofiles < <(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*')
out=$(gofmt -l "${gofiles[@]}")
if [[ -n "$out" ]]; then
	echo "gofmt wants changes in:"
	echo "$out"
	fail=1
fi

echo "lint: go vet"
go vet ./... || fail=1

echo "lint: staticcheck $STATICCHECK_VERSION"
sc="$gopath/bin/staticcheck"
if ! { [[ -x "$sc" ]] && "$sc" -version 2>/dev/null | grep -q "${STATICCHECK_VERSION}"; }; then
	for try in 1 2 3; do
		if timeout 600 go install "honnef.co/go/tools/cmd/staticcheck@${STATICCHECK_VERSION}"; then
			break
		fi
		echo "lint: installing staticcheck failed (try $try of 3)" >&2
		[[ $try -eq 3 ]] && exit 1
		sleep 5
	done
fi
"$sc" ./... || fail=1

echo "lint: shellcheck"
if ! command -v shellcheck >/dev/null 2>&1; then
	echo "lint: shellcheck is not installed: run hack/install-test-deps.sh" >&2
	exit 1
fi
# Every shell script under hack/, manifests/ and testdata/, by name (*.sh) or by its #! line (testdata's stub
# commands have no extension), and etcd-common-tools, which the etcd scripts source.
scripts=()
while IFS= read -r f; do
	case "$f" in
	*.sh | manifests/etcd/scripts/etcd-common-tools) scripts+=("$f") ;;
	*) if head -n 1 "$f" 2>/dev/null | grep -qE '^#!.*[/ ](ba)?sh$'; then scripts+=("$f"); fi ;;
	esac
done < <(git ls-files hack manifests testdata 2>/dev/null || find hack manifests testdata -type f)
ours=() etcd=()
for f in "${scripts[@]}"; do
	case "$f" in
	manifests/etcd/scripts/*) etcd+=("$f") ;;
	*) ours+=("$f") ;;
	esac
done
if [[ ${#ours[@]} -eq 0 || ${#etcd[@]} -eq 0 ]]; then
	echo "lint: no shell scripts found (${#ours[@]} ours, ${#etcd[@]} etcd)" >&2
	exit 1
fi
echo "lint: shellcheck ${#scripts[@]} scripts"
shellcheck "${ours[@]}" || fail=1
# The etcd scripts source etcd-common-tools by its path on the node, which shellcheck cannot follow (and the
# scripts are part of the rendered output, so they are not edited for it): the variables etcd-common-tools defines
# for them, and the one cluster-backup.sh sets for etcd_tool, look unused (SC2034); the restore script lists its
# backup directory with ls (SC2012), whose names it wrote itself. pkg/etcd's TestClusterBackupAndRestore and the
# other scripts tests run them.
shellcheck -s bash -e SC2034,SC2012 "${etcd[@]}" || fail=1

echo "lint: go mod tidy"
tmp=$(mktemp -d)
trap 'cp "$tmp/go.mod" go.mod; cp "$tmp/go.sum" go.sum; rm -rf "$tmp"' EXIT
cp go.mod go.sum "$tmp/"
timeout 300 go mod tidy
if ! cmp -s go.mod "$tmp/go.mod" || ! cmp -s go.sum "$tmp/go.sum"; then
	echo "lint: go mod tidy changes go.mod/go.sum:"
	diff -u "$tmp/go.mod" go.mod || true
	diff -u "$tmp/go.sum" go.sum | head -40 || true
	fail=1
fi

exit "$fail"
