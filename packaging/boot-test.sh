#!/usr/bin/env bash
# Boot Debian 12 with systemd as PID 1 in a systemd-nspawn container, install
# the mcgw .deb inside and check the unit under a real systemd (docs/packaging.md):
# READY=1 before active (running), reload, a broken file refused on reload,
# the watchdog, and the `systemd-analyze security` score.
#   packaging/boot-test.sh [--root DIR] [--keep] [--no-watchdog] mcgw_<version>_<arch>.deb
# Needs root, mmdebstrap and systemd-container. The container has a private
# network namespace (--private-network) and no machined registration, so it
# works on hosts without systemd as PID 1. Never touches the host's packages.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
root=
keep=0
watchdog=1
while [ $# -gt 1 ]; do
  case "$1" in
    --root) root="${2:?--root needs a directory}"; shift 2 ;;
    --keep) keep=1; shift ;;
    --no-watchdog) watchdog=0; shift ;;
    *) echo "boot-test.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
deb=$(readlink -f "${1:?usage: boot-test.sh [--root DIR] [--keep] [--no-watchdog] mcgw_*.deb}")
[ "$(id -u)" -eq 0 ] || { echo "boot-test.sh: run as root" >&2; exit 1; }
created=0  # only a root this script made is deleted
if [ -z "$root" ]; then root=$(mktemp -d /tmp/mcgw-bootroot.XXXXXX); rmdir "$root"; created=1; fi
machine=mcgw-boot-$$
nspawn=
leader=
cleanup() {
  if [ -n "$nspawn" ] && kill -0 "$nspawn" 2>/dev/null; then
    kill -TERM "$nspawn" 2>/dev/null || true          # nspawn halts the container
    for _ in $(seq 1 30); do kill -0 "$nspawn" 2>/dev/null || break; sleep 1; done
    kill -KILL "$nspawn" 2>/dev/null || true
  fi
  # The container's init outlives a killed nspawn: killing it ends its PID
  # namespace (mcgwd included).
  if [ -n "$leader" ] && kill -0 "$leader" 2>/dev/null; then
    kill -KILL "$leader" 2>/dev/null || true
    for _ in $(seq 1 10); do kill -0 "$leader" 2>/dev/null || break; sleep 1; done
  fi
  if [ "$created" = 1 ] && [ "$keep" != 1 ] && ! grep -q " $root[/ ]" /proc/mounts &&
    ! { [ -n "$leader" ] && kill -0 "$leader" 2>/dev/null; }; then
    rm -rf "$root" "$root".*.log "$root".journal.before
  fi
}
trap cleanup EXIT

if [ ! -x "$root/lib/systemd/systemd" ]; then
  t0=$(date +%s)
  mmdebstrap --variant=apt --include=systemd,systemd-sysv,dbus,iproute2 bookworm "$root"
  echo "boot-test.sh: mmdebstrap took $(($(date +%s) - t0)) s"
fi
# The package and a config with net_null ports only (no hugepages, no NIC).
cp "$deb" "$root/var/cache/"   # nspawn mounts a tmpfs on /tmp
t0=$(date +%s)
systemd-nspawn -q -D "$root" --register=no --keep-unit --pipe apt-get update -q </dev/null >/dev/null
systemd-nspawn -q -D "$root" --register=no --keep-unit --pipe env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends "/var/cache/$(basename "$deb")" </dev/null >/dev/null
echo "boot-test.sh: apt install in the root took $(($(date +%s) - t0)) s"
cp "$top/config/examples/minimal-null.yaml" "$root/etc/mcgw/mcgw.yaml"

t0=$(date +%s)
# --keep-unit --register=no: no system bus on this host (no systemd as PID 1).
# --bind-ro=/sys/module: nspawn mounts only part of sysfs, and DPDK's EAL
# stops with "Cannot init VFIO" when /sys/module is missing.
# --capability: the unit's capabilities that nspawn does not give a container
# by default (--private-network adds CAP_NET_ADMIN), so the af_xdp check
# below runs mcgwd with exactly the unit's set.  --system-call-filter=bpf:
# nspawn's own seccomp filter refuses bpf(2) (EPERM: "Couldn't load trivial
# BPF program", whatever the unit says) unless it is allowed here.
systemd-nspawn -b -D "$root" -M "$machine" --register=no --keep-unit --private-network \
  --capability=CAP_IPC_LOCK,CAP_SYS_RAWIO --system-call-filter=bpf --bind-ro=/sys/module --console=pipe </dev/null >"$root.console.log" 2>&1 &
nspawn=$!
leader=
for _ in $(seq 1 100); do
  # nspawn's first child execs into systemd (PID 1 inside) after setup.
  for c in $(ps -o pid= --ppid "$nspawn"); do
    [ "$(cat "/proc/$c/comm" 2>/dev/null)" = systemd ] && leader=$c
  done
  [ -n "$leader" ] && break
  sleep 0.1
