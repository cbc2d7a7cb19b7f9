#!/usr/bin/env bash
# aio-csr-approver: approves the kubelet certificate requests of the cluster's nodes. No machine-approver runs on
# this cluster, and kube-controller-manager approves none of these by itself. Run by aio-csr-approver.timer;
# written by render-static. Settings come from aio-csr-approver.service (APPROVER_* variables); the nodes, each with
# its name and IPs, from the file APPROVER_NODES (one line per node: NAME IP [IP...]).
#
# One run reads the CSRs once (one list; every field printed URL-escaped, so no value can add a line or a field)
# and approves a pending CSR only when all of these hold:
#   - its signer is kubernetes.io/kubelet-serving or kubernetes.io/kube-apiserver-client-kubelet;
#   - a node of APPROVER_NODES asked for it: spec.username is system:node:<node> (kube-apiserver sets it from the
#     credential that created the CSR), spec.groups are system:nodes (and system:authenticated);
#   - its usages are exactly what the kubelet asks for with that signer and key type;
#   - its request is one PEM block of DER that this script walks element by element (parse_request): the subject
#     is exactly O=system:nodes, CN=system:node:<node>; the key is ECDSA or RSA; a client request has no attribute,
#     a serving request exactly one extension, the subject alternative name, whose every entry is the node's own
#     name or one of the node's own IPs; anything else, or anything not encoded as DER requires, is refused;
#   - openssl verifies its signature.
# It approves the very object it read: the approval carries that object's UID and resourceVersion, so kube-apiserver
# refuses it if the CSR was replaced or changed since. Anything else is left pending for a human, with the reason
# in the journal. The identity it runs as may approve for those two signers only. Every request is bounded by
# --request-timeout, the unit by TimeoutStartSec, the requests decided per node and run by APPROVER_MAX_PER_NODE.
# APPROVER_ROOT prefixes every path (tests run the script against a directory).
set -euo pipefail
shopt -s inherit_errexit
export LC_ALL=C

prog=aio-csr-approver
# The helpers the node's programs share (log, kc, ...): manifests/node/scripts/aio-lib.sh, sourced from this
# script's folder, or put here by the render (pkg/node, readScript).
# shellcheck source=SCRIPTDIR/aio-lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/aio-lib.sh"

root=${APPROVER_ROOT:-}
kubeconfig=$root${APPROVER_KUBECONFIG:?}
nodes_file=$root${APPROVER_NODES:?}
request_timeout=${APPROVER_REQUEST_TIMEOUT_SECONDS:-20}
max_per_node=${APPROVER_MAX_PER_NODE:-5}

serving_signer=kubernetes.io/kubelet-serving
client_signer=kubernetes.io/kube-apiserver-client-kubelet
# The largest request decided: a kubelet's (ECDSA P-256) is about 300 bytes, one with an RSA 4096 key about 1300.
max_der=4096
# One line per pending CSR: name|uid|resourceVersion|signer|username|,groups,|,usages,|request, each value
# URL-escaped by the template's urlquery (letters, digits, "-_.~", "+" for a space, "%XX" for any other byte), so a
# value holds no "|", space or newline. A request longer than 8192 characters (base64 of the PEM; max_der bytes of
# DER take at most 7500) is printed as "-".
list_template='{{range .items}}{{if not .status.conditions}}{{urlquery .metadata.name}}|{{urlquery .metadata.uid}}|{{urlquery .metadata.resourceVersion}}|{{urlquery .spec.signerName}}|{{urlquery .spec.username}}|,{{range .spec.groups}}{{urlquery .}},{{end}}|,{{range .spec.usages}}{{urlquery .}},{{end}}|{{if le (len .spec.request) 8192}}{{urlquery .spec.request}}{{else}}-{{end}}{{"\n"}}{{end}}{{end}}'

# shellcheck disable=SC2119 # no podman arguments: the approver runs no client image
pick_client || {
	log "neither oc nor kubectl is on this host"
	exit 1
}
for tool in openssl base64 od; do
	command -v "$tool" >/dev/null 2>&1 || {
		log "$tool is not on this host"
		exit 1
	}
