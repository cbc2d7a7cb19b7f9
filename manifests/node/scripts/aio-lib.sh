# shellcheck shell=bash disable=SC2154 # prog, root, kubeconfig, request_timeout and client_image are the script's
# aio-lib.sh: the helpers the node's own programs share (aiokube.sh, aio-update.sh, aio-csr-approver.sh,
# aio-pod-network.sh). It is no program of its own: the render puts it in each script in place of the line that
# sources it (pkg/node, readScript), so every installed script stays one file; run from the repository, a script
# sources it from its own folder.
# TestScriptLibrary (pkg/node) keeps the scripts and the library in step.
#
# The script sets prog (the name every log line starts with) and root (the prefix of every node path), and, before
# it calls kc, kubeconfig and request_timeout; client_image, if set, is the image pick_client runs oc from.

# log MESSAGE...: one line for the journal, "<prog>: MESSAGE".
log() { echo "$prog: $*"; }

# die MESSAGE...: "<prog>: error: MESSAGE" on stderr, and the end of the run (exit 1).
die() {
	echo "$prog: error: $*" >&2
	exit 1
}

# oneline TEXT: TEXT with its newlines turned into spaces, for one log line.
oneline() { tr '\n' ' ' <<<"$1"; }

# client is the API client command pick_client chose (empty until then); kc runs it.
client=()

# pick_client [PODMAN_ARG...]: chooses the API client once: the host's oc (RHCOS ships it), else kubectl, else oc
# from $client_image through podman, with the node's pull secret and PODMAN_ARG... (the script's mounts). Returns 1,
# choosing nothing, when there is none.
# shellcheck disable=SC2120 # the CSR approver passes none: it runs no client image
pick_client() {
	if ((${#client[@]} > 0)); then
		return 0
	elif command -v oc >/dev/null 2>&1; then
		client=(oc)
	elif command -v kubectl >/dev/null 2>&1; then
		client=(kubectl)
	elif [[ -n ${client_image:-} ]] && command -v podman >/dev/null 2>&1; then
		client=(podman run --rm --network=host --user=0:0 --authfile="$root/var/lib/kubelet/config.json" "$@"
			--entrypoint=oc "$client_image")
	else
		return 1
	fi
}

# kc ARG...: the client with $kubeconfig, each request bounded by $request_timeout seconds.
kc() { "${client[@]}" --kubeconfig="$kubeconfig" --request-timeout="${request_timeout}s" "$@"; }

# write_file SRC DEST MODE: gives DEST the contents of SRC with MODE, through a hidden temporary file in DEST's
# directory (made if missing) renamed over it, so a reader sees the old or the new contents, never a part (and the
# kubelet, which skips hidden files, no half-written pod manifest). Returns 1, leaving no temporary file, when it
# cannot.
write_file() {
	local src=$1 dest=$2 mode=$3 dir tmp
	dir=${dest%/*}
	mkdir -p -- "$dir" || return 1
	tmp=$(mktemp "$dir/.${dest##*/}.$prog.XXXXXX") || return 1
	if ! cat -- "$src" >"$tmp" || ! chmod "$mode" -- "$tmp" || ! mv -f -- "$tmp" "$dest"; then
		rm -f -- "$tmp"
		return 1
	fi
}

# wait_until SECONDS INTERVAL CMD...: runs CMD until it succeeds, INTERVAL seconds after each failure; returns 1 when
# it fails once SECONDS have passed since wait_until began.
wait_until() {
	local deadline=$((SECONDS + $1)) interval=$2
	shift 2
	until "$@"; do
		if ((SECONDS >= deadline)); then
			return 1
		fi
		sleep "$interval"
	done
}

# retry PASSES INTERVAL CMD...: runs CMD until it succeeds, at most PASSES times, INTERVAL seconds apart; returns 1
# when every pass failed. CMD finds the number of its pass in pass.
retry() {
	local passes=$1 interval=$2 pass
	shift 2
	for ((pass = 1; pass <= passes; pass++)); do
		if "$@"; then
			return 0
		fi
		if ((pass < passes)); then
			sleep "$interval"
		fi
	done
	return 1
}
