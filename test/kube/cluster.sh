#!/usr/bin/env bash
# A real single-node Kubernetes cluster on this machine, for slowpoke's
# end-to-end tests: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler and a kubelet over Debian's containerd and runc, all as
# processes of our own whose PIDs are recorded. No image is pulled: the
# pause image and slowpoke's images are built from static binaries and
# imported (images.sh).
#
# Usage:
#   test/kube/cluster.sh up DIR     # start; writes DIR/kubeconfig (admin) and
#                                   # DIR/kubeconfig-limited (a user with no rights)
#   test/kube/cluster.sh down DIR   # stop everything it started, remove what it made
#
# Needs root, containerd, runc, containernetworking-plugins, iptables (for
# hostPorts), openssl and curl (apt-get install containerd runc
# containernetworking-plugins iptables openssl curl), and
# the binaries from build.sh. Ports: etcd 23790/23800, apiserver 16443,
# kubelet 10250/10248. The node's IP is 10.255.255.1 on a bridge interface
# slowpoke0. Facts this relies on: ../shared/kubernetes-here.md.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { sed -n '2,17p' "$0" >&2; exit 2; }
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
NODE_IP=10.255.255.1
NODE=slowpoke-node
API=https://127.0.0.1:16443

log() { echo "cluster: $*" >&2; }

# start NAME CMD...: runs CMD in the background, its PID in pids/NAME.
start() {
  local name=$1; shift
  mkdir -p "$dir/pids" "$dir/logs"
  setsid "$@" >"$dir/logs/$name.log" 2>&1 < /dev/null &
  echo $! >"$dir/pids/$name"
}

