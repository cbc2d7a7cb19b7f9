#!/usr/bin/env bash
# aio-csr-approver: approves the all-in-one node's own kubelet certificate requests. No machine-approver runs on
# this cluster, and kube-controller-manager approves none of these by itself. Run by aio-csr-approver.timer;
# written by render-static, every setting comes from aio-csr-approver.service (APPROVER_* variables).
#
# One run lists the CSRs once and approves a pending CSR only when all of these hold:
#   - its signer is kubernetes.io/kubelet-serving or kubernetes.io/kube-apiserver-client-kubelet;
#   - the node itself asked for it (spec.username system:node:<node>): the kubelet asking for its serving
#     certificate, or renewing its client certificate with the one it has;
#   - the request's subject is exactly CN=system:node:<node>, O=system:nodes;
#   - a serving request names only the node's name and IPs (APPROVER_ALLOWED_SANS), a client request none.
# Anything else is left pending for a human. The identity it runs as may approve for those two signers only.
# Every request is bounded by --request-timeout, and the unit by TimeoutStartSec.
# APPROVER_ROOT prefixes every path (tests run the script against a directory).
set -euo pipefail

root=${APPROVER_ROOT:-}
kubeconfig=$root${APPROVER_KUBECONFIG:?}
node=${APPROVER_NODE_NAME:?}
IFS='|' read -r -a allowed_sans <<<"${APPROVER_ALLOWED_SANS:?}"
request_timeout=${APPROVER_REQUEST_TIMEOUT_SECONDS:-20}

log() { echo "aio-csr-approver: $*"; }

if command -v oc >/dev/null 2>&1; then
	client=(oc)
	approve=(adm certificate approve)
elif command -v kubectl >/dev/null 2>&1; then
	client=(kubectl)
	approve=(certificate approve)
else
	log "neither oc nor kubectl is on this host"
	exit 1
fi
kc() { "${client[@]}" --kubeconfig="$kubeconfig" --request-timeout="${request_timeout}s" "$@"; }

# sans_allowed SANS: every entry of the comma-separated list (openssl's text form) is allowed, and there is one.
sans_allowed() {
	local list=$1 entry a ok entries
	[[ -n $list ]] || return 1
	IFS=',' read -r -a entries <<<"$list"
	for entry in "${entries[@]}"; do
		entry=${entry#"${entry%%[![:space:]]*}"}
		ok=
		for a in "${allowed_sans[@]}"; do
			[[ $entry == "$a" ]] && ok=1
		done
		[[ -n $ok ]] || return 1
	done
}

# check NAME SIGNER: prints why the request of CSR NAME is not the node's own, or nothing when it is.
check() {
	local name=$1 signer=$2 req subject sans
	req=$(kc get csr "$name" -o jsonpath='{.spec.request}' | base64 -d) || {
		echo "cannot read its request"
		return
	}
	subject=$(openssl req -noout -subject -nameopt RFC2253 <<<"$req" 2>/dev/null) || {
		echo "its request does not parse"
		return
	}
	if [[ $subject != "subject=CN=system:node:$node,O=system:nodes" ]]; then
		echo "subject is ${subject#subject=}"
		return
	fi
	sans=$(openssl req -noout -text <<<"$req" 2>/dev/null | sed -n '/X509v3 Subject Alternative Name:/{n;p;}' | sed 's/^[[:space:]]*//')
	case $signer in
	kubernetes.io/kubelet-serving)
		sans_allowed "$sans" || echo "names other than the node's: ${sans:-none}"
		;;
	kubernetes.io/kube-apiserver-client-kubelet)
		[[ -z $sans ]] || echo "a client certificate with names: $sans"
		;;
	esac
}

pending=$(kc get csr -o go-template='{{range .items}}{{if not .status.conditions}}{{.metadata.name}} {{.spec.signerName}} {{.spec.username}}{{"\n"}}{{end}}{{end}}')
while read -r name signer user; do
	[[ -n $name ]] || continue
	case $signer in
	kubernetes.io/kubelet-serving | kubernetes.io/kube-apiserver-client-kubelet) ;;
	*) continue ;;
	esac
	[[ $user == "system:node:$node" ]] || continue
	why=$(check "$name" "$signer")
	if [[ -n $why ]]; then
		log "leaving $name ($signer, from $user) pending: $why"
		continue
	fi
	if ! out=$(kc "${approve[@]}" "$name" 2>&1); then
		log "could not approve $name: $(tr '\n' ' ' <<<"$out")"
		continue
	fi
	log "approved $name ($signer, from $user)"
done <<<"$pending"
