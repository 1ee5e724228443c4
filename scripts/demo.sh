#!/usr/bin/env bash
# The main job: install what is needed, build mcgw, and run mcgwd on the demo
# config with its two ports on veth pairs inside a network namespace of its
# own; then show `mcgwctl status`.  Nothing is created in the root namespace.
#
#   scripts/demo.sh            set up, build, start; leave the demo running
#   scripts/demo.sh --stop     ... and tear it down after showing the status
#   scripts/demo.sh --down     tear a running demo down
#   --no-install / --no-build  skip those steps (used by the lab test)
#
# Environment: MCGW_DEMO_NS (namespace, default mcgw-demo), MCGW_DEMO_DIR
# (logs and runtime config, default /tmp/<namespace>), MCGW_BUILD_DIR (build).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
ns=${MCGW_DEMO_NS:-mcgw-demo}
dir=${MCGW_DEMO_DIR:-/tmp/$ns}
build=${MCGW_BUILD_DIR:-$top/build}
install=1 build_it=1 stop=0 down=0
for arg in "$@"; do
  case "$arg" in
    --stop) stop=1 ;;
    --down) down=1 ;;
    --no-install) install=0 ;;
    --no-build) build_it=0 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "demo.sh: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "demo.sh: run as root (network namespaces, DPDK)" >&2; exit 1; }

teardown() {
  if [ -f "$dir/mcgwd.pid" ]; then
    kill "$(cat "$dir/mcgwd.pid")" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$(cat "$dir/mcgwd.pid")" 2>/dev/null || break; sleep 0.1; done
    rm -f "$dir/mcgwd.pid"
  fi
  ip netns del "$ns" 2>/dev/null || true
  echo "demo.sh: namespace $ns removed"
}

if [ "$down" -eq 1 ]; then
  teardown
  exit 0
fi

if [ "$install" -eq 1 ]; then
  "$top/scripts/install-deps.sh"
fi
if [ "$build_it" -eq 1 ]; then
  cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$build" --target mcgwd mcgwctl
fi

mcgwd=$build/control/daemon/mcgwd
mcgwctl=$build/control/cli/mcgwctl
ip netns list | grep -qw "^$ns" && teardown
mkdir -p "$dir"
socket=$dir/mcgw.sock
# The demo config with this run's socket and EAL file prefix.
sed -e "s|socket: /run/mcgw/demo.sock|socket: $socket|" \
    -e "s|file-prefix: mcgw-demo|file-prefix: $ns|" \
    "$top/config/examples/demo.yaml" > "$dir/mcgw.yaml"

# The namespace: each mcgw port is one end of a veth pair; the other end
# stands for the LAN (a VPC) and the WAN (an underlay line).
ip netns add "$ns"
ip -n "$ns" link set lo up
for port in lan0 wan0; do
  ip -n "$ns" link add "demo-$port" type veth peer name "peer-$port"
  ip -n "$ns" link set "demo-$port" up
  ip -n "$ns" link set "peer-$port" up
done
# Fixed MACs: the config names them as static neighbours (ARP/ND comes later).
ip -n "$ns" link set peer-lan0 address 02:00:00:00:0a:0a
ip -n "$ns" link set peer-wan0 address 02:00:00:00:0b:02
ip -n "$ns" addr add 10.1.0.10/24 dev peer-lan0
ip -n "$ns" addr add 198.51.100.2/30 dev peer-wan0

echo "demo.sh: preflight"
ip netns exec "$ns" "$mcgwd" --preflight --config "$dir/mcgw.yaml"
echo "demo.sh: starting mcgwd in namespace $ns (log: $dir/mcgwd.log)"
setsid ip netns exec "$ns" "$mcgwd" --config "$dir/mcgw.yaml" --state-dir "$dir/state" >"$dir/mcgwd.log" 2>&1 < /dev/null &
echo $! > "$dir/mcgwd.pid"

for _ in $(seq 100); do
  [ -S "$socket" ] && "$mcgwctl" --socket "$socket" status --json >/dev/null 2>&1 && break
  if ! kill -0 "$(cat "$dir/mcgwd.pid")" 2>/dev/null; then
    echo "demo.sh: mcgwd exited; its log:" >&2
    cat "$dir/mcgwd.log" >&2
    teardown
    exit 1
  fi
  sleep 0.2
done

echo
"$mcgwctl" --socket "$socket" status
rc=$?
echo
if [ "$stop" -eq 1 ]; then
  teardown
else
  echo "The demo is running.  Try:"
  echo "  $mcgwctl --socket $socket status --json"
  echo "  $mcgwctl --socket $socket show config"
  echo "  (edit $dir/mcgw.yaml)  $mcgwctl --socket $socket reload"
  echo "Tear it down with:  $0 --down"
fi
exit $rc
