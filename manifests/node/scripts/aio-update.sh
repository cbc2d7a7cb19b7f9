#!/usr/bin/env bash
# aio-update: applies, on the all-in-one node, an update that "render-static renew" made (DIR/update), and rolls
# it back. Written by render-static; settings come from AIO_UPDATE_CONFIG (default /etc/kubernetes/aio-update.env,
# AIO_UPDATE_* variables), which aio.ign writes next to it.
#
#   aio-update apply UPDATE_DIR   (as root)
#     1. verifies the update: every file listed in files.tsv has its sha256, nothing else is there, and each
#        component the update moves to a new revision runs the revision the update starts from;
#     2. keeps what a rollback needs (AIO_UPDATE_STATE_DIR/backup/<id>: the current version of every file it will
#        replace, and which did not exist), before it changes anything;
#     3. installs each new revision directory (<static-pod-resources>/<pod>-<N+1>) through a staging directory
#        renamed into place; an existing revision is never overwritten. The legacy service-account tokens of the
#        previous revision (the live ones aiokube put there) are carried into the new one;
#     4. replaces the changed cert-directory files and other node files (when the pod network's routes file
#        AIO_UPDATE_POD_NETWORK_ROUTES is one of them, e.g. a worker added, runs AIO_UPDATE_POD_NETWORK_UNIT again
#        so the node installs the new routes), then the static pod manifests, one component at a time, each through
#        a temporary file renamed over it (kubelet skips hidden files);
#     5. waits, bounded by AIO_UPDATE_POD_WAIT_SECONDS, until the kubelet's mirror pod of each component reports
#        the new revision and Ready, and the API answers /readyz;
#     6. applies the changed API objects (server-side apply) and their status, each retried AIO_UPDATE_ATTEMPTS
#        times;
#     7. records the update as applied (AIO_UPDATE_STATE_DIR/applied/<id>); applying it again does nothing.
#   aio-update recover UPDATE_DIR (as root) brings back a node whose certificates expired while it was off (its
#     API does not answer): steps 1-4 of apply, except that the static pod manifests are put in place while the
#     kubelet is stopped; then every static pod's sandbox is removed through the CRI (crictl: its containers with
#     it, since the running ones hold the expired certificates and the failed ones wait in the kubelet's back-off)
#     and the kubelet started again (`systemctl`; it reads its renewed client certificate and CA only at start,
#     and starts every static pod anew); then, bounded, each component's mirror pod runs its revision with
#     containers started after that, and Ready, and /readyz answers; then the API objects and the record (5-7).
#   aio-update rollback           puts back the files and pod manifests the last apply replaced, removes the
#                                 ones it added outside the revision directories, and waits for the previous
#                                 revisions. New revision directories stay (unused); API objects are not rolled back.
#   aio-update status             the revision of every static pod and the updates applied.
#
# The client is the host's oc (RHCOS ships it), else kubectl, else oc from AIO_UPDATE_CLIENT_IMAGE through podman;
# it uses the node's localhost kubeconfig (system:admin), AIO_UPDATE_KUBECONFIG. AIO_UPDATE_ROOT prefixes every
# node path (tests run the script against a directory). Exit 0 on success, 1 on any failure, with the reason.
set -euo pipefail
shopt -s nullglob

prog=aio-update
# The helpers the node's programs share (log, kc, ...): manifests/node/scripts/aio-lib.sh, sourced from this
# script's folder, or put here by the render (pkg/node, readScript).
# shellcheck source=SCRIPTDIR/aio-lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/aio-lib.sh"

root=${AIO_UPDATE_ROOT:-}
config=${AIO_UPDATE_CONFIG:-$root/etc/kubernetes/aio-update.env}
if [[ -r $config ]]; then
	# shellcheck source=/dev/null
	. "$config"
