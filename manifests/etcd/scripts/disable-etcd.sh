#!/usr/bin/env bash
### etcd-scripts: installed into /usr/local/bin by the etcd static pod, replaced by every revision
#
# disable-etcd.sh
#
# Stops this node's etcd: its static pod manifest moves to /etc/kubernetes/manifests-stopped, where it waits to be
# moved back. Written by render-static.
set -euo pipefail
# shellcheck source=/dev/null
. /etc/kubernetes/static-pod-resources/etcd-certs/configmaps/etcd-scripts/etcd-common-tools

start_script 0 "" "$@"
stop_static_pod "${ETCD_MANIFEST}"
wait_for_etcd_gone
log "etcd is disabled; move ${STOPPED_MANIFESTS_DIR}/${ETCD_MANIFEST} back to ${MANIFESTS_DIR} to enable it"
