#!/usr/bin/env bash
# Runs slowpoke's multi-node end-to-end tests (cmd/slowpoke's
# TestKubeMultiNode*, build tag e2e) on a multi-node cluster of its own
# (multinode.sh): starts it, runs the tests, and tears everything down,
# whatever happens. Needs what e2e.sh installs (run it once first on a
# fresh machine) and root.
#
# Usage: test/kube/multinode-e2e.sh [--nodes N] [go test flags]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
nodes=2
if [ "${1:-}" = --nodes ]; then nodes=$2; shift 2; fi
dir=$(mktemp -d /tmp/slowpoke-multinode-XXXXXX)
trap '"$root/test/kube/multinode.sh" down "$dir"; rm -rf "$dir"' EXIT
"$root/test/kube/multinode.sh" up "$dir" --nodes "$nodes"
cd "$root"
SLOWPOKE_TEST_MULTINODE=$dir SLOWPOKE_REQUIRE_MULTINODE=1 \
  go test -tags e2e -count=1 -run 'TestKubeMultiNode' -v -timeout 20m "$@" ./cmd/slowpoke/
