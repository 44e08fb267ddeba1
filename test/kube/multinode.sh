#!/usr/bin/env bash
# A real multi-node Kubernetes cluster on this one machine, for slowpoke's
# multi-node tests: one etcd, kube-apiserver, kube-controller-manager and
# kube-scheduler in the root network namespace, and N nodes, each a
# network namespace of its own with its own containerd, kubelet and
# kube-proxy, as kind runs nodes as containers, without Docker. Every
# process is ours and its PID recorded; no image is pulled (images.sh).
#
# Usage:
#   test/kube/multinode.sh up DIR [--nodes N]   # start (N >= 2, default 2);
#                                               # writes DIR/kubeconfig (admin)
#   test/kube/multinode.sh down DIR             # stop everything it started,
#                                               # remove everything it made
#
# The layout (none of it shared with cluster.sh's single-node cluster, which
# may run beside it):
#   bridge spmn0 10.255.0.1/24 in the root namespace; the API server listens
#   there, on 10.255.0.1:16444 (etcd on 127.0.0.1:23791/23801).
#   node i (1..N): network namespace spmn-n<i>, name slowpoke-n<i>, IP
#   10.255.0.<10+i> on eth0 (a veth to spmn0 as spmn-v<i>); pods in
#   10.245.<i>.0/24 (the CNI ptp plugin: routed, every packet through the
#   node's iptables, so that kube-proxy sees it); a route on every node and
#   in the root namespace to each other node's pods via that node's IP;
#   kubelet cgroup root /slowpoke-n<i> (no node touches another's pods);
#   its own containerd (DIR/n<i>/containerd.sock), pod log directory and
#   kubelet root; kube-proxy (iptables mode) in the namespace. Services:
#   10.97.0.0/16. Node-to-node traffic stays on spmn0; the iptables rules
#   the kubelets and kube-proxies make are in the nodes' namespaces and go
#   with them. The root namespace gets no iptables rule.
#
# Needs root and what cluster.sh needs (containerd, runc, the CNI plugins,
# iptables, openssl, curl, iproute2's ip and util-linux's nsenter), and the
# binaries from `build.sh --kube-proxy`.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cmd=${1:-}
dir=${2:-}
usage() { sed -n '9,14p' "$0" >&2; exit 2; }
[ -n "$cmd" ] && [ -n "$dir" ] || usage
shift 2
NODES=2
while [ $# -gt 0 ]; do
  case $1 in
    --nodes) NODES=${2:?}; shift 2 ;;
    *) usage ;;
  esac
done
[ "$NODES" -ge 2 ] && [ "$NODES" -le 9 ] || { echo "multinode: --nodes must be 2 to 9" >&2; exit 2; }
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
BR=spmn0
BR_IP=10.255.0.1
API=https://$BR_IP:16444
POD_NET=10.245.0.0/16
SVC_NET=10.97.0.0/16

log() { echo "multinode: $*" >&2; }
node_name() { echo "slowpoke-n$1"; }
node_ip() { echo "10.255.0.$((10 + $1))"; }
node_ns() { echo "spmn-n$1"; }
pod_cidr() { echo "10.245.$1.0/24"; }

# start NAME [NETNS] -- CMD...: runs CMD in the background (in network
# namespace NETNS if given), its PID in pids/NAME.
start() {
  local name=$1 ns=$2; shift 3
  mkdir -p "$dir/pids" "$dir/logs"
  if [ -n "$ns" ]; then
    setsid nsenter --net=/run/netns/"$ns" -- "$@" >"$dir/logs/$name.log" 2>&1 </dev/null &
  else
    setsid "$@" >"$dir/logs/$name.log" 2>&1 </dev/null &
  fi
  echo $! >"$dir/pids/$name"
}

# made WHAT: notes something made, for down (one line each, in order).
made() { echo "$*" >>"$dir/made"; }

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
  openssl req -x509 -new -key "$c/ca.key" -subj /CN=slowpoke-multinode-ca -days 2 -out "$c/ca.crt" 2>/dev/null
  openssl genrsa -out "$c/sa.key" 2048 2>/dev/null
  openssl rsa -in "$c/sa.key" -pubout -out "$c/sa.pub" 2>/dev/null
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
  issue apiserver /CN=kube-apiserver "subjectAltName=IP:$BR_IP,IP:127.0.0.1,IP:10.97.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:localhost"
  issue admin "/O=system:masters/CN=admin"
  issue limited "/CN=slowpoke-limited"
}

