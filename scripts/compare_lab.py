#!/usr/bin/python3
"""Throughput and CPU per GB: two mcgwd gateways (af_xdp) against two Linux
kernel gateways (VXLAN device + iptables TCPMSS) in the same two-site lab.

  python3 scripts/compare_lab.py [--seconds 10] [--rounds 3] [--streams 1,8]
                                 [--baseline 3] [--json FILE]

Run as root (network namespaces, DPDK), after building mcgwd and mcgwctl
(MCGW_BUILD_DIR, default build/).  Standard library only.

Two labs are built once with tests/lab/mcgwlab.py, from the same
standard_topology (IPv4 underlay, static routes, no FRR): same namespaces,
veth links, addresses, MTUs (1500 everywhere) and TX checksum settings, under
two prefixes (`cmp<hex>x-` for mcgw, `cmp<hex>k-` for the kernel):

  hosta 10.1.0.10 -- gwa =wan1= rtr =wan1= gwb -- hostb 10.2.0.10
                         =wan2=     =wan2=

* mcgw: mcgwd in gwa and gwb (af_xdp ports on lan0/wan1/wan2, VXLAN VNI
  1000 over line 1, MSS clamp to 1410 on a 1500-byte underlay).  The
  gateways run only during the mcgw runs.
* kernel: in gwa and gwb ip_forward=1, `vx0` (VXLAN VNI 1000, local = own
  line-1 VTEP, remote = the other's, dstport 4789, dev wan1; MTU 1450),
  10.255.12.1/30 and .2/30 on vx0, the other site's /16 via the other end of
  vx0, and `iptables -t mangle -A FORWARD -p tcp --tcp-flags SYN,RST SYN -j
  TCPMSS --set-mss 1410` (nft directly when iptables fails).

Per round (systems alternate which goes first), per system, per stream
count: an idle baseline of --baseline seconds (/proc/stat), then iperf3 for
--seconds from hosta to hostb (server in hosta, client in hostb with
--reverse -P N --json: the receiving end counts).  Measured:

* Gbit/s: bits received by hostb / the receiver's seconds.
* mcgwd CPU s/GB: utime+stime (all threads) of both mcgwd processes over the
  run, from /proc/PID/stat, per 10^9 bytes received.  Includes softirq work
  the kernel did in mcgwd's own context (its sendto() kicks of the af_xdp TX
  rings: veth xmit, the peer's receive, as far as it runs on that CPU); not
  the XDP program and the copy into the UMEM for received packets, which run
  in the softirq of the sending veth's peer, charged to whichever task was
  on the CPU (this kernel has tick accounting, no IRQ time accounting).
* lab CPU s/GB: mcgwd's as above + both iperf3 processes (their own
  getrusage, from iperf3's JSON `cpu_utilization_percent`) + the ksoftirqd
  threads, over the run.  Softirq work runs in the context of the task that
  raised it (veth xmit: the sender; the af_xdp TX kick: mcgwd) or in
  ksoftirqd, and this kernel charges it to that task's stime, so this covers
  the hosts' TCP stacks, the router and both kinds of gateway without
  counting other processes on the machine; missing: softirq that ran while
  an unrelated task or the idle task was current (timers, a NAPI poll on an
  idle CPU).  A lower bound, robust against a busy machine; on a quiet one
  it misses a good part of the kernel gateways' softirq (a 1 s check: lab
  2.99 s/GB against machine 5.09; for mcgw 8.87 against 8.38).
* machine CPU s/GB: busy jiffies of the whole machine (/proc/stat: all but
  idle and iowait) over the run, minus the baseline's busy rate times the
  run's length, per GB.  Includes both iperf3 ends, the hosts' TCP stacks,
  the underlay router, the gateways (process and softirq), and anything
  else the machine does that the baseline did not catch.  Meaningful only on
  an otherwise quiet machine (a note says when the baseline was not).  The
  kernel gateways have no process: only this column and the lab column
  count them.

Checks (a run that fails one is reported and counts as failed): mcgw: gwa's
tunnel to site-b sent and gwb's received at least the bytes hostb received,
the SYNs were clamped (mcgw's `mss.clamped` grew); kernel: gwa's vx0 sent
and gwb's vx0 received at least those bytes, the TCPMSS rule matched; both:
the receiver's MSS (iperf3 `tcp_mss_default`) is at most 1410.  Each mcgw
run also prints the frames the veths' XDP dropped on the gateway ports
(ethtool -S rx_queue_N_drops: AF_XDP ring full; not in mcgw's counters).

Exit status: 0 when every run went through and passed its checks.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

TOP = Path(__file__).resolve().parents[1]
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(TOP / "tests" / "lab"))
import mcgwlab  # noqa: E402

HZ = os.sysconf("SC_CLK_TCK")


def _tsc_hz() -> float:
    """The TSC rate, taken as the CPU clock /proc/cpuinfo reports (constant
    TSC; close enough to turn mcgw's busy_cycles into seconds)."""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("cpu MHz"):
            return float(line.split(":")[1]) * 1e6
    return 2.5e9


TSC_HZ = _tsc_hz()
MSS = 1410  # mcgw's clamp for VXLAN over IPv4 on a 1500-byte line (1500 - 50 - 40)
VX = "vx0"
VX_NET = {"gwa": ("10.255.12.1/30", "10.255.12.2"), "gwb": ("10.255.12.2/30", "10.255.12.1")}
# gateway -> (own line-1 VTEP, the other gateway's line-1 VTEP, the other site's prefix)
KERNEL_GW = {"gwa": ("100.64.1.1", "100.64.3.1", "10.2.0.0/16"),
             "gwb": ("100.64.3.1", "100.64.1.1", "10.1.0.0/16")}
SENDER, RECEIVER = "hosta", "hostb"
SENDER_ADDR, RECEIVER_ADDR = "10.1.0.10", "10.2.0.10"
NFT_TABLE = "cmp_mss"


def log(msg: str) -> None:
    print(msg, flush=True)


# ---- CPU accounting


def machine_cpu() -> tuple[int, int]:
    """(busy, softirq) jiffies of the whole machine since boot (/proc/stat 'cpu')."""
    f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    # user nice system idle iowait irq softirq steal (guest* are in user/nice)
    busy = f[0] + f[1] + f[2] + f[5] + f[6] + (f[7] if len(f) > 7 else 0)
    return busy, f[6]


def proc_cpu(pid: int) -> int:
    """utime + stime jiffies of a process (all its threads)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    f = stat[stat.rindex(")") + 2:].split()
    return int(f[11]) + int(f[12])  # fields 14 and 15 of the full line


def ksoftirqd_pids() -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if (d / "comm").read_text().startswith("ksoftirqd/"):
                    out.append(int(d.name))
            except OSError:
                pass
    return out


KSOFTIRQD = ksoftirqd_pids()


class CpuWindow:
    """Busy jiffies of the machine, of some processes and of the ksoftirqd
    threads between start() and stop()."""

    def __init__(self, pids: list[int]):
        self.pids = pids

    def start(self) -> "CpuWindow":
        self.t0 = time.monotonic()
        self.m0 = machine_cpu()
        self.p0 = sum(proc_cpu(p) for p in self.pids)
        self.k0 = sum(proc_cpu(p) for p in KSOFTIRQD)
        return self

    def stop(self) -> "CpuWindow":
        self.m1 = machine_cpu()
        self.p1 = sum(proc_cpu(p) for p in self.pids)
        self.k1 = sum(proc_cpu(p) for p in KSOFTIRQD)
        self.wall = time.monotonic() - self.t0
        return self

    @property
    def ksoftirqd_s(self) -> float:
        return (self.k1 - self.k0) / HZ

    @property
    def busy_s(self) -> float:
        return (self.m1[0] - self.m0[0]) / HZ

    @property
    def softirq_s(self) -> float:
        return (self.m1[1] - self.m0[1]) / HZ

    @property
    def procs_s(self) -> float:
        return (self.p1 - self.p0) / HZ


# ---- the two systems


class System:
    name = "?"

    def __init__(self, lab: mcgwlab.Lab):
        self.lab = lab

    def activate(self) -> None: ...

    def deactivate(self) -> None: ...

    def pids(self) -> list[int]:
        return []

    def snapshot(self) -> dict: ...

    def check(self, before: dict, after: dict, received: int) -> list[str]: ...


class Mcgw(System):
    name = "mcgw"

    def activate(self) -> None:
        for g in ("gwa", "gwb"):
            self.lab.start_gateway(g)
        warm_up(self.lab)

    def deactivate(self) -> None:
        for g in ("gwa", "gwb"):
            rc = self.lab.stop_gateway(g)
            if rc not in (0, None):
                log(f"  note: mcgwd of {g} exited with {rc}")

    def pids(self) -> list[int]:
        pids = [self.lab._pidfile_pid(g) for g in ("gwa", "gwb")]
        if None in pids:
            raise mcgwlab.LabError("an mcgwd is not running")
        return pids

    def counters(self, g: str) -> dict:
        r = self.lab.ctl(g, "show", "counters", "--json")
        if r.returncode != 0:
            raise mcgwlab.LabError(f"mcgwctl show counters on {g}: {r.stderr.strip()}")
        return json.loads(r.stdout)

    def xdp_drops(self, g: str) -> int:
        """Frames the veths' XDP dropped on the gateway's ports (ethtool -S
        rx_queue_N_drops: mostly redirects into a full AF_XDP RX ring or an
        empty fill ring); mcgw's own counters do not see them."""
        n = 0
        for iface in ("lan0", "wan1", "wan2"):
            out = self.lab.run(g, "ethtool", "-S", iface, check=False).stdout
            for line in out.splitlines():
                k, _, v = line.strip().partition(":")
                if k.startswith("rx_queue_") and k.endswith("_drops"):
                    n += int(v)
        return n

    def snapshot(self) -> dict:
        out = {}
        for g, peer in (("gwa", "site-b"), ("gwb", "site-a")):
            c = self.counters(g)
            t = next(t["counters"] for t in c["tunnels"] if t["peer"] == peer)
            out[g] = {"tx_bytes": t["tx_bytes"], "rx_bytes": t["rx_bytes"], "clamped": c["mss"]["clamped"],
                      "drops": c["drops_total"],
                      "missed": sum(p["rx_missed"] + p["rx_nombuf"] + p["rx_errors"] + p["tx_errors"]
                                    for p in c["ports"]),
                      "polls": sum(w["polls"] for w in c["workers"]),
                      "busy_polls": sum(w["busy_polls"] for w in c["workers"]),
                      "busy_cycles": sum(w["busy_cycles"] for w in c["workers"]),
                      "xdp_drops": self.xdp_drops(g)}
        return out

    def check(self, before: dict, after: dict, received: int) -> list[str]:
        d = {g: {k: after[g][k] - before[g][k] for k in after[g]} for g in after}
        bad = []
        if d["gwa"]["tx_bytes"] < received:
            bad.append(f"gwa's tunnel to site-b sent {d['gwa']['tx_bytes']} bytes < {received} received")
        if d["gwb"]["rx_bytes"] < received:
            bad.append(f"gwb's tunnel from site-a received {d['gwb']['rx_bytes']} bytes < {received}")
        if d["gwa"]["clamped"] + d["gwb"]["clamped"] < 1:
            bad.append("no SYN clamped by mcgw (mss.clamped did not grow)")
        polls = d["gwa"]["polls"] + d["gwb"]["polls"]
        busy = (d["gwa"]["busy_polls"] + d["gwb"]["busy_polls"]) / polls if polls else 0.0
        self.last = (f"gwa tunnel tx +{d['gwa']['tx_bytes']} B, gwb tunnel rx +{d['gwb']['rx_bytes']} B "
                     f"({d['gwa']['tx_bytes'] - d['gwb']['rx_bytes']} B lost between them), "
                     f"worker polls that found packets {busy:.0%} "
                     f"(wall time in them, preemption included, "
                     f"~{(d['gwa']['busy_cycles'] + d['gwb']['busy_cycles']) / TSC_HZ:.2f} s), "
                     f"frames the veths' XDP dropped on the gateway ports (AF_XDP ring full) "
                     f"+{d['gwa']['xdp_drops'] + d['gwb']['xdp_drops']}, "
                     f"SYNs clamped +{d['gwa']['clamped'] + d['gwb']['clamped']}, "
                     f"drops +{d['gwa']['drops'] + d['gwb']['drops']}, "
                     f"port rx missed/nombuf/errors + tx errors +{d['gwa']['missed'] + d['gwb']['missed']}")
        return bad


class Kernel(System):
    name = "kernel"

    def setup(self) -> None:
        """VXLAN, routes, forwarding and the MSS clamp in both gateway namespaces."""
        lab, vni = self.lab, self.lab.options.vni
        self.mss_tool = "iptables"
        for g, (local, remote, prefix) in KERNEL_GW.items():
            lab.run(g, "sysctl", "-qw", "net.ipv4.ip_forward=1")
            lab.run(g, "ip", "link", "add", VX, "type", "vxlan", "id", str(vni), "local", local,
                    "remote", remote, "dstport", "4789", "dev", "wan1")
            addr, peer = VX_NET[g]
            lab.run(g, "ip", "addr", "add", addr, "dev", VX)
            lab.run(g, "ip", "link", "set", VX, "up")
            lab.run(g, "ip", "route", "add", prefix, "via", peer, "dev", VX)
            r = lab.run(g, "iptables", "-t", "mangle", "-A", "FORWARD", "-p", "tcp", "--tcp-flags", "SYN,RST",
                        "SYN", "-j", "TCPMSS", "--set-mss", str(MSS), check=False)
            if r.returncode != 0:
                log(f"  iptables failed in {g} ({r.stderr.strip()}); nft directly")
                self.mss_tool = "nft"
                lab.run(g, "nft", "-f", "-", input=f"""table ip {NFT_TABLE} {{
  chain forward {{ type filter hook forward priority mangle; policy accept;
    tcp flags & (syn | rst) == syn counter tcp option maxseg size set {MSS}; }}
}}
""")
        mtu = self.lab.ip("gwa", "link", "show", VX)[0]["mtu"]
        log(f"  kernel gateways: {VX} VNI {vni} (MTU {mtu}) over wan1, MSS clamp {MSS} with {self.mss_tool}")
        warm_up(lab)

    def vx_stats(self, g: str) -> dict:
        s = self.lab.ip(g, "-s", "link", "show", VX)[0]["stats64"]
        return {"tx_bytes": s["tx"]["bytes"], "rx_bytes": s["rx"]["bytes"]}

    def syn_matches(self, g: str) -> int:
        if self.mss_tool == "iptables":
            out = self.lab.run(g, "iptables", "-t", "mangle", "-nvxL", "FORWARD").stdout
            rows = [ln.split() for ln in out.splitlines() if "TCPMSS" in ln]
            return sum(int(r[0]) for r in rows)
        doc = json.loads(self.lab.run(g, "nft", "-j", "list", "table", "ip", NFT_TABLE).stdout)
        return sum(e["counter"]["packets"] for item in doc["nftables"] if "rule" in item
                   for e in item["rule"]["expr"] if "counter" in e)

    def snapshot(self) -> dict:
        return {g: {**self.vx_stats(g), "syn": self.syn_matches(g)} for g in ("gwa", "gwb")}

    def check(self, before: dict, after: dict, received: int) -> list[str]:
        d = {g: {k: after[g][k] - before[g][k] for k in after[g]} for g in after}
        bad = []
        if d["gwa"]["tx_bytes"] < received:
            bad.append(f"gwa's {VX} sent {d['gwa']['tx_bytes']} bytes < {received} received")
        if d["gwb"]["rx_bytes"] < received:
            bad.append(f"gwb's {VX} received {d['gwb']['rx_bytes']} bytes < {received}")
        if d["gwa"]["syn"] + d["gwb"]["syn"] < 1:
            bad.append("the TCPMSS rule matched no SYN")
        self.last = (f"gwa {VX} tx +{d['gwa']['tx_bytes']} B, gwb {VX} rx +{d['gwb']['rx_bytes']} B, "
                     f"SYNs clamped +{d['gwa']['syn'] + d['gwb']['syn']}")
        return bad


def warm_up(lab: mcgwlab.Lab) -> None:
    """Until host A reaches host B (neighbours resolved, gateways forwarding)."""
    for _ in range(20):
        if lab.ping(SENDER, RECEIVER_ADDR, count=1, timeout=0.5):
            return
    raise mcgwlab.LabError(f"{SENDER} does not reach {RECEIVER_ADDR}")


# ---- one run


_port = [5300]


def iperf(lab: mcgwlab.Lab, streams: int, seconds: float, window: CpuWindow) -> dict:
    """iperf3 hosta -> hostb (server in hosta, client in hostb with --reverse),
    `window` measuring the client's run.  The client's JSON document."""
    _port[0] += 1
    port = _port[0]
    name = f"iperf3-{port}"
    lab.start(name, SENDER, "iperf3", "-s", "-1", "-p", port, "-B", SENDER_ADDR, listen=port)
    try:
        argv = ["iperf3", "-c", SENDER_ADDR, "-p", str(port), "--reverse", "--json", "--connect-timeout", "3000",
                "-t", str(seconds), "-P", str(streams)]
        window.start()
        r = lab.run(RECEIVER, *argv, check=False, timeout=seconds + 60)
        window.stop()
    finally:
        lab.stop(name, 2)
    try:
        doc = json.loads(r.stdout)
    except json.JSONDecodeError:
        doc = {"error": (r.stdout + r.stderr).strip()[-500:] or f"exit {r.returncode}"}
    if doc.get("error") or r.returncode:
        raise mcgwlab.LabError(f"iperf3 -P {streams}: {doc.get('error') or 'exit ' + str(r.returncode)}")
    return doc


def measure(sysm: System, streams: int, seconds: float, baseline: float) -> dict:
    pids = sysm.pids()
    base = CpuWindow([]).start()
    time.sleep(baseline)
    base.stop()
    base_rate = base.busy_s / base.wall
    before = sysm.snapshot()
    w = CpuWindow(pids)
    doc = iperf(sysm.lab, streams, seconds, w)
    after = sysm.snapshot()
    recv = doc["end"]["sum_received"]
    received, rsec = int(recv["bytes"]), float(recv["seconds"])
    gb = received / 1e9
    mss = doc.get("start", {}).get("tcp_mss_default")
    problems = sysm.check(before, after, received)
    if mss is not None and mss > MSS:
        problems.append(f"the receiver's MSS is {mss} > {MSS}")
    machine = w.busy_s - base_rate * w.wall
    # iperf3's own CPU (getrusage, both ends: "host" is the client in hostb,
    # "remote" the server in hosta), as a share of the test's length.
    cpu = doc["end"].get("cpu_utilization_percent", {})
    iperf_s = (cpu.get("host_total", 0.0) + cpu.get("remote_total", 0.0)) / 100 * rsec
    lab = iperf_s + w.ksoftirqd_s + (w.procs_s if pids else 0.0)
    res = {"system": sysm.name, "streams": streams, "bytes": received, "seconds": rsec,
           "gbps": received * 8 / rsec / 1e9 if rsec else 0.0,
           "retransmits": doc["end"].get("sum_sent", {}).get("retransmits"), "mss": mss,
           "wall": w.wall, "baseline_cpus": base_rate, "busy_s": w.busy_s, "softirq_s": w.softirq_s,
           "machine_s": machine, "machine_s_per_gb": machine / gb if gb else None,
           "iperf3_s": iperf_s, "ksoftirqd_s": w.ksoftirqd_s,
           "lab_s": lab, "lab_s_per_gb": lab / gb if gb else None,
           "gateway_s": w.procs_s if pids else None,
           "gateway_s_per_gb": w.procs_s / gb if pids and gb else None,
           "verified": sysm.last, "problems": problems}
    gw = f", mcgwd {res['gateway_s']:.2f} s" if pids else ""
    log(f"  {sysm.name:<6} -P {streams}: {res['gbps']:.2f} Gbit/s ({received / 1e6:.0f} MB in {rsec:.1f} s, "
        f"{res['retransmits']} retransmits, MSS {mss}); CPU over {w.wall:.1f} s: machine {w.busy_s:.2f} s "
        f"(softirq {w.softirq_s:.2f} s) - baseline {base_rate:.2f} CPUs{gw}, iperf3 {iperf_s:.2f} s, "
        f"ksoftirqd {w.ksoftirqd_s:.2f} s")
    log(f"         {sysm.last}" + ("".join(f"\n         FAILED: {p}" for p in problems)))
    return res


# ---- output


def fmt_range(xs: list[float], f: str) -> str:
    if not xs:
        return "-"
    lo, hi = min(xs), max(xs)
    return format(lo, f) if len(xs) == 1 else f"{format(lo, f)}..{format(hi, f)}"


def table(results: list[dict]) -> str:
    head = ("system", "streams", "runs", "Gbit/s min..max", "median", "mcgwd s/GB", "lab s/GB",
            "machine s/GB", "baseline CPUs")
    rows = []
    for sysname in ("mcgw", "kernel"):
        for streams in sorted({r["streams"] for r in results}):
            rs = [r for r in results if r["system"] == sysname and r["streams"] == streams and not r["problems"]]
            nfail = len([r for r in results if r["system"] == sysname and r["streams"] == streams and r["problems"]])
            if not rs and not nfail:
                continue
            g = [r["gbps"] for r in rs]
            gw = [r["gateway_s_per_gb"] for r in rs if r["gateway_s_per_gb"] is not None]
            m = [r["machine_s_per_gb"] for r in rs if r["machine_s_per_gb"] is not None]
            lab = [r["lab_s_per_gb"] for r in rs if r["lab_s_per_gb"] is not None]
            b = [r["baseline_cpus"] for r in rs]
            rows.append((sysname, str(streams), f"{len(rs)}" + (f" ({nfail} failed)" if nfail else ""),
                         fmt_range(g, ".2f"), f"{statistics.median(g):.2f}" if g else "-",
                         f"{statistics.median(gw):.2f} ({fmt_range(gw, '.2f')})" if gw else "-",
                         f"{statistics.median(lab):.2f} ({fmt_range(lab, '.2f')})" if lab else "-",
                         f"{statistics.median(m):.2f} ({fmt_range(m, '.2f')})" if m else "-",
                         fmt_range(b, ".2f")))
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in [head, *rows]]
    return "\n".join(lines)


