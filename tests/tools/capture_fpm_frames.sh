#!/bin/bash
# Reproduces the FPM captures in tests/unit/control/fpm_frames/: runs FRR zebra
# (dplane_fpm_nl) and staticd in a network namespace of their own, points the
# FPM client at tests/tools/fpm_capture.py and configures static routes, one
# scenario per zebra run.  Never touches the root namespace: the links, the
# daemons and the capture listener all live in the namespace, which is deleted
# at the end.  Needs root, FRR 8.4 (/usr/lib/frr) and iproute2.
#
#   tests/tools/capture_fpm_frames.sh [OUTDIR]   (default tests/unit/control/fpm_frames)
#
# Each scenario writes OUTDIR/<scenario>.bin (the raw TCP stream zebra sent).
# Interface indexes are the namespace's own (lo 1, veth1 2, veth0 3, veth3 4,
# veth2 5), so they are the same on every run.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../unit/control/fpm_frames}
mkdir -p "$out"
out=$(cd "$out" && pwd)

tmp=$(mktemp -d /tmp/mcgw-fpmcap.XXXXXX)
chmod 755 "$tmp"

in_ns() { ip netns exec "$ns" "$@"; }
vty() {
  local args=()
  for c in "$@"; do args+=(-c "$c"); done
  in_ns vtysh --vty_socket "$run" "${args[@]}"
}

