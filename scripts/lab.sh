#!/usr/bin/env bash
# The main job: install what is needed, build mcgw, bring up the lab and send
# traffic through it.  The lab is three sites in network namespaces: host A
# behind gateway A, host B behind gateway B (both gateways run mcgwd; two
# underlay lines each, through one underlay router), and site C, a Linux VXLAN
# VTEP with host C behind it.  The gateways route A<->B by BGP: FRR runs in
# each gateway's namespace (mcgwd renders and applies its config, and is its
# forwarding plane over FPM), one eBGP session with BFD per line, over an
# IPv6 underlay (the VTEPs' family; the underlay is dual-stack) so that the
# sessions carry both families' VPC routes: no static route A<->B, only site
# C's VPC (Linux VXLAN, no BGP) keeps static routes.  The script waits until
# every session is Established.  Then: ping and a 10 MiB TCP transfer (iperf3)
# between host A and host B and between host A and host C, and `mcgwctl
# status` of both gateways.  Nothing is created in the root namespace
# (tests/lab/mcgwlab.py builds the lab; docs/operations.md shows around it).
#
#   scripts/lab.sh             install, build, lab up, traffic; leave the lab running
#   scripts/lab.sh --once      the same, then tear the lab down
#   scripts/lab.sh --down      tear a running lab down
#   --no-install / --no-build  skip those steps
#   --encap vxlan|geneve, --underlay ipv4|ipv6 (default ipv6; ipv4 with
#   --no-bgp), --driver af_xdp|af_packet,
#   --host-mtu N, --static-neighbors, --kernel-static-neighbors,
#   --rtr-mtu IF=MTU, --drop-icmp, --path-mtu KEY=VALUE,
#   --no-bgp (static routes, no FRR), --idc-router (BIRD behind gateway A)
#                              passed on to `mcgwlab.py up`
#
# Exit status: 0 when every ping and transfer went through and both gateways
# are healthy.  Environment: MCGW_LAB_PREFIX (namespace prefix, default
# mcgwlab-main-), MCGW_LAB_DIR (configs, logs, sockets; default
# /tmp/<prefix>), MCGW_BUILD_DIR (default build/).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
prefix=${MCGW_LAB_PREFIX:-mcgwlab-main-}
dir=${MCGW_LAB_DIR:-/tmp/${prefix%-}}
export MCGW_BUILD_DIR=${MCGW_BUILD_DIR:-$top/build}
build=$MCGW_BUILD_DIR
install=1 build_it=1 down=0 once=0
up_args=()
underlay= bgp=1
while [ $# -gt 0 ]; do
  case "$1" in
    --down) down=1 ;;
    --once) once=1 ;;
    --no-install) install=0 ;;
    --no-build) build_it=0 ;;
    --underlay)
      [ $# -ge 2 ] || { echo "lab.sh: $1 needs a value" >&2; exit 2; }
      underlay=$2; shift ;;
    --encap|--driver|--vni|--log-level|--kernel-addrs|--host-mtu|--rtr-mtu|--path-mtu)
      [ $# -ge 2 ] || { echo "lab.sh: $1 needs a value" >&2; exit 2; }
      up_args+=("$1" "$2"); shift ;;
    --no-bgp) bgp=0; up_args+=("$1") ;;
    --static-neighbors|--kernel-static-neighbors|--no-static-neighbors|--drop-icmp|--bgp|--idc-router)
      up_args+=("$1") ;;
    -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
    *) echo "lab.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
# With BGP the VTEPs are IPv6 by default: IPv6 sessions carry IPv4 and IPv6
# VPC routes (extended next hop); IPv4 sessions carry IPv4 only, which would
# leave the IPv6 VPCs A<->B on static routes.
[ -n "$underlay" ] || { [ "$bgp" -eq 1 ] && underlay=ipv6 || underlay=ipv4; }
up_args+=(--underlay "$underlay")
[ "$(id -u)" -eq 0 ] || { echo "lab.sh: run as root (network namespaces, DPDK)" >&2; exit 1; }

