#!/usr/bin/env bash
# aiokube: the all-in-one node's first-boot apply of the manifests render-static exported, bootkube style.
# Written by render-static; every setting comes from aiokube.service (AIOKUBE_* variables).
#
# 1. Waits, bounded by AIOKUBE_API_WAIT_SECONDS, until the local API answers /readyz with the admin kubeconfig,
#    polling every AIOKUBE_POLL_SECONDS. Each poll first tries to create the namespaces (00_*): the kubelet creates
#    a static pod's mirror pod only once its namespace exists, and retries only when that pod syncs again (a
#    container or probe changes, else its resync a minute or more later), so they are created as soon as the API
#    accepts them, before /readyz (which waits for every post-start hook) says ok.
# 2. Creates every manifest of AIOKUBE_MANIFESTS in three rounds, each in lexical (= apply) order:
#    00_* namespaces (those step 1 did not create); 01_* CRDs, then waits until they are Established; everything
#    else. One client process creates up to AIOKUBE_BATCH manifests (`create -f A -f B ...`); a manifest counts as
#    created only when the client says so for it: its "<kind>/<name> created" line, in the order of the files, or
#    an AlreadyExists error naming its file (a rerun, or an object the API server made itself). Any other error
#    naming its file leaves it for the next pass; a manifest the output does not account for (the client printed
#    something else than expected) is created alone, as one process per manifest would. Where AIOKUBE_STATUS_DIR
#    holds <manifest>.json, that merge patch is applied to the object's status subresource right after (custom
#    resources whose status the cluster must see, e.g. the Infrastructure). A manifest that fails is retried in the
#    next pass over its round, AIOKUBE_RETRY_SECONDS later, at most AIOKUBE_ATTEMPTS passes.
# 3. Records each created manifest as AIOKUBE_STATE_DIR/done/<manifest> and logs it (to the journal), so a
#    reboot half-way finishes the job; AIOKUBE_STATE_DIR/applied marks the end of the apply.
# 4. Sets AIOKUBE_NODE_LABELS on the Node AIOKUBE_NODE_NAME through the API once the kubelet registered it
#    (bounded by AIOKUBE_API_WAIT_SECONDS): the labels an upstream kubelet may not set itself, as kubeadm does.
# 5. Waits, bounded, until kube-controller-manager filled the legacy service-account token secrets the render
#    exported empty (AIOKUBE_LEGACY_TOKENS), and copies each live token over the render's in the revision
#    directories under AIOKUBE_STATIC_POD_RESOURCES (see sync_legacy_tokens). What is not filled in time is logged
#    and left as it is: it does not fail the run.
# 6. Removes what only the first boot needed (AIOKUBE_CLEANUP, then its empty parents AIOKUBE_CLEANUP_DIRS),
#    disables and removes itself (unit and script), and removes its state last.
#
# The client is the host's oc (RHCOS ships it), else kubectl, else oc from AIOKUBE_CLIENT_IMAGE through podman.
# AIOKUBE_ROOT prefixes every path (tests run the script against a directory).
set -euo pipefail
shopt -s nullglob

prog=aiokube
# The helpers the node's programs share (log, kc, ...): manifests/node/scripts/aio-lib.sh, sourced from this
# script's folder, or put here by the render (pkg/node, readScript).
# shellcheck source=SCRIPTDIR/aio-lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/aio-lib.sh"

root=${AIOKUBE_ROOT:-}
manifests=$root${AIOKUBE_MANIFESTS:?}
kubeconfig=$root${AIOKUBE_KUBECONFIG:?}
status_dir=$root${AIOKUBE_STATUS_DIR:?}
state_dir=$root${AIOKUBE_STATE_DIR:?}
unit=${AIOKUBE_UNIT:?}
self=${AIOKUBE_SCRIPT:?}
read -r -a cleanup <<<"${AIOKUBE_CLEANUP:-}"
read -r -a cleanup_dirs <<<"${AIOKUBE_CLEANUP_DIRS:-}"
api_wait=${AIOKUBE_API_WAIT_SECONDS:-1800}
attempts=${AIOKUBE_ATTEMPTS:-20}
retry=${AIOKUBE_RETRY_SECONDS:-5}
poll=${AIOKUBE_POLL_SECONDS:-1}
batch=${AIOKUBE_BATCH:-50}
crd_wait=${AIOKUBE_CRD_WAIT_SECONDS:-120}
request_timeout=${AIOKUBE_REQUEST_TIMEOUT_SECONDS:-30}
read -r -a legacy_tokens <<<"${AIOKUBE_LEGACY_TOKENS:-}"
node_name=${AIOKUBE_NODE_NAME:-}
read -r -a node_labels <<<"${AIOKUBE_NODE_LABELS:-}"
token_wait=${AIOKUBE_TOKEN_WAIT_SECONDS:-600}
resources=$root${AIOKUBE_STATIC_POD_RESOURCES:-/etc/kubernetes/static-pod-resources}
client_image=${AIOKUBE_CLIENT_IMAGE:-}

