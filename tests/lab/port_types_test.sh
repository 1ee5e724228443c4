#!/usr/bin/env bash
# Lab test: mcgwd opens every kind of port the config names: net_af_xdp and
# net_af_packet on veth pairs in a namespace of its own, net_ring, net_null.
set -euo pipefail
build=${MCGW_BUILD_DIR:?}
ns=mcgw-ports-$$
dir=$(mktemp -d /tmp/mcgw-ports-XXXXXX)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; cat "$dir/mcgwd.log" >&2 || true; exit 1; }

ip netns add "$ns"
for i in 0 1; do
  ip -n "$ns" link add "p$i" type veth peer name "q$i"
  ip -n "$ns" link set "p$i" up
  ip -n "$ns" link set "q$i" up
done
cat > "$dir/mcgw.yaml" <<YAML
node: {name: gw-ports, site: lab}
eal: {hugepages: false, memory-mb: 256, mbufs: 4095, file-prefix: $ns}
ports:
  - {name: xdp0, role: lan, vdev: "net_af_xdp0,iface=p0"}
  - {name: pkt0, role: wan, vdev: "net_af_packet0,iface=p1"}
  - {name: ring0, role: wan, vdev: net_ring0}
  - {name: null0, role: wan, vdev: net_null0}
api: {socket: $dir/mcgw.sock}
YAML
ip netns exec "$ns" "$build/control/daemon/mcgwd" --preflight --config "$dir/mcgw.yaml" || fail "preflight"
ip netns exec "$ns" "$build/control/daemon/mcgwd" --config "$dir/mcgw.yaml" --state-dir "$dir/state" >"$dir/mcgwd.log" 2>&1 &
pid=$!
ctl="$build/control/cli/mcgwctl --socket $dir/mcgw.sock"
for _ in $(seq 100); do $ctl status --json >/dev/null 2>&1 && break; sleep 0.2; done
status=$($ctl status --json) || fail "status: $status"
drivers=$(jq -r '[.ports[] | .name + "=" + .driver] | join(" ")' <<<"$status")
[ "$drivers" = "xdp0=net_af_xdp pkt0=net_af_packet ring0=net_ring null0=net_null" ] || fail "drivers: $drivers"
[ "$(jq -r .health.state <<<"$status")" = healthy ] || fail "health: $status"
echo "ok: $drivers"

kill "$pid"
wait "$pid" || fail "mcgwd exit code $?"
pid=
grep -q "\] stopped$" "$dir/mcgwd.log" || fail "no orderly stop"
echo "1 passed, 0 failed"
