#!/usr/bin/env bash
# Lab test: the README's main job, scripts/lab.sh, with a namespace prefix of
# its own (no install, no build: ctest runs after the build).  It must bring
# the lab up with BGP (FRR in both gateways, every session Established over
# the IPv6 underlay, no static A<->B route), get every ping and both-way
# 10 MiB TCP transfer A<->B and A<->C through, show both gateways healthy, leave the lab running with a teardown
# command that works, and `--down` must leave nothing behind.
set -euo pipefail
top=${MCGW_SOURCE_DIR:?}
export MCGW_BUILD_DIR=${MCGW_BUILD_DIR:?}
export MCGW_LAB_PREFIX=mcgwlab-mj$$-
tmp=$(mktemp -d /tmp/mcgwlab-mj-XXXXXX)
export MCGW_LAB_DIR=$tmp/lab
out=$tmp/lab.out

cleanup() {
  "$top/scripts/lab.sh" --down >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  [ -f "$out" ] && cat "$out" >&2
  for f in "$MCGW_LAB_DIR"/gw*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -20 "$f" >&2; }; done
  exit 1
}

start=$SECONDS
"$top/scripts/lab.sh" --no-install --no-build > "$out" 2>&1 || fail "lab.sh exit $?"
took=$((SECONDS - start))
grep -q "all pings and TCP transfers went through; both gateways healthy" "$out" || fail "no success line"
[ "$(grep -c ': 3 sent, 3 received' "$out")" = 4 ] || fail "expected 4 pings with 3/3 replies"
for pair in "hosta 10.1.0.10 -> hostb 10.2.0.10" "hostb 10.2.0.10 -> hosta 10.1.0.10" \
            "hosta 10.1.0.10 -> hostc 10.3.0.10" "hostc 10.3.0.10 -> hosta 10.1.0.10"; do
  grep -qE "^$pair: 10\.[0-9] MiB received" "$out" || fail "no 10 MiB transfer $pair"
done
[ "$(grep -c 'HEALTHY' "$out")" = 2 ] || fail "expected both gateways HEALTHY"
grep -q "^gwa: BGP sessions Established: fd00:64:3::1 fd00:64:4::1$" "$out" || fail "gwa: BGP sessions not Established"
grep -q "^gwb: BGP sessions Established: fd00:64:1::1 fd00:64:2::1$" "$out" || fail "gwb: BGP sessions not Established"
# No static route A<->B (over the IPv6 underlay BGP carries both families).
! grep -q "peer: site-b" "$MCGW_LAB_DIR/gwa.yaml" || fail "gwa.yaml has a static route to site-b"
! grep -q "peer: site-a" "$MCGW_LAB_DIR/gwb.yaml" || fail "gwb.yaml has a static route to site-a"
echo "ok: BGP: both gateways' line sessions Established, no static A<->B route"
grep -q "Tear it down with:  MCGW_LAB_PREFIX=$MCGW_LAB_PREFIX MCGW_LAB_DIR=$MCGW_LAB_DIR .*lab.sh --down" "$out" \
  || fail "no teardown command"
echo "ok: scripts/lab.sh: lab up, 4 pings and 4 TCP transfers of 10 MiB through, both gateways healthy ($took s)"

n=$(ip netns list | grep -c "^$MCGW_LAB_PREFIX" || true)
[ "$n" = 7 ] || fail "expected the lab's 7 namespaces to keep running, found $n"
ctl="$MCGW_BUILD_DIR/control/cli/mcgwctl --socket $MCGW_LAB_DIR/gwa.sock"
$ctl show tunnels | grep -q "active: line1" || fail "gwa show tunnels: $($ctl show tunnels)"
echo "ok: the lab keeps running after lab.sh (7 namespaces, gateway A answers)"

"$top/scripts/lab.sh" --down > "$tmp/down.out" 2>&1 || fail "lab.sh --down: $(cat "$tmp/down.out")"
n=$(ip netns list | grep -c "^$MCGW_LAB_PREFIX" || true)
[ "$n" = 0 ] || fail "lab.sh --down left $n namespaces"
[ ! -S "$MCGW_LAB_DIR/gwa.sock" ] || fail "gateway socket left behind"
echo "ok: lab.sh --down removes the lab"
echo "4 passed, 0 failed"