done
[[ $request_timeout =~ ^[1-9][0-9]*$ && $max_per_node =~ ^[1-9][0-9]*$ ]] || {
	log "APPROVER_REQUEST_TIMEOUT_SECONDS and APPROVER_MAX_PER_NODE must be positive integers"
	exit 1
}
# enc TEXT: TEXT as urlquery prints it (TEXT is ASCII: the constants and node names this script compares with).
enc() {
	local s=$1 out='' c i
	for ((i = 0; i < ${#s}; i++)); do
		c=${s:i:1}
		case $c in
		[A-Za-z0-9._~-]) out+=$c ;;
		' ') out+=+ ;;
		*)
			printf -v c '%%%02X' "'$c"
			out+=$c
			;;
		esac
	done
	printf '%s' "$out"
}

# is_dns_name NAME: NAME is a DNS-1123 subdomain (lower-case labels of letters, digits and inner '-', at most 63
# characters each, 253 in all).
is_dns_name() {
	local label
	local -a labels
	[[ ${#1} -le 253 && $1 =~ ^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$ ]] || return 1
	IFS=. read -r -a labels <<<"$1"
	for label in "${labels[@]}"; do
		((${#label} <= 63)) || return 1
	done
}

# ip_hex ADDRESS: prints ADDRESS (IPv4 dotted quad, or IPv6 in hexadecimal groups with at most one "::") as its
# bytes in hexadecimal: 8 digits for IPv4, 32 for IPv6; fails on anything else.
ip_hex() {
	local s=$1 out='' g n head tail i
	local -a hp=() tp=()
	if [[ $s =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$ ]]; then
		for n in "${BASH_REMATCH[@]:1}"; do
			[[ $n == 0 || $n != 0* ]] && ((n <= 255)) || return 1
			printf -v g '%02x' "$n"
			out+=$g
		done
		echo "$out"
		return
	fi
	local groups='([0-9a-fA-F]{1,4}(:[0-9a-fA-F]{1,4})*)'
	if [[ $s == *::* ]]; then
		head=${s%%::*} tail=${s#*::}
		[[ $head =~ ^$groups?$ && $tail =~ ^$groups?$ ]] || return 1
		[[ -z $head ]] || IFS=: read -r -a hp <<<"$head"
		[[ -z $tail ]] || IFS=: read -r -a tp <<<"$tail"
		((${#hp[@]} + ${#tp[@]} <= 7)) || return 1
	else
		[[ $s =~ ^$groups$ ]] || return 1
		IFS=: read -r -a hp <<<"$s"
		((${#hp[@]} == 8)) || return 1
	fi
	for g in "${hp[@]}"; do printf -v g '%04x' "0x$g" && out+=$g; done
	for ((i = ${#hp[@]} + ${#tp[@]}; i < 8; i++)); do out+=0000; done
	for g in "${tp[@]}"; do printf -v g '%04x' "0x$g" && out+=$g; done
	echo "$out"
}

# The nodes: node_ips[NAME] its IPs (" hex hex "), ip_owner[hex] the node of an IP, node_of[username, escaped] the
# node. A malformed file is an error: nothing is approved with half a configuration.
declare -A node_ips=() ip_owner=() node_of=()
[[ -r $nodes_file ]] || {
	log "cannot read the nodes file $nodes_file"
	exit 1
}
bad() {
	log "$nodes_file:$lineno: $*"
	exit 1
}
lineno=0
while read -r node ips || [[ -n $node ]]; do
	lineno=$((lineno + 1))
	[[ -n $node && $node != \#* ]] || continue
	is_dns_name "$node" || bad "node name \"$node\" is not a DNS-1123 subdomain"
	[[ -z ${node_ips[$node]+x} ]] || bad "node $node is listed twice"
	read -r -a addrs <<<"$ips"
	((${#addrs[@]} > 0)) || bad "node $node has no IP"
	node_ips[$node]=' '
	for a in "${addrs[@]}"; do
		h=$(ip_hex "$a") || bad "\"$a\" of node $node is not an IP address"
		[[ -z ${ip_owner[$h]+x} ]] || bad "IP $a of node $node is also node ${ip_owner[$h]}'s"
		ip_owner[$h]=$node
		node_ips[$node]+="$h "
	done
	node_of[$(enc "system:node:$node")]=$node
done <"$nodes_file"
((${#node_ips[@]} > 0)) || {
	log "$nodes_file lists no node"
	exit 1
}

# The bytes of the request being decided, as decimal numbers (load_request), and what tlv read last.
declare -a der=()
t_tag=0 t_body=0 t_end=0 hx='' txt=''

# tlv POS LIMIT: reads the element at POS, which must end by LIMIT: t_tag, t_body (where its contents start) and
# t_end (where it ends). Only DER: a one-byte tag, a definite length in its shortest form, of at most two bytes.
tlv() {
	local p=$1 limit=$2 l
	((p + 2 <= limit)) || return 1
	t_tag=${der[p]}
	(((t_tag & 31) != 31)) || return 1
	l=${der[p + 1]}
	p=$((p + 2))
	if ((l == 0x81)); then
		((p + 1 <= limit)) || return 1
		l=${der[p]}
		p=$((p + 1))
		((l >= 0x80)) || return 1
	elif ((l == 0x82)); then
		((p + 2 <= limit)) || return 1
		l=$((der[p] * 256 + der[p + 1]))
		p=$((p + 2))
		((l >= 0x100)) || return 1
	elif ((l >= 0x80)); then
		return 1
	fi
	t_body=$p
	t_end=$((p + l))
	((t_end <= limit))
}

# is TAG POS LIMIT: the element at POS is well-formed (tlv) and has tag TAG.
is() { tlv "$2" "$3" && ((t_tag == $1)); }

# expect TAG POS LIMIT WHAT: is, or prints why not.
expect() {
	is "$1" "$2" "$3" || {
		echo "its request is not the kubelet's kind of DER at byte $2 ($4)"
		return 1
	}
}

# oid POS LIMIT WHAT: expect an object identifier at POS, its bytes in hexadecimal in hx.
oid() {
	expect 0x06 "$1" "$2" "$3" || return 1
	hexof "$t_body" "$t_end"
}

# only TAG POS LIMIT WHAT WHY: like expect, and the element is all there is up to LIMIT; otherwise prints WHY.
only() {
	expect "$1" "$2" "$3" "$4" || return 1
	((t_end == $3)) || {
		echo "$5"
		return 1
	}
}

# hexof START END: the bytes from START to END in hexadecimal, in hx.
hexof() {
	local i
	hx=''
	for ((i = $1; i < $2; i++)); do printf -v hx '%s%02x' "$hx" "${der[i]}"; done
}

# The characters a name may hold, by byte value: lower-case letters, digits, '-', '.' and ':'.
declare -A chr=()
for c in {a..z} {0..9} - . :; do
	printf -v code '%d' "'$c"
	chr[$code]=$c
done

# textof START END: the bytes from START to END as text, in txt; fails on any byte not in chr.
textof() {
	local i
	txt=''
	for ((i = $1; i < $2; i++)); do
		[[ -n ${chr[${der[i]}]+x} ]] || return 1
		txt+=${chr[${der[i]}]}
	done
}

# load_request REQUEST: REQUEST (spec.request as listed) is exactly one PEM block "CERTIFICATE REQUEST" as Go and
# openssl write it (64-character lines, no headers, nothing around it), so it is the DER that kube-controller-manager
# parses; its bytes go to der, its base64 to der_b64.
load_request() {
	local req=$1 pem body canon not_pem="its request is not exactly one PEM block CERTIFICATE REQUEST (64-character lines, nothing around it)"
	[[ $req != - ]] || {
		echo "its request is larger than $max_der bytes"
		return 1
	}
	# The listed request is base64, whose '+', '/' and '=' urlquery escapes; anything else is not base64.
	pem=${req//%2B/+} pem=${pem//%2F//} pem=${pem//%3D/=}
	if [[ ! $req =~ ^[A-Za-z0-9%]+$ || $pem == *%* ]]; then
		echo "its request is not base64"
		return 1
	fi
	body=$(base64 -d <<<"$pem" 2>/dev/null | sed '1d;$d' | tr -d '\n\000') || body=''
	[[ -n $body && $body =~ ^[A-Za-z0-9+/=]+$ ]] || {
		echo "$not_pem"
		return 1
	}
	((${#body} <= (max_der + 2) * 4 / 3)) || {
		echo "its request is larger than $max_der bytes"
		return 1
	}
	canon=$({
		echo "-----BEGIN CERTIFICATE REQUEST-----"
		base64 -d <<<"$body" 2>/dev/null | base64 -w 64
		echo "-----END CERTIFICATE REQUEST-----"
	} | base64 -w 0) || canon=''
	[[ $canon == "$pem" ]] || {
		echo "$not_pem"
		return 1
	}
	der_b64=$body
	der=()
	read -r -d '' -a der < <(base64 -d <<<"$body" | od -An -v -tu1) || true
}

# DER of the object identifiers and values the kubelet's requests hold.
oid_o=55040a                     # organizationName
oid_cn=550403                    # commonName
oid_ec=2a8648ce3d0201            # id-ecPublicKey
oid_rsa=2a864886f70d010101       # rsaEncryption
oid_ext_request=2a864886f70d01090e # PKCS#9 extensionRequest
oid_san=551d11                   # subjectAltName
curves=' 2a8648ce3d030107 2b81040022 2b81040023 ' # P-256 (the kubelet's), P-384, P-521

# rdn POS LIMIT OID VALUE: at POS is the relative distinguished name SET { SEQUENCE { OID, VALUE } } and nothing
# more, VALUE a PrintableString or UTF8String (Go parses either to the same string); sets at to its end.
rdn() {
	local set_end seq_end
	is 0x31 "$1" "$2" || return 1
	set_end=$t_end
	is 0x30 "$t_body" "$set_end" || return 1
	seq_end=$t_end
	((seq_end == set_end)) || return 1
	is 0x06 "$t_body" "$seq_end" || return 1
	hexof "$t_body" "$t_end"
	[[ $hx == "$3" ]] || return 1
	tlv "$t_end" "$seq_end" || return 1
	((t_tag == 0x13 || t_tag == 0x0c)) || return 1
	((t_end == seq_end)) || return 1
	textof "$t_body" "$t_end" || return 1
	[[ $txt == "$4" ]] || return 1
	at=$set_end
}

# sans POS LIMIT NODE: the attributes of a serving request, from POS to LIMIT, are one extensionRequest holding one
# extension, the subject alternative name (not critical), whose entries are all NODE's name or NODE's IPs, and
# there is at least one. Prints why not.
sans() {
	local node=$3 end n=0 ip owner
	only 0x30 "$1" "$2" attribute "its request has more than one attribute (the kubelet's has one: its extensions)" || return 1
	end=$t_end
	oid "$t_body" "$end" attribute || return 1
	[[ $hx == "$oid_ext_request" ]] || {
		echo "its request has an attribute other than extensionRequest (OID $hx)"
		return 1
	}
	only 0x31 "$t_end" "$end" extensionRequest "its extensionRequest has bytes after its values" || return 1
	end=$t_end
	only 0x30 "$t_body" "$end" extensions "its extensionRequest has more than one value" || return 1
	end=$t_end
	only 0x30 "$t_body" "$end" extension "its request asks for more than one extension (the kubelet asks for one: the subject alternative name)" || return 1
	oid "$t_body" "$end" extension || return 1
	[[ $hx == "$oid_san" ]] || {
		echo "its request asks for an extension other than the subject alternative name (OID $hx)"
		return 1
	}
	if ! tlv "$t_end" "$end" || ((t_tag != 0x04 || t_end != end)); then
		echo "its subject alternative name is critical or malformed (the kubelet's is neither)"
		return 1
	fi
	end=$t_end
	only 0x30 "$t_body" "$end" "subject alternative name" "its subject alternative name has bytes after its names" || return 1
	local p=$t_body
	while ((p < end)); do
		tlv "$p" "$end" || {
			echo "its request is not the kubelet's kind of DER at byte $p (subject alternative name)"
			return 1
		}
		p=$t_end
		n=$((n + 1))
		case $t_tag in
		130) # dNSName
			if ! textof "$t_body" "$t_end" || [[ $txt == *:* ]]; then
				echo "a DNS name with a byte that is not a-z, 0-9, '-' or '.' (the kubelet's are node names)"
				return 1
			fi
			is_dns_name "$txt" || {
				echo "a DNS name that is not a DNS-1123 subdomain: $txt"
				return 1
			}
			[[ $txt == "$node" ]] || {
				echo "a DNS name other than node $node's: $txt"
				return 1
			}
			;;
		135) # iPAddress
			((t_end - t_body == 4 || t_end - t_body == 16)) || {
				echo "an IP address of $((t_end - t_body)) bytes"
				return 1
			}
			hexof "$t_body" "$t_end"
			if [[ ${node_ips[$node]} != *" $hx "* ]]; then
				ip=$(ip_text "$hx")
				owner=${ip_owner[$hx]-}
				[[ -z $owner ]] || owner=" (node $owner's)"
				echo "an IP address other than node $node's: $ip$owner"
				return 1
			fi
			;;
		129)
			echo "an email address (the kubelet asks for none)"
			return 1
			;;
		134)
			echo "a URI (the kubelet asks for none)"
			return 1
			;;
		*)
			printf 'a name with tag 0x%02x (the kubelet asks for DNS names and IP addresses only)\n' "$t_tag"
			return 1
			;;
		esac
	done
	((n > 0)) || {
		echo "no name at all"
		return 1
	}
}

# ip_text HEX: an address of ip_hex's form for the journal: dotted quad, or eight hexadecimal groups.
ip_text() {
	local h=$1 i out=''
	if ((${#h} == 8)); then
		for ((i = 0; i < 8; i += 2)); do out+=$((16#${h:i:2})).; done
		echo "${out%.}"
		return
	fi
	for ((i = 0; i < 32; i += 4)); do out+=$(printf '%x' "$((16#${h:i:4}))"):; done
	echo "${out%:}"
}

# parse_request KIND NODE: the request in der is one the kubelet of NODE makes for KIND (serving or client):
# every element read, nothing after it. Sets keytype (ec or rsa). Prints why not.
parse_request() {
	local kind=$1 node=$2 n=${#der[@]} info_end spki_end alg_end at
	only 0x30 0 "$n" "certificate request" "its request has bytes after it" || return 1
	local end=$t_end
	expect 0x30 "$t_body" "$end" "certification request info" || return 1
	info_end=$t_end
	local sig_at=$t_end
	expect 0x02 "$t_body" "$info_end" "version" || return 1
	hexof "$t_body" "$t_end"
	[[ $hx == 00 ]] || {
		echo "its request is not version 1"
		return 1
	}
	expect 0x30 "$t_end" "$info_end" "subject" || return 1
	local subject_end=$t_end
	if ! rdn "$t_body" "$subject_end" "$oid_o" system:nodes || ! rdn "$at" "$subject_end" "$oid_cn" "system:node:$node" ||
		((at != subject_end)); then
		echo "its subject is not exactly O=system:nodes, CN=system:node:$node"
		return 1
	fi
	expect 0x30 "$subject_end" "$info_end" "public key" || return 1
	spki_end=$t_end
	expect 0x30 "$t_body" "$spki_end" "public key algorithm" || return 1
	alg_end=$t_end
	oid "$t_body" "$alg_end" "public key algorithm" || return 1
	case $hx in
	"$oid_ec")
		keytype=ec
		oid "$t_end" "$alg_end" curve || return 1
		[[ $curves == *" $hx "* ]] || {
			echo "an ECDSA key on a curve other than P-256, P-384 or P-521"
			return 1
		}
		;;
	"$oid_rsa")
		keytype=rsa
		expect 0x05 "$t_end" "$alg_end" "RSA parameters" || return 1
		((t_body == t_end)) || {
			echo "RSA parameters other than NULL"
			return 1
		}
		;;
	*)
		echo "a key that is neither ECDSA nor RSA (the kubelet's are ECDSA)"
		return 1
		;;
	esac
	((t_end == alg_end)) || {
		echo "its key algorithm has more parameters than ECDSA and RSA have"
		return 1
	}
	only 0x03 "$alg_end" "$spki_end" "public key" "its public key has bytes after its bits" || return 1
	only 0xa0 "$spki_end" "$info_end" attributes "its request has bytes after its attributes" || return 1
	if [[ $kind == client ]]; then
		((t_body == t_end)) || {
			echo "a client request with attributes (the kubelet's has none: no names, no extensions)"
			return 1
		}
	elif ((t_body == t_end)); then
		echo "a serving request without names"
		return 1
	else
		sans "$t_body" "$t_end" "$node" || return 1
	fi
	expect 0x30 "$sig_at" "$end" "signature algorithm" || return 1
	only 0x03 "$t_end" "$end" signature "its request has bytes after its signature" || return 1
}

# usages_are LISTED WANT...: the listed usages (",a,b,", escaped) are exactly WANT, each once, in any order.
usages_are() {
	local listed=$1 u
	shift
	local -A want=() seen=()
	local -a got=()
	for u in "$@"; do want[$(enc "$u")]=1; done
	IFS=, read -r -a got <<<"${listed#,}"
	for u in "${got[@]}"; do
		[[ -n $u && -n ${want[$u]+x} && -z ${seen[$u]+x} ]] || return 1
		seen[$u]=1
	done
	((${#seen[@]} == ${#want[@]}))
}

# check KIND NODE NAME UID RV GROUPS USAGES REQUEST: prints why the CSR is not NODE's own kubelet request of KIND
# (serving or client) and fails, or succeeds silently. Every value is as listed (URL-escaped).
check() {
	local kind=$1 node=$2 name=$3 uid=$4 rv=$5 groups=$6 usages=$7 req=$8 g
	local -a gs=() asked=()
	# The name, UID and resourceVersion go into the approval as they are: only these forms.
	[[ ${#name} -le 253 && $name =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ ]] || {
		echo "its name is not a DNS-1123 subdomain"
		return 1
	}
	[[ $uid =~ ^[0-9a-fA-F-]{1,64}$ && $rv =~ ^[0-9]{1,20}$ ]] || {
		echo "its UID or resourceVersion is not of the API server's form"
		return 1
	}
	local nodes_group authenticated has_nodes='' other=''
	nodes_group=$(enc system:nodes) authenticated=$(enc system:authenticated)
	IFS=, read -r -a gs <<<"${groups#,}"
	for g in "${gs[@]}"; do
		case $g in
		"$nodes_group") has_nodes=1 ;;
		"$authenticated") ;;
		*) other=1 ;;
		esac
	done
	[[ -n $has_nodes && -z $other ]] || {
		echo "its requester's groups are not system:nodes (and system:authenticated): ${groups//+/ }"
		return 1
	}
	load_request "$req" || return 1
	parse_request "$kind" "$node" || return 1
	asked=("digital signature")
	[[ $keytype != rsa ]] || asked+=("key encipherment")
	if [[ $kind == serving ]]; then asked+=("server auth"); else asked+=("client auth"); fi
	usages_are "$usages" "${asked[@]}" || {
		local IFS=,
		echo "its usages are ${usages//+/ } (with an $keytype key the kubelet asks for exactly ,${asked[*]},)"
		return 1
	}
	# openssl 3.0 exits 0 when the signature does not verify: its verdict is the one line it prints (with -noout
	# it prints nothing of the request; OpenSSL 1.1 said "verify OK").
	local verdict
	verdict=$(base64 -d <<<"$der_b64" | openssl req -inform DER -noout -verify 2>&1) || verdict=''
	[[ $verdict == "Certificate request self-signature verify OK" || $verdict == "verify OK" ]] || {
		echo "its signature does not verify (openssl req -verify)"
		return 1
	}
}

# approve NAME UID RV MESSAGE: approves the CSR NAME only if it still is the object read (UID, resourceVersion).
approve() {
	printf '{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"%s","uid":"%s","resourceVersion":"%s"},"status":{"conditions":[{"type":"Approved","status":"True","reason":"AIOCSRApprover","message":"%s"}]}}\n' "$1" "$2" "$3" "$4" |
		{ kc replace --raw "/apis/certificates.k8s.io/v1/certificatesigningrequests/$1/approval" -f - >/dev/null; } 2>&1
}

# The one read. Pending CSRs of other signers and other requesters are left alone without a word.
pending=$(kc get csr -o go-template="$list_template") || {
	log "cannot list the CSRs"
	exit 1
}
enc_serving=$(enc "$serving_signer") enc_client=$(enc "$client_signer")
declare -A decided=()
while IFS='|' read -r name uid rv signer user groups usages req; do
	case $signer in
	"$enc_serving") kind=serving signer=$serving_signer ;;
	"$enc_client") kind=client signer=$client_signer ;;
	*) continue ;;
	esac
	[[ -n $user ]] || continue
	node=${node_of[$user]-}
	[[ -n $node ]] || continue
	count=${decided[$node]:-0}
	decided[$node]=$((count + 1))
	if ((count >= max_per_node)); then
		((count > max_per_node)) || log "more than $max_per_node pending requests from node $node: the others wait for the next run"
		continue
	fi
	if ! why=$(check "$kind" "$node" "$name" "$uid" "$rv" "$groups" "$usages" "$req"); then
		log "leaving $name ($signer, from system:node:$node) pending: ${why:-its check failed}"
		continue
	fi
	if ! out=$(approve "$name" "$uid" "$rv" "node $node's own kubelet $kind request (aio-csr-approver)"); then
		log "could not approve $name: $(oneline "$out")"
		continue
	fi
	log "approved $name ($signer, from system:node:$node)"
done <<<"$pending"
