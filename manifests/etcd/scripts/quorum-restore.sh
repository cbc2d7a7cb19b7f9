#!/usr/bin/env bash
### etcd-scripts: installed into /usr/local/bin by the etcd static pod, replaced by every revision
#
# quorum-restore.sh
#
# Restarts this node's etcd on its own data as a new single-member cluster (etcd --force-new-cluster, with the
# quorum-restore pod of restore-etcd-pod), dropping every other member: for a member left without quorum. Take a
# backup first (cluster-backup.sh). Written by render-static.
set -euo pipefail
# shellcheck source=/dev/null
. /etc/kubernetes/static-pod-resources/etcd-certs/configmaps/etcd-scripts/etcd-common-tools

start_script 0 "" "$@"
load_etcd_env
[ -d "${ETCD_DATA}/member" ] || die "no etcd member in ${ETCD_DATA}: restore a backup with cluster-restore.sh"
[ -f "${ETCD_RESTORE_PODS_DIR}/quorum-restore-pod.yaml" ] || die "the quorum-restore pod is missing"

stop_static_pod "${ETCD_MANIFEST}"
wait_for_etcd_gone

log "starting the quorum-restore pod"
cp "${ETCD_RESTORE_PODS_DIR}/quorum-restore-pod.yaml" "${MANIFESTS_DIR}/${ETCD_MANIFEST}"
wait_for_etcd_healthy

# The member is now a cluster of its own: the regular etcd pod takes over.
rm -f "${MANIFESTS_DIR}/${ETCD_MANIFEST}"
wait_for_etcd_gone
start_static_pod "${ETCD_MANIFEST}"
wait_for_etcd_healthy
log "etcd runs as a single-member cluster"