done
[ -n "$leader" ] || { echo "boot-test.sh: FAIL: container did not start"; cat "$root.console.log"; exit 1; }
in_ct() { nsenter -t "$leader" -a env LC_ALL=C SYSTEMD_PAGER= "$@"; }
state=
for _ in $(seq 1 120); do
  state=$(in_ct systemctl is-system-running 2>/dev/null || true)
  case "$state" in running|degraded) break ;; esac
  sleep 0.5
done
echo "boot-test.sh: container booted to '$state' in $(($(date +%s) - t0)) s"
in_ct systemd-analyze 2>/dev/null | head -n1 || true
[ "$state" = running ] || { echo "boot-test.sh: FAIL: not running"; in_ct systemctl --failed --no-pager; exit 1; }

fail=0
expect() { # description, command...
  local what=$1; shift
  if "$@"; then echo "boot-test.sh: ok: $what"; else echo "boot-test.sh: FAIL: $what"; fail=1; fi
}
prop() { in_ct systemctl show -P "$1" mcgw.service; }

t0=$(date +%s.%N)
in_ct systemctl start mcgw.service || true
echo "boot-test.sh: systemctl start took $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }') s"
in_ct systemctl status mcgw.service --no-pager -n 20 || true
expect "active (running)" test "$(prop ActiveState)/$(prop SubState)" = active/running
# Type=notify: `systemctl start` returns only after READY=1, and READY=1 carries STATUS=.
# (before READY=1 mcgwd's STATUS= says "starting ...": a healthy summary
# means start returned after READY=1)
expect "STATUS= from READY=1: '$(prop StatusText)'" test "$(prop StatusText | cut -c1-8)" = "healthy:"
pid1=$(prop MainPID)
status0=$(prop StatusText)
expect "mcgwctl status answers" in_ct mcgwctl status

# Reload: SIGHUP, the same process, the config re-read.
in_ct journalctl -u mcgw --no-pager -o cat -n 200 > "$root.journal.before" || true
in_ct systemctl reload mcgw.service
sleep 2
expect "reload keeps the main process" test "$(prop MainPID)" = "$pid1"
expect "still active (running) after reload" test "$(prop ActiveState)/$(prop SubState)" = active/running
# A broken file is refused and the old config kept.
cp "$root/etc/mcgw/mcgw.yaml" "$root/etc/mcgw/mcgw.yaml.good"
printf 'ports: [\n' >> "$root/etc/mcgw/mcgw.yaml"
in_ct systemctl reload mcgw.service || true
sleep 2
expect "broken reload: still active (running), same process" \
  test "$(prop ActiveState)/$(prop SubState)/$(prop MainPID)" = "active/running/$pid1"
# mcgwd keeps the old config and says DEGRADED (mcgwctl status then exits non-zero).
expect "broken reload: refused, old config kept: '$(prop StatusText)'" \
  test "$(prop StatusText)" = "degraded: ${status0#healthy: }"