fi
kubeconfig=$root${AIO_UPDATE_KUBECONFIG:-/etc/kubernetes/static-pod-resources/kube-apiserver-certs/secrets/node-kubeconfigs/localhost.kubeconfig}
state_dir=$root${AIO_UPDATE_STATE_DIR:-/var/lib/aio-update}
resources=$root${AIO_UPDATE_STATIC_POD_RESOURCES:-/etc/kubernetes/static-pod-resources}
pod_manifests=$root${AIO_UPDATE_POD_MANIFESTS:-/etc/kubernetes/manifests}
pod_wait=${AIO_UPDATE_POD_WAIT_SECONDS:-900}
retry=${AIO_UPDATE_RETRY_SECONDS:-5}
attempts=${AIO_UPDATE_ATTEMPTS:-10}
request_timeout=${AIO_UPDATE_REQUEST_TIMEOUT_SECONDS:-30}
client_image=${AIO_UPDATE_CLIENT_IMAGE:-}
pod_network_routes=${AIO_UPDATE_POD_NETWORK_ROUTES:-}
pod_network_unit=${AIO_UPDATE_POD_NETWORK_UNIT:-}

# use_client: pick_client, or the end of the run. The client reads the kubeconfig and, for apply, the update:
# podman mounts both at the same paths.
use_client() {
	local mounts=(--volume="${kubeconfig%/*}:${kubeconfig%/*}:ro,z")
	if [[ -n $update ]]; then
		mounts+=(--volume="$update:$update:ro,z")
	fi
	pick_client "${mounts[@]}" || die "no oc or kubectl on this host, and no podman to run ${client_image:-a client image}"
}

# revision_of MANIFEST: the revision label of a static pod manifest (the installer writes it as JSON).
revision_of() {
	local m
	[[ -f $1 ]] || return 1
	m=$(grep -o '"revision":"[0-9]*"' "$1" | head -n 1) || return 1
	m=${m#'"revision":"'}
	echo "${m%'"'}"
}

# replace SRC DEST MODE: write_file, or the end of the run.
replace() { write_file "$1" "$2" "$3" || die "could not write ${2#"$root"}"; }

# The update, read once: files.tsv (kind mode sha256 source destination) and components.tsv
# (name namespace mirror-pod manifest from to).
kinds=() modes=() sums=() sources=() dests=()
comp_names=() comp_ns=() comp_pods=() comp_manifests=() comp_from=() comp_to=()
read_update() {
	local kind mode sha src dest name ns pod manifest from to
	[[ -f $update/files.tsv && -f $update/components.tsv && -f $update/update.json ]] ||
		die "$update is not an update of render-static renew (no update.json, files.tsv or components.tsv)"
	id=$(grep -o '"id": *"[^"]*"' "$update/update.json" | head -n 1 | sed 's/.*"\([^"]*\)"$/\1/')
	[[ $id =~ ^[0-9A-Za-z-]+$ ]] || die "$update/update.json: no valid id"
	while IFS=$'\t' read -r kind mode sha src dest; do
		case $kind in
		revision | certs | file | pod | object | status) ;;
		*) die "files.tsv: unknown kind '$kind'" ;;
		esac
		[[ $mode =~ ^0[0-7]{3}$ ]] || die "files.tsv: $src: bad mode '$mode'"
		[[ $sha =~ ^[0-9a-f]{64}$ ]] || die "files.tsv: $src: bad sha256"
		[[ $src != /* && $src != *..* && -n $src ]] || die "files.tsv: bad source '$src'"
		case $kind in
		revision | certs | file | pod) [[ $dest == /* && $dest != *..* ]] || die "files.tsv: $src: bad destination '$dest'" ;;
		esac
		kinds+=("$kind") modes+=("$mode") sums+=("$sha") sources+=("$src") dests+=("$dest")
	done <"$update/files.tsv"
	while IFS=$'\t' read -r name ns pod manifest from to; do
		[[ $from =~ ^[0-9]+$ && $to =~ ^[0-9]+$ && $manifest != */* ]] || die "components.tsv: bad line for '$name'"
		comp_names+=("$name") comp_ns+=("$ns") comp_pods+=("$pod") comp_manifests+=("$manifest") comp_from+=("$from") comp_to+=("$to")
	done <"$update/components.tsv"
}

