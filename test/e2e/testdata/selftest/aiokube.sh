#!/bin/bash
# Runner self-test: a stand-in for pkg/node's first-boot apply (aiokube): wait for the API, apply the exported
# manifests. Runs in the runner's node view (host userland, Ignition root, kubectl at /usr/local/bin).
set -euo pipefail
export KUBECONFIG=/opt/openshift/auth/kubeconfig
for i in $(seq 1 60); do
	kubectl get --raw /readyz >/dev/null 2>&1 && break
	sleep 1
done
kubectl apply -f /opt/openshift/manifests/
