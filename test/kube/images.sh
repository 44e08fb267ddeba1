#!/usr/bin/env bash
# Builds the test cluster's images from static binaries, without a registry
# or a Docker engine, as docker-archive tars (slowpoke's with `slowpoke
# image`), and imports them into the containerd at each SOCKET (namespace
# k8s.io; one per node of the multi-node cluster):
#   slowpoke.local/pause:dev     the pod sandbox (test/kube/pause), and
#                                /whoami, a server that answers with its
#                                pod's name (test/kube/whoami)
#   slowpoke.local/slowpoke:dev  /slowpoke, /slowpoke-emu (the same binary,
#                                the service emulator by that name), the
#                                demo's and the pools example's topologies at
#                                /apps/{demo,pools}/topology.yaml,
#                                and the four applications at /apps/bin/<app>
# Usage: test/kube/images.sh SOCKET [SOCKET...]
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: images.sh CONTAINERD-SOCKET [SOCKET...]" >&2; exit 2; }
socks=("$@")
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# import_all TAR: imports the archive into every containerd.
import_all() {
  local sock
  for sock in "${socks[@]}"; do ctr --address "$sock" -n k8s.io images import --no-unpack=false "$1" >/dev/null; done
}

# image NAME ROOTFS-DIR ENTRYPOINT: a docker-archive of one layer.
image() {
  local name=$1 rootfs=$2 entry=$3 out=$work/$(echo "$1" | tr '/:' '__').tar img=$work/img-$RANDOM
  mkdir -p "$img"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$rootfs" -cf "$img/layer.tar" .
  local diff
  diff=$(sha256sum "$img/layer.tar" | cut -d' ' -f1)
  mkdir -p "$img/$diff"
  mv "$img/layer.tar" "$img/$diff/layer.tar"
  printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":["%s"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' "$entry" "$diff" >"$img/config.json"
  local cfg
  cfg=$(sha256sum "$img/config.json" | cut -d' ' -f1)
  mv "$img/config.json" "$img/$cfg.json"
  printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]' "$cfg" "$name" "$diff" >"$img/manifest.json"
  tar -C "$img" -cf "$out" .
  import_all "$out"
  echo "images: imported $name" >&2
}

export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -trimpath"
mkdir -p "$work/pause" "$work/slowpoke/apps/demo"
(cd "$root" && go build -ldflags "-s -w" -o "$work/pause/pause" ./test/kube/pause)
(cd "$root" && go build -ldflags "-s -w" -o "$work/pause/whoami" ./test/kube/whoami)
(cd "$root" && go build -ldflags "-s -w" -o "$work/slowpoke/slowpoke" ./cmd/slowpoke)
ln -s slowpoke "$work/slowpoke/slowpoke-emu"
mkdir -p "$work/slowpoke/apps/bin"
(cd "$root" && go build -ldflags "-s -w" -o "$work/slowpoke/apps/bin/" ./apps/boutique/cmd/... ./apps/hotel/cmd/... ./apps/movie/cmd/... ./apps/social/cmd/...)
cp "$root/examples/demo/topology.yaml" "$work/slowpoke/apps/demo/topology.yaml"
mkdir -p "$work/slowpoke/apps/pools"
cp "$root/examples/pools/topology.yaml" "$work/slowpoke/apps/pools/topology.yaml"
mkdir -p "$work/pause/tmp"
image slowpoke.local/pause:dev "$work/pause" /pause
# The slowpoke image as users build theirs (slowpoke image), with the
# emulator's name and the test applications added.
"$work/slowpoke/slowpoke" image --tag slowpoke.local/slowpoke:dev --archive "$work/slowpoke.tar" \
  --add "$work/slowpoke/slowpoke-emu:/slowpoke-emu" --add "$work/slowpoke/apps:/apps" >&2
import_all "$work/slowpoke.tar"
echo "images: imported slowpoke.local/slowpoke:dev (slowpoke image)" >&2
