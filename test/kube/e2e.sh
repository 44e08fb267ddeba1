#!/usr/bin/env bash
# Runs slowpoke's Kubernetes end-to-end tests on a real single-node cluster
# of its own: builds (once, then cached) and starts the cluster, runs the
# tests, and tears everything down, whatever happens.
#
# Usage: test/kube/e2e.sh [go test flags]     (as root)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d /tmp/slowpoke-kube-XXXXXX)
trap '"$root/test/kube/cluster.sh" down "$dir"; rm -rf "$dir"' EXIT
"$root/test/kube/cluster.sh" up "$dir"
cd "$root"
SLOWPOKE_TEST_KUBECONFIG=$dir/kubeconfig SLOWPOKE_TEST_KUBECONFIG_LIMITED=$dir/kubeconfig-limited SLOWPOKE_REQUIRE_KUBE=1 \
  go test -count=1 -run 'TestKube' -v -timeout 30m "$@" ./cmd/slowpoke/
