#!/usr/bin/env bash
# Side by side on this machine: dpdk-testpmd io forwarding (the floor),
# OVS-DPDK (Debian's openvswitch-switch-dpdk, userspace VXLAN) and mcgwd (its
# defaults: MSS clamp and path-MTU checks on), each on one forwarding lcore,
# fed the same pcap looped by DPDK's net_pcap (infinite_rx=1) and sending to
# net_null, for VXLAN encapsulation (LAN frames in, VXLAN out) and
# decapsulation (VXLAN in, LAN frames out).  Interleaved over several rounds;
# prints Mpps and TSC cycles per packet per system (median, min..max) and the
# ratios mcgwd/OVS-DPDK and mcgwd/testpmd.  docs/performance.md, "Side by side".
#
#   scripts/compare.sh [--rounds N] [--warmup S] [--window S] [--systems LIST]
#                      [--directions LIST] [--no-install] [--keep] [--tsv FILE]
#
#   --rounds N        rounds (default 5); each runs every system once per direction
#   --warmup S        seconds of traffic before the window (default 2)
#   --window S        seconds over which pps is read (default 5)
#   --systems LIST    comma-separated of testpmd,ovs,mcgwd (default all three)
#   --directions LIST comma-separated of encap,decap (default both)
#   --no-install      do not apt-get install what is missing
#   --keep            keep the work directory (logs, configs, pcaps)
#   --tsv FILE        also write one line per measurement to FILE
#
# Needs root (network namespaces, DPDK).  No hugepages: every DPDK process runs
# with --no-huge.  Each system runs inside a network namespace of its own per
# measurement (OVS creates TAPs for its bridges); nothing is created in the
# root namespace (the TSC probe, a testpmd with one net_null port, creates no
# interface) and no interface is touched.  The system's Open vSwitch is left
# alone (the DPDK build is started by its path), except that installing
# openvswitch-switch-dpdk stops the daemons Debian starts on install (not an
# Open vSwitch that was running before).
# Everything started is stopped on exit, also on failure or ^C.
# Environment: MCGW_BUILD_DIR (default <checkout>/build).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${MCGW_BUILD_DIR:-$top/build}
rounds=5 warmup=2 window=5 systems=testpmd,ovs,mcgwd directions=encap,decap
install=1 keep=0 tsv=
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift ;;
    --warmup) warmup=$2; shift ;;
    --window) window=$2; shift ;;
    --systems) systems=$2; shift ;;
    --directions) directions=$2; shift ;;
    --no-install) install=0 ;;
    --keep) keep=1 ;;
    --tsv) tsv=$2; shift ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "compare.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ "$(id -u)" -eq 0 ] || { echo "compare.sh: run as root (network namespaces, DPDK)" >&2; exit 1; }
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "compare.sh: --rounds must be a positive integer" >&2; exit 2; }
for s in ${systems//,/ }; do
  case "$s" in testpmd|ovs|mcgwd) ;; *) echo "compare.sh: unknown system '$s'" >&2; exit 2 ;; esac
done
for d in ${directions//,/ }; do
  case "$d" in encap|decap) ;; *) echo "compare.sh: unknown direction '$d'" >&2; exit 2 ;; esac
done

say() { echo "compare.sh: $*" >&2; }
die() { echo "compare.sh: FAILED: $*" >&2; exit 1; }
py=/usr/bin/python3 # Debian's, with python3-scapy (not a pyenv shim)
ovs_vswitchd=/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk

