#!/usr/bin/env bash
# shellcheck disable=SC2154 # kubeconfig, request_timeout: aio-lib.sh's kc, which this script does not run
# aio-pod-network: the node's side of the render's built-in pod network (docs/network.md). Written by
# render-static; run by aio-pod-network.service before CRI-O and the kubelet start, on every boot, and again by
# aio-update when an update brings a new routes file. Idempotent: every step sets a state, whatever was there.
#
#   1. Reads AIO_POD_NETWORK_ROUTES (the render's data: "cluster CIDR" lines, the cluster networks; "route CIDR
#      GATEWAY" lines, the other nodes' pod CIDRs, or the cluster networks via the control-plane node).
#   2. Turns on forwarding for each family of the cluster networks, and takes no ICMP redirect (a worker's pods
#      reach another worker's through the control-plane node, which would otherwise tell it a shorter way round
#      it and break the symmetry conntrack relies on).
#   3. Makes sure bridge netfilter is on (loads br_netfilter when /proc/sys/net/bridge is missing), so that
#      iptables sees a pod's traffic to a Service whose endpoint is on the same bridge (kube-proxy's DNAT and its
#      return).
#   4. Installs every route with `ip route replace`.
#   5. Replaces the nft table "inet aio-pod-network" at once (nft -f of a file that deletes and adds it): traffic
#      from a cluster network to outside the cluster networks is masqueraded as the node's address.
#   6. The kubelet's resolv.conf for pods (CoreDNS forwards to it): when every nameserver of /etc/resolv.conf is a
#      loopback address (systemd-resolved's stub, 127.0.0.53) and /run/systemd/resolve/resolv.conf exists, writes
#      the kubelet configuration drop-in AIO_POD_NETWORK_KUBELET_DROPIN (resolvConf: that file), since a loopback
#      nameserver inside a pod is the pod itself and CoreDNS would forward to itself (coredns#2087); otherwise it
#      removes the drop-in. k3s checks the same two files (its docs, "Nameserver Viability Checks").
#
# AIO_POD_NETWORK_ROOT prefixes every file path (tests run the script against a directory with stand-ins for ip,
# nft, sysctl and modprobe). Exit 0 on success, 1 on any failure, with the reason.
set -euo pipefail

prog=aio-pod-network
# The helpers the node's programs share (log, write_file, ...): manifests/node/scripts/aio-lib.sh, sourced from
# this script's folder, or put here by the render (pkg/node, readScript).
# shellcheck source=SCRIPTDIR/aio-lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/aio-lib.sh"

root=${AIO_POD_NETWORK_ROOT:-}
routes_file=$root${AIO_POD_NETWORK_ROUTES:?}
dropin=$root${AIO_POD_NETWORK_KUBELET_DROPIN:?}
resolv=$root/etc/resolv.conf
resolved=/run/systemd/resolve/resolv.conf
table=aio-pod-network

clusters4=() clusters6=() route_dests=() route_gws=()
read_routes() {
	local kind a b rest
	[[ -r $routes_file ]] || die "cannot read ${routes_file#"$root"}"
	while read -r kind a b rest || [[ -n $kind ]]; do
		case $kind in
		'' | '#'*) continue ;;
		cluster)
			[[ -n $a && -z $b ]] || die "${routes_file#"$root"}: bad line: cluster $a $b $rest"
			if [[ $a == *:* ]]; then clusters6+=("$a"); else clusters4+=("$a"); fi
			;;
		route)
			[[ -n $a && -n $b && -z $rest ]] || die "${routes_file#"$root"}: bad line: route $a $b $rest"
			route_dests+=("$a") route_gws+=("$b")
			;;
		*) die "${routes_file#"$root"}: unknown line: $kind $a $b $rest" ;;
		esac
	done <"$routes_file"
	((${#clusters4[@]} + ${#clusters6[@]} > 0)) || die "${routes_file#"$root"} names no cluster network"
}

set_sysctls() {
	local s=()
	if ((${#clusters4[@]} > 0)); then
		s+=(net.ipv4.ip_forward=1 net.ipv4.conf.all.accept_redirects=0 net.ipv4.conf.all.send_redirects=0)
	fi
	if ((${#clusters6[@]} > 0)); then
		s+=(net.ipv6.conf.all.forwarding=1 net.ipv6.conf.all.accept_redirects=0)
	fi
	sysctl --quiet --write "${s[@]}" >/dev/null || die "sysctl ${s[*]} failed"
	if [[ ! -d $root/proc/sys/net/bridge ]]; then
		modprobe br_netfilter || die "bridge netfilter is off and br_netfilter does not load"
	fi
	sysctl --quiet --write net.bridge.bridge-nf-call-iptables=1 net.bridge.bridge-nf-call-ip6tables=1 >/dev/null ||
		die "could not turn on bridge netfilter"
	log "forwarding and bridge netfilter on"
}

install_routes() {
	local i
	for i in "${!route_dests[@]}"; do
		ip route replace "${route_dests[$i]}" via "${route_gws[$i]}" || die "ip route replace ${route_dests[$i]} via ${route_gws[$i]} failed"
	done
	log "${#route_dests[@]} routes installed"
}

# nft_rules: the table as nft -f reads it; adding the table first makes the delete succeed when it is missing, and
# one nft -f is one transaction.
nft_rules() {
	local set4 set6
	set4=$(
		IFS=,
		echo "${clusters4[*]}"
	)
	set6=$(
		IFS=,
		echo "${clusters6[*]}"
	)
	echo "table inet $table"
	echo "delete table inet $table"
	echo "table inet $table {"
	echo "	chain postrouting {"
	echo "		type nat hook postrouting priority srcnat; policy accept;"
	if ((${#clusters4[@]} > 0)); then
		echo "		ip saddr { $set4 } ip daddr != { $set4 } masquerade"
	fi
	if ((${#clusters6[@]} > 0)); then
		echo "		ip6 saddr { $set6 } ip6 daddr != { $set6 } masquerade"
	fi
	echo "	}"
	echo "}"
}

install_masquerade() {
	local f
	f=$(mktemp) || die "no temporary file"
	nft_rules >"$f"
	if ! nft -f "$f"; then
		rm -f -- "$f"
		die "nft could not replace table inet $table"
	fi
	rm -f -- "$f"
	log "egress masquerade in table inet $table"
}

# loopback_only FILE: every nameserver of FILE is a loopback address, and there is at least one.
loopback_only() {
	local kw addr rest n=0
	while read -r kw addr rest; do
		[[ $kw == nameserver ]] || continue
		case $addr in
		127.* | ::1) n=$((n + 1)) ;;
		*) return 1 ;;
		esac
	done <"$1"
	((n > 0))
}

kubelet_resolv_conf() {
	if [[ -r $resolv ]] && loopback_only "$resolv" && [[ -f $root$resolved ]]; then
		write_file <(printf '%s\n' "# Written by aio-pod-network: /etc/resolv.conf names only loopback nameservers, which in a pod" \
			"# are the pod itself; the kubelet gives pods systemd-resolved's upstream servers instead." \
			"apiVersion: kubelet.config.k8s.io/v1beta1" "kind: KubeletConfiguration" "resolvConf: $resolved") "$dropin" 0644 ||
			die "could not write ${dropin#"$root"}"
		log "/etc/resolv.conf holds only loopback nameservers: pods get $resolved (${dropin#"$root"})"
	else
		rm -f -- "$dropin"
	fi
}

read_routes
set_sysctls
install_routes
install_masquerade
kubelet_resolv_conf
log "done"