# Debian's interpreter: python3 on PATH may be another one (see docs).
lab=(/usr/bin/python3 "$top/tests/lab/mcgwlab.py" --prefix "$prefix" --dir "$dir")
env=
[ "$prefix" = mcgwlab-main- ] || env="MCGW_LAB_PREFIX=$prefix "
[ "$dir" = "/tmp/${prefix%-}" ] || env="${env}MCGW_LAB_DIR=$dir "

if [ "$down" -eq 1 ]; then
  "${lab[@]}" down
  exit 0
fi

step() { printf '\n== %s\n' "$*"; }
t0=$SECONDS
if [ "$install" -eq 1 ]; then
  step "dependencies (scripts/install-deps.sh)"
  "$top/scripts/install-deps.sh"
fi
if [ "$build_it" -eq 1 ]; then
  step "build mcgwd and mcgwctl in $build"
  cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$build" --target mcgwd mcgwctl
fi
mcgwctl=$build/control/cli/mcgwctl

step "lab $prefix up (namespaces ${prefix}hosta ... ${prefix}hostc; files in $dir)"
mkdir -p "$(dirname "$dir")"
"${lab[@]}" up --replace ${up_args[@]+"${up_args[@]}"} > "$dir.up.log" 2>&1 || {
  cat "$dir.up.log" >&2
  echo "lab.sh: the lab did not come up (it removed what it had made)" >&2
  exit 1
}
mv "$dir.up.log" "$dir/up.log"
[ "$once" -eq 0 ] || trap '"${lab[@]}" down >/dev/null 2>&1 || true' EXIT
cat "$dir/topology.txt"

rc=0
step "BGP: every session Established (FRR in gwa and gwb; mcgwlab.py wait-bgp)"
"${lab[@]}" wait-bgp --timeout 60 || rc=1

step "traffic: host A 10.1.0.10 (site A) <-> host B 10.2.0.10 (site B, through both mcgwd) and host C 10.3.0.10 (site C, Linux VXLAN)"
for dst in 10.2.0.10 fd00:b::10 10.3.0.10 fd00:c::10; do
  "${lab[@]}" ping hosta "$dst" -c 3 -W 2 || rc=1
done
for pair in "hosta hostb" "hostb hosta" "hosta hostc" "hostc hosta"; do
  # shellcheck disable=SC2086 # two words: sender and receiver
  "${lab[@]}" iperf $pair -n 10M || rc=1
done

for gw in gwa gwb; do
  step "$gw ($prefix$gw): mcgwctl --socket $dir/$gw.sock status"
  set +e
  "$mcgwctl" --socket "$dir/$gw.sock" status
  s=$?
  set -e
  [ "$s" -eq 0 ] || rc=1 # 1 is degraded, 2 unreachable
done

echo
if [ "$rc" -eq 0 ]; then
  echo "lab.sh: all pings and TCP transfers went through; both gateways healthy ($((SECONDS - t0)) s)"
else
  echo "lab.sh: FAILED: see above; gateway logs $dir/gwa.log, $dir/gwb.log" >&2
fi
if [ "$once" -eq 1 ]; then
  step "tear down"
  trap - EXIT
  "${lab[@]}" down
  exit $rc
fi
cat <<EOF

The lab is running (docs/operations.md, "The lab", shows around).  Try:
  $mcgwctl --socket $dir/gwa.sock show tunnels      (also: show counters, show neighbors, show routes)
  ${lab[*]} exec hosta -- ip route
  ${lab[*]} ping hosta 10.2.0.10 -Q 0xb8
  ${lab[*]} iperf hosta hostb -6 -n 100M
  ${lab[*]} exec rtr -- tcpdump -ni a1 udp port 4789
  ${lab[*]} vtysh gwa show bgp summary      (FRR; also: $mcgwctl --socket $dir/gwa.sock show routes --source frr)
  ip -n ${prefix}rtr link set a1 down; ip -n ${prefix}rtr link set b1 down     (cut line 1: the tunnel moves to line 2)
Tear it down with:  $env$0 --down
EOF
exit $rc