# ---- main


def ensure_tools() -> None:
    missing = [p for t, p in (("iperf3", "iperf3"), ("iptables", "iptables"), ("nft", "nftables"),
                              ("ethtool", "ethtool")) if not shutil.which(t)]
    if missing:
        log(f"installing {' '.join(missing)} (apt-get)")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", *missing], check=True, env=env)


def on_sigterm(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10, help="length of each iperf3 run (default 10)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds; each runs both systems (default 3)")
    ap.add_argument("--streams", default="1,8", help="parallel streams per run, comma-separated (default 1,8)")
    ap.add_argument("--baseline", type=float, default=3,
                    help="seconds of idle baseline before each run (default 3)")
    ap.add_argument("--json", help="write every run's figures to this file")
    ap.add_argument("--prefix", help="namespace prefix stem (default cmp<6 hex>)")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("compare_lab.py: run as root (network namespaces, DPDK)", file=sys.stderr)
        return 2
    streams = [int(s) for s in args.streams.split(",")]
    signal.signal(signal.SIGTERM, on_sigterm)
    ensure_tools()

    stem = args.prefix or f"cmp{secrets.token_hex(3)}"
    opts = dict(driver="af_xdp", encap="vxlan", underlay="ipv4", bgp=False)
    labs: list[mcgwlab.Lab] = []
    results: list[dict] = []
    rc = 0
    try:
        x = mcgwlab.Lab(prefix=f"{stem}x-", options=mcgwlab.Options(**opts))
        labs.append(x)
        k = mcgwlab.Lab(prefix=f"{stem}k-", options=mcgwlab.Options(**opts))
        labs.append(k)
        log(f"building lab {x.prefix} (mcgw) and {k.prefix} (kernel gateways); files in {x.dir}, {k.dir}")
        x.up()
        k.up()
        mcgw, kernel = Mcgw(x), Kernel(k)
        kernel.setup()
        for rnd in range(args.rounds):
            order = (mcgw, kernel) if rnd % 2 == 0 else (kernel, mcgw)
            log(f"round {rnd + 1}/{args.rounds}")
            for sysm in order:
                sysm.activate()
                try:
                    for n in streams:
                        try:
                            results.append({"round": rnd + 1, **measure(sysm, n, args.seconds, args.baseline)})
                        except mcgwlab.LabError as e:
                            log(f"  {sysm.name} -P {n}: FAILED: {e}")
                            results.append({"round": rnd + 1, "system": sysm.name, "streams": n,
                                            "problems": [str(e)]})
                finally:
                    sysm.deactivate()
    except KeyboardInterrupt as e:
        log(f"interrupted ({e}); tearing down")
        rc = 130
    except mcgwlab.LabError as e:
        log(f"compare_lab.py: {e}")
        rc = 1
    finally:
        for lab in labs:
            try:
                lab.down(remove_dir=rc == 0)
            except Exception as e:  # noqa: BLE001 - report and go on with the next lab
                log(f"compare_lab.py: teardown of {lab.prefix}: {e}")
                rc = rc or 1
    if results:
        log("")
        log(f"iperf3 {SENDER} -> {RECEIVER}, {args.seconds:g} s per run, {args.rounds} round(s); "
            f"CPU s per 10^9 bytes received, median (min..max)")
        log("  mcgwd: both mcgwd processes (utime+stime); lab: mcgwd + both iperf3 ends + ksoftirqd; "
            "machine: /proc/stat busy - idle baseline")
        log(table(results))
        noisy = [r["baseline_cpus"] for r in results if "baseline_cpus" in r and r["baseline_cpus"] > 0.2]
        if noisy:
            log(f"note: the machine was busy without the lab (baseline up to {max(noisy):.2f} CPUs of "
                f"{os.cpu_count()}): the machine column is unreliable, the lab column still holds; "
                "throughput figures are lowered by the other load")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    if any(r["problems"] for r in results):
        rc = rc or 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
