#!/usr/bin/env bash
### etcd-scripts: installed into /usr/local/bin by the etcd static pod, replaced by every revision
#
# cluster-backup.sh DIR
#
# Backs this node's control plane up into DIR: an etcd snapshot (snapshot_<time>.db), and the resources of the
# newest revision of every static pod with the etcd certificates (static_kuberesources_<time>.tar.gz).
# cluster-restore.sh DIR puts them back. Written by render-static for its all-in-one control plane.
set -euo pipefail
# shellcheck source=/dev/null
. /etc/kubernetes/static-pod-resources/etcd-certs/configmaps/etcd-scripts/etcd-common-tools

start_script 1 "DIR" "$@"
load_etcd_env

dir=$(realpath -m "$1")
mkdir -p "${dir}"
stamp=$(date -u +%Y-%m-%d_%H%M%S)
snapshot="${dir}/snapshot_${stamp}.db"
resources="${dir}/static_kuberesources_${stamp}.tar.gz"

dirs=()
for pod in etcd-pod kube-apiserver-pod kube-controller-manager-pod kube-scheduler-pod; do
  if d=$(newest_revision_dir "${pod}"); then
    dirs+=("${d}")
  fi
done
[ -d "${ETCD_CERTS_DIR}" ] && dirs+=(etcd-certs)
[ "${#dirs[@]}" -gt 0 ] || die "no static pod resources in ${RESOURCES_DIR}"
tar -czf "${resources}" -C "${RESOURCES_DIR}" "${dirs[@]}"
chmod 0600 "${resources}"
log "saved ${dirs[*]} to ${resources}"

ETCD_TOOL_PATHS=("${dir}")
etcd_tool etcdctl snapshot save "${snapshot}"
chmod 0600 "${snapshot}"
etcd_tool etcdutl snapshot status "${snapshot}" --write-out=table
log "saved the etcd snapshot to ${snapshot}"
