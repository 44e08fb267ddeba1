#!/usr/bin/env bash
# Runs slowpoke's Kubernetes end-to-end tests on a real single-node cluster
# of its own: builds (once, then cached) and starts the cluster, runs the
# tests, and tears everything down, whatever happens. It installs what it
# needs from Debian's packages first. The tests are cmd/slowpoke's TestKube*,
# in files behind the build tag e2e (README.md, "Tests").
#
# Usage: test/kube/e2e.sh [go test flags]     (as root)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
# What the cluster needs from Debian's packages, installed here so that
# this one command works on a fresh machine.
if ! command -v containerd >/dev/null 2>&1 || ! command -v runc >/dev/null 2>&1 || [ ! -x /usr/lib/cni/bridge ] || ! command -v curl >/dev/null 2>&1 || ! command -v openssl >/dev/null 2>&1 || ! command -v iptables >/dev/null 2>&1; then
  echo "e2e: installing containerd, runc, the CNI plugins, iptables, openssl and curl" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq containerd runc containernetworking-plugins iptables openssl curl
fi
dir=$(mktemp -d /tmp/slowpoke-kube-XXXXXX)
trap '"$root/test/kube/cluster.sh" down "$dir"; rm -rf "$dir"' EXIT
"$root/test/kube/cluster.sh" up "$dir"
cd "$root"
SLOWPOKE_TEST_KUBECONFIG=$dir/kubeconfig SLOWPOKE_TEST_KUBECONFIG_LIMITED=$dir/kubeconfig-limited SLOWPOKE_TEST_CONTAINERD=$dir/containerd.sock SLOWPOKE_REQUIRE_KUBE=1 \
  go test -tags e2e -count=1 -run 'TestKube' -v -timeout 30m "$@" ./cmd/slowpoke/