kubeconfig() { # NAME CERT
  cat >"$dir/$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: slowpoke-multinode
  cluster: {server: $API, certificate-authority: $dir/pki/ca.crt}
users:
- name: $2
  user: {client-certificate: $dir/pki/$2.crt, client-key: $dir/pki/$2.key}
contexts:
- name: slowpoke-multinode
  context: {cluster: slowpoke-multinode, user: $2}
current-context: slowpoke-multinode
EOF
}

api() {
  curl -fsS --cacert "$dir/pki/ca.crt" --cert "$dir/pki/admin.crt" --key "$dir/pki/admin.key" "$API$1"
}

node_ready() {
  api "/api/v1/nodes/$1" | tr -d ' \n' | grep -q '"type":"Ready","status":"True"'
}

# The v1 hierarchies (or the unified one) a kubelet's cgroup root must be
# made in.
cgroup_dirs() {
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then echo /sys/fs/cgroup; return; fi
  local d
  for d in /sys/fs/cgroup/*/; do
    [ -f "$d/cgroup.procs" ] && echo "${d%/}"
  done
}

# node_up I BIN CNI_BIN: the network namespace, containerd, kubelet and
# kube-proxy of node I.
node_up() {
  local i=$1 bin=$2 cni_bin=$3 ns name ip nd j
  ns=$(node_ns "$i"); name=$(node_name "$i"); ip=$(node_ip "$i"); nd=$dir/n$i
  mkdir -p "$nd"
  # The network: a namespace, a veth pair to the bridge, routes to the
  # other nodes' pods.
  ip netns add "$ns"
  made netns "$ns"
  ip link add "spmn-v$i" type veth peer name eth0 netns "$ns"
  made veth "spmn-v$i"
  ip link set "spmn-v$i" master $BR up
  ip -n "$ns" addr add "$ip/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
  ip -n "$ns" route add default via $BR_IP
  for j in $(seq "$NODES"); do
    [ "$j" = "$i" ] && continue
    ip -n "$ns" route add "$(pod_cidr "$j")" via "$(node_ip "$j")"
  done
  ip route replace "$(pod_cidr "$i")" via "$ip" dev $BR
  made route "$(pod_cidr "$i")"
  nsenter --net=/run/netns/"$ns" sysctl -qw net.ipv4.ip_forward=1
  nsenter --net=/run/netns/"$ns" sysctl -qw net.ipv4.conf.all.route_localnet=1 || true

  # The kubelet's cgroup root, in every hierarchy (cpuset's must be
  # given its cpus and mems before anything joins it).
  local cg
  for cg in $(cgroup_dirs); do
    mkdir -p "$cg/slowpoke-n$i"
    if [ -f "$cg/cpuset.cpus" ]; then
      cat "$cg/cpuset.cpus" >"$cg/slowpoke-n$i/cpuset.cpus"
      cat "$cg/cpuset.mems" >"$cg/slowpoke-n$i/cpuset.mems"
    fi
  done
  made cgroup "slowpoke-n$i"

  # containerd, with state of its own, in the namespace.
  mkdir -p "$nd/cni/net.d" "$nd/containerd"
  cat >"$nd/cni/net.d/10-slowpoke.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "slowpoke-multinode", "plugins": [
  {"type": "ptp", "ipMasq": false, "mtu": 1500,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$(pod_cidr "$i")"}]],
            "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "$nd/cni/ipam"}}]}
EOF
  cat >"$nd/containerd/config.toml" <<EOF
version = 2
root = "$nd/containerd/root"
state = "$nd/containerd/state"
[grpc]
  address = "$nd/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "slowpoke.local/pause:dev"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$cni_bin"
    conf_dir = "$nd/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
EOF
  start "containerd-n$i" "$ns" -- containerd --config "$nd/containerd/config.toml"
}

kubelet_up() {
  local i=$1 bin=$2 ns name ip nd
  ns=$(node_ns "$i"); name=$(node_name "$i"); ip=$(node_ip "$i"); nd=$dir/n$i
  mkdir -p "$nd/kubelet" "$nd/pod-logs"
  cat >"$nd/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /slowpoke-n$i
containerRuntimeEndpoint: unix://$nd/containerd.sock
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
failSwapOn: false
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
address: $ip
podLogsDir: $nd/pod-logs
podCIDR: $(pod_cidr "$i")
imageGCHighThresholdPercent: 100
evictionHard: {memory.available: "1Mi", nodefs.available: "1%", imagefs.available: "1%"}
localStorageCapacityIsolation: false
EOF
  start "kubelet-n$i" "$ns" -- "$bin/kubelet" --config "$nd/kubelet/config.yaml" --kubeconfig "$dir/kubeconfig" \
    --root-dir "$nd/kubelet/root" --cert-dir "$nd/kubelet/pki" --node-ip "$ip" --hostname-override "$name"
}

proxy_up() {
  local i=$1 bin=$2 ns name ip
  ns=$(node_ns "$i"); name=$(node_name "$i"); ip=$(node_ip "$i")
  start "kube-proxy-n$i" "$ns" -- "$bin/kube-proxy" --kubeconfig "$dir/kubeconfig" --hostname-override "$name" \
    --bind-address "$ip" --proxy-mode iptables --cluster-cidr $POD_NET \
    --conntrack-max-per-core 0 --conntrack-tcp-timeout-established 0 --conntrack-tcp-timeout-close-wait 0 \
    --metrics-bind-address 127.0.0.1:10249 --healthz-bind-address 127.0.0.1:10256
}

up() {
  local bin cni_bin=/usr/lib/cni i socks=()
  bin=$("$here/build.sh" --kube-proxy)
  for tool in containerd runc openssl curl nsenter ip iptables; do
    command -v $tool >/dev/null || { log "$tool is missing (apt-get install containerd runc openssl curl util-linux iproute2 iptables)"; exit 1; }
  done
  [ -x $cni_bin/ptp ] || cni_bin=/opt/cni/bin
  [ -x $cni_bin/ptp ] || { log "CNI plugins are missing (apt-get install containernetworking-plugins)"; exit 1; }
  [ -e "$dir/made" ] && { log "a cluster already runs in $dir (test/kube/multinode.sh down $dir first)"; exit 1; }
  ip link show $BR >/dev/null 2>&1 && { log "bridge $BR exists: another multi-node cluster runs (only one at a time)"; exit 1; }
  : >"$dir/made"
  certs
  kubeconfig kubeconfig admin
  kubeconfig kubeconfig-limited limited

  ip link add $BR type bridge
  made bridge $BR
  ip addr add $BR_IP/24 dev $BR
  ip link set $BR up

  for i in $(seq "$NODES"); do
    node_up "$i" "$bin" "$cni_bin"
    socks+=("$dir/n$i/containerd.sock")
  done
  for i in $(seq "$NODES"); do
    wait_for "containerd of node $i" 30 ctr --address "$dir/n$i/containerd.sock" version
  done
  log "importing images into $NODES nodes"
  "$here/images.sh" "${socks[@]}"

  start etcd "" -- "$bin/etcd" --data-dir "$dir/etcd" --listen-client-urls http://127.0.0.1:23791 \
    --advertise-client-urls http://127.0.0.1:23791 --listen-peer-urls http://127.0.0.1:23801 \
    --initial-advertise-peer-urls http://127.0.0.1:23801 --initial-cluster default=http://127.0.0.1:23801 \
    --unsafe-no-fsync
  local p=$dir/pki
  start kube-apiserver "" -- "$bin/kube-apiserver" --etcd-servers http://127.0.0.1:23791 \
    --bind-address $BR_IP --secure-port 16444 --advertise-address $BR_IP \
    --tls-cert-file "$p/apiserver.crt" --tls-private-key-file "$p/apiserver.key" --client-ca-file "$p/ca.crt" \
    --service-account-key-file "$p/sa.pub" --service-account-signing-key-file "$p/sa.key" \
    --service-account-issuer https://kubernetes.default.svc --service-cluster-ip-range $SVC_NET \
    --authorization-mode RBAC --kubelet-client-certificate "$p/admin.crt" --kubelet-client-key "$p/admin.key" \
    --kubelet-preferred-address-types InternalIP --allow-privileged=true
  wait_for kube-apiserver 60 api /readyz
  start kube-controller-manager "" -- "$bin/kube-controller-manager" --kubeconfig "$dir/kubeconfig" \
    --service-account-private-key-file "$p/sa.key" --root-ca-file "$p/ca.crt" \
    --leader-elect=false --bind-address 127.0.0.1 --secure-port 0 --use-service-account-credentials=false
  start kube-scheduler "" -- "$bin/kube-scheduler" --kubeconfig "$dir/kubeconfig" --leader-elect=false \
    --bind-address 127.0.0.1 --secure-port 0

  for i in $(seq "$NODES"); do
    kubelet_up "$i" "$bin"
    proxy_up "$i" "$bin"
  done
  for i in $(seq "$NODES"); do
    wait_for "node $(node_name "$i") to be ready" 90 node_ready "$(node_name "$i")"
  done
  wait_for "the default service account" 60 api /api/v1/namespaces/default/serviceaccounts/default
  for i in $(seq "$NODES"); do echo "$(node_name "$i") $(node_ns "$i") $(node_ip "$i") $(pod_cidr "$i") $dir/n$i/containerd.sock"; done >"$dir/nodes"
  log "up: $NODES nodes, KUBECONFIG=$dir/kubeconfig (nodes in $dir/nodes, logs in $dir/logs)"
}

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

# node_down I: the node's kubelet, containers, containerd, kube-proxy,
# the pod network namespaces its containerd made, its mounts.
node_down() {
  local i=$1 sock=$dir/n$i/containerd.sock ids n f mine=()
  # Pod network namespaces this node's containerd made (named in its own
  # metadata; another containerd's are never touched), found before its
  # containers are removed: removing them takes the names out of it.
  for n in /run/netns/cni-*; do
    [ -e "$n" ] || continue
    grep -rqas "$(basename "$n")" "$dir/n$i/containerd/root" 2>/dev/null && mine+=("$(basename "$n")")
  done
  stop "kubelet-n$i"
  # A frozen process does not die of SIGKILL until thawed: thaw whatever a
  # test left frozen on this node (its own cgroup root only).
  for f in $(find /sys/fs/cgroup/freezer/slowpoke-n$i -name freezer.state 2>/dev/null) \
    $(find /sys/fs/cgroup/slowpoke-n$i -name cgroup.freeze 2>/dev/null); do
    case $f in *freezer.state) echo THAWED >"$f" ;; *) echo 0 >"$f" ;; esac 2>/dev/null || true
  done
  stop "kube-proxy-n$i"
  if [ -S "$sock" ] && ctr --address "$sock" version >/dev/null 2>&1; then
    ids=$(ctr --address "$sock" -n k8s.io tasks ls -q 2>/dev/null || true)
    for id in $ids; do ctr --address "$sock" -n k8s.io tasks kill -a -s SIGKILL "$id" >/dev/null 2>&1 || true; done
    [ -n "$ids" ] && ctr --address "$sock" -n k8s.io tasks rm -f $ids >/dev/null 2>&1 || true
    for id in $(ctr --address "$sock" -n k8s.io containers ls -q 2>/dev/null || true); do
      ctr --address "$sock" -n k8s.io containers rm "$id" >/dev/null 2>&1 || true
    done
  fi
  stop "containerd-n$i"
  # Those of its pod network namespaces the CNI plugin left.
  for n in "${mine[@]}"; do
    [ -e "/run/netns/$n" ] && ip netns del "$n" 2>/dev/null || true
  done
}

down() {
  [ -f "$dir/made" ] || [ -d "$dir/pids" ] || { log "nothing to stop in $dir"; return 0; }
  # The pods are not deleted through the API first (their controllers
  # would make them again, and the cluster goes as a whole): each node's
  # containers are ended through its containerd, and what the CNI plugin
  # made for them is in the node's namespace, which goes with it.
  local i
  for f in "$dir"/pids/kubelet-n*; do
    [ -e "$f" ] || continue
    i=${f##*kubelet-n}
    node_down "$i"
  done
  # Nodes whose kubelet never started.
  for f in "$dir"/pids/containerd-n* "$dir"/pids/kube-proxy-n*; do
    [ -e "$f" ] || continue
    i=${f##*-n}
    node_down "$i"
  done
  stop kube-scheduler
  stop kube-controller-manager
  stop kube-apiserver
  stop etcd
  grep " $dir/" /proc/self/mounts | awk '{print $2}' | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  # What up made, newest first.
  if [ -f "$dir/made" ]; then
    tac "$dir/made" | while read -r kind what; do
      case $kind in
        netns) ip netns del "$what" 2>/dev/null || true ;;
        veth) ip link del "$what" 2>/dev/null || true ;;
        route) ip route del "$what" 2>/dev/null || true ;;
        bridge) ip link del "$what" 2>/dev/null || true ;;
        cgroup)
          for cg in $(cgroup_dirs); do
            [ -d "$cg/$what" ] && find "$cg/$what" -depth -type d -exec rmdir {} + 2>/dev/null || true
          done ;;
      esac
    done
    rm -f "$dir/made"
  fi
  rm -f "$dir/nodes"
  log "down"
}

case $cmd in
  up) up ;;
  down) down ;;
  *) usage ;;
esac