verify() {
	local i n=0 f rel have
	declare -A listed=([README]=1 [update.json]=1 [files.tsv]=1 [components.tsv]=1)
	for i in "${!sources[@]}"; do
		f=$update/${sources[$i]}
		[[ -f $f ]] || die "${sources[$i]} is missing from $update"
		have=$(sha256sum -- "$f")
		[[ ${have%% *} == "${sums[$i]}" ]] || die "${sources[$i]}: sha256 ${have%% *}, update.json says ${sums[$i]}: the update is damaged"
		listed[${sources[$i]}]=1
		n=$((n + 1))
	done
	while IFS= read -r -d '' f; do
		rel=${f#"$update"/}
		[[ -n ${listed[$rel]:-} ]] || die "$rel is in $update but not in its files.tsv"
	done < <(find "$update" -type f -print0)
	log "update $id: $n files verified (sha256)"
}

# check_revisions: each component the update moves must run the revision the update starts from.
check_revisions() {
	local i cur
	for i in "${!comp_names[@]}"; do
		((comp_to[i] > comp_from[i])) || continue
		cur=$(revision_of "$pod_manifests/${comp_manifests[$i]}") || die "${comp_names[$i]}: no static pod manifest ${comp_manifests[$i]} with a revision on this node"
		if ((cur == comp_to[i])) && [[ -e $state_dir/backup/$id/complete ]]; then
			log "${comp_names[$i]}: runs revision $cur already (an earlier apply of this update got that far)"
		elif ((cur != comp_from[i])); then
			die "${comp_names[$i]}: this node runs revision $cur, the update goes from ${comp_from[$i]} to ${comp_to[$i]}: apply the updates in between first (update.json names the previous one)"
		fi
	done
}

# backup: saves the current version of every file the update replaces, once, before anything changes.
backup() {
	local b=$state_dir/backup/$id i dest
	if [[ -e $b/complete ]]; then
		log "backup of update $id exists (an earlier apply was interrupted): keeping it"
		return 0
	fi
	rm -rf -- "$b"
	mkdir -p -- "$b/files"
	: >"$b/saved"
	: >"$b/absent"
	for i in "${!kinds[@]}"; do
		case ${kinds[$i]} in
		certs | file | pod) ;;
		*) continue ;;
		esac
		dest=${dests[$i]}
		if [[ -e $root$dest ]]; then
			mkdir -p -- "$b/files${dest%/*}"
			cp -p -- "$root$dest" "$b/files$dest"
			echo "$dest" >>"$b/saved"
		else
			echo "$dest" >>"$b/absent"
		fi
	done
	cp -- "$update/components.tsv" "$b/components.tsv"
	: >"$b/complete"
	echo "$id" >"$state_dir/last"
	log "kept the current version of $(wc -l <"$b/saved") files for a rollback in ${b#"$root"}"
}

