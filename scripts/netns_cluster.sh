#!/usr/bin/env bash
# A test cluster of network namespaces on one machine: N "hosts", each with its own loopback and
# one address on a private veth bridge. Used by tests marked slow (tests/netns.py) and benchmarks.
#
#   netns_cluster.sh run N -- CMD ARGS...   create N hosts, run CMD (in the root namespace) with
#                                            NETNS_CLUSTER=ID and NETNS_HOSTS="ns=addr ..." set,
#                                            tear everything down on exit (trap), exit with CMD's code
#   netns_cluster.sh up ID N                 create hosts ID-h1..ID-hN; print "ns addr veth" per host,
#                                            then "bridge NAME ADDR"; a failure removes what it made
#   netns_cluster.sh exec ID I CMD ARGS...   run CMD inside host I (1-based)
#   netns_cluster.sh kill ID I               SIGKILL every process of host I (a host loss: no clean-up)
#   netns_cluster.sh down ID                 kill every process of the hosts, delete them and the bridge
#   netns_cluster.sh new-id                  print a fresh cluster id (fl + 6 hex digits)
#
# Addresses: 10.A.B.0/24 (A in 200..249 and B derived from the id, skipped when the root
# namespace already routes it); the bridge (root namespace side) is .1, host I is .(I+1). Hosts
# have no default route: they reach only each other, the bridge address and their own loopback.
# Nothing else is ever a target. Needs root and iproute2's `ip`.
set -euo pipefail

die() { echo "netns_cluster: $*" >&2; exit 1; }
need() {
  command -v ip >/dev/null 2>&1 || die "iproute2's 'ip' is not installed (apt-get install iproute2)"
  [ "$(id -u)" = 0 ] || die "network namespaces need root"
}
check_id() { [[ "$1" =~ ^fl[0-9a-f]{6}$ ]] || die "cluster id must be fl + 6 hex digits, got '$1'"; }
new_id() { printf 'fl%s\n' "$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"; }

subnet_of() {  # "10.A.B" for an id, avoiding any prefix the root namespace already routes
  local id=$1 a b try
  a=$(( 200 + 0x${id:2:2} % 50 )); b=$(( 0x${id:4:2} ))
  for try in $(seq 0 49); do
    if ! ip -4 route show | grep -q "^10\.${a}\.${b}\."; then echo "10.${a}.${b}"; return; fi
    a=$(( 200 + (a - 200 + 1) % 50 ))
  done
  die "no free 10.200-249.x.0/24 subnet"
}

host_ns() { echo "$1-h$2"; }

kill_host() {  # SIGKILL every process in the namespace (repeat: a dying parent may still fork)
  local ns=$1 pids
  for _ in 1 2 3; do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -z "$pids" ] && return 0
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    sleep 0.2
  done
}

down() {
  local id=$1 ns veth
  check_id "$id"
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^${id}-h[0-9]*$" || true); do
    kill_host "$ns"
    ip netns del "$ns" 2>/dev/null || true
  done
  for veth in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep "^${id}v[0-9]*$" || true); do
    ip link del "$veth" 2>/dev/null || true
  done
  ip link del "${id}br" 2>/dev/null || true
}

up() {
  local id=$1 n=$2 net i ns veth
  check_id "$id"
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 50 ] || die "host count must be 1..50, got '$n'"
  ip link show "${id}br" >/dev/null 2>&1 && die "cluster $id exists already"
  trap 'down "$id"' ERR
  net=$(subnet_of "$id")
  ip link add "${id}br" type bridge
  ip addr add "${net}.1/24" dev "${id}br"
  ip link set "${id}br" up
  for i in $(seq 1 "$n"); do
    ns=$(host_ns "$id" "$i"); veth="${id}v${i}"
    ip netns add "$ns"
    ip link add "$veth" type veth peer name "${id}p${i}"
    ip link set "${id}p${i}" netns "$ns"
    ip link set "$veth" master "${id}br"
    ip link set "$veth" up
    ip -n "$ns" link set lo up
    ip -n "$ns" link set "${id}p${i}" name eth0
    ip -n "$ns" addr add "${net}.$(( i + 1 ))/24" dev eth0
    ip -n "$ns" link set eth0 up
    echo "$ns ${net}.$(( i + 1 )) $veth"
  done
  echo "bridge ${id}br ${net}.1"
  trap - ERR
}

cmd=${1:-}; shift || true
case "$cmd" in
  new-id) new_id ;;
  up) need; [ $# -eq 2 ] || die "usage: up ID N"; up "$1" "$2" ;;
  down) need; [ $# -eq 1 ] || die "usage: down ID"; down "$1" ;;
  exec) need; [ $# -ge 3 ] || die "usage: exec ID I CMD..."; check_id "$1"
        ns=$(host_ns "$1" "$2"); shift 2; exec ip netns exec "$ns" "$@" ;;
  kill) need; [ $# -eq 2 ] || die "usage: kill ID I"; check_id "$1"; kill_host "$(host_ns "$1" "$2")" ;;
  run)
    need
    [ $# -ge 3 ] && [ "$2" = "--" ] || die "usage: run N -- CMD..."
    n=$1; shift 2
    id=$(new_id)
    trap 'down "$id"' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    hosts=$(up "$id" "$n" | awk '$1 != "bridge" {printf "%s%s=%s", sep, $1, $2; sep=" "}')
    export NETNS_CLUSTER="$id" NETNS_HOSTS="$hosts"
    set +e
    "$@"
    rc=$?
    set -e
    exit "$rc"
    ;;
  *) sed -n '2,18p' "$0" >&2; exit 2 ;;
esac
