#!/usr/bin/env bash
### etcd-scripts: installed into /usr/local/bin by the etcd static pod, replaced by every revision
#
# cluster-restore.sh DIR
#
# Restores this node's control plane from the newest backup cluster-backup.sh made in DIR: it stops the control
# plane and etcd, moves etcd's data aside (to /var/lib/etcd-before-restore-<time>), puts the backed-up static pod
# resources back, lets the restore pod (restore-etcd-pod) restore the snapshot as a single-member cluster, and
# starts etcd and the control plane again on the restored data. Written by render-static.
set -euo pipefail
# shellcheck source=/dev/null
. /etc/kubernetes/static-pod-resources/etcd-certs/configmaps/etcd-scripts/etcd-common-tools

start_script 1 "DIR" "$@"
load_etcd_env

dir=$(realpath -e "$1") || die "$1 does not exist"
snapshot=$(ls -1 "${dir}"/snapshot_*.db 2>/dev/null | sort | tail -n 1 || true)
resources=$(ls -1 "${dir}"/static_kuberesources_*.tar.gz 2>/dev/null | sort | tail -n 1 || true)
[ -n "${snapshot}" ] || die "no snapshot_*.db in ${dir}"
[ -n "${resources}" ] || die "no static_kuberesources_*.tar.gz in ${dir}"
[ -f "${ETCD_RESTORE_PODS_DIR}/pod.yaml" ] || die "the restore pod ${ETCD_RESTORE_PODS_DIR}/pod.yaml is missing"
log "restoring etcd from ${snapshot} and the static pod resources from ${resources}"

for m in ${CONTROL_PLANE_MANIFESTS}; do
  stop_static_pod "${m}"
done
stop_static_pod "${ETCD_MANIFEST}"
wait_for_etcd_gone

aside="/var/lib/etcd-before-restore-$(date -u +%Y-%m-%d_%H%M%S)"
mkdir -p "${aside}"
find "${ETCD_DATA}" -mindepth 1 -maxdepth 1 -exec mv -t "${aside}" {} +
log "moved the data of ${ETCD_DATA} to ${aside}"

tar -xzf "${resources}" -C "${RESOURCES_DIR}"
mkdir -p "${ETCD_SNAPSHOT_INBOX}"
cp "${snapshot}" "${ETCD_SNAPSHOT_INBOX}/snapshot.db"
chmod 0600 "${ETCD_SNAPSHOT_INBOX}/snapshot.db"

log "starting the restore pod"
cp "${ETCD_RESTORE_PODS_DIR}/pod.yaml" "${MANIFESTS_DIR}/${ETCD_MANIFEST}"
wait_for_etcd_healthy

# etcd runs on the restored data: the regular etcd pod takes over, then the rest of the control plane.
rm -f "${MANIFESTS_DIR}/${ETCD_MANIFEST}"
wait_for_etcd_gone
start_static_pod "${ETCD_MANIFEST}"
wait_for_etcd_healthy
for m in ${CONTROL_PLANE_MANIFESTS}; do
  start_static_pod "${m}"
done
log "restored; the data etcd had before is in ${aside}"
