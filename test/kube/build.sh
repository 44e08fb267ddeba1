#!/usr/bin/env bash
# Builds the binaries of a single-node Kubernetes cluster (kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet, etcd) from the Go module
# proxy, into a cache directory keyed by version, and prints that directory.
# Only the first run pays (about 14 minutes on 2 cores); later runs find the
# binaries and return at once.
#
# Usage: test/kube/build.sh            # prints the bin directory
#        test/kube/build.sh --kube-proxy   # also kube-proxy (the multi-node
#                                          # cluster's); the same directory:
#                                          # binaries already there are kept,
#                                          # only the missing one is built
# Environment: SLOWPOKE_KUBE_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/slowpoke)
set -euo pipefail

K8S_VERSION=v1.36.1
STAGING_VERSION=v0.36.1
ETCD_VERSION=v3.6.10

cache=${SLOWPOKE_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/slowpoke}
out=$cache/kube-$K8S_VERSION-etcd-$ETCD_VERSION/bin
bins=(kube-apiserver kube-controller-manager kube-scheduler kubelet etcd)
kbins=(kube-apiserver kube-controller-manager kube-scheduler kubelet)
if [ "${1:-}" = --kube-proxy ]; then bins+=(kube-proxy); kbins+=(kube-proxy); fi

have_all() {
  for b in "${bins[@]}"; do [ -x "$out/$b" ] || return 1; done
}
if have_all; then echo "$out"; exit 0; fi

mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GOFLAGS=-mod=mod CGO_ENABLED=0 GOTOOLCHAIN=${GOTOOLCHAIN:-auto}

# k8s.io/kubernetes replaces its staging modules with local directories,
# which `go install pkg@version` refuses; a scratch module that requires it
# and points each staging module at its published version builds.
staging=(api apiextensions-apiserver apimachinery apiserver cli-runtime
  client-go cloud-provider cluster-bootstrap code-generator component-base
  component-helpers controller-manager cri-api cri-client cri-streaming
  csi-translation-lib dynamic-resource-allocation endpointslice externaljwt
  kms kube-aggregator kube-controller-manager kube-proxy kube-scheduler
  kubectl kubelet metrics mount-utils pod-security-admission sample-apiserver
  sample-cli-plugin sample-controller streaming)
mkdir -p "$work/k8s"
{
  echo "module slowpoke.local/kubebuild"
  echo "go 1.26.0"
  echo "require k8s.io/kubernetes $K8S_VERSION"
  for m in "${staging[@]}"; do echo "replace k8s.io/$m => k8s.io/$m $STAGING_VERSION"; done
} >"$work/k8s/go.mod"
cat >"$work/k8s/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
)
GO
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36"
(
  cd "$work/k8s"
  go mod tidy -e >/dev/null 2>&1 || true
  for b in "${kbins[@]}"; do
    [ -x "$out/$b" ] && continue
    echo "building $b $K8S_VERSION (cached in $out)" >&2
    go build -tags tools -trimpath -ldflags "$ldflags" -o "$out/$b.tmp" "k8s.io/kubernetes/cmd/$b"
    mv "$out/$b.tmp" "$out/$b"
  done
)

mkdir -p "$work/etcd"
cat >"$work/etcd/go.mod" <<GOMOD
module slowpoke.local/etcdbuild
go 1.26.0
require go.etcd.io/etcd/server/v3 $ETCD_VERSION
replace go.etcd.io/etcd/api/v3 => go.etcd.io/etcd/api/v3 $ETCD_VERSION
replace go.etcd.io/etcd/client/pkg/v3 => go.etcd.io/etcd/client/pkg/v3 $ETCD_VERSION
replace go.etcd.io/etcd/client/v3 => go.etcd.io/etcd/client/v3 $ETCD_VERSION
replace go.etcd.io/etcd/pkg/v3 => go.etcd.io/etcd/pkg/v3 $ETCD_VERSION
replace go.etcd.io/etcd/server/v3 => go.etcd.io/etcd/server/v3 $ETCD_VERSION
GOMOD
cat >"$work/etcd/tools.go" <<'GO'
//go:build tools

package tools

import _ "go.etcd.io/etcd/server/v3"
GO
(
  cd "$work/etcd"
  if [ ! -x "$out/etcd" ]; then
    echo "building etcd $ETCD_VERSION (cached in $out)" >&2
    go mod tidy -e >/dev/null 2>&1 || true
    go build -tags tools -trimpath -ldflags "-s -w" -o "$out/etcd.tmp" go.etcd.io/etcd/server/v3
    mv "$out/etcd.tmp" "$out/etcd"
  fi
)
have_all
echo "$out"