# wait_for WHAT SECONDS CMD...: retries CMD until it succeeds.
wait_for() {
  local what=$1 secs=$2; shift 2
  for _ in $(seq $((secs * 5))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  log "timed out waiting for $what; logs in $dir/logs"
  return 1
}

certs() {
  local c=$dir/pki
  mkdir -p "$c"
  [ -f "$c/admin.crt" ] && return
  openssl genrsa -out "$c/ca.key" 2048 2>/dev/null
  openssl req -x509 -new -key "$c/ca.key" -subj /CN=slowpoke-test-ca -days 2 -out "$c/ca.crt" 2>/dev/null
  openssl genrsa -out "$c/sa.key" 2048 2>/dev/null
  openssl rsa -in "$c/sa.key" -pubout -out "$c/sa.pub" 2>/dev/null
  # issue NAME SUBJECT [EXT]: a key and a certificate signed by the CA.
  issue() {
    openssl genrsa -out "$c/$1.key" 2048 2>/dev/null
    openssl req -new -key "$c/$1.key" -subj "$2" -out "$c/$1.csr" 2>/dev/null
    if [ -n "${3:-}" ]; then
      printf '%s\n' "$3" >"$c/$1.ext"
      openssl x509 -req -in "$c/$1.csr" -CA "$c/ca.crt" -CAkey "$c/ca.key" -CAcreateserial -days 2 -extfile "$c/$1.ext" -out "$c/$1.crt" 2>/dev/null
    else
      openssl x509 -req -in "$c/$1.csr" -CA "$c/ca.crt" -CAkey "$c/ca.key" -CAcreateserial -days 2 -out "$c/$1.crt" 2>/dev/null
    fi
  }
  issue apiserver /CN=kube-apiserver "subjectAltName=IP:127.0.0.1,IP:$NODE_IP,IP:10.96.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:localhost"
  issue admin "/O=system:masters/CN=admin"
  issue limited "/CN=slowpoke-limited"
}

kubeconfig() { # NAME CERT
  cat >"$dir/$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: slowpoke-test
  cluster: {server: $API, certificate-authority: $dir/pki/ca.crt}
users:
- name: $2
  user: {client-certificate: $dir/pki/$2.crt, client-key: $dir/pki/$2.key}
contexts:
- name: slowpoke-test
  context: {cluster: slowpoke-test, user: $2}
current-context: slowpoke-test
EOF
}

# api PATH: GETs PATH from the API server as the admin (fails on an error).
api() {
  curl -fsS --cacert "$dir/pki/ca.crt" --cert "$dir/pki/admin.crt" --key "$dir/pki/admin.key" "$API$1"
}

node_ready() {
  api /api/v1/nodes/$NODE | tr -d ' \n' | grep -q '"type":"Ready","status":"True"'
}

up() {
  local bin
  bin=$("$here/build.sh")
  for tool in containerd runc openssl curl; do
    command -v $tool >/dev/null || { log "$tool is missing (apt-get install containerd runc openssl curl)"; exit 1; }
  done
  [ -x /usr/lib/cni/bridge ] || [ -x /opt/cni/bin/bridge ] || { log "CNI plugins are missing (apt-get install containernetworking-plugins)"; exit 1; }
  local cni_bin=/usr/lib/cni
  [ -x $cni_bin/bridge ] || cni_bin=/opt/cni/bin
  [ -e "$dir/pids/kubelet" ] && { log "a cluster already runs in $dir (test/kube/cluster.sh down $dir first)"; exit 1; }
  certs
  kubeconfig kubeconfig admin
  kubeconfig kubeconfig-limited limited

  # The node's address: a bridge interface of our own.
  if ! ip link show slowpoke0 >/dev/null 2>&1; then
    ip link add slowpoke0 type bridge
    echo made >"$dir/made-slowpoke0"
  fi
  ip addr replace $NODE_IP/32 dev slowpoke0
  ip link set slowpoke0 up

  # containerd, with state of its own under DIR.
  mkdir -p "$dir/cni/net.d" "$dir/containerd"
  cat >"$dir/cni/net.d/10-slowpoke.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "slowpoke-test", "plugins": [
  {"type": "bridge", "bridge": "slowpoke-br0", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.0.0/24"}]], "dataDir": "$dir/cni/ipam"}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
EOF
  cat >"$dir/containerd/config.toml" <<EOF
version = 2
root = "$dir/containerd/root"
state = "$dir/containerd/state"
[grpc]
  address = "$dir/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "slowpoke.local/pause:dev"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$cni_bin"
    conf_dir = "$dir/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
EOF
  start containerd containerd --config "$dir/containerd/config.toml"
  wait_for containerd 30 ctr --address "$dir/containerd.sock" version
  log "importing images"
  "$here/images.sh" "$dir/containerd.sock"

  # etcd and the control plane.
  start etcd "$bin/etcd" --data-dir "$dir/etcd" --listen-client-urls http://127.0.0.1:23790 \
    --advertise-client-urls http://127.0.0.1:23790 --listen-peer-urls http://127.0.0.1:23800 \
    --initial-advertise-peer-urls http://127.0.0.1:23800 --initial-cluster default=http://127.0.0.1:23800 \
    --unsafe-no-fsync
  local p=$dir/pki
  start kube-apiserver "$bin/kube-apiserver" --etcd-servers http://127.0.0.1:23790 \
    --bind-address 127.0.0.1 --secure-port 16443 --advertise-address $NODE_IP \
    --tls-cert-file "$p/apiserver.crt" --tls-private-key-file "$p/apiserver.key" --client-ca-file "$p/ca.crt" \
    --service-account-key-file "$p/sa.pub" --service-account-signing-key-file "$p/sa.key" \
    --service-account-issuer https://kubernetes.default.svc --service-cluster-ip-range 10.96.0.0/16 \
    --authorization-mode RBAC --kubelet-client-certificate "$p/admin.crt" --kubelet-client-key "$p/admin.key" \
    --kubelet-preferred-address-types InternalIP --allow-privileged=true
  wait_for kube-apiserver 60 api /readyz
  start kube-controller-manager "$bin/kube-controller-manager" --kubeconfig "$dir/kubeconfig" \
    --service-account-private-key-file "$p/sa.key" --root-ca-file "$p/ca.crt" \
    --leader-elect=false --bind-address 127.0.0.1 --secure-port 0 --use-service-account-credentials=false
  start kube-scheduler "$bin/kube-scheduler" --kubeconfig "$dir/kubeconfig" --leader-elect=false \
    --bind-address 127.0.0.1 --secure-port 0

  # The kubelet.
  mkdir -p "$dir/kubelet"
  cat >"$dir/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$dir/containerd.sock
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
failSwapOn: false
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
address: $NODE_IP
imageGCHighThresholdPercent: 100
evictionHard: {memory.available: "1Mi", nodefs.available: "1%", imagefs.available: "1%"}
localStorageCapacityIsolation: false
EOF
  start kubelet "$bin/kubelet" --config "$dir/kubelet/config.yaml" --kubeconfig "$dir/kubeconfig" \
    --root-dir "$dir/kubelet/root" --cert-dir "$dir/kubelet/pki" --node-ip $NODE_IP --hostname-override $NODE
  wait_for "node $NODE to be ready" 90 node_ready
  wait_for "the default service account" 60 api /api/v1/namespaces/default/serviceaccounts/default
  log "up: KUBECONFIG=$dir/kubeconfig (logs in $dir/logs)"
}

# stop NAME: TERM, then KILL after 10 s, the process recorded as NAME.
stop() {
  local f=$dir/pids/$1 pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

# pods_gone SECONDS: waits until the API server has no pod left.
pods_gone() {
  for _ in $(seq $(($1 * 5))); do
    api /api/v1/pods 2>/dev/null | tr -d ' \n' | grep -q '"items":\[\]' && return 0
    sleep 0.2
  done
  return 1
}

down() {
  local sock=$dir/containerd.sock
  # Pods deleted through the API are torn down by the kubelet, which has
  # the CNI plugins remove their network (the bridge's addresses, the
  # portmap plugin's iptables rules). What the tests did not delete is
  # deleted here.
  if [ -f "$dir/pids/kubelet" ] && api /readyz >/dev/null 2>&1 && ! pods_gone 20; then
    for ns in $(api /api/v1/pods | tr -d ' \n' | grep -o '"namespace":"[^"]*"' | sort -u | cut -d'"' -f4); do
      curl -fsS -X DELETE --cacert "$dir/pki/ca.crt" --cert "$dir/pki/admin.crt" --key "$dir/pki/admin.key" \
        "$API/api/v1/namespaces/$ns/pods?gracePeriodSeconds=0" >/dev/null 2>&1 || true
    done
    pods_gone 30 || log "pods are left after 30 s; ending their containers directly"
  fi
  stop kubelet
  # The containers outlive the kubelet and containerd (their shims
  # hold them): end them through our containerd, then it.
  if [ -S "$sock" ] && ctr --address "$sock" version >/dev/null 2>&1; then
    local ids
    ids=$(ctr --address "$sock" -n k8s.io tasks ls -q 2>/dev/null || true)
    for id in $ids; do ctr --address "$sock" -n k8s.io tasks kill -a -s SIGKILL "$id" >/dev/null 2>&1 || true; done
    # Deleting a task ends its shim; -f deletes one still running.
    [ -n "$ids" ] && ctr --address "$sock" -n k8s.io tasks rm -f $ids >/dev/null 2>&1 || true
    for id in $(ctr --address "$sock" -n k8s.io containers ls -q 2>/dev/null || true); do
      ctr --address "$sock" -n k8s.io containers rm "$id" >/dev/null 2>&1 || true
    done
  fi
  stop kube-scheduler
  stop kube-controller-manager
  stop kube-apiserver
  stop etcd
  stop containerd
  # The iptables chains the kubelet and the portmap plugin made (a machine
  # that runs a kubelet of its own is no place for this test cluster).
  for ipt in iptables ip6tables; do
    command -v $ipt >/dev/null || continue
    for table in filter nat mangle; do
      for chain in KUBE-FIREWALL KUBE-KUBELET-CANARY KUBE-IPTABLES-HINT CNI-HOSTPORT-DNAT CNI-HOSTPORT-MASQ CNI-HOSTPORT-SETMARK; do
        { $ipt -t $table -S 2>/dev/null | grep -- "-j $chain\b" || true; } | sed 's/^-A /-D /' | while read -r rule; do
          eval "$ipt -t $table $rule" 2>/dev/null || true
        done
        $ipt -t $table -F $chain 2>/dev/null && $ipt -t $table -X $chain 2>/dev/null || true
      done
    done
  done
  # What the kubelet and the CNI plugins made: mounts, the bridge, cgroups.
  grep " $dir/" /proc/self/mounts | awk '{print $2}' | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  ip link del slowpoke-br0 2>/dev/null || true
  if [ -f "$dir/made-slowpoke0" ]; then ip link del slowpoke0 2>/dev/null || true; rm -f "$dir/made-slowpoke0"; fi
  for root in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/unified/kubepods /sys/fs/cgroup/kubepods; do
    [ -d "$root" ] && find "$root" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  log "down"
}

case $cmd in
  up) up ;;
  down) down ;;
  *) sed -n '2,17p' "$0" >&2; exit 2 ;;
esac