stop_daemons() {
  for p in "$run"/staticd.pid "$run"/zebra.pid; do
    [[ -f $p ]] && kill "$(cat "$p")" 2>/dev/null || true
  done
  # Give zebra time to withdraw nothing (the capture has already stopped) and exit.
  for _ in $(seq 50); do
    alive=0
    for p in "$run"/staticd.pid "$run"/zebra.pid; do
      [[ -f $p ]] && kill -0 "$(cat "$p")" 2>/dev/null && alive=1
    done
    ((alive)) || break
    sleep 0.1
  done
  rm -f "$run"/staticd.pid "$run"/zebra.pid
  if [[ -n ${capture_pid:-} ]]; then
    kill "$capture_pid" 2>/dev/null || true
    wait "$capture_pid" 2>/dev/null || true
    capture_pid=
  fi
}
cleanup() {
  [[ -n ${run:-} ]] && stop_daemons
  [[ -n ${ns:-} ]] && ip netns del "$ns" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# A namespace per scenario, so that interface indexes and zebra's next-hop ids
# start afresh (zebra also learns the kernel's next-hop objects at start).
make_namespace() {
  ns=mcgw-fpmcap-$$-$1
  ip netns add "$ns"
  in_ns ip link set lo up
  # No dummy links on the target kernel: veth pairs give connected next hops.
  in_ns ip link add veth0 type veth peer name veth1
  in_ns ip link add veth2 type veth peer name veth3
  for l in veth0 veth1 veth2 veth3; do in_ns ip link set "$l" up; done
  in_ns ip addr add 192.0.2.1/24 dev veth0
  in_ns ip addr add 2001:db8:1::1/64 dev veth0 nodad
  in_ns ip addr add 198.51.100.1/24 dev veth2
  in_ns ip addr add 2001:db8:2::1/64 dev veth2 nodad
}

# start_zebra SCENARIO [FPM-OPTION...]: fresh zebra + staticd (staticd.conf
# from $static_conf), capture listener, FPM configured; returns once zebra is
# connected and its initial dump (connected routes) is through.
start_zebra() {
  local scenario=$1
  shift
  make_namespace "$scenario"
  run=$tmp/$scenario
  mkdir -p "$run"
  chown frr:frr "$run"
  printf '%s\n' "${zebra_conf:-}" >"$run"/zebra.conf
  printf '%s\n' "${static_conf:-}" >"$run"/staticd.conf
  in_ns /usr/bin/python3 "$here"/fpm_capture.py --listen 127.0.0.1:2620 \
    --out "$out/$scenario.bin" --silence 8 --max-seconds 300 --ready "$run/listening" \
    2>"$run/capture.log" &
  capture_pid=$!
  for _ in $(seq 50); do [[ -f $run/listening ]] && break; sleep 0.1; done
  # -e 256: zebra's largest ECMP width (MULTIPATH_NUM of Debian's build).
  in_ns /usr/lib/frr/zebra -d -M dplane_fpm_nl -e 256 -u frr -g frr -P 0 \
    -f "$run"/zebra.conf -i "$run"/zebra.pid -z "$run"/zserv.api --vty_socket "$run" \
    --log file:"$run"/zebra.log
  in_ns /usr/lib/frr/staticd -d -u frr -g frr -P 0 \
    -f "$run"/staticd.conf -i "$run"/staticd.pid -z "$run"/zserv.api --vty_socket "$run" \
    --log file:"$run"/staticd.log
  for _ in $(seq 50); do [[ -S $run/staticd.vty ]] && break; sleep 0.1; done
  local cmds=(configure)
  for o in "$@"; do cmds+=("$o"); done
  cmds+=("fpm address 127.0.0.1 port 2620")
  vty "${cmds[@]}"
  for _ in $(seq 100); do grep -q client "$run/capture.log" && break; sleep 0.1; done
  grep -q client "$run/capture.log" || { echo "zebra did not connect" >&2; exit 1; }
  sleep 1
}

# finish: waits for the listener to stop (8 s of silence), then stops zebra.
finish() {
  wait "$capture_pid"
  capture_pid=
  cat "$run/capture.log" >&2
  stop_daemons
  ip netns del "$ns"
  ns=
}

# Scenario "routes": next hops inline (RTA_GATEWAY/RTA_OIF, RTA_MULTIPATH),
# no next-hop objects; FRR 8.4 sends groups unless told not to.  It has no
# "fpm use-route-replace": an update is DEL+NEW in one frame.
start_zebra routes "no fpm use-next-hop-groups"
vty configure "ip route 10.1.0.0/16 192.0.2.2"
sleep 0.5
vty configure "ipv6 route 2001:db8:100::/48 2001:db8:1::2"
sleep 0.5
vty configure "ip route 10.2.0.0/16 192.0.2.2" "ip route 10.2.0.0/16 192.0.2.3" \
  "ip route 10.2.0.0/16 198.51.100.2"
sleep 0.5
vty configure "ipv6 route 2001:db8:200::/48 2001:db8:1::2" "ipv6 route 2001:db8:200::/48 2001:db8:2::2"
sleep 0.5
vty configure "ip route 10.3.0.0/16 blackhole"
sleep 0.5
vty configure "ipv6 route 2001:db8:300::/48 blackhole"
sleep 0.5
vty configure "ip route 10.4.0.0/16 reject"
sleep 0.5
vty configure "ip route 0.0.0.0/0 198.51.100.254"
sleep 0.5
# Change 10.1.0.0/16's gateway: add the new one, drop the old one.
vty configure "ip route 10.1.0.0/16 198.51.100.9" "no ip route 10.1.0.0/16 192.0.2.2"
sleep 0.5
vty configure "no ip route 10.1.0.0/16 198.51.100.9"
finish

# Scenario "nhg": "fpm use-next-hop-groups" (FRR 8.4's default): RTM_NEWNEXTHOP
# before the routes, routes carry RTA_NH_ID.  zebra keeps an unused group for
# "zebra nexthop-group keep" seconds (180 by default); 1 s lets the
# RTM_DELNEXTHOPs through before the capture stops.
zebra_conf="zebra nexthop-group keep 1"
start_zebra nhg "fpm use-next-hop-groups"
zebra_conf=
vty configure "ip route 10.1.0.0/16 192.0.2.2"
sleep 0.5
vty configure "ip route 10.2.0.0/16 192.0.2.2" "ip route 10.2.0.0/16 198.51.100.2"
sleep 0.5
vty configure "ipv6 route 2001:db8:100::/48 2001:db8:1::2" "ipv6 route 2001:db8:100::/48 2001:db8:2::2"
sleep 0.5
vty configure "no ip route 10.2.0.0/16 192.0.2.2" "no ip route 10.2.0.0/16 198.51.100.2"
sleep 0.5
vty configure "no ip route 10.1.0.0/16 192.0.2.2"
sleep 3
finish

# Scenario "wide_ecmp": an IPv6 route with 255 next hops (from staticd.conf, so
# zebra has it whole before FPM connects and sends it once; its NEWROUTE is
# 7200 bytes, 28 per path), then one path fewer (an update: DEL+NEW in one
# frame), then veth0 goes down, which withdraws it (and veth0's connected
# routes).  255 is the most FRR 8.4 sends: "-e 256" is accepted, but a static
# route with 256 next hops stays selected and is never installed (not in the
# kernel, nothing on FPM).  So zebra 8.4 cannot make a route message over
# 8 KiB from static routes; MPLS labels (RTA_ENCAP on each path) would, but
# need kernel MPLS support, absent here (zebra then sends nothing either).
static_conf=$(for i in $(seq 255); do
  printf 'ipv6 route 2001:db8:aaaa::/48 2001:db8:1::%x veth0\n' $((i + 0xff))
done)
start_zebra wide_ecmp "no fpm use-next-hop-groups"
static_conf=
# staticd resolves the 255 gateways one by one: wait until zebra has sent the
# whole route.
for _ in $(seq 300); do (($(stat -c %s "$out/wide_ecmp.bin") > 7000)) && break; sleep 0.1; done
sleep 1
vty configure "no ipv6 route 2001:db8:aaaa::/48 2001:db8:1::1fe veth0"
sleep 1
in_ns ip link set veth0 down
finish

echo "captured into $out:" >&2
ls -l "$out"/*.bin >&2