# use_client: pick_client, logging the client it chose. Every input lies under /opt/openshift: podman mounts it at
# the same path.
use_client() {
	((${#client[@]} == 0)) || return 0
	if ! pick_client --volume="$root/opt/openshift:$root/opt/openshift:ro,z"; then
		log "no oc or kubectl on this host, and no podman to run ${client_image:-a client image}"
		return 1
	fi
	log "client: ${client[*]}"
}

# wait_api [NAMESPACE_FILE...]: until /readyz answers ok, bounded by $api_wait, polling every $poll s; each poll
# first tries to create the namespace files not done yet (their failures are expected while the API starts).
wait_api() {
	if ! wait_until "$api_wait" "$poll" api_ready "$@"; then
		log "the API was not ready within ${api_wait}s"
		return 1
	fi
	log "the API is ready"
}

# api_ready [NAMESPACE_FILE...]: one poll of wait_api.
api_ready() {
	local f pending=()
	for f in "$@"; do
		[[ -e $state_dir/done/${f##*/} ]] || pending+=("$f")
	done
	if ((${#pending[@]} > 0)); then
		create_pending quiet "${pending[@]}" || true
	fi
	kc get --raw=/readyz >/dev/null 2>&1
}

# created_line FILE: what `create` prints for the object of an exported manifest, whose name is
# <order>_<namespace or cluster>_<kind>[.<group>]_<name>.yaml (pkg/export): "<kind>[.<group>]/<name> created" (the
# client's name printer: the kind lower-cased, its group, the name). Neither a kind, a group nor a namespace holds
# "_", so the first "_" after the namespace ends the kind.
created_line() {
	local b=${1##*/}
	b=${b%.yaml}
	b=${b#*_}
	b=${b#*_}
	echo "${b/_//} created"
}

# create_batch FILE...: one `create` for every file. Sets created (the client created the object, or it existed:
# AlreadyExists naming the file), failed (an error naming the file, or no file reached at all; the reason in
# fail_reason) and unsure (the output does not account for the file: each is then created alone). Only what the
# client confirmed counts as created: a file left out is tried again, and exists by then at worst.
declare -A fail_reason=()
create_batch() {
	local f args=() out err lines=() expect=() i match
	created=() failed=() unsure=()
	for f in "$@"; do
		args+=(-f "$f")
	done
	out=$(kc create "${args[@]}" 2>"$state_dir/create.err") || true
	err=$(<"$state_dir/create.err")
	for f in "$@"; do
		if [[ $err != *"\"$f\""* ]]; then
			expect+=("$f")
			continue
		fi
		match=$(grep -F -- "\"$f\"" <<<"$err" | head -n 3)
		if [[ $match == *AlreadyExists* || $match == *"already exists"* ]]; then
			created+=("$f")
		else
			failed+=("$f")
			fail_reason[$f]=$(oneline "$match")
		fi
	done
	# The client creates the objects in the order of the files and prints one line for each it created: every
	# file no error names must have its line, in that order, and no line may be left over.
	mapfile -t lines < <(grep -- ' created$' <<<"$out" || true)
	if ((${#lines[@]} == 0 && ${#expect[@]} == $#)); then
		# Not one object reached: the client did not get that far (the API does not answer). Nothing is recorded;
		# the next pass tries them again (an object that exists then counts as created).
		failed=("$@")
		for f in "$@"; do
			fail_reason[$f]=$(oneline "$err")
		done
		return 0
	fi
	if ((${#lines[@]} == ${#expect[@]})); then
		for i in "${!expect[@]}"; do
			if [[ ${lines[i]} != "$(created_line "${expect[i]}")" ]]; then
				unsure=("${expect[@]}")
				return 0
			fi
		done
		created+=("${expect[@]}")
	else
		unsure=("${expect[@]}")
	fi
}

# finish FILE: restores the object's status if there is a patch for it, and records the manifest as done.
finish() {
	local f=$1 name=${1##*/} out
	if [[ -e $status_dir/$name.json ]]; then
		if ! out=$(kc patch --subresource=status --type=merge --patch-file="$status_dir/$name.json" -f "$f" 2>&1); then
			fail_reason[$f]="status not restored: $(oneline "$out")"
			return 1
		fi
	fi
	: >"$state_dir/done/$name"
	log "$name: created"
}

# apply_one FILE: creates the object of FILE alone, restores its status, and records it.
apply_one() {
	local f=$1 out
	if ! out=$(kc create -f "$f" 2>&1); then
		if [[ $out != *AlreadyExists* && $out != *"already exists"* ]]; then
			fail_reason[$f]=$(oneline "$out")
			return 1
		fi
	fi
	finish "$f"
}

# create_pending [quiet] FILE...: creates the files not recorded as done, $batch per client process, in order.
# Sets left to the files still not done; logs why each failed (unless quiet). Returns 1 if any is left.
create_pending() {
	local quiet="" f todo=() chunk=()
	if [[ ${1:-} == quiet ]]; then
		quiet=1
		shift
	fi
	left=()
	for f in "$@"; do
		[[ -e $state_dir/done/${f##*/} ]] || todo+=("$f")
	done
	while ((${#todo[@]} > 0)); do
		chunk=("${todo[@]:0:batch}")
		todo=("${todo[@]:batch}")
		create_batch "${chunk[@]}"
		for f in "${created[@]}"; do
			finish "$f" || failed+=("$f")
		done
		if ((${#unsure[@]} > 0)); then
			log "the client's output does not account for ${#unsure[@]} of ${#chunk[@]} manifests: creating them one by one"
		fi
		for f in "${unsure[@]}"; do
			apply_one "$f" || failed+=("$f")
		done
		left+=("${failed[@]}")
	done
	if ((${#left[@]} == 0)); then
		return 0
	fi
	if [[ -z $quiet ]]; then
		for f in "${left[@]}"; do
			log "${f##*/}: not created: ${fail_reason[$f]:-}"
		done
	fi
	return 1
}

# apply_round LABEL FILE...: creates the files, then again the ones that failed, at most $attempts passes.
apply_round() {
	local label=$1 f
	shift
	local pending=("$@")
	if retry "$attempts" "$retry" round_pass; then
		return 0
	fi
	local names=()
	for f in "${pending[@]}"; do names+=("${f##*/}"); done
	log "$label: giving up on ${names[*]}"
	return 1
}

# round_pass: one pass of apply_round over its pending files; those not created stay pending.
round_pass() {
	if create_pending "${pending[@]}"; then
		return 0
	fi
	pending=("${left[@]}")
	log "$label: ${#pending[@]} not created after pass $pass of $attempts"
	return 1
}

apply() {
	if [[ ! -d $manifests ]]; then
		log "$manifests does not exist"
		return 1
	fi
	local namespaces=("$manifests"/00_*.yaml) crds=("$manifests"/01_*.yaml) rest=() f done_count args=() out
	for f in "$manifests"/*.yaml; do
		case ${f##*/} in
		00_* | 01_*) ;;
		*) rest+=("$f") ;;
		esac
	done
	done_count=$(find "$state_dir/done" -type f | wc -l)
	log "applying $manifests: ${#namespaces[@]} namespaces, ${#crds[@]} CRDs, ${#rest[@]} others ($done_count done before)"
	use_client
	wait_api "${namespaces[@]}"
	apply_round namespaces "${namespaces[@]}"
	apply_round CRDs "${crds[@]}"
	if ((${#crds[@]} > 0)); then
		for f in "${crds[@]}"; do
			args+=(-f "$f")
		done
		if ! out=$(kc wait --for=condition=Established --timeout="${crd_wait}s" "${args[@]}" 2>&1); then
			log "the CRDs are not all Established within ${crd_wait}s: $(oneline "$out")"
			return 1
		fi
		log "${#crds[@]} CRDs are Established"
	fi
	apply_round "other manifests" "${rest[@]}"
	: >"$state_dir/applied"
	log "every manifest is created"
}

# Legacy service-account tokens. The render minted the token secrets of AIOKUBE_LEGACY_TOKENS
# (namespace/secret/serviceaccount) offline, for the UIDs its own cluster gave the service accounts, and the
# installer layout copied each token into the revision directories of the static pods that use it. The service
# accounts created here have new UIDs, so kube-apiserver rejects those tokens; the export therefore left the secrets
# empty (pkg/node/legacytokens.go), and kube-controller-manager's token controller fills them for the live accounts.
# Once a secret holds a token and the live account's UID, sync_token writes the token (and ca.crt when it differs)
# into every <AIOKUBE_STATIC_POD_RESOURCES>/*/secrets/<secret>/ whose namespace file names the secret's namespace.
#
# No pod restart is needed for the token: the pods read it through kubeconfigs with tokenFile, and client-go
# (k8s.io/client-go v0.34.3) turns tokenFile into a file token source that reads the file again on use once its
# cached copy is about a minute old, keeping the last token it read when a read fails (transport/token_source.go:
# NewCachedFileTokenSource, period one minute, leeway 10 s; used by NewBearerAuthWithRefreshRoundTripper in
# transport/round_trippers.go). Files are replaced by a rename in their directory (the pods mount the revision
# directory, not the file), so a reader sees the old or the new token, never a part. A certificate-authority
# file, though, is read once when a client is built: a changed ca.crt takes effect at the container's next start
# (kube-controller-manager's root CA is the same serviceaccount-ca bundle the render used, so it rarely changes).
#
# Bounded: AIOKUBE_TOKEN_WAIT_SECONDS for all secrets together, polling every AIOKUBE_RETRY_SECONDS. A secret not
# filled by then (e.g. a component that is absent) is logged and left as it is; the run goes on. Each secret done
# is recorded as AIOKUBE_STATE_DIR/tokens/<namespace>_<secret>, so a rerun skips it.

# token_fields is what aiokube reads of a token secret: its service-account UID annotation, token and ca.crt
# (base64), separated by '|', which neither a UID nor base64 holds. A missing key prints as empty.
token_fields='{.metadata.annotations.kubernetes\.io/service-account\.uid}{"|"}{.data.token}{"|"}{.data.ca\.crt}'

declare -A token_reason=()

# replace FILE NEW: gives FILE the contents of NEW unless it has them (write_file): 0600, owned by root (aiokube
# runs as root). Adds FILE to $written when it wrote.
replace() {
	local file=$1 new=$2
	if cmp -s -- "$new" "$file"; then
		return 0
	fi
	write_file "$new" "$file" 0600 || return 1
	written+=("${file#"$root"}")
}

# sync_token NAMESPACE/SECRET/SERVICEACCOUNT: once the live secret holds a token for the live account, writes it
# into every directory the installer wrote for the secret and records the secret as done. Returns 1, with the
# reason in token_reason, while it cannot.
sync_token() {
	local entry=$1 ns name sa live_uid out uid token ca dir stage dirs=() written=()
	IFS=/ read -r ns name sa <<<"$entry"
	if ! live_uid=$(kc get serviceaccount --namespace="$ns" "$sa" --output='jsonpath={.metadata.uid}' 2>"$state_dir/kc.err") || [[ -z $live_uid ]]; then
		token_reason[$entry]="service account $sa: $(oneline "$(cat "$state_dir/kc.err")")"
		return 1
	fi
	if ! out=$(kc get secret --namespace="$ns" "$name" --output="jsonpath=$token_fields" 2>"$state_dir/kc.err"); then
		token_reason[$entry]=$(oneline "$(cat "$state_dir/kc.err")")
		return 1
	fi
	IFS='|' read -r uid token ca <<<"$out"
	if [[ -z $token || $uid != "$live_uid" ]]; then
		token_reason[$entry]="no token for service account UID $live_uid yet (the secret names UID '$uid')"
		return 1
	fi
	for dir in "$resources"/*/secrets/"$name"; do
		if [[ -f $dir/namespace && $(<"$dir/namespace") == "$ns" ]]; then
			dirs+=("$dir")
		fi
	done
	stage=$(mktemp -d "$state_dir/tokens/.stage.XXXXXX") || return 1
	if ! base64 -d <<<"$token" >"$stage/token" 2>/dev/null || [[ ! -s $stage/token ]] ||
		! base64 -d <<<"$ca" >"$stage/ca.crt" 2>/dev/null; then
		rm -rf -- "$stage"
		token_reason[$entry]="the secret's token or ca.crt is not base64"
		return 1
	fi
	for dir in "${dirs[@]}"; do
		if ! replace "$dir/token" "$stage/token" ||
			{ [[ -s $stage/ca.crt && -e $dir/ca.crt ]] && ! replace "$dir/ca.crt" "$stage/ca.crt"; }; then
			rm -rf -- "$stage"
			token_reason[$entry]="could not write into ${dir#"$root"}"
			return 1
		fi
	done
	rm -rf -- "$stage"
	: >"$state_dir/tokens/${ns}_$name"
	if ((${#dirs[@]} == 0)); then
		log "$ns/$name: filled, but no directory on this node holds it (no ${resources#"$root"}/*/secrets/$name/namespace names $ns)"
	else
		log "$ns/$name: the live token (service account UID $live_uid) is on the node: ${#written[@]} files written (${written[*]}) in ${#dirs[@]} directories"
	fi
}

# sync_legacy_tokens: sync_token for every legacy token secret not recorded as done, pass after pass until all are
# done or AIOKUBE_TOKEN_WAIT_SECONDS passed; never fails the run.
sync_legacy_tokens() {
	local entry ns name pending=()
	for entry in "${legacy_tokens[@]}"; do
		IFS=/ read -r ns name _ <<<"$entry"
		[[ -e $state_dir/tokens/${ns}_$name ]] || pending+=("$entry")
	done
	if ((${#pending[@]} == 0)); then
		return 0
	fi
	use_client
	log "waiting up to ${token_wait}s until kube-controller-manager filled ${#pending[@]} legacy service-account token secrets: ${pending[*]}"
	if wait_until "$token_wait" "$retry" sync_pass; then
		log "every legacy service-account token on the node is the live one"
		return 0
	fi
	for entry in "${pending[@]}"; do
		log "$entry: giving up after ${token_wait}s: ${token_reason[$entry]:-not filled}; the node keeps the render's token, which kube-apiserver rejects (the clients that use it fail until it is replaced)"
	done
}

# sync_pass: sync_token for each of sync_legacy_tokens' pending secrets; those not synced stay pending.
sync_pass() {
	local entry left=()
	for entry in "${pending[@]}"; do
		sync_token "$entry" || left+=("$entry")
	done
	pending=("${left[@]}")
	((${#pending[@]} == 0))
}

label_node() {
	if ((${#node_labels[@]} == 0)); then
		return 0
	fi
	use_client || return 1
	if ! wait_until "$api_wait" "$retry" kc label node "$node_name" --overwrite "${node_labels[@]}" >/dev/null 2>&1; then
		log "node $node_name: could not set ${node_labels[*]} within ${api_wait}s (not registered?)"
		return 1
	fi
	log "node $node_name: labelled ${node_labels[*]}"
}

clean_up() {
	local p
	log "removing what only the first boot needed: ${cleanup[*]}"
	for p in "${cleanup[@]}"; do
		rm -rf -- "$root$p"
	done
	systemctl disable "$unit"
	rm -f -- "$root/etc/systemd/system/$unit" "$root$self"
	# The preset that enabled it at first boot (Ignition's) no longer needs to name it.
	for p in "$root"/etc/systemd/system-preset/*.preset; do
		if grep -qxF "enable $unit" "$p"; then
			grep -vxF "enable $unit" "$p" >"$p.new" || true
			chmod 0644 "$p.new"
			mv -f -- "$p.new" "$p"
		fi
	done
	rm -rf -- "$state_dir"
	for p in "${cleanup_dirs[@]}"; do
		rmdir --ignore-fail-on-non-empty -- "$root$p" 2>/dev/null || true
	done
	log "done: $unit is disabled and removed"
}

main() {
	mkdir -p "$state_dir/done" "$state_dir/tokens"
	if [[ ! -e $state_dir/applied ]]; then
		apply
	else
		log "every manifest was created before; finishing the token sync and the clean-up"
	fi
	label_node
	sync_legacy_tokens
	clean_up
}

main "$@"