in_ct journalctl -u mcgw --no-pager -o cat -n 30 | tail -n 8 || true
# Structured journal entries (control/daemon/journal_sink.hpp): the refused
# reload is an error entry (PRIORITY=3), and mcgwd's entries name the config
# in force (MCGW_CONFIG, the hash status shows).
cfg=${status0##*config }
refused=$(in_ct journalctl -u mcgw --no-pager -o cat -p err SYSLOG_IDENTIFIER=mcgwd |
  grep -c 'reload of /etc/mcgw/mcgw.yaml refused' || true)
expect "journal: the refused reload is found by journalctl -p err ($refused)" test "$refused" -ge 1
tagged=$(in_ct journalctl -u mcgw --no-pager -o cat "MCGW_CONFIG=$cfg" | wc -l)
expect "journal: $tagged entries carry MCGW_CONFIG=$cfg" test "$tagged" -ge 3
info=$(in_ct journalctl -u mcgw --no-pager -o cat -p info..info SYSLOG_IDENTIFIER=mcgwd | wc -l)
expect "journal: info entries at PRIORITY=6 ($info)" test "$info" -ge 3
cp "$root/etc/mcgw/mcgw.yaml.good" "$root/etc/mcgw/mcgw.yaml"
rm "$root/etc/mcgw/mcgw.yaml.good"
in_ct systemctl reload mcgw.service
# Structured journal fields.
in_ct journalctl -u mcgw --no-pager -o json -n 3 | head -c 2000; echo

in_ct systemd-analyze security mcgw.service --no-pager > "$root.security.log" 2>&1 || true
echo "boot-test.sh: systemd-analyze security: $(tail -n1 "$root.security.log")"

if [ "$watchdog" = 1 ]; then
  # A stopped process stops petting the watchdog: WatchdogSec=30s, then SIGABRT and Restart=on-failure.
  t0=$(date +%s)
  in_ct kill -STOP "$pid1"
  for _ in $(seq 1 120); do
    [ "$(prop NRestarts)" -ge 1 ] && [ "$(prop SubState)" = running ] && break
    sleep 1
  done
  expect "watchdog: restarted ($(prop NRestarts) restarts, new pid $(prop MainPID)) after $(($(date +%s) - t0)) s" \
    test "$(prop NRestarts)" -ge 1 -a "$(prop MainPID)" != "$pid1" -a "$(prop SubState)" = running
  in_ct journalctl -u mcgw --no-pager -o cat | grep -i -E 'watchdog|abrt|restart' | tail -n 5 || true
fi

# An invalid file at start with a last good copy (written by the good start
# above): mcgwd starts on the copy, DEGRADED.
good=$(cat "$root/etc/mcgw/mcgw.yaml")
printf 'ports: [\n' >> "$root/etc/mcgw/mcgw.yaml"
in_ct systemctl restart mcgw.service || true
expect "invalid file, last good copy: active (running) '$(prop StatusText)'" \
  test "$(prop ActiveState)/$(prop SubState)/$(prop StatusText | cut -c1-9)" = active/running/degraded:
# Exit 78: invalid file and no last good copy: failed and not restarted
# (RestartPreventExitStatus=78; the refusal may come from ExecStartPre=--preflight).
in_ct systemctl stop mcgw.service
rm -f "$root"/var/lib/mcgw/*
in_ct systemctl reset-failed mcgw.service 2>/dev/null || true
in_ct systemctl start mcgw.service || true
sleep 8   # longer than RestartSec=5s
in_ct systemctl status mcgw.service --no-pager -n 5 || true
expect "exit 78 not restarted: $(prop ActiveState)/$(prop SubState), Result=$(prop Result), NRestarts=$(prop NRestarts)" \
  test "$(prop ActiveState)/$(prop SubState)/$(prop NRestarts)" = failed/failed/0
printf '%s\n' "$good" > "$root/etc/mcgw/mcgw.yaml"
in_ct systemctl reset-failed mcgw.service 2>/dev/null || true

# af_xdp ports under the whole unit (its capabilities, SystemCallFilter=,
# MemoryDenyWriteExecute=, UMask=, ...): veth pairs in the container's
# network namespace, mcgw's XDP program from the package, the API socket
# given to a group (chown).  Healthy means both ports up with the XDP
# program's maps reached (tests/lab/lab_capabilities_test.py has the rest).
for i in 0 1; do
  in_ct ip link add "xdp$i" type veth peer name "peer$i"
  in_ct ip link set "xdp$i" up
  in_ct ip link set "peer$i" up
done
cat > "$root/etc/mcgw/mcgw.yaml" <<'YAML'
node: {name: gw-xdp, site: lab}
eal: {hugepages: false, memory-mb: 256, mbufs: 8191}
ports:
  - {name: lan0, role: lan, vdev: "net_af_xdp0,iface=xdp0"}
  - {name: wan0, role: wan, vdev: "net_af_xdp1,iface=xdp1"}
api: {group: nogroup}
YAML
in_ct systemctl reset-failed mcgw.service 2>/dev/null || true   # StartLimitBurst=5
in_ct systemctl restart mcgw.service || true
for _ in $(seq 1 20); do
  case "$(prop StatusText)" in healthy:*) break ;; esac
  sleep 0.5
done
in_ct systemctl status mcgw.service --no-pager -n 12 || true
expect "af_xdp under the unit: active (running), '$(prop StatusText)'" \
  test "$(prop ActiveState)/$(prop SubState)/$(prop StatusText | cut -c1-23)" = "active/running/healthy: 2 ports (2 up)"
[ "$(prop SubState)" = running ] || in_ct journalctl -u mcgw --no-pager -o cat -n 25 || true
drivers=$(in_ct mcgwctl status --json | grep -o '"driver": *"[a-z_]*"' | sort -u | tr -d ' ')
expect "af_xdp under the unit: ports are af_xdp ($drivers)" test "$drivers" = '"driver":"net_af_xdp"'
sock=$(in_ct stat -c '%U:%G %a' /run/mcgw/mcgw.sock 2>&1 || true)
expect "af_xdp under the unit: API socket $sock" test "$sock" = "root:nogroup 660"
expect "af_xdp under the unit: no seccomp kill, no core dump" \
  test "$(in_ct journalctl -u mcgw --no-pager -o cat | grep -c -i -E 'SIGSYS|core dumped|Bad system call')" = 0
printf '%s\n' "$good" > "$root/etc/mcgw/mcgw.yaml"

in_ct systemctl stop mcgw.service
[ "$fail" = 0 ] && echo "boot-test.sh: PASS" || echo "boot-test.sh: FAILED"
exit "$fail"
