#!/usr/bin/env bash
# Lab test: the README's main job (scripts/demo.sh) in a namespace of its own.
# mcgwd owns two af_packet ports on veth pairs; we check status, link state
# from the kernel, a reload that changes a port MTU on the real interface,
# and that teardown leaves nothing behind.
set -euo pipefail
top=${MCGW_SOURCE_DIR:?}
export MCGW_BUILD_DIR=${MCGW_BUILD_DIR:?}
export MCGW_DEMO_NS=mcgw-lab-$$
export MCGW_DEMO_DIR=$(mktemp -d /tmp/mcgw-lab-XXXXXX)
ctl="$MCGW_BUILD_DIR/control/cli/mcgwctl --socket $MCGW_DEMO_DIR/mcgw.sock"
ns=$MCGW_DEMO_NS

cleanup() {
  "$top/scripts/demo.sh" --down >/dev/null 2>&1 || true
  rm -rf "$MCGW_DEMO_DIR"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$MCGW_DEMO_DIR/mcgwd.log" ] && cat "$MCGW_DEMO_DIR/mcgwd.log" >&2; exit 1; }

"$top/scripts/demo.sh" --no-install --no-build > "$MCGW_DEMO_DIR/demo.out" || fail "demo.sh: $(cat "$MCGW_DEMO_DIR/demo.out")"
grep -q "HEALTHY" "$MCGW_DEMO_DIR/demo.out" || fail "demo output has no HEALTHY"

status=$($ctl status --json) || fail "status exit $?"
[ "$(jq -r .health.state <<<"$status")" = healthy ] || fail "not healthy: $status"
[ "$(jq -r '.ports | length' <<<"$status")" = 2 ] || fail "ports: $status"
[ "$(jq -r '.ports[0].driver' <<<"$status")" = net_af_packet ] || fail "driver: $status"
echo "ok: demo healthy with two af_packet ports"

# Cut the WAN veth: the port's kernel interface loses carrier.
ip -n "$ns" link set peer-wan0 down
set +e
$ctl status > "$MCGW_DEMO_DIR/status.txt"; rc=$?
set -e
[ "$rc" = 1 ] || fail "degraded status should exit 1, got $rc"
grep -q "port wan0 link is down" "$MCGW_DEMO_DIR/status.txt" || fail "no reason: $(cat "$MCGW_DEMO_DIR/status.txt")"
ip -n "$ns" link set peer-wan0 up
for _ in $(seq 50); do $ctl status >/dev/null && break; sleep 0.1; done
$ctl status >/dev/null || fail "did not recover after link up"
echo "ok: link down shows as degraded with the reason, and recovers"

# Reload: a new MTU on lan0 reaches the kernel interface.
sed -i 's|vdev: net_af_packet0,iface=demo-lan0|vdev: net_af_packet0,iface=demo-lan0\n    mtu: 1400|' "$MCGW_DEMO_DIR/mcgw.yaml"
out=$($ctl reload) || fail "reload: $out"
grep -q "port lan0: changed (mtu 1500 -> 1400)" <<<"$out" || fail "reload output: $out"
ip -n "$ns" link show demo-lan0 | grep -q "mtu 1400" || fail "kernel MTU: $(ip -n "$ns" link show demo-lan0)"
[ "$($ctl status --json | jq -r '.ports[0].mtu')" = 1400 ] || fail "status MTU"
echo "ok: reload applied the MTU to the interface"

"$top/scripts/demo.sh" --down >/dev/null
! ip netns list | grep -qw "$ns" || fail "namespace $ns left behind"
[ ! -S "$MCGW_DEMO_DIR/mcgw.sock" ] || fail "socket left behind"
echo "ok: teardown removed the namespace"
echo "1 passed, 0 failed"
