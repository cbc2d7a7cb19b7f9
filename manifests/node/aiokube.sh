#!/usr/bin/env bash
# aiokube: the all-in-one node's first-boot apply of the manifests render-static exported, bootkube style.
# Written by render-static; every setting comes from aiokube.service (AIOKUBE_* variables).
#
# 1. Waits, bounded, until the local API answers /readyz with the admin kubeconfig.
# 2. Creates every manifest of AIOKUBE_MANIFESTS in three rounds, each in lexical (= apply) order:
#    00_* namespaces; 01_* CRDs, then waits until each is Established; everything else.
#    An object that already exists counts as created (a rerun, or an object the API server made itself).
#    Where AIOKUBE_STATUS_DIR holds <manifest>.json, that merge patch is applied to the object's status
#    subresource right after (custom resources whose status the cluster must see, e.g. the Infrastructure).
#    A manifest that fails is retried in the next pass over its round, at most AIOKUBE_ATTEMPTS passes.
# 3. Records each created manifest as AIOKUBE_STATE_DIR/done/<manifest> and logs it (to the journal), so a
#    reboot half-way finishes the job; AIOKUBE_STATE_DIR/applied marks the end of the apply.
# 4. Removes what only the first boot needed (AIOKUBE_CLEANUP, then its empty parents AIOKUBE_CLEANUP_DIRS),
#    disables and removes itself (unit and script), and removes its state last.
#
# The client is the host's oc (RHCOS ships it), else kubectl, else oc from AIOKUBE_CLIENT_IMAGE through podman.
# AIOKUBE_ROOT prefixes every path (tests run the script against a directory).
set -euo pipefail
shopt -s nullglob

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
retry=${AIOKUBE_RETRY_SECONDS:-15}
crd_wait=${AIOKUBE_CRD_WAIT_SECONDS:-120}
request_timeout=${AIOKUBE_REQUEST_TIMEOUT_SECONDS:-30}

log() { echo "aiokube: $*"; }

client=()
pick_client() {
	if command -v oc >/dev/null 2>&1; then
		client=(oc)
	elif command -v kubectl >/dev/null 2>&1; then
		client=(kubectl)
	elif [[ -n ${AIOKUBE_CLIENT_IMAGE:-} ]] && command -v podman >/dev/null 2>&1; then
		# Every input lies under /opt/openshift: mount it at the same path.
		client=(podman run --rm --network=host --user=0:0 --authfile="$root/var/lib/kubelet/config.json"
			--volume="$root/opt/openshift:$root/opt/openshift:ro,z" --entrypoint=oc "$AIOKUBE_CLIENT_IMAGE")
	else
		log "no oc or kubectl on this host, and no podman to run ${AIOKUBE_CLIENT_IMAGE:-a client image}"
		return 1
	fi
	log "client: ${client[*]}"
}

kc() { "${client[@]}" --kubeconfig="$kubeconfig" --request-timeout="${request_timeout}s" "$@"; }

oneline() { tr '\n' ' ' <<<"$1"; }

wait_api() {
	local deadline=$((SECONDS + api_wait))
	until kc get --raw=/readyz >/dev/null 2>&1; do
		if ((SECONDS >= deadline)); then
			log "the API was not ready within ${api_wait}s"
			return 1
		fi
		sleep "$retry"
	done
	log "the API is ready"
}

# apply_one FILE: creates the object of FILE unless recorded as done, restores its status if there is a patch for
# it, and records it.
apply_one() {
	local f=$1 name out
	name=${f##*/}
	[[ -e $state_dir/done/$name ]] && return 0
	if ! out=$(kc create -f "$f" 2>&1); then
		if [[ $out != *AlreadyExists* && $out != *"already exists"* ]]; then
			log "$name: not created: $(oneline "$out")"
			return 1
		fi
	fi
	if [[ -e $status_dir/$name.json ]]; then
		if ! out=$(kc patch --subresource=status --type=merge --patch-file="$status_dir/$name.json" -f "$f" 2>&1); then
			log "$name: status not restored: $(oneline "$out")"
			return 1
		fi
	fi
	: >"$state_dir/done/$name"
	log "$name: created"
}

# apply_round LABEL FILE...: applies the files in order, then again the ones that failed, at most $attempts passes.
apply_round() {
	local label=$1 pass f
	shift
	local pending=("$@") left=()
	for ((pass = 1; pass <= attempts; pass++)); do
		left=()
		for f in "${pending[@]}"; do
			apply_one "$f" || left+=("$f")
		done
		if ((${#left[@]} == 0)); then
			return 0
		fi
		pending=("${left[@]}")
		log "$label: ${#pending[@]} not created after pass $pass of $attempts"
		if ((pass < attempts)); then
			sleep "$retry"
		fi
	done
	local names=()
	for f in "${pending[@]}"; do names+=("${f##*/}"); done
	log "$label: giving up on ${names[*]}"
	return 1
}

apply() {
	if [[ ! -d $manifests ]]; then
		log "$manifests does not exist"
		return 1
	fi
	local namespaces=("$manifests"/00_*.yaml) crds=("$manifests"/01_*.yaml) rest=() f done_count
	for f in "$manifests"/*.yaml; do
		case ${f##*/} in
		00_* | 01_*) ;;
		*) rest+=("$f") ;;
		esac
	done
	done_count=$(find "$state_dir/done" -type f | wc -l)
	log "applying $manifests: ${#namespaces[@]} namespaces, ${#crds[@]} CRDs, ${#rest[@]} others ($done_count done before)"
	pick_client
	wait_api
	apply_round namespaces "${namespaces[@]}"
	apply_round CRDs "${crds[@]}"
	for f in "${crds[@]}"; do
		if ! kc wait --for=condition=Established --timeout="${crd_wait}s" -f "$f" >/dev/null; then
			log "${f##*/}: not Established within ${crd_wait}s"
			return 1
		fi
	done
	apply_round "other manifests" "${rest[@]}"
	: >"$state_dir/applied"
	log "every manifest is created"
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
	mkdir -p "$state_dir/done"
	if [[ ! -e $state_dir/applied ]]; then
		apply
	else
		log "every manifest was created before; finishing the clean-up"
	fi
	clean_up
}

main "$@"