# install_revisions: every new revision directory, staged and renamed into place; never over an existing one.
install_revisions() {
	local i dir name prev stage rel dest tok from
	declare -A dirs=()
	for i in "${!kinds[@]}"; do
		[[ ${kinds[$i]} == revision ]] || continue
		rel=${dests[$i]#/etc/kubernetes/static-pod-resources/}
		dirs[${rel%%/*}]=1
	done
	for name in "${!dirs[@]}"; do
		dir=$resources/$name
		if [[ -e $state_dir/installed/$name ]]; then
			log "${dir#"$root"}: installed by an earlier run"
			continue
		fi
		[[ ! -e $dir ]] || die "${dir#"$root"} exists: an existing revision is never overwritten (a different update made it?)"
		mkdir -p -- "$resources"
		stage=$(mktemp -d "$resources/.$name.aio-update.XXXXXX")
		for i in "${!kinds[@]}"; do
			[[ ${kinds[$i]} == revision ]] || continue
			rel=${dests[$i]#/etc/kubernetes/static-pod-resources/}
			[[ ${rel%%/*} == "$name" ]] || continue
			dest=$stage/${rel#*/}
			mkdir -p -- "${dest%/*}"
			cp -- "$update/${sources[$i]}" "$dest"
			chmod "${modes[$i]}" -- "$dest"
		done
		# The legacy service-account tokens: the previous revision of the same pod holds the live ones.
		from=
		for i in "${!comp_names[@]}"; do
			if [[ $name == "${comp_manifests[$i]%.yaml}-${comp_to[$i]}" ]]; then
				from=${comp_manifests[$i]%.yaml}-${comp_from[$i]}
			fi
		done
		for tok in "$stage"/secrets/*/token; do
			prev=$resources/$from/secrets/${tok#"$stage"/secrets/}
			if [[ -n $from && -f $prev && -f ${tok%/token}/namespace ]] && ! cmp -s -- "$prev" "$tok"; then
				cp -- "$prev" "$tok"
				chmod 0600 -- "$tok"
				log "$name: carried the live token of ${tok#"$stage"/} over from revision directory $from"
			fi
		done
		find "$stage" -type d -exec chmod 0755 {} +
		mv -- "$stage" "$dir"
		mkdir -p -- "$state_dir/installed"
		: >"$state_dir/installed/$name"
		log "installed ${dir#"$root"}"
	done
}

replace_files() {
	local i n=0
	for i in "${!kinds[@]}"; do
		case ${kinds[$i]} in
		certs | file) ;;
		*) continue ;;
		esac
		replace "$update/${sources[$i]}" "$root${dests[$i]}" "${modes[$i]}"
		n=$((n + 1))
		if [[ -n $pod_network_routes && ${dests[$i]} == "$pod_network_routes" ]]; then
			routes_changed=1
		fi
	done
	log "replaced $n cert-directory and node files"
	if ((routes_changed)); then
		rerun_pod_network
	fi
}

# rerun_pod_network: runs the pod network's unit again (a oneshot that remains active: restart runs it), which
# installs the routes file's routes; a failure ends the run ('aio-update rollback' puts the previous file back).
rerun_pod_network() {
	systemctl restart "$pod_network_unit" || die "$pod_network_unit failed with the new ${pod_network_routes}: see journalctl -u $pod_network_unit"
	log "ran $pod_network_unit again: the routes of ${pod_network_routes} are installed"
}

# started_since OUT SINCE: OUT ("<revision> <Ready> <startedAt>...") names at least one container start and none
# before SINCE (RFC 3339 UTC times compare as strings).
started_since() {
	local t n=0
	for t in ${1#* * }; do
		[[ $t < "$2" ]] && return 1
		n=$((n + 1))
	done
	((n > 0))
}

# wait_ready NAME NAMESPACE MIRROR-POD REVISION [SINCE]: until the mirror pod runs REVISION and is Ready (with
# SINCE: its containers started at or after SINCE, so the status is not the one the node left before), and /readyz
# answers; bounded by $pod_wait.
wait_ready() {
	local name=$1 ns=$2 pod=$3 rev=$4 since=${5:-} out=""
	use_client
	if wait_until "$pod_wait" "$retry" is_ready; then
		[[ -z $pod ]] || log "$name: $ns/$pod runs revision $rev and is Ready"
		return 0
	fi
	if [[ -n $pod ]]; then
		die "$name: $ns/$pod did not run revision $rev and become Ready within ${pod_wait}s (last seen: $(oneline "${out:-nothing}")); 'aio-update rollback' puts the previous revision back"
	fi
	die "the API did not answer /readyz within ${pod_wait}s; 'aio-update rollback' puts the previous files back"
}

# is_ready: one look of wait_ready (its variables); sets out to what the mirror pod showed.
is_ready() {
	if [[ -n $pod ]]; then
		out=$(kc get pod --namespace="$ns" "$pod" --output='jsonpath={.metadata.labels.revision} {.status.conditions[?(@.type=="Ready")].status} {.status.containerStatuses[*].state.running.startedAt}' 2>&1) || true
		[[ $out == "$rev True"* ]] || return 1
		if [[ -n $since ]] && ! started_since "$out" "$since"; then
			return 1
		fi
	fi
	kc get --raw=/readyz >/dev/null 2>&1
}

# roll_pods: each component's new static pod manifest, in the update's order, waiting for each.
roll_pods() {
	local i j manifest rolled=0
	for i in "${!kinds[@]}"; do
		[[ ${kinds[$i]} == pod ]] || continue
		manifest=${dests[$i]##*/}
		replace "$update/${sources[$i]}" "$root${dests[$i]}" "${modes[$i]}"
		log "replaced ${dests[$i]}"
		for j in "${!comp_names[@]}"; do
			if [[ ${comp_manifests[$j]} == "$manifest" ]]; then
				wait_ready "${comp_names[$j]}" "${comp_ns[$j]}" "${comp_pods[$j]}" "${comp_to[$j]}"
				rolled=$((rolled + 1))
			fi
		done
	done
	if ((rolled == 0)); then
		wait_ready "kube-apiserver" "" "" ""
		log "the API is ready"
	fi
}

apply_objects() {
	local i out pending=()
	for i in "${!kinds[@]}"; do
		case ${kinds[$i]} in
		object | status) pending+=("$i") ;;
		esac
	done
	((${#pending[@]} > 0)) || return 0
	use_client
	if retry "$attempts" "$retry" objects_pass; then
		return 0
	fi
	for i in "${pending[@]}"; do
		log "not applied: ${kinds[$i]} ${dests[$i]}"
	done
	die "${#pending[@]} API objects not applied after $attempts attempts (last: $(oneline "$out")); run 'aio-update apply' again"
}

# objects_pass: one pass of apply_objects over its pending objects and statuses; those not applied stay pending,
# and out holds what the client said last.
objects_pass() {
	local i f left=()
	for i in "${pending[@]}"; do
		f=$update/${sources[$i]}
		if [[ ${kinds[$i]} == object ]]; then
			out=$(kc apply --server-side --force-conflicts --field-manager=aio-update -f "$f" 2>&1) || left+=("$i")
		else
			# The object's manifest is the status patch's name without ".json", under manifests/.
			out=$(kc patch --subresource=status --type=merge --patch-file="$f" -f "$update/manifests/$(basename "${f%.json}")" 2>&1) || left+=("$i")
		fi
	done
	if ((${#left[@]} == 0)); then
		log "applied ${#pending[@]} API objects and statuses"
		return 0
	fi
	pending=("${left[@]}")
	return 1
}

# install VERB UPDATE_DIR: reads, locks, verifies and installs the update's files (steps 1-4 of apply, without
# the pod manifests). Returns 1 when the update was applied before (nothing to do).
install() {
	[[ $# -eq 2 ]] || die "usage: aio-update $1 UPDATE_DIR"
	[[ -d $2 ]] || die "$2: no such directory"
	update=$(cd -- "$2" && pwd)
	read_update
	mkdir -p -- "$state_dir/applied"
	exec 9>"$state_dir/lock"
	flock -n 9 || die "another aio-update runs (lock ${state_dir#"$root"}/lock)"
	if [[ -e $state_dir/applied/$id ]]; then
		log "update $id was applied before: nothing to do"
		return 1
	fi
	verify
	check_revisions
	backup
	install_revisions
	replace_files
}

# applied: records the update as applied and says what moved.
applied() {
	local i
	: >"$state_dir/applied/$id"
	for i in "${!comp_names[@]}"; do
		if ((comp_to[i] > comp_from[i])); then
			log "${comp_names[$i]}: revision ${comp_from[$i]} -> ${comp_to[$i]}"
		fi
	done
}

cmd_apply() {
	install apply "$@" || return 0
	roll_pods
	apply_objects
	applied
	log "update $id applied"
}

# restart_node: with the kubelet stopped, puts the update's static pod manifests in place and removes every
# component's pod sandbox (crictl), then starts the kubelet. Sets restarted to the time it started (UTC).
restart_node() {
	local i ids
	log "stopping the kubelet"
	systemctl stop kubelet.service || die "could not stop the kubelet"
	for i in "${!kinds[@]}"; do
		[[ ${kinds[$i]} == pod ]] || continue
		replace "$update/${sources[$i]}" "$root${dests[$i]}" "${modes[$i]}"
		log "replaced ${dests[$i]}"
	done
	for i in "${!comp_names[@]}"; do
		ids=$(crictl pods --namespace "${comp_ns[$i]}" --name "^${comp_pods[$i]}\$" --quiet) ||
			die "crictl could not list the pods of ${comp_names[$i]}; the kubelet is stopped: systemctl start kubelet"
		if [[ -n $ids ]]; then
			# shellcheck disable=SC2086 # one sandbox ID a word
			crictl rmp --force $ids >/dev/null || die "crictl could not remove the pod of ${comp_names[$i]}; the kubelet is stopped: systemctl start kubelet"
			log "${comp_names[$i]}: removed its pod $(oneline "$ids")(its containers start again with the renewed files)"
		fi
	done
	restarted=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	systemctl start kubelet.service || die "could not start the kubelet"
	log "started the kubelet: it reads its renewed credentials and starts every static pod"
}

cmd_recover() {
	install recover "$@" || return 0
	restart_node
	local i
	for i in "${!comp_names[@]}"; do
		wait_ready "${comp_names[$i]}" "${comp_ns[$i]}" "${comp_pods[$i]}" "${comp_to[$i]}" "$restarted"
	done
	log "the API is ready"
	apply_objects
	applied
	log "update $id applied: the node is back"
}

cmd_rollback() {
	[[ $# -le 1 ]] || die "usage: aio-update rollback [ID]"
	mkdir -p -- "$state_dir"
	exec 9>"$state_dir/lock"
	flock -n 9 || die "another aio-update runs (lock ${state_dir#"$root"}/lock)"
	id=${1:-$(cat "$state_dir/last" 2>/dev/null || true)}
	[[ -n $id ]] || die "no update was applied on this node: nothing to roll back"
	local b=$state_dir/backup/$id p mode manifests=() name ns pod manifest from to
	[[ -e $b/complete ]] || die "no complete backup of update $id in ${b#"$root"}"
	# Files first, the pod manifests last, so the previous pods start with their files in place.
	while IFS= read -r p; do
		case $p in
		/etc/kubernetes/manifests/*) manifests+=("$p") ;;
		*)
			mode=$(stat -c '%a' -- "$b/files$p")
			replace "$b/files$p" "$root$p" "0$mode"
			;;
		esac
	done <"$b/saved"
	while IFS= read -r p; do
		rm -f -- "$root$p"
	done <"$b/absent"
	for p in "${manifests[@]}"; do
		mode=$(stat -c '%a' -- "$b/files$p")
		replace "$b/files$p" "$root$p" "0$mode"
		log "restored $p"
	done
	if [[ -n $pod_network_routes ]] && grep -qxF -- "$pod_network_routes" "$b/saved"; then
		rerun_pod_network
	fi
	# Each component the update moved runs its previous revision again.
	while IFS=$'\t' read -r name ns pod manifest from to; do
		if ((to > from)); then
			wait_ready "$name" "$ns" "$pod" "$from"
		fi
	done <"$b/components.tsv"
	rm -f -- "$state_dir/applied/$id"
	log "update $id rolled back: $(wc -l <"$b/saved") files restored, $(wc -l <"$b/absent") removed; API objects keep the update's version"
}

cmd_status() {
	local m
	for m in "$pod_manifests"/*.yaml; do
		echo "${m##*/}: revision $(revision_of "$m" || echo '?')"
	done
	echo "applied updates: $(find "$state_dir/applied" -type f -printf '%f ' 2>/dev/null || true)"
	echo "last: $(cat "$state_dir/last" 2>/dev/null || echo none)"
}

update=
id=
restarted=
routes_changed=0
case ${1:-} in
apply)
	shift
	cmd_apply "$@"
	;;
recover)
	shift
	cmd_recover "$@"
	;;
rollback)
	shift
	cmd_rollback "$@"
	;;
status)
	cmd_status
	;;
*)
	die "usage: aio-update apply UPDATE_DIR | recover UPDATE_DIR | rollback [ID] | status"
	;;
esac
