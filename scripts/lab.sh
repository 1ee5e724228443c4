#!/usr/bin/env bash
# The main job: install what is needed, build mcgw, and bring up the lab:
# three sites in network namespaces (host A - gateway A, an underlay router
# with two lines to each gateway, gateway B - host B, and site C: a Linux
# VXLAN VTEP with host C behind it), mcgwd running on both gateways with
# configs generated from the topology; then show both gateways' status.
# Nothing is created in the root namespace (tests/lab/mcgwlab.py builds it).
#
#   scripts/lab.sh             set up, build, start; leave the lab running
#   scripts/lab.sh --down      tear a running lab down
#   --no-install / --no-build  skip those steps
#   --encap vxlan|geneve, --underlay ipv4|ipv6, --driver af_xdp|af_packet,
#   --kernel-static-neighbors, --no-static-neighbors, --no-gateways
#                              passed on to `mcgwlab.py up`
#
# Environment: MCGW_LAB_PREFIX (namespace prefix, default mcgwlab-main-),
# MCGW_LAB_DIR (configs, logs, sockets; default /tmp/<prefix>), MCGW_BUILD_DIR.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
prefix=${MCGW_LAB_PREFIX:-mcgwlab-main-}
dir=${MCGW_LAB_DIR:-/tmp/${prefix%-}}
export MCGW_BUILD_DIR=${MCGW_BUILD_DIR:-$top/build}
build=$MCGW_BUILD_DIR
install=1 build_it=1 down=0
up_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --down) down=1 ;;
    --no-install) install=0 ;;
    --no-build) build_it=0 ;;
    --encap|--underlay|--driver|--vni|--log-level|--kernel-addrs)
      [ $# -ge 2 ] || { echo "lab.sh: $1 needs a value" >&2; exit 2; }
      up_args+=("$1" "$2"); shift ;;
    --kernel-static-neighbors|--no-static-neighbors|--no-gateways) up_args+=("$1") ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "lab.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ "$(id -u)" -eq 0 ] || { echo "lab.sh: run as root (network namespaces, DPDK)" >&2; exit 1; }

# Debian's interpreter: python3 on PATH may be another one (see docs).
lab=(/usr/bin/python3 "$top/tests/lab/mcgwlab.py" --prefix "$prefix" --dir "$dir")

if [ "$down" -eq 1 ]; then
  "${lab[@]}" down
  exit 0
fi

if [ "$install" -eq 1 ]; then
  "$top/scripts/install-deps.sh"
fi
if [ "$build_it" -eq 1 ]; then
  cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$build" --target mcgwd mcgwctl
fi
mcgwctl=$build/control/cli/mcgwctl

echo "lab.sh: building the lab $prefix (namespaces ${prefix}hosta ... ${prefix}hostc; files in $dir)"
"${lab[@]}" up --replace ${up_args[@]+"${up_args[@]}"} > "$dir.up.log" 2>&1 || {
  cat "$dir.up.log" >&2
  echo "lab.sh: the lab did not come up (it removed what it had made)" >&2
  exit 1
}
mv "$dir.up.log" "$dir/up.log"
cat "$dir/topology.txt"

rc=0
for gw in gwa gwb; do
  [ -S "$dir/$gw.sock" ] || continue
  echo
  echo "== $gw ($prefix$gw): $mcgwctl --socket $dir/$gw.sock status"
  set +e
  "$mcgwctl" --socket "$dir/$gw.sock" status
  s=$?
  set -e
  [ "$s" -le 1 ] || rc=1 # 1 is degraded (still up); 2 is unreachable
done

# ---------------------------------------------------------------------------
# TRAFFIC (to come): once the gateways answer ARP/ND themselves (issue 4), this
# is where the main job shows traffic through the tunnels, e.g.
#   "${lab[@]}" ping hosta 10.2.0.10          # site A -> site B over mcgw
#   "${lab[@]}" ping hosta 10.3.0.10          # site A -> site C (Linux VXLAN)
#   iperf3 between hostb and hosta            # TCP through the tunnel
# Until then `--kernel-static-neighbors` gives hosts and router permanent
# neighbour entries for the gateways, and the pings above already work.
# ---------------------------------------------------------------------------

echo
echo "The lab is running.  Try:"
echo "  ${lab[*]} status"
echo "  ${lab[*]} exec hosta -- ip route"
echo "  ${lab[*]} capture start rtr a1 --name line1   (... capture stop line1)"
echo "  $mcgwctl --socket $dir/gwa.sock show tunnels"
echo "  (edit $dir/gwa.yaml)  $mcgwctl --socket $dir/gwa.sock reload"
env=
[ "$prefix" = mcgwlab-main- ] || env="MCGW_LAB_PREFIX=$prefix "
[ "$dir" = "/tmp/${prefix%-}" ] || env="${env}MCGW_LAB_DIR=$dir "
echo "Tear it down with:  $env$0 --down"
exit $rc