# ---------------------------------------------------------------- install
if [ "$install" -eq 1 ]; then
  pkgs=()
  command -v dpdk-testpmd >/dev/null || pkgs+=(dpdk-dev)
  [ -x "$ovs_vswitchd" ] || pkgs+=(openvswitch-switch-dpdk)
  $py -c 'import scapy' 2>/dev/null || pkgs+=(python3-scapy)
  command -v ip >/dev/null || pkgs+=(iproute2)
  if [ ${#pkgs[@]} -gt 0 ]; then
    # An Open vSwitch the machine already runs is left running: only what
    # the install starts is stopped below.
    ovs_ran=0
    if [ -d /run/systemd/system ]; then
      systemctl is-active --quiet openvswitch-switch 2>/dev/null && ovs_ran=1
    else
      for p in /run/openvswitch/ovs-vswitchd.pid /run/openvswitch/ovsdb-server.pid; do
        if [ -f "$p" ] && kill -0 "$(cat "$p")" 2>/dev/null; then ovs_ran=1; fi
      done
    fi
    say "installing ${pkgs[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >&2
    if [[ " ${pkgs[*]} " == *" openvswitch-switch-dpdk "* ]] && [ "$ovs_ran" -eq 0 ]; then
      # Debian starts the system's Open vSwitch on install: this script runs
      # its own, so stop the one the install started (systemd, or the
      # daemons of the pidfiles in /run/openvswitch), and nothing else.
      if [ -d /run/systemd/system ]; then
        systemctl stop openvswitch-switch ovs-vswitchd ovsdb-server 2>/dev/null || true
      else
        for p in /run/openvswitch/ovs-vswitchd.pid /run/openvswitch/ovsdb-server.pid; do
          if [ -f "$p" ]; then kill "$(cat "$p")" 2>/dev/null || true; fi
        done
      fi
    fi
  fi
fi
for tool in dpdk-testpmd ovsdb-tool ovsdb-server ovs-vsctl ovs-appctl ovs-ofctl ip; do
  command -v "$tool" >/dev/null || die "$tool not found (run without --no-install)"
done
[ -x "$ovs_vswitchd" ] || die "$ovs_vswitchd not found (apt-get install openvswitch-switch-dpdk)"
$py -c 'import scapy' 2>/dev/null || die "python3-scapy missing"

mcgwd=$(find "$build" -name mcgwd -type f -perm -u+x 2>/dev/null | head -1)
mcgwctl=$(find "$build" -name mcgwctl -type f -perm -u+x 2>/dev/null | head -1)
if [[ ",$systems," == *",mcgwd,"* ]] && { [ -z "$mcgwd" ] || [ -z "$mcgwctl" ]; }; then
  say "building mcgwd and mcgwctl in $build"
  [ -f "$build/CMakeCache.txt" ] || cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
  cmake --build "$build" --target mcgwd mcgwctl >&2
  mcgwd=$build/control/daemon/mcgwd mcgwctl=$build/control/cli/mcgwctl
fi

# ---------------------------------------------------------------- work dir, cleanup
work=$(mktemp -d /tmp/mcgw-compare.XXXXXX)
tag=$(basename "$work" | sed 's/^mcgw-compare\.//' | tr -dc 'a-zA-Z0-9')
pids=()  # processes this script started (killed on exit)
netns=   # the namespace of the measurement in progress
tp_fd=

stop_pid() { # PID: SIGTERM, wait up to 5 s, then SIGKILL
  local pid=$1
  kill -0 "$pid" 2>/dev/null || return 0
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null || true; fi
  wait "$pid" 2>/dev/null || true
}

stop_all() { # stop what the measurement in progress started, remove its namespace
  if [ -n "$tp_fd" ]; then exec {tp_fd}>&-; tp_fd=; fi
  local i
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do stop_pid "${pids[$i]}"; done
  pids=()
  if [ -n "$netns" ]; then ip netns del "$netns" 2>/dev/null || true; netns=; fi
}

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  stop_all
  if [ "$keep" -eq 1 ] || [ "$rc" -ne 0 ]; then
    say "logs, configs and pcaps kept in $work"
  else
    rm -rf "$work"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

new_netns() { # a namespace for one measurement
  netns=mcgwcmp-$tag-$1
  ip netns add "$netns"
  ip -n "$netns" link set lo up
}

now() { date +%s.%N; }

rate() { # TX RX T0A T0B T1A T1B -> "pps rx tx": each read's time is the middle of its call
  awk -v tx="$1" -v rx="$2" -v a0="$3" -v b0="$4" -v a1="$5" -v b1="$6" \
    'BEGIN {printf "%.0f %d %d\n", tx / (((a1 + b1) - (a0 + b0)) / 2), rx, tx}'
}

# ---------------------------------------------------------------- inputs
# Addresses (compare_pcap.py's defaults): the receiving port has MAC
# 02:70:63:61:70:00 (net_pcap's first port; OVS's underlay bridge is given
# it), LAN 10.1.0.0/16 (host 10.1.0.10, next hop 10.1.0.254), the remote
# site 10.2.0.0/16 behind VTEP 172.16.0.2, local VTEP 172.16.0.1, VNI 1001;
# decapsulated packets go to 10.99.0.0/16 via the LAN next hop.
gw_mac=02:70:63:61:70:00
say "writing the pcaps (4,096 flows, 64-byte frames) into $work"
$py "$top/scripts/compare_pcap.py" --encap "$work/encap.pcap" --decap "$work/decap.pcap"

# TSC rate, as the EAL measures it.
tsc_hz=$({ echo quit | dpdk-testpmd --log-level=lib.eal:debug -l 0,1 --no-huge -m 64 --no-pci \
  --no-shconf --file-prefix "mcgwcmp$tag-tsc" --vdev net_null0,no-rx=1 -- -i \
  --total-num-mbufs=2048 2>&1 || true; } | sed -n 's/.*TSC frequency is ~\([0-9]*\) KHz.*/\1/p' | head -1)
[ -n "$tsc_hz" ] || die "could not read the TSC frequency from the EAL"
tsc_hz=$((tsc_hz * 1000))

# ---------------------------------------------------------------- checks
# RX (into the pcap port) and TX (out of the null port) over the window must
# agree: every packet received was forwarded.  Packets in flight when the two
# counters are read differ by at most a few bursts.
check_fwd() { # NAME RX TX
  local name=$1 rx=$2 tx=$3
  [ "$tx" -gt 0 ] || die "$name: forwarded nothing (TX 0, RX $rx)"
  local diff=$((rx > tx ? rx - tx : tx - rx))
  local tol=$((rx / 200 > 4096 ? rx / 200 : 4096))
  [ "$diff" -le "$tol" ] || die "$name: RX $rx but TX $tx over the window: it drops packets"
}

# ---------------------------------------------------------------- testpmd
# io forwarding: port 0 (net_pcap) -> port 1 (net_null, no-rx).  Stats from
# the interactive prompt, on a FIFO.
tp_stats() { # LOG -> "rx0 tx1" after sending "show port stats all"
  local log=$1 n
  n=$(grep -c 'NIC statistics for port 1' "$log" || true)
  echo "show port stats all" >&"$tp_fd"
  for _ in $(seq 200); do
    [ "$(grep -c 'NIC statistics for port 1' "$log" || true)" -gt "$n" ] && break
    sleep 0.01
  done
  # the last block of each port, once the port 1 block is complete
  local out=
  for _ in $(seq 100); do
    out=$(awk '/NIC statistics for port 0/ {p=0; b++} /NIC statistics for port 1/ {p=1; b++}
               /RX-packets:/ {rx[p]=$2} /TX-packets:/ {tx[p]=$2; if (p==1) n=b}
               END {if (n > 0 && n == b) print rx[0], tx[1]}' "$log")
    [ -n "$out" ] && [ "$(grep -c 'NIC statistics for port 1' "$log" || true)" -gt "$n" ] && break
    out=
    sleep 0.01
  done
  [ -n "$out" ] || { echo "compare.sh: FAILED: no port stats from testpmd ($log)" >&2; return 1; }
  echo "$out"
}

run_testpmd() { # DIRECTION RUN-ID -> sets result="pps rx tx"
  local dir=$1 id=$2 d=$work/$2
  mkdir -p "$d"
  new_netns "$id"
  mkfifo "$d/stdin"
  # line-buffered stdout: the stats must reach the log when asked for
  ip netns exec "$netns" stdbuf -oL dpdk-testpmd -l 0,1 --no-huge -m 512 --no-pci --no-shconf \
    --file-prefix "mcgwcmp$tag-$id" \
    --vdev "net_pcap0,rx_pcap=$work/$dir.pcap,infinite_rx=1" --vdev net_null0,no-rx=1 \
    -- -i --forward-mode=io --nb-cores=1 --total-num-mbufs=16384 \
    <"$d/stdin" >"$d/testpmd.log" 2>&1 &
  pids+=($!)
  exec {tp_fd}>"$d/stdin"
  echo start >&"$tp_fd"
  for _ in $(seq 300); do
    grep -q 'io packet forwarding' "$d/testpmd.log" && break
    kill -0 "${pids[-1]}" 2>/dev/null || die "testpmd exited (see $d/testpmd.log)"
    sleep 0.1
  done
  grep -q 'io packet forwarding' "$d/testpmd.log" || die "testpmd did not start forwarding (see $d/testpmd.log)"
  sleep "$warmup"
  local t0a t0b t1a t1b s0 s1
  t0a=$(now); s0=$(tp_stats "$d/testpmd.log") || exit 1; t0b=$(now)
  sleep "$window"
  t1a=$(now); s1=$(tp_stats "$d/testpmd.log") || exit 1; t1b=$(now)
  echo stop >&"$tp_fd"
  echo quit >&"$tp_fd"
  stop_all
  read -r rx0 tx0 <<<"$s0"
  read -r rx1 tx1 <<<"$s1"
  local rx=$((rx1 - rx0)) tx=$((tx1 - tx0))
  check_fwd "testpmd $dir" "$rx" "$tx"
  result=$(rate "$tx" "$rx" "$t0a" "$t0b" "$t1a" "$t1b")
}

# ---------------------------------------------------------------- OVS-DPDK
# Two netdev bridges: br-int (the overlay: the LAN port and vxlan0, VNI 1001,
# remote 172.16.0.2) and br-phy (the underlay: 172.16.0.1/24 on its internal
# port, MAC $gw_mac).  Encap: pcap0 (LAN frames) on br-int -> vxlan0 ->
# tnl_push -> br-phy LOCAL -> null0.  Decap: pcap0 (VXLAN frames) on br-phy ->
# LOCAL -> tnl_pop -> vxlan0 on br-int -> null0.  Explicit in_port -> output
# flows, fail mode secure (nothing is forwarded by NORMAL or dropped silently).
ovs_port_stats() { # CTL -> "rx(pcap0) tx(null0)"
  ovs-appctl -t "$1" dpctl/show -s | awk '
    /^  port [0-9]+: / {name=$3}
    /RX packets:/ {split($2, a, ":"); if (name == "pcap0") rx=a[2]}
    /TX packets:/ {split($2, a, ":"); if (name == "null0") tx=a[2]}
    END {print rx + 0, tx + 0}'
}

run_ovs() { # DIRECTION RUN-ID -> sets result="pps rx tx"
  local dir=$1 id=$2 d=$work/$2
  mkdir -p "$d"
  new_netns "$id"
  local db=unix:$d/db.sock ctl=$d/ovs-vswitchd.ctl
  export OVS_RUNDIR=$d OVS_DBDIR=$d OVS_LOGDIR=$d OVS_SYSCONFDIR=$d
  ovsdb-tool create "$d/conf.db" /usr/share/openvswitch/vswitch.ovsschema
  ip netns exec "$netns" ovsdb-server "$d/conf.db" --remote="punix:$d/db.sock" \
    --pidfile="$d/ovsdb-server.pid" --unixctl="$d/ovsdb-server.ctl" \
    --log-file="$d/ovsdb-server.log" >"$d/ovsdb-server.out" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do [ -S "$d/db.sock" ] && break; sleep 0.05; done
  local vsctl="ovs-vsctl --db=$db --timeout=60"
  # OVS adds --in-memory to the EAL arguments unless --legacy-mem is given,
  # and --in-memory conflicts with --no-huge: --legacy-mem --no-shconf instead.
  $vsctl --no-wait init
  $vsctl --no-wait set Open_vSwitch . other_config:dpdk-init=true \
    other_config:dpdk-lcore-mask=0x1 other_config:pmd-cpu-mask=0x2 \
    "other_config:dpdk-extra=--no-huge -m 1024 --no-pci --legacy-mem --no-shconf --file-prefix mcgwcmp$tag-$id"
  ip netns exec "$netns" "$ovs_vswitchd" "$db" --pidfile="$d/ovs-vswitchd.pid" \
    --unixctl="$ctl" --log-file="$d/ovs-vswitchd.log" >"$d/ovs-vswitchd.out" 2>&1 &
  pids+=($!)
  for _ in $(seq 300); do
    [ "$($vsctl get Open_vSwitch . dpdk_initialized 2>/dev/null)" = true ] && break
    kill -0 "${pids[-1]}" 2>/dev/null || die "ovs-vswitchd exited (see $d/ovs-vswitchd.log)"
    sleep 0.1
  done
  local pcap_br=br-int null_br=br-phy
  [ "$dir" = decap ] && pcap_br=br-phy null_br=br-int
  $vsctl \
    -- add-br br-phy -- set bridge br-phy datapath_type=netdev fail_mode=secure \
         other-config:hwaddr=$gw_mac \
    -- add-br br-int -- set bridge br-int datapath_type=netdev fail_mode=secure \
    -- add-port br-int vxlan0 -- set interface vxlan0 type=vxlan ofport_request=2 \
         options:remote_ip=172.16.0.2 options:local_ip=172.16.0.1 options:key=1001
  ip -n "$netns" addr add 172.16.0.1/24 dev br-phy
  ip -n "$netns" link set br-phy up
  ovs-appctl -t "$ctl" tnl/arp/set br-phy 172.16.0.2 02:00:00:00:0b:02 >/dev/null
  local of_int=unix:$d/br-int.mgmt of_phy=unix:$d/br-phy.mgmt
  if [ "$dir" = encap ]; then
    ovs-ofctl add-flow "$of_int" "in_port=1,actions=output:2"     # pcap0 -> vxlan0
    ovs-ofctl add-flow "$of_phy" "in_port=LOCAL,actions=output:1" # tunnel out -> null0
  else
    ovs-ofctl add-flow "$of_phy" "in_port=1,actions=LOCAL"        # VXLAN to our VTEP -> tnl_pop
    ovs-ofctl add-flow "$of_int" "in_port=2,actions=output:1"     # vxlan0 -> null0
  fi
  # The null port first, then the traffic.
  $vsctl add-port "$null_br" null0 -- set interface null0 type=dpdk ofport_request=1 \
    options:dpdk-devargs=net_null0,no-rx=1
  $vsctl add-port "$pcap_br" pcap0 -- set interface pcap0 type=dpdk ofport_request=1 \
    "options:dpdk-devargs=net_pcap0,rx_pcap=$work/$dir.pcap,infinite_rx=1"
  for p in null0 pcap0; do
    [ "$($vsctl get interface $p ofport)" = 1 ] ||
      die "OVS $dir: port $p not added: $($vsctl get interface $p error) (see $d/ovs-vswitchd.log)"
  done
  sleep "$warmup"
  local t0a t0b t1a t1b s0 s1
  t0a=$(now); s0=$(ovs_port_stats "$ctl"); t0b=$(now)
  ovs-appctl -t "$ctl" dpif-netdev/pmd-stats-clear >/dev/null
  sleep "$window"
  t1a=$(now); s1=$(ovs_port_stats "$ctl"); t1b=$(now)
  ovs-appctl -t "$ctl" dpctl/dump-flows >"$d/dpflows.txt" 2>&1 || true
  ovs-appctl -t "$ctl" dpif-netdev/pmd-stats-show >"$d/pmd-stats.txt" 2>&1 || true
  ovs-appctl -t "$ctl" dpctl/show -s >"$d/dpctl-show.txt" 2>&1 || true
  # Leave no TAP behind: exit --cleanup removes the datapath and its ports.
  ovs-appctl -t "$ctl" exit --cleanup >/dev/null 2>&1 || true
  stop_all
  unset OVS_RUNDIR OVS_DBDIR OVS_LOGDIR OVS_SYSCONFDIR
  read -r rx0 tx0 <<<"$s0"
  read -r rx1 tx1 <<<"$s1"
  local rx=$((rx1 - rx0)) tx=$((tx1 - tx0))
  check_fwd "OVS-DPDK $dir" "$rx" "$tx"
  # It really encapsulated / decapsulated: the datapath flow that carried the
  # traffic pushes (pops) the VXLAN header towards 172.16.0.2, VNI 1001.
  if [ "$dir" = encap ]; then
    grep -q 'tnl_push(.*ipv4(src=172.16.0.1,dst=172.16.0.2.*udp(src=0,dst=4789.*vni=0x3e9' "$d/dpflows.txt" ||
      die "OVS encap: no tnl_push datapath flow (see $d/dpflows.txt)"
  else
    grep -q 'tnl_pop(' "$d/dpflows.txt" || die "OVS decap: no tnl_pop datapath flow (see $d/dpflows.txt)"
  fi
  own="PMD $(awk '/^pmd thread/ {p=1} p && /avg cycles per packet:/ {print $5; exit}' "$d/pmd-stats.txt") cycles/pkt (pmd-stats-show)"
  result=$(rate "$tx" "$rx" "$t0a" "$t0b" "$t1a" "$t1b")
}

# ---------------------------------------------------------------- mcgwd
mcgwd_config() { # DIRECTION DIR -> the YAML
  local dir=$1 d=$2 lan_dev wan_dev
  if [ "$dir" = encap ]; then
    lan_dev="net_pcap0,rx_pcap=$work/encap.pcap,infinite_rx=1" wan_dev="net_null0,no-rx=1"
  else
    lan_dev="net_null0,no-rx=1" wan_dev="net_pcap0,rx_pcap=$work/decap.pcap,infinite_rx=1"
  fi
  cat <<EOF
# scripts/compare.sh, $dir: one worker on lcore 1, defaults otherwise
# (MSS clamp auto, path MTU checks and probing on).
node: {name: gw-compare, site: compare}
eal:
  main-lcore: 0
  workers: [1]
  hugepages: false
  memory-mb: 512
  mbufs: 16383
  file-prefix: mcgwcmp$tag$dir
ports:
  - name: lan0
    role: lan
    vdev: $lan_dev
    addresses: [10.1.0.1/16]
    neighbors: [{address: 10.1.0.254, mac: "02:00:00:00:01:fe"}]
  - name: wan0
    role: wan
    vdev: $wan_dev
    addresses: [172.16.0.1/24]
    neighbors: [{address: 172.16.0.2, mac: "02:00:00:00:0b:02"}]
tenants:
  - name: blue
    vni: 1001
    routes:
      - {prefix: 10.2.0.0/16, peer: remote}
      - {prefix: 10.99.0.0/16, next-hop: 10.1.0.254}
peers:
  - name: remote
    encapsulation: vxlan
    lines:
      - {name: l1, port: wan0, local-vtep: 172.16.0.1, remote-vtep: 172.16.0.2}
api: {socket: $d/mcgw.sock}
EOF
}

# -> "in_rx out_tx drops tunnel_pkts out_pkts out_bytes busy_cycles": port counters of the pcap
# port (RX) and the null port (TX), all drops, the tunnel's TX (encap) or RX
# (decap) packets, what the line (encap) or the LAN side (decap) sent, and the
# worker's busy TSC cycles.
mcgwd_counters() { # SOCKET DIRECTION
  "$mcgwctl" -s "$1" show counters --json | $py -c '
import json, sys
c = json.load(sys.stdin)
ports = {p["name"]: p for p in c["ports"]}
enc = sys.argv[1] == "encap"
pin, pout = (ports["lan0"], ports["wan0"]) if enc else (ports["wan0"], ports["lan0"])
tun = c["tunnels"][0]["counters"]
out = c["lines"][0]["counters"] if enc else c["lan"]
print(pin["rx_packets"], pout["tx_packets"], c["drops_total"],
      tun["tx_packets"] if enc else tun["rx_packets"],
      out["tx_packets"], out["tx_bytes"], c["workers"][0]["busy_cycles"])' "$2"
}

run_mcgwd() { # DIRECTION RUN-ID -> sets result="pps rx tx"
  local dir=$1 id=$2 d=$work/$2
  mkdir -p "$d"
  new_netns "$id"
  mcgwd_config "$dir" "$d" >"$d/mcgw.yaml"
  ip netns exec "$netns" "$mcgwd" --config "$d/mcgw.yaml" --state-dir "$d/state" \
    >"$d/mcgwd.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 300); do
    [ -S "$d/mcgw.sock" ] && "$mcgwctl" -s "$d/mcgw.sock" status >/dev/null 2>&1 && break
    kill -0 "${pids[-1]}" 2>/dev/null || die "mcgwd exited (see $d/mcgwd.log)"
    sleep 0.1
  done
  "$mcgwctl" -s "$d/mcgw.sock" status >"$d/status-start.txt" 2>&1 ||
    die "mcgwd $dir not healthy: $(cat "$d/status-start.txt")"
  local mac
  mac=$("$mcgwctl" -s "$d/mcgw.sock" status --json | $py -c '
import json, sys
print([p["mac"] for p in json.load(sys.stdin)["ports"] if "net_pcap" in p["driver"]][0])')
  [ "${mac,,}" = "$gw_mac" ] || die "mcgwd: the net_pcap port has MAC $mac, the pcap is addressed to $gw_mac"
  sleep "$warmup"
  local t0a t0b t1a t1b s0 s1
  t0a=$(now); s0=$(mcgwd_counters "$d/mcgw.sock" "$dir"); t0b=$(now)
  sleep "$window"
  t1a=$(now); s1=$(mcgwd_counters "$d/mcgw.sock" "$dir"); t1b=$(now)
  "$mcgwctl" -s "$d/mcgw.sock" show counters >"$d/counters.txt" 2>&1 || true
  "$mcgwctl" -s "$d/mcgw.sock" status >"$d/status.txt" 2>&1 || true
  stop_all
  local rx0 tx0 tun0 lp0 lb0 bc0 rx1 tx1 dr1 tun1 lp1 lb1 bc1
  read -r rx0 tx0 _ tun0 lp0 lb0 bc0 <<<"$s0"
  read -r rx1 tx1 dr1 tun1 lp1 lb1 bc1 <<<"$s1"
  local rx=$((rx1 - rx0)) tx=$((tx1 - tx0))
  check_fwd "mcgwd $dir" "$rx" "$tx"
  [ "$dr1" -eq 0 ] || die "mcgwd $dir: $dr1 drops (see $d/counters.txt)"
  local tun=$((tun1 - tun0))
  check_fwd "mcgwd $dir (tunnel counter vs port TX)" "$tun" "$tx"
  # encap: every packet went out through the line as 64 + 50 bytes;
  # decap: every packet went out of the LAN side as the 64-byte inner frame
  local size=114
  [ "$dir" = decap ] && size=64
  if [ $((lp1 - lp0)) -eq 0 ] || [ $((lb1 - lb0)) -ne $(((lp1 - lp0) * size)) ]; then
    die "mcgwd $dir: sent $((lb1 - lb0)) bytes in $((lp1 - lp0)) packets, not $size each"
  fi
  own="worker busy cycles/pkt $(((bc1 - bc0) / rx))"
  result=$(rate "$tx" "$rx" "$t0a" "$t0b" "$t1a" "$t1b")
}

# ---------------------------------------------------------------- rounds
results=$work/results.tsv
: >"$results"
read -r -a sys_list <<<"${systems//,/ }"
read -r -a dir_list <<<"${directions//,/ }"
say "TSC $tsc_hz Hz; $rounds rounds; window ${window}s after ${warmup}s warm-up"
for ((r = 1; r <= rounds; r++)); do
  for dir in "${dir_list[@]}"; do
    # rotate the order each round, so no system always runs first or last
    n=${#sys_list[@]}
    for ((k = 0; k < n; k++)); do
      sys=${sys_list[$(((k + r - 1) % n))]}
      result='' own=''
      "run_$sys" "$dir" "r$r-$dir-$sys"
      read -r pps rx tx <<<"$result"
      [ -n "${pps:-}" ] || die "$sys $dir: no result"
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$dir" "$sys" "$pps" "$rx" "$tx" >>"$results"
      say "round $r $dir $sys: $(awk -v p="$pps" 'BEGIN {printf "%.3f", p / 1e6}') Mpps (RX $rx, TX $tx over ${window}s${own:+; $own})"
    done
  done
done
[ -n "$tsv" ] && cp "$results" "$tsv"

# ---------------------------------------------------------------- summary
$py - "$results" "$tsc_hz" "$rounds" "$warmup" "$window" <<'EOF'
import statistics, sys
path, tsc, rounds, warmup, window = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
rows = [l.rstrip("\n").split("\t") for l in open(path) if l.strip()]
pps = {}
for r, d, s, p, _rx, _tx in rows:
    pps.setdefault((d, s), {})[int(r)] = float(p)
names = {"testpmd": "testpmd io", "ovs": "OVS-DPDK", "mcgwd": "mcgwd"}
print(f"Side by side: {rounds} rounds, pps over {window} s after {warmup} s warm-up, one forwarding lcore each;")
print("net_pcap (infinite_rx, 64-byte frames, 4,096 flows) in, net_null out.")
print(f"cycles/pkt = TSC Hz / pps (TSC {tsc / 1e9:.3f} GHz): the busy-polling core's cycles per forwarded packet,")
print("including net_pcap's RX copy and net_null's TX; median of the rounds, (min..max).")
print()
print(f"{'direction':<10}{'system':<12}{'Mpps':>7}  {'(min..max)':<16}{'cycles/pkt':>11}  (min..max)")
dirs = [d for d in ("encap", "decap") if any(k[0] == d for k in pps)]
for d in dirs:
    for s in ("testpmd", "ovs", "mcgwd"):
        v = pps.get((d, s))
        if not v:
            continue
        xs = list(v.values())
        m = statistics.median(xs)
        span = f"({min(xs) / 1e6:.2f}..{max(xs) / 1e6:.2f})"
        print(f"{d:<10}{names[s]:<12}{m / 1e6:>7.2f}  {span:<16}{tsc / m:>11.0f}  "
              f"({tsc / max(xs):.0f}..{tsc / min(xs):.0f})")
    for other in ("ovs", "testpmd"):
        a, b = pps.get((d, "mcgwd")), pps.get((d, other))
        if not a or not b:
            continue
        per_round = [a[r] / b[r] for r in a if r in b]
        ratio = statistics.median(a.values()) / statistics.median(b.values())
        print(f"{'':<10}mcgwd/{names[other]}: {ratio:.2f}x pps "
              f"(per round {min(per_round):.2f}..{max(per_round):.2f})")
EOF
