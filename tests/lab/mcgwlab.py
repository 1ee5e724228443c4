#!/usr/bin/python3
"""mcgwlab: network-namespace labs for mcgw, as a Python module and a CLI.

A lab is a set of network namespaces whose names all start with one prefix
(``mcgwlab-<6 hex>-`` unless given), joined by veth pairs, with addresses,
routes and sysctls, plus the processes the lab starts inside them: mcgwd
instances (their YAML configs are generated from the topology) and tcpdump
captures.  Nothing is ever created in the root network namespace.  ``down``
(and any exception during ``up``) kills the lab's processes, deletes its
namespaces and checks that none is left.

The standard topology (``standard_topology``; the table is ``ADDRESS_TABLE``
below and ``topology.txt`` in the lab directory)::

  hosta --- gwa =wan1= rtr =wan1= gwb --- hostb
  (site A)      =wan2=  |  =wan2=     (site B)
                        c1
                        |
                      sitec (Linux VXLAN vxlan0) --- hostc   (site C)

With BGP (Options.bgp; the CLI's default) FRR runs in gwa and gwb and routes
A<->B; with Options.idc_router namespace idc is gwa's LAN switch and an IDC
router (BIRD) for idchost; with Options.overlap sites A and B share
10.1.0.0/16 and fd00:a::/56, each reached at its own mapped ranges, and router lanb stands
between gwb and hostb; with Options.ha site A has two gateways, gwa and gwa2, on a
LAN switch (namespace sw) with VRRP between them (tests/lab/README.md).

CLI (run as root, with /usr/bin/python3; stdlib only)::

  mcgwlab.py up [--prefix P] [--dir D] [--encap vxlan|geneve]
                [--underlay ipv4|ipv6] [--driver af_xdp|af_packet]
                [--host-mtu N] [--rtr-mtu IF=MTU] [--drop-icmp] [--path-mtu KEY=VALUE]
                [--static-neighbors] [--kernel-static-neighbors]
                [--no-bgp] [--idc-router] [--overlap] [--no-gateways] [--replace]
                [--ha [--vrrp-interval-ms N] [--vrrp-unicast] [--no-vrrp-ipv6]]
  mcgwlab.py status [--prefix P] [--json]
  mcgwlab.py exec NODE -- CMD ...         e.g. exec hosta -- ip route
  mcgwlab.py ping NODE DST [--from SRC] [-c N] [-W S] [-s SIZE] [--df] [-Q TOS]
                                          ICMP echo without the ping binary
  mcgwlab.py iperf SENDER RECEIVER [-6] [-n BYTES | -t SECONDS] [--json]
                                          TCP with iperf3, counted by the receiver
  mcgwlab.py gw start|stop|status NODE
  mcgwlab.py capture start NODE IFACE [--name N] [-- FILTER...] | capture stop N
  mcgwlab.py wait-bgp [--timeout S]       every gateway's BGP sessions Established
  mcgwlab.py vtysh NODE CMD...            FRR of a gateway (`... json`: parsed, printed)
  mcgwlab.py frr start|stop|kill NODE [DAEMON...]
  mcgwlab.py birdc CMD...                 the IDC router's BIRD (--idc-router)
  mcgwlab.py down [--prefix P] [--purge]
  mcgwlab.py render NODE [options]        print a gateway config (no root needed)

Without --prefix, ``status``/``exec``/``down``... use MCGWLAB_PREFIX, or the
only lab registered in /run/mcgwlab.  The lab directory (configs, logs,
sockets, pidfiles, captures, state.json) defaults to /tmp/<prefix>.

As a module (see tests/lab/lab_builder_test.py)::

  sys.path.insert(0, "tests/lab"); import mcgwlab
  with mcgwlab.Lab(options=mcgwlab.Options(encap="geneve")).up() as lab:
      lab.ping("gwa", "100.64.3.1", src="100.64.1.1")   # replies received
      lab.run("rtr", "ip", "link", "set", "a1", "down")   # any command
      lab.start_gateway("gwa"); st = lab.status("gwa")
      cap = lab.capture("rtr", "a1"); ...; cap.stop(); cap.fields("ip.src")
  # leaving the block tears everything down
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import re
import secrets
import shutil
import select
import signal
import socket
import struct
import subprocess
import sys
import time
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
REGISTRY = Path(os.environ.get("MCGWLAB_REGISTRY", "/run/mcgwlab"))

# Fixed MAC of site C's Linux VXLAN device: gateway A's peer site-c
# `inner-mac`, so inner frames from gateway A are addressed to site C itself.
VXLAN_C_MAC = "02:00:00:00:0c:01"
# Site C routes the other sites' VPCs over vxlan0 via a pseudo next hop with
# this permanent neighbour MAC (mcgw accepts any inner destination MAC).
VXLAN_C_NEXTHOP_MAC = "02:00:00:00:0c:fe"

# BGP (Options.bgp): the gateways' AS numbers, and the IDC router behind
# gateway A (Options.idc_router): its LAN address, AS, the range it announces
# that the plan gives site A, and one the plan gives nobody.
GWA_ASN, GWB_ASN, IDC_ASN = 65001, 65002, 64512
IDC_ROUTER = "10.1.0.254"
IDC_RANGE, IDC_FOREIGN_RANGE = "10.100.0.0/16", "10.200.0.0/16"

# Options.ha: site A's VRRP groups (IPv4 and IPv6), their virtual addresses
# (the hosts' next hops) and virtual MACs.
VRRP_VRID, VRRP_VRID6 = 10, 11
VRRP_VIP, VRRP_VIP6 = "10.1.0.1", "fd00:a::1"
VRRP_MAC, VRRP_MAC6 = "00:00:5e:00:01:0a", "00:00:5e:00:02:0b"
VRRP_TRACK_WEIGHT = 150

# Options.overlap (issue 15): sites A and B both use OVERLAP_RANGE and
# OVERLAP_RANGE6; each gateway maps its own site's into a unique range of the
# plan (MAPPED, MAPPED6), which is all the other sites see and route.
OVERLAP_RANGE, OVERLAP_RANGE6 = "10.1.0.0/16", "fd00:a::/56"
MAPPED = {"site-a": "10.201.0.0/16", "site-b": "10.202.0.0/16"}
MAPPED6 = {"site-a": "fd00:201::/56", "site-b": "fd00:202::/56"}

ADDRESS_TABLE = """\
node   iface   peer        IPv4              IPv6               role
hosta  eth0    gwa lan0    10.1.0.10/24      fd00:a::10/64      host A, default via 10.1.0.1 / fd00:a::1
gwa    lan0    hosta eth0  10.1.0.1/24       fd00:a::1/64       gateway A LAN port (mcgwd lan0)
gwa    wan1    rtr a1      100.64.1.1/30     fd00:64:1::1/64    gateway A line1 (mcgwd wan1)
gwa    wan2    rtr a2      100.64.2.1/30     fd00:64:2::1/64    gateway A line2 (mcgwd wan2)
rtr    a1      gwa wan1    100.64.1.2/30     fd00:64:1::2/64    underlay router (forwarding on)
rtr    a2      gwa wan2    100.64.2.2/30     fd00:64:2::2/64
rtr    b1      gwb wan1    100.64.3.2/30     fd00:64:3::2/64
rtr    b2      gwb wan2    100.64.4.2/30     fd00:64:4::2/64
rtr    c1      sitec wan0  100.64.5.2/30     fd00:64:5::2/64
gwb    wan1    rtr b1      100.64.3.1/30     fd00:64:3::1/64    gateway B line1 (mcgwd wan1)
gwb    wan2    rtr b2      100.64.4.1/30     fd00:64:4::1/64    gateway B line2 (mcgwd wan2)
gwb    lan0    hostb eth0  10.2.0.1/24       fd00:b::1/64       gateway B LAN port (mcgwd lan0)
hostb  eth0    gwb lan0    10.2.0.10/24      fd00:b::10/64      host B, default via 10.2.0.1 / fd00:b::1
sitec  wan0    rtr c1      100.64.5.1/30     fd00:64:5::1/64    site C underlay (VTEP address)
sitec  vxlan0  (overlay)   10.3.255.1/24     fd00:c:ff::1/64    Linux VXLAN, MAC 02:00:00:00:0c:01, VNI = tenant VNI,
                                                                remote = gateway A line1 VTEP; routes 10.1.0.0/16 and
                                                                fd00:a::/64 via 10.3.255.254 / fd00:c:ff::fe (MAC 02:00:00:00:0c:fe)
sitec  lan0    hostc eth0  10.3.0.1/24       fd00:c::1/64       site C router (forwarding on)
hostc  eth0    sitec lan0  10.3.0.10/24      fd00:c::10/64      host C, default via 10.3.0.1 / fd00:c::1
VPCs: A 10.1.0.0/16 + fd00:a::/64, B 10.2.0.0/16 + fd00:b::/64, C 10.3.0.0/16 + fd00:c::/64
With --overlap: sites A and B both 10.1.0.0/16 + fd00:a::/56; A mapped to 10.201.0.0/16 + fd00:201::/56,
B to 10.202.0.0/16 + fd00:202::/56; VPCs: C only
gwb    lan0    lanb gw     10.1.0.2/24       fd00:a::2/64       gateway B LAN port; routes hostb's subnets via lanb
lanb   gw      gwb lan0    10.1.0.3/24       fd00:a::3/64       router before hostb, default via 10.1.0.2 / fd00:a::2
lanb   hb      hostb eth0  10.1.1.1/24       fd00:a:0:1::1/64   (Lab.set_ip_mtu("lanb", "hb", MTU): frag-needed, PTB)
hostb  eth0    lanb hb     10.1.1.20/24      fd00:a:0:1::20/64  host B; 10.202.1.20 / fd00:202:0:1::20 to the others
"""


class LabError(Exception):
    """Something in the lab failed; the message says what and how."""


# --------------------------------------------------------------------------
# small helpers


def sh(*args, check=True, timeout=60, input=None) -> subprocess.CompletedProcess:
    """Run a command (no shell), capture its output as text."""
    argv = [str(a) for a in args]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, input=input)
    except subprocess.TimeoutExpired as e:
        raise LabError(f"{' '.join(argv)}: timed out after {timeout} s") from e
    if check and r.returncode != 0:
        raise LabError(f"{' '.join(argv)}: exit {r.returncode}: {(r.stderr or r.stdout).strip()}")
    return r


def list_netns() -> list[str]:
    r = sh("ip", "netns", "list", check=False)
    return [line.split()[0] for line in r.stdout.splitlines() if line.strip()]


def _is_v6(addr: str) -> bool:
    return ":" in addr


def _ip(cidr: str) -> str:
    return cidr.split("/")[0]


def _pid_alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return f"({path} does not exist)"


# A tiny YAML emitter: block mappings, lists of mappings, flow lists of
# scalars.  Strings that YAML could read as something else are quoted.
_PLAIN = re.compile(r"^[A-Za-z0-9_./=-]+$")
_KEYWORDS = {"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"}


def _scalar(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    s = str(v)
    if _PLAIN.match(s) and s.lower() not in _KEYWORDS and not s[0] in "-." and not _numeric(s):
        return s
    return json.dumps(s)


def _numeric(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


def to_yaml(obj, indent: int = 0) -> str:
    out: list[str] = []
    _emit(obj, indent, out)
    return "\n".join(out) + "\n"


def _emit(obj, ind: int, out: list[str]) -> None:
    pad = "  " * ind
    if isinstance(obj, dict):
        for k, v in obj.items():
            if v is None or (isinstance(v, (list, dict)) and not v):
                continue
            if isinstance(v, dict):
                out.append(f"{pad}{k}:")
                _emit(v, ind + 1, out)
            elif isinstance(v, list) and all(isinstance(x, dict) for x in v):
                out.append(f"{pad}{k}:")
                _emit(v, ind + 1, out)
            elif isinstance(v, list):
                out.append(f"{pad}{k}: [{', '.join(_scalar(x) for x in v)}]")
            else:
                out.append(f"{pad}{k}: {_scalar(v)}")
    elif isinstance(obj, list):
        for item in obj:
            sub: list[str] = []
            _emit(item, 0, sub)
            out.append(f"{pad}- {sub[0]}")
            out.extend(f"{pad}  {line}" for line in sub[1:])
    else:
        out.append(pad + _scalar(obj))


# ICMP echo without the ping binary (not installed everywhere): raw sockets,
# run inside a namespace as `/usr/bin/python3 mcgwlab.py icmp-echo ...`.


def _inet_checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def icmp_echo(dst: str, src: str | None = None, count: int = 1, timeout: float = 1.0,
              interval: float = 0.2, size: int = 56, df: bool = False,
              tos: int = 0) -> tuple[int, list[float], int]:
    """Send `count` ICMP(v6) echo requests to `dst` from this process's network
    namespace, with IPv4 TOS / IPv6 traffic class `tos` (DSCP << 2 | ECN);
    returns (sent, round-trip times in ms of the replies, duplicate replies)."""
    v6 = ipaddress.ip_address(dst).version == 6
    fam, proto, req, rep = ((socket.AF_INET6, socket.IPPROTO_ICMPV6, 128, 129) if v6
                            else (socket.AF_INET, socket.IPPROTO_ICMP, 8, 0))
    want = ipaddress.ip_address(dst)
    rtts: list[float] = []
    answered: set[int] = set()
    dups = 0
    with socket.socket(fam, socket.SOCK_RAW, proto) as s:
        if src:
            s.bind((src, 0))
        if df and not v6:
            s.setsockopt(socket.IPPROTO_IP, 10, 2)  # IP_MTU_DISCOVER = IP_PMTUDISC_DO
        if tos:
            if v6:
                s.setsockopt(socket.IPPROTO_IPV6, 67, tos)  # IPV6_TCLASS
            else:
                s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
        ident = os.getpid() & 0xFFFF

        def receive(until: float, seq: int | None, t0: float = 0.0) -> None:
            """Read replies until `until` (or the reply to `seq`); count duplicates."""
            nonlocal dups
            while (left := until - time.monotonic()) > 0:
                if not select.select([s], [], [], left)[0]:
                    return
                data, addr = s.recvfrom(65535)
                if not v6:
                    data = data[(data[0] & 0x0F) * 4:]
                if len(data) < 8 or ipaddress.ip_address(addr[0].split("%")[0]) != want:
                    continue
                typ, _, _, rid, rseq = struct.unpack("!BBHHH", data[:8])
                if typ != rep or rid != ident:
                    continue
                if rseq in answered:
                    dups += 1
                elif rseq == seq:
                    answered.add(rseq)
                    rtts.append((time.monotonic() - t0) * 1000)
                    return

        for seq in range(count):
            if seq:
                receive(time.monotonic() + interval, None)
            payload = bytes((i & 0xFF) for i in range(max(size, 0)))
            hdr = struct.pack("!BBHHH", req, 0, 0, ident, seq)
            if not v6:  # the kernel fills in the ICMPv6 checksum
                hdr = struct.pack("!BBHHH", req, 0, _inet_checksum(hdr + payload), ident, seq)
            t0 = time.monotonic()
            try:
                s.sendto(hdr + payload, (dst, 0))
            except OSError:
                continue
            receive(t0 + timeout, seq, t0)
        receive(time.monotonic() + min(interval, 0.2), None)  # late duplicates
    return count, rtts, dups



# A steady UDP probe stream: the sender and the receiver run inside lab
# namespaces as `/usr/bin/python3 mcgwlab.py probe-send|probe-recv ...`
# (Lab.probe starts both).  Each datagram carries its sequence number and
# when it was due (wall clock); the receiver writes one line per arrival.


def probe_send(dst: str, port: int, rate: int, seconds: float) -> tuple[int, float, int]:
    """Send rate x seconds datagrams to dst:port, each at its due time
    (t0 + i / rate); returns (sent, t0 as wall clock, send errors)."""
    fam = socket.AF_INET6 if _is_v6(dst) else socket.AF_INET
    n = int(rate * seconds)
    errors = 0
    pad = bytes(48)
    with socket.socket(fam, socket.SOCK_DGRAM) as s:
        t0, w0 = time.monotonic(), time.time()
        for i in range(n):
            due = t0 + i / rate
            d = due - time.monotonic()
            if d > 0:
                time.sleep(d)
            try:
                s.sendto(struct.pack("!Qd", i, w0 + i / rate) + pad, (dst, port))
            except OSError:
                errors += 1  # e.g. no route for a moment: that datagram is lost
    return n, w0, errors


def probe_recv(port: int, out: Path, v6: bool) -> None:
    """Receive probe datagrams until SIGTERM; then write "seq due arrival"
    lines to `out`."""
    fam = socket.AF_INET6 if v6 else socket.AF_INET
    rec: list[tuple[int, float, float]] = []
    with socket.socket(fam, socket.SOCK_DGRAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        s.bind(("::" if v6 else "0.0.0.0", port))
        print("ready", flush=True)
        try:
            while True:
                data = s.recv(2048)
                t = time.time()
                if len(data) >= 16:
                    seq, due = struct.unpack("!Qd", data[:16])
                    rec.append((seq, due, t))
        finally:
            tmp = out.with_suffix(".tmp")
            tmp.write_text("".join(f"{q} {d:.6f} {t:.6f}\n" for q, d, t in rec))
            tmp.replace(out)


@dataclass
class ProbeResult:
    """What a probe stream measured.  The loss window is the longest run of
    consecutive lost datagrams, in ms of sending time (datagram count / rate)."""
    rate: int
    sent: int
    received: int  # distinct sequence numbers
    duplicates: int
    lost: int
    window_ms: float  # the longest run of lost datagrams, in ms
    window_start: float | None  # when the first datagram of that run was due (wall clock)
    arrival_gap_ms: float  # the longest time between two arrivals
    gaps: list = field(default_factory=list)  # every run of >= 5 lost: (when it began, ms)

    def gaps_after(self, t0: float) -> str:
        """The runs of lost datagrams as "+1.234 s: 12 ms", relative to wall clock t0."""
        return ", ".join(f"{start - t0:+.3f} s: {ms:.0f} ms" for start, ms in self.gaps) or "none"

    def __str__(self) -> str:
        return (f"{self.sent} sent at {self.rate}/s, {self.received} received, {self.lost} lost, "
                f"loss window {self.window_ms:.0f} ms, longest gap between arrivals "
                f"{self.arrival_gap_ms:.0f} ms, {self.duplicates} duplicates")


class Probe:
    """A running probe stream (Lab.probe)."""

    def __init__(self, lab: "Lab", name: str, pid: int, rate: int, seconds: float, out: Path):
        self.lab, self.name, self.pid, self.rate, self.seconds, self.out = lab, name, pid, rate, seconds, out

    def abort(self) -> None:
        """Stop the sender and the receiver now (a test that failed midway:
        the receiver would keep its port bound for the next stream)."""
        self.lab.stop(f"{self.name}-send")
        self.lab.stop(f"{self.name}-recv")

    def wait(self, settle: float = 0.5) -> ProbeResult:
        """Wait for the sender to finish, stop the receiver, compute."""
        lab = self.lab
        deadline = time.monotonic() + self.seconds + 30
        while lab._alive(self.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        lab.stop(f"{self.name}-send")
        m = re.search(r"sent (\d+) start ([\d.]+) errors (\d+)",
                      (lab.dir / f"{self.name}-send.log").read_text())
        if not m:
            raise LabError(f"probe sender: {(lab.dir / f'{self.name}-send.log').read_text()}")
        sent = int(m.group(1))
        time.sleep(settle)  # datagrams still in flight
        lab.stop(f"{self.name}-recv")
        deadline = time.monotonic() + 5
        while not self.out.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        rows = [line.split() for line in self.out.read_text().splitlines() if line.strip()]
        seqs = sorted({int(r[0]) for r in rows if int(r[0]) < sent})
        arrivals = sorted(float(r[2]) for r in rows)
        due = {int(r[0]): float(r[1]) for r in rows}
        # Runs of missing sequence numbers, the start and end of the stream included.
        best, start, gaps = 0, None, []
        prev = -1
        w0 = float(m.group(2))
        for q in seqs + [sent]:
            run = q - prev - 1
            when = w0 + (prev + 1) / self.rate
            if run >= 5:
                gaps.append((when, run * 1000 / self.rate))
            if run > best:
                best, start = run, when
            prev = q
        agap = max((b - a for a, b in zip(arrivals, arrivals[1:])), default=0.0)
        return ProbeResult(self.rate, sent, len(seqs), len(rows) - len(set(int(r[0]) for r in rows)),
                           sent - len(seqs), best * 1000 / self.rate, start, agap * 1000, gaps)


# --------------------------------------------------------------------------
# the topology model


@dataclass
class Iface:
    node: str
    name: str  # at most 15 characters; unique within its namespace
    addrs: list[str] = field(default_factory=list)  # "10.1.0.1/24", "fd00:a::1/64"
    mac: str | None = None  # None: the kernel picks a random one
    kernel_addrs: bool = True  # put addrs on the kernel interface too
    addrgenmode: str | None = None  # IPv6 link-local generation: eui64 | none | None (leave)
    mtu: int | None = None  # None: the link's MTU
    # False: `ethtool -K IF tx off` (checksums computed in software).  See
    # standard_topology: off on the hosts and the far end of every gateway port.
    tx_offload: bool = True


@dataclass
class Link:
    a: Iface
    b: Iface
    mtu: int = 1500

    def mtu_of(self, i: Iface) -> int:
        return i.mtu or self.mtu


@dataclass
class Route:
    prefix: str  # CIDR or "default"
    via: str
    dev: str | None = None
    v6: bool | None = None  # None: from via

    @property
    def family(self) -> str:
        v6 = self.v6 if self.v6 is not None else _is_v6(self.via)
        return "-6" if v6 else "-4"


@dataclass
class Vxlan:
    name: str
    vni: int
    local: str
    remote: str
    dev: str
    mac: str
    addrs: list[str] = field(default_factory=list)
    port: int = 4789
    neighbors: list[tuple[str, str]] = field(default_factory=list)  # permanent (address, mac)


@dataclass
class Bridge:
    """A Linux bridge in a node's namespace: a switch joining `members`
    (interfaces of that node), with the node's own addresses on it."""
    name: str
    members: list[str]
    addrs: list[str] = field(default_factory=list)


@dataclass
class Node:
    name: str
    kind: str  # host | router | gateway
    routes: list[Route] = field(default_factory=list)
    sysctls: dict[str, str] = field(default_factory=dict)
    vxlans: list[Vxlan] = field(default_factory=list)
    bridges: list[Bridge] = field(default_factory=list)


@dataclass
class Port:
    name: str  # mcgwd port name
    role: str  # lan | wan
    iface: str  # the kernel interface in the gateway's namespace


@dataclass
class Line:
    name: str
    port: str
    local: str
    remote: str
    next_hop: str | None = None


@dataclass
class Peer:
    name: str
    encap: str
    lines: list[Line]
    inner_mac: str | None = None
    asn: int | None = None  # with Options.bgp: one eBGP session per line (None: no BGP, static routes)
    site: str | None = None  # peers[].site: gateways of one site stand in for each other


@dataclass
class Gateway:
    node: str
    name: str  # mcgwd node.name
    site: str
    ports: list[Port]
    tenant: str
    vni: int
    routes: list[tuple[str, str]]  # (prefix, peer): the static routes
    peers: list[Peer]
    asn: int | None = None  # with Options.bgp
    router_id: str | None = None
    # bgp.neighbors: routers on a LAN port ({"address", "asn", "port", "site"})
    neighbors: list[dict] = field(default_factory=list)
    # (prefix, next hop on the LAN): static routes to a router behind the gateway
    lan_routes: list[tuple[str, str]] = field(default_factory=list)
    vrrp: list[dict] = field(default_factory=list)  # the `vrrp` groups (Options.ha)


@dataclass
class Vpc:
    """A VPC of the address plan (`address-plan.clouds[lab].regions[r1].vpcs`)."""
    name: str
    prefixes: list[str]
    site: str
    tenant: str = "blue"


@dataclass
class MappedRange:
    """A 1:1 mapped range of the address plan (`address-plan.mapped-ranges`):
    the gateways of `site` translate `real` to `mapped` and back."""
    name: str
    real: str
    mapped: str
    site: str


@dataclass
class Topology:
    nodes: dict[str, Node] = field(default_factory=dict)
    links: list[Link] = field(default_factory=list)
    gateways: dict[str, Gateway] = field(default_factory=dict)
    # the address plan (written with Options.bgp or when there are mapped ranges)
    vpcs: list[Vpc] = field(default_factory=list)
    mapped: list[MappedRange] = field(default_factory=list)

    def node(self, name: str, kind: str = "host", **kw) -> Node:
        n = Node(name, kind, **kw)
        self.nodes[name] = n
        return n

    def link(self, a: Iface, b: Iface, mtu: int = 1500) -> Link:
        for i in (a, b):
            if len(i.name) > 15:
                raise LabError(f"interface name {i.name!r} is longer than 15 characters")
            if i.node not in self.nodes:
                raise LabError(f"link end {i.node}/{i.name}: no node {i.node!r}")
        lk = Link(a, b, mtu)
        self.links.append(lk)
        return lk

    def ifaces(self):
        for lk in self.links:
            yield lk.a
            yield lk.b

    def iface(self, node: str, name: str) -> Iface:
        for i in self.ifaces():
            if i.node == node and i.name == name:
                return i
        raise LabError(f"no interface {node}/{name}")

    def mtu(self, i: Iface) -> int:
        """The MTU of interface `i` (its own, else its link's)."""
        return next(lk.mtu_of(i) for lk in self.links if i in (lk.a, lk.b))

    def other_end(self, node: str, name: str) -> Iface:
        for lk in self.links:
            if (lk.a.node, lk.a.name) == (node, name):
                return lk.b
            if (lk.b.node, lk.b.name) == (node, name):
                return lk.a
        raise LabError(f"no link at {node}/{name}")


@dataclass
class Options:
    encap: str = "vxlan"  # between gateways A and B: vxlan | geneve (site C is always vxlan)
    underlay: str = "ipv4"  # the VTEP family: ipv4 | ipv6 (the underlay is dual-stack)
    driver: str = "af_xdp"  # mcgwd port vdevs: af_xdp | af_packet
    # Emit ports[].neighbors from the kernel's MACs.  Off: mcgwd follows the
    # kernel's neighbour table, which resolves ARP/ND on the ports' kernel side.
    static_neighbors: bool = False
    # Permanent neighbour entries for the gateways' addresses in the hosts and
    # the underlay router (off: they resolve them; the gateways' kernel sides answer).
    kernel_static_neighbors: bool = False
    kernel_addrs: bool | None = None  # gateway addresses on the kernel interfaces; None: af_xdp only
    vni: int = 1000
    underlay_mtu: int = 1500
    lan_mtu: int = 1500
    # The hosts' eth0 MTU.  The tunnel carries inner packets of at most 1450
    # bytes on a 1500-byte line (1430 over an IPv6 underlay): the gateways
    # clamp the TCP MSS and answer larger packets with ICMP frag-needed /
    # Packet Too Big (or fragment the inner IPv4 packet without DF), issue 5.
    host_mtu: int = 1500
    # A narrower underlay: {rtr interface: IP MTU} lowers the MTU of the
    # packets the router forwards (and sends) out of that interface, e.g.
    # {"a1": 1400, "b1": 1400} for every A<->B packet on line 1.  Done with
    # the route MTU of the interface's IPv4 subnet and its IPv6 MTU
    # (net.ipv6.conf.IF.mtu), not the link MTU: a veth drops a received frame
    # longer than its own MTU without a word, so lowering the link MTU of b1
    # would also black-hole gateway B's 1500-byte packets coming in on it.
    # The router sends ICMP frag-needed / Packet Too Big for what does not fit.
    rtr_mtu: dict = field(default_factory=dict)
    # nft in the router's namespace drops every IPv4 ICMP packet and the
    # ICMPv6 errors (Packet Too Big, Destination Unreachable, Time Exceeded,
    # Parameter Problem) it forwards or sends: a PMTUD black hole.  ND and
    # ICMPv6 echo still pass.  Counters: Lab.nft_counters("rtr").
    rtr_drop_icmp: bool = False
    # The gateways' `path-mtu` config section (e.g. {"probe": True,
    # "probe-interval": 2}); None: left out (mcgwd's defaults).
    path_mtu: dict | None = None
    # BGP through FRR (issue 13), the CLI's default (`up`, scripts/lab.sh;
    # --no-bgp), off for tests that do not ask for it (they test forwarding
    # with static routes, without FRR's start-up and CPU): FRR (zebra with the FPM
    # module, bgpd, bfdd, staticd) runs in each gateway's namespace, started
    # by the lab before mcgwd, which renders and applies its config.  Gateway
    # A is AS 65001, B AS 65002; one eBGP session per line A<->B with BFD
    # (bfd_interval_ms x bfd_multiplier); the configs carry the address plan
    # (the VPCs of sites A, B and C) and keep as static routes only what BGP
    # cannot give: site C's VPC (Linux VXLAN, no BGP) and, over an IPv4
    # underlay, the other gateway's IPv6 VPC (a route's next hop must be a
    # peer's VTEP, so IPv6 ranges ride IPv6 sessions).  False: static routes
    # only, no FRR (as before issue 13).
    bgp: bool = False
    bfd_interval_ms: int = 100
    bfd_multiplier: int = 3
    # An IDC router behind gateway A (needs bgp): namespace `idc` is a switch
    # (bridge br0) on gateway A's LAN between gwa and hosta, and a router
    # (10.1.0.254, BIRD 2, AS 64512, eBGP to gwa) for `idchost`
    # (10.100.0.10/24).  BIRD announces 10.100.0.0/16 (VPC idc-a of site A in
    # the plan) and 10.200.0.0/16 (in no plan: gateway A refuses it).
    idc_router: bool = False
    # Keys merged into both gateways' `address-plan` section (needs bgp, which
    # writes the plan): a store and pools, e.g. {"store": {"type": "etcd",
    # "endpoints": [...]}, "pools": [...]} (lab_plan_test.py).
    plan_extra: dict | None = None
    # Issue 15's legacy overlap: site B uses site A's ranges (OVERLAP_RANGE
    # 10.1.0.0/16, OVERLAP_RANGE6 fd00:a::/56) too, and each site is reached
    # through its own 1:1 mapped ranges (MAPPED: A 10.201.0.0/16, B
    # 10.202.0.0/16; MAPPED6: A fd00:201::/56, B fd00:202::/56), translated by
    # its own gateway; the hosts address each other by mapped addresses.
    # Site B's LAN becomes gwb lan0 10.1.0.2/24 + fd00:a::2/64 and a router,
    # namespace lanb (10.1.0.3/24 + fd00:a::3/64 towards gwb, 10.1.1.1/24 +
    # fd00:a:0:1::1/64 towards hostb), with hostb 10.1.1.20/24 +
    # fd00:a:0:1::20/64 behind it: a router on the far side that can send
    # frag-needed / Packet Too Big for a mapped flow
    # (Lab.set_ip_mtu("lanb", "hb", ...)).  gwb routes 10.1.1.0/24 and
    # fd00:a:0:1::/64 to lanb (static LAN routes).  Host parts differ from
    # site A's (hosta .10, gwa .1) so a trace is unambiguous.
    overlap: bool = False
    # A pair of gateways for site A (issue 14, VRRP; needs bgp, IPv4
    # underlay): gwa2 (own namespace, lines wan1/wan2 to the router's a3/a4,
    # 100.64.6.0/30 and 100.64.7.0/30) next to gwa; namespace `sw` is site
    # A's LAN switch (bridge br0: gwa's lan0, gwa2's lan0, hosta).  gwa has
    # 10.1.0.2 / fd00:a::2 on the LAN, gwa2 10.1.0.3 / fd00:a::3; VRRP group
    # 10 (virtual 10.1.0.1, MAC 00:00:5e:00:01:0a) and, with vrrp_ipv6, group
    # 11 (virtual fd00:a::1) with priorities 200 (gwa) and 100 (gwa2),
    # preempt, every vrrp_interval_ms, multicast or (vrrp_unicast) to the
    # other gateway's LAN address.  Gateway B has a peer per A gateway
    # (site-a: gwa, site-a2: gwa2; the fast path maps a BGP route to a peer,
    # so only separate peers let BGP's choice, the Backup's AS-path prepend,
    # steer the return traffic; site-a2 has `site: site-a`, so gwb's fast
    # path sends to gwa2 while no line to gwa is up); gwa2's lines leave gwb through a second
    # address of its WAN ports (100.64.3.5, 100.64.4.5; the router's
    # 100.64.3.6, 100.64.4.6), so that zebra's resolved next hop names the
    # peer.  The address plan has no VPCs (a plan's import filter lets a
    # site's ranges in only from the peer of that name): each gateway
    # announces its LAN subnet.  Site C is built but not peered.
    ha: bool = False
    vrrp_interval_ms: int = 100
    vrrp_unicast: bool = False
    vrrp_ipv6: bool = True
    # Each group tracks `peer site-b` and `fpm` with weight 150 each: a
    # gateway whose lines to site B are unusable (BFD), or whose zebra is not
    # connected (no routes yet), drops to priority 50 (gwa) or 1 (gwa2), so
    # gwa coming back does not preempt before it can forward.
    vrrp_track: bool = True
    # preempt-delay-ms of the groups: a gateway that comes back waits this
    # long after it first hears the lower-priority Active before it takes
    # over, so that zebra's routes have reached its fast path (the `fpm`
    # tracked object is up as soon as zebra connects, before the routes).
    vrrp_preempt_delay_ms: int = 1000
    # A management network for monitoring (issue 17): namespace `mon` with a
    # veth to each gateway (mon/m<i> MONITOR_NET.<4i+1>/30, <gw>/mgmt0
    # .<4i+2>/30, kernel only: no mcgwd port), and each gateway's
    # metrics.listen on its mgmt0 address, port METRICS_PORT
    # (Lab.metrics_target).  A Prometheus in `mon` scrapes them.
    monitor: bool = False
    # The gateways' `flow-audit` section (issue 17, IPFIX), e.g. {"sampling":
    # 1, "collectors": [{"address": "127.0.0.1", "port": 4739}]}: the same in
    # every gateway (a collector on 127.0.0.1 is in that gateway's own
    # namespace); None: left out (off).
    flow_audit: dict | None = None
    # SLA steering (issue 17): the `sla` section of every peer of both
    # gateways, e.g. {"max-loss": "1%", "hold-s": 5}; None: none.
    sla: dict | None = None
    # ESP between the mcgw gateways (issue 18): the `encryption` section of
    # their peers, e.g. {"mode": "esp-aes-256-gcm"} (site C, a Linux VXLAN
    # device, stays in clear text).  Without "static-keys" the lab makes a
    # CA and one certificate per gateway, named as the other gateways call
    # it (its site), in DIR/tls (make_tls), and sets the top-level
    # `encryption` section to them.
    encryption: dict | None = None
    log_level: str = "info"
    memory_mb: int = 512
    mbufs: int | None = None  # None: enough for the ports (see mbufs_for)

    def check(self) -> None:
        for key, allowed in (("encap", ("vxlan", "geneve")), ("underlay", ("ipv4", "ipv6")),
                             ("driver", ("af_xdp", "af_packet"))):
            if getattr(self, key) not in allowed:
                raise LabError(f"{key} must be one of {', '.join(allowed)}, not {getattr(self, key)!r}")
        if self.bgp and not self.gw_kernel_addrs:
            raise LabError("bgp needs the gateways' addresses on their kernel interfaces (af_xdp, or "
                           "kernel_addrs=True): FRR's sessions run from the kernel to the remote VTEPs; "
                           "use --no-bgp with af_packet")
        if self.idc_router and not self.bgp:
            raise LabError("idc_router needs bgp (the IDC router talks BGP to gateway A)")
        if self.idc_router and (self.static_neighbors or self.kernel_static_neighbors):
            raise LabError("idc_router: gateway A's LAN is a bridge; static neighbours are not supported with it")
        if self.ha and not self.bgp:
            raise LabError("ha needs bgp (gateway B follows the Active by BGP; BFD takes a dead gateway's lines)")
        if self.ha and (self.idc_router or self.overlap):
            raise LabError("ha: not supported with idc_router or overlap (site A's LAN and plan differ)")
        if self.ha and self.underlay != "ipv4":
            raise LabError("ha: the IPv4 underlay only")
        if self.overlap and self.idc_router:
            raise LabError("overlap and idc_router: not supported together (the overlap plan replaces "
                           "the VPCs, the IDC router's idc-a among them)")

    def mbufs_for(self, ports: int) -> int:
        """The af_xdp PMD keeps 2048 mbufs per RX queue in its fill ring
        (and fails with a bare EINVAL when the pool runs short): give each
        port 2048, plus 4096 for the rest, as a power of two minus one."""
        if self.mbufs:
            return self.mbufs
        need = 2048 * ports + 4096
        n = 4096
        while n - 1 < need:
            n *= 2
        return n - 1

    @property
    def gw_kernel_addrs(self) -> bool:
        return self.kernel_addrs if self.kernel_addrs is not None else self.driver == "af_xdp"


def standard_topology(o: Options) -> Topology:
    """Site A (hosta, gwa), the underlay router rtr with two lines to each
    gateway, site B (gwb, hostb), and site C: a Linux VXLAN VTEP (sitec)
    routing for hostc.  Addresses: ADDRESS_TABLE."""
    o.check()
    t = Topology()
    router = {"net.ipv4.ip_forward": "1", "net.ipv6.conf.all.forwarding": "1"}
    gateway = {"net.ipv4.ip_forward": "0", "net.ipv6.conf.all.forwarding": "0",
               "net.ipv6.conf.all.autoconf": "0", "net.ipv6.conf.default.autoconf": "0"}
    for name, kind in (("hosta", "host"), ("gwa", "gateway"), ("rtr", "router"),
                       ("gwb", "gateway"), ("hostb", "host"), ("sitec", "router"), ("hostc", "host")):
        t.node(name, kind, sysctls=dict(router if kind == "router" else gateway if kind == "gateway" else {}))
    if o.ha:
        t.node("gwa2", "gateway", sysctls=dict(gateway))
        t.node("sw", "switch")

    ka = o.gw_kernel_addrs
    agm = "eui64" if ka else "none"

    def gw_if(node, name, addrs):
        return Iface(node, name, addrs, kernel_addrs=ka, addrgenmode=agm)

    def host_if(node, addrs):
        return Iface(node, "eth0", addrs, mtu=o.host_mtu, tx_offload=False)

    # LANs
    for site, gw, host in (("a", "gwa", "hosta"), ("b", "gwb", "hostb")):
        n = {"a": 1, "b": 2}[site]
        if site == "a" and o.idc_router:
            # Gateway A's LAN is a switch: bridge br0 in namespace idc joins
            # gwa's lan0 (idc/lana), hosta (idc/lanh) and the IDC router
            # itself (br0 carries its LAN address 10.1.0.254).
            t.node("idc", "router", sysctls=dict(router))
            t.node("idchost", "host")
            t.link(Iface("idc", "lana"), gw_if(gw, "lan0", ["10.1.0.1/24", "fd00:a::1/64"]), o.lan_mtu)
            t.link(host_if(host, ["10.1.0.10/24", "fd00:a::10/64"]), Iface("idc", "lanh"), o.lan_mtu)
            t.nodes["idc"].bridges.append(Bridge("br0", ["lana", "lanh"], [IDC_ROUTER + "/24", "fd00:a::fe/64"]))
            t.link(host_if("idchost", ["10.100.0.10/24", "fd00:100::10/64"]),
                   Iface("idc", "h0", ["10.100.0.1/24", "fd00:100::1/64"]), o.lan_mtu)
            t.nodes["idchost"].routes += [Route("default", "10.100.0.1"), Route("default", "fd00:100::1")]
        elif site == "a" and o.ha:
            # Site A's LAN is a switch (namespace sw, bridge br0, no address
            # of its own) joining gwa (sw/pa), gwa2 (sw/pa2) and hosta (sw/ph).
            t.link(Iface("sw", "pa"), gw_if("gwa", "lan0", ["10.1.0.2/24", "fd00:a::2/64"]), o.lan_mtu)
            t.link(Iface("sw", "pa2"), gw_if("gwa2", "lan0", ["10.1.0.3/24", "fd00:a::3/64"]), o.lan_mtu)
            t.link(host_if(host, ["10.1.0.10/24", "fd00:a::10/64"]), Iface("sw", "ph"), o.lan_mtu)
            t.nodes["sw"].bridges.append(Bridge("br0", ["pa", "pa2", "ph"]))
        elif site == "b" and o.overlap:
            # Site A's range, different host parts; hostb behind router lanb.
            t.node("lanb", "router", sysctls=dict(router))
            t.link(Iface("lanb", "gw", ["10.1.0.3/24", "fd00:a::3/64"]),
                   gw_if(gw, "lan0", ["10.1.0.2/24", "fd00:a::2/64"]), o.lan_mtu)
            t.link(host_if(host, ["10.1.1.20/24", "fd00:a:0:1::20/64"]),
                   Iface("lanb", "hb", ["10.1.1.1/24", "fd00:a:0:1::1/64"]), o.lan_mtu)
            t.nodes["lanb"].routes += [Route("default", "10.1.0.2"), Route("default", "fd00:a::2")]
            t.nodes[host].routes += [Route("default", "10.1.1.1"), Route("default", "fd00:a:0:1::1")]
            continue
        else:
            t.link(host_if(host, [f"10.{n}.0.10/24", f"fd00:{site}::10/64"]),
                   gw_if(gw, "lan0", [f"10.{n}.0.1/24", f"fd00:{site}::1/64"]), o.lan_mtu)
        t.nodes[host].routes += [Route("default", f"10.{n}.0.1"), Route("default", f"fd00:{site}::1")]
    # Underlay: two lines per gateway, one to site C.
    lines = {("gwa", "wan1"): ("a1", 1), ("gwa", "wan2"): ("a2", 2),
             ("gwb", "wan1"): ("b1", 3), ("gwb", "wan2"): ("b2", 4)}
    for (gw, wan), (rif, n) in lines.items():
        t.link(gw_if(gw, wan, [f"100.64.{n}.1/30", f"fd00:64:{n}::1/64"]),
               Iface("rtr", rif, [f"100.64.{n}.2/30", f"fd00:64:{n}::2/64"]), o.underlay_mtu)
    if o.ha:
        # gwa2's lines; gwb's WAN ports and the router's b1/b2 get a second
        # /30 each, the next hop of gwb's lines to gwa2.
        for wan, rif, n in (("wan1", "a3", 6), ("wan2", "a4", 7)):
            t.link(gw_if("gwa2", wan, [f"100.64.{n}.1/30", f"fd00:64:{n}::1/64"]),
                   Iface("rtr", rif, [f"100.64.{n}.2/30", f"fd00:64:{n}::2/64"]), o.underlay_mtu)
        for wan, rif, n in (("wan1", "b1", 3), ("wan2", "b2", 4)):
            t.iface("gwb", wan).addrs.append(f"100.64.{n}.5/30")
            t.iface("rtr", rif).addrs.append(f"100.64.{n}.6/30")
    t.link(Iface("sitec", "wan0", ["100.64.5.1/30", "fd00:64:5::1/64"]),
           Iface("rtr", "c1", ["100.64.5.2/30", "fd00:64:5::2/64"]), o.underlay_mtu)
    t.link(host_if("hostc", ["10.3.0.10/24", "fd00:c::10/64"]),
           Iface("sitec", "lan0", ["10.3.0.1/24", "fd00:c::1/64"]), o.lan_mtu)
    t.nodes["hostc"].routes += [Route("default", "10.3.0.1"), Route("default", "fd00:c::1")]

    # TX checksum offload off on every host's eth0 and on the far end of
    # every gateway port (the router's a1 a2 b1 b2).  A veth hands its peer the
    # packets it sends with the TCP/UDP checksum left to the "hardware"
    # (CHECKSUM_PARTIAL: only the pseudo-header sum is in the packet), and so
    # do packets the router forwards from such a veth; a kernel peer takes
    # that as it is, but an af_xdp or af_packet port gets the bytes, mcgw
    # forwards them (or hands them to its TAP) unchanged, and the receiving
    # kernel drops the segment for its bad checksum.  A real NIC fills the
    # checksum in on the wire, so here the senders compute it in software.
    for g in ("gwa", "gwb") + (("gwa2",) if o.ha else ()):
        for wan in ("lan0", "wan1", "wan2"):
            t.other_end(g, wan).tx_offload = False

    # Kernel routes of the gateways to the remote VTEPs, each over its line
    # (for kernel traffic: pings now, BGP/BFD later).
    if ka:
        def via(n, fam):
            return f"100.64.{n}.2" if fam == 4 else f"fd00:64:{n}::2"

        def net(n, fam):
            return f"100.64.{n}.0/30" if fam == 4 else f"fd00:64:{n}::/64"

        for fam in (4, 6):
            t.nodes["gwa"].routes += [Route(net(3, fam), via(1, fam), "wan1"),
                                      Route(net(4, fam), via(2, fam), "wan2"),
                                      Route(net(5, fam), via(1, fam), "wan1")]
            t.nodes["gwb"].routes += [Route(net(1, fam), via(3, fam), "wan1"),
                                      Route(net(2, fam), via(4, fam), "wan2"),
                                      Route(net(5, fam), via(3, fam), "wan1")]
            if o.ha:
                t.nodes["gwa2"].routes += [Route(net(3, fam), via(6, fam), "wan1"),
                                           Route(net(4, fam), via(7, fam), "wan2")]
                # IPv4: through the router's second address (the next hop of
                # gwb's lines to gwa2); IPv6 is not routed by BGP here.
                t.nodes["gwb"].routes += [Route(net(6, fam), "100.64.3.6" if fam == 4 else via(3, fam), "wan1"),
                                          Route(net(7, fam), "100.64.4.6" if fam == 4 else via(4, fam), "wan2")]

    # Site C: underlay default towards rtr, VXLAN to gateway A's line1 VTEP.
    v6 = o.underlay == "ipv6"
    c = t.nodes["sitec"]
    c.routes += [Route("100.64.0.0/16", "100.64.5.2"), Route("fd00:64::/32", "fd00:64:5::2")]
    c.vxlans.append(Vxlan("vxlan0", o.vni,
                          local="fd00:64:5::1" if v6 else "100.64.5.1",
                          remote="fd00:64:1::1" if v6 else "100.64.1.1",
                          dev="wan0", mac=VXLAN_C_MAC, addrs=["10.3.255.1/24", "fd00:c:ff::1/64"],
                          neighbors=[("10.3.255.254", VXLAN_C_NEXTHOP_MAC),
                                     ("fd00:c:ff::fe", VXLAN_C_NEXTHOP_MAC)]))
    c.routes += [Route(MAPPED["site-a"] if o.overlap else "10.1.0.0/16", "10.3.255.254", "vxlan0"),
                 Route(MAPPED6["site-a"] if o.overlap else "fd00:a::/64", "fd00:c:ff::fe", "vxlan0")]

    # The gateways.
    fam = 1 if v6 else 0

    def addr(node, name):
        return _ip(t.iface(node, name).addrs[fam])

    def line(name, gw, wan, remote_node, remote_if):
        return Line(name, wan, addr(gw, wan), addr(remote_node, remote_if),
                    addr(*_peer_key(t.other_end(gw, wan))))

    ports = [Port("lan0", "lan", "lan0"), Port("wan1", "wan", "wan1"), Port("wan2", "wan", "wan2")]
    # Static routes.  With BGP only what BGP cannot give stays: site C's VPC
    # (Linux VXLAN, no BGP) and, over an IPv4 underlay, the other gateway's
    # IPv6 VPC (IPv6 ranges ride IPv6 sessions; over an IPv6 underlay the
    # sessions carry both families, with extended next hops).
    # With overlap the other site is reached at its mapped range.
    b4, b6 = (MAPPED["site-b"], MAPPED6["site-b"]) if o.overlap else ("10.2.0.0/16", "fd00:b::/64")
    a4, a6 = (MAPPED["site-a"], MAPPED6["site-a"]) if o.overlap else ("10.1.0.0/16", "fd00:a::/64")
    b_routes = [(b4, "site-b"), (b6, "site-b")]
    a_routes = [(a4, "site-a"), (a6, "site-a")]
    if o.bgp:
        b_routes = [] if v6 else [(b6, "site-b")]
        a_routes = [] if v6 else [(a6, "site-a")]
    t.gateways["gwa"] = Gateway(
        "gwa", "gw-a", "site-a", ports, "blue", o.vni,
        routes=b_routes + [("10.3.0.0/16", "site-c"), ("fd00:c::/64", "site-c")],
        peers=[Peer("site-b", o.encap, [line("line1", "gwa", "wan1", "gwb", "wan1"),
                                        line("line2", "gwa", "wan2", "gwb", "wan2")],
                    asn=GWB_ASN if o.bgp else None),
               Peer("site-c", "vxlan", [line("line1", "gwa", "wan1", "sitec", "wan0"),
                                        line("line2", "gwa", "wan2", "sitec", "wan0")],
                    inner_mac=VXLAN_C_MAC)],
        asn=GWA_ASN if o.bgp else None, router_id="10.255.0.1" if o.bgp else None,
        neighbors=[{"address": IDC_ROUTER, "asn": IDC_ASN, "port": "lan0", "site": "site-a"}]
        if o.idc_router else [])
    t.gateways["gwb"] = Gateway(
        "gwb", "gw-b", "site-b", ports, "blue", o.vni,
        routes=a_routes,
        peers=[Peer("site-a", o.encap, [line("line1", "gwb", "wan1", "gwa", "wan1"),
                                        line("line2", "gwb", "wan2", "gwa", "wan2")],
                    asn=GWA_ASN if o.bgp else None)],
        asn=GWB_ASN if o.bgp else None, router_id="10.255.0.2" if o.bgp else None,
        lan_routes=[("10.1.1.0/24", "10.1.0.3"), ("fd00:a:0:1::/64", "fd00:a::3")] if o.overlap else [])
    if o.ha:
        _pair_site_a(t, o, line, ports, b_routes)
    if o.monitor:
        t.node("mon", "host")
        for i, gw in enumerate(t.gateways):
            t.link(Iface(gw, "mgmt0", [f"{_monitor_addr(i, 2)}/30"]),
                   Iface("mon", f"m{i}", [f"{_monitor_addr(i, 1)}/30"]))
    if o.bgp and not o.ha:
        t.vpcs = [Vpc("vpc-a", ["10.1.0.0/16", "fd00:a::/64"], "site-a"),
                  Vpc("vpc-b", ["10.2.0.0/16", "fd00:b::/64"], "site-b"),
                  Vpc("vpc-c", ["10.3.0.0/16", "fd00:c::/64"], "site-c")]
        if o.idc_router:
            t.vpcs.append(Vpc("idc-a", [IDC_RANGE], "site-a"))
    if o.overlap:
        # Both sites' VPCs hold the shared ranges: each is a legacy overlap,
        # declared by a mapped range of its site whose real range is the
        # VPC's prefix (docs/address-plan.md); the plan routes only the
        # mapped ranges.
        t.vpcs = [Vpc("vpc-a", [OVERLAP_RANGE, OVERLAP_RANGE6], "site-a"),
                  Vpc("vpc-b", [OVERLAP_RANGE, OVERLAP_RANGE6], "site-b"),
                  Vpc("vpc-c", ["10.3.0.0/16", "fd00:c::/64"], "site-c")]
        t.mapped = [MappedRange(f"legacy-{s[-1]}", OVERLAP_RANGE, m, s) for s, m in MAPPED.items()] + \
            [MappedRange(f"legacy-{s[-1]}6", OVERLAP_RANGE6, m, s) for s, m in MAPPED6.items()]
    return t


MONITOR_NET = "198.18.0.0"  # the management network of Options.monitor (RFC 2544's range)
METRICS_PORT = 9469


def _monitor_addr(index: int, host: int) -> str:
    """Host `host` (1: mon, 2: the gateway) of gateway `index`'s /30."""
    return str(ipaddress.ip_address(MONITOR_NET) + 4 * index + host)


def _vrrp_groups(o: Options, priority: int, peer4: str, peer6: str) -> list[dict]:
    """The VRRP groups of one of site A's gateways (Options.ha)."""
    groups = [(VRRP_VRID, VRRP_VIP, peer4)] + ([(VRRP_VRID6, VRRP_VIP6, peer6)] if o.vrrp_ipv6 else [])
    # Group 11 (IPv6) in accept mode: the Active answers pings to fd00:a::1;
    # group 10 without: 10.1.0.1 is not the gateway's (RFC 9568's default).
    return [{"vrid": vrid, "port": "lan0", "priority": priority, "advert-interval-ms": o.vrrp_interval_ms,
             "preempt": True, "preempt-delay-ms": o.vrrp_preempt_delay_ms or None,
             "accept-mode": True if vrid == VRRP_VRID6 else None,
             "virtual-addresses": [vip],
             "unicast-peers": [peer] if o.vrrp_unicast else None,
             "track": [{"object": obj, "weight": VRRP_TRACK_WEIGHT} for obj in ("peer site-b", "fpm")]
             if o.vrrp_track else None}
            for vrid, vip, peer in groups]


def _pair_site_a(t: Topology, o: Options, line, ports: list[Port], b_routes: list) -> None:
    """Options.ha: gwa and gwa2 as a VRRP pair; gwb with a peer for each."""
    ga = t.gateways["gwa"]
    # Only site B: without a plan a next hop behind the router's a1 would be
    # ambiguous between site-b and site-c (docs/routing.md, "Next hops").
    ga.peers = [p for p in ga.peers if p.name == "site-b"]
    ga.routes = list(b_routes)
    ga.vrrp = _vrrp_groups(o, 200, "10.1.0.3", "fd00:a::3")
    t.gateways["gwa2"] = Gateway(
        "gwa2", "gw-a2", "site-a", ports, "blue", o.vni, routes=list(b_routes),
        peers=[Peer("site-b", o.encap, [line("line1", "gwa2", "wan1", "gwb", "wan1"),
                                        line("line2", "gwa2", "wan2", "gwb", "wan2")], asn=GWB_ASN)],
        asn=GWA_ASN, router_id="10.255.0.3", vrrp=_vrrp_groups(o, 100, "10.1.0.2", "fd00:a::2"))
    gb = t.gateways["gwb"]
    gb.peers.append(Peer("site-a2", o.encap, [
        Line("line1", "wan1", "100.64.3.1", "100.64.6.1", "100.64.3.6"),
        Line("line2", "wan2", "100.64.4.1", "100.64.7.1", "100.64.4.6")], asn=GWA_ASN, site="site-a"))


def _peer_key(i: Iface) -> tuple[str, str]:
    return (i.node, i.name)


# --------------------------------------------------------------------------
# the lab


BASE_SYSCTLS = {
    # Static addressing: no DAD delay, no router solicitations or SLAAC.
    "net.ipv6.conf.all.accept_dad": "0",
    "net.ipv6.conf.default.accept_dad": "0",
    "net.ipv6.conf.all.accept_ra": "0",
    "net.ipv6.conf.default.accept_ra": "0",
    "net.ipv6.conf.all.router_solicitations": "0",
    "net.ipv6.conf.default.router_solicitations": "0",
    "net.ipv4.conf.all.rp_filter": "0",
    "net.ipv4.conf.default.rp_filter": "0",
}


class Capture:
    """A running tcpdump inside a lab namespace, writing a pcap file."""

    def __init__(self, lab: "Lab", name: str, node: str, iface: str, path: Path, pid: int):
        self.lab, self.name, self.node, self.iface, self.path, self.pid = lab, name, node, iface, path, pid

    def stop(self, settle: float = 0.2) -> Path:
        """Stop tcpdump (after `settle` seconds for packets still in flight)."""
        time.sleep(settle)
        self.lab._stop_process(self.name, self.pid, timeout=5)
        return self.path

    def __enter__(self) -> "Capture":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def fields(self, *names: str, display_filter: str | None = None, heuristics: bool = True) -> list[list[str]]:
        """Decode the capture with tshark: one list of field values per packet.
        heuristics=False: the protocols that tshark guesses from a TCP/UDP
        payload are off (iperf3's random payload can look like Thrift, say,
        and then decodes as an error that is no fault of the packet)."""
        argv = ["tshark", "-n", "-r", self.path, "-T", "fields"]
        if not heuristics:
            for proto in _payload_heuristics():
                argv += ["--disable-protocol", proto]
        for n in names:
            argv += ["-e", n]
        if display_filter:
            argv += ["-Y", display_filter]
        r = sh(*argv)
        return [line.split("\t") for line in r.stdout.splitlines() if line.strip()]


class Transfer:
    """The result of Lab.iperf(): iperf3's JSON document, read from the receiving end."""

    def __init__(self, sender: str, receiver: str, addr: str, doc: dict, rc: int):
        self.sender, self.receiver, self.addr, self.doc, self.rc = sender, receiver, addr, doc, rc
        end = doc.get("end", {})
        self.error = doc.get("error") or (f"iperf3 exit {rc}" if rc else None)
        recv, sent = end.get("sum_received", {}), end.get("sum_sent", {})
        self.bytes = int(recv.get("bytes", 0))  # received by the receiver
        self.seconds = float(recv.get("seconds", 0.0))
        self.bps = float(recv.get("bits_per_second", 0.0))
        self.retransmits = sent.get("retransmits")  # the sender's TCP retransmissions

    @property
    def intervals(self) -> list[tuple[float, float, int]]:
        """(start, end, bytes received) per reporting interval."""
        return [(i["sum"]["start"], i["sum"]["end"], int(i["sum"]["bytes"])) for i in self.doc.get("intervals", [])]

    def __str__(self) -> str:
        conn = self.doc.get("start", {}).get("connected", [{}])[0]
        return (f"{self.sender} {self.addr} -> {self.receiver} {conn.get('local_host', '?')}: "
                f"{self.bytes / 1048576:.1f} MiB received in "
                f"{self.seconds:.2f} s, {self.bps / 1e6:.0f} Mbit/s, {self.retransmits} retransmits")


class Lab:
    def __init__(self, prefix: str | None = None, workdir: str | os.PathLike | None = None,
                 options: Options | None = None, topology: Topology | None = None,
                 build_dir: str | os.PathLike | None = None,
                 mcgwd: str | None = None, mcgwctl: str | None = None):
        prefix = prefix or os.environ.get("MCGWLAB_PREFIX") or f"mcgwlab-{secrets.token_hex(3)}-"
        if not prefix.endswith("-"):
            prefix += "-"
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_.-]{0,40}", prefix):
            raise LabError(f"prefix {prefix!r}: use a letter, then letters, digits, '_', '.', '-' (≤ 41)")
        self.prefix = prefix
        self.dir = Path(workdir or os.environ.get("MCGWLAB_DIR") or f"/tmp/{prefix.rstrip('-')}")
        self.options = options or Options()
        self.topo = topology
        build = Path(build_dir or os.environ.get("MCGW_BUILD_DIR") or TOP / "build")
        self.mcgwd = mcgwd or _binary(build / "control/daemon/mcgwd", "mcgwd")
        self.mcgwctl = mcgwctl or _binary(build / "control/cli/mcgwctl", "mcgwctl")
        self.state: dict = {}
        self._children: dict[int, subprocess.Popen] = {}

    # ---- naming and state

    def ns(self, node: str) -> str:
        return self.prefix + node

    @property
    def state_file(self) -> Path:
        return self.dir / "state.json"

    def _save(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state, indent=2) + "\n")
        tmp.replace(self.state_file)

    @classmethod
    def attach(cls, prefix: str | None = None, workdir: str | None = None) -> "Lab":
        """The Lab object of a lab that `up` made (in this or another process)."""
        prefix = prefix or os.environ.get("MCGWLAB_PREFIX")
        if not prefix and not workdir:
            labs = registered()
            if len(labs) != 1:
                raise LabError("no lab is registered in " + str(REGISTRY) if not labs else
                               "several labs are up, give --prefix: " + ", ".join(labs))
            prefix = labs[0]
        if prefix and not prefix.endswith("-"):
            prefix += "-"
        if prefix and not workdir:
            reg = REGISTRY / prefix.rstrip("-")
            workdir = reg.read_text().strip() if reg.exists() else None
        lab = cls(prefix=prefix, workdir=workdir)
        if lab.state_file.exists():
            lab.state = json.loads(lab.state_file.read_text())
            lab.prefix = lab.state.get("prefix", lab.prefix)
            lab.options = Options(**lab.state.get("options", {}))
            lab.mcgwd = lab.state.get("mcgwd", lab.mcgwd)
            lab.mcgwctl = lab.state.get("mcgwctl", lab.mcgwctl)
        return lab

    def __enter__(self) -> "Lab":
        return self

    def __exit__(self, *exc) -> None:
        self.down()

    # ---- up

    def up(self, start_gateways: bool = False, replace: bool = False) -> "Lab":
        """Create the namespaces, links, addresses, routes and sysctls, and
        write the gateways' configs.  On any exception everything made so far
        is removed again (and the exception re-raised)."""
        if os.geteuid() != 0:
            raise LabError("run as root (network namespaces, DPDK)")
        if self.topo is None:
            self.topo = standard_topology(self.options)
        existing = [n for n in list_netns() if n.startswith(self.prefix)]
        if existing:
            if not replace:
                raise LabError(f"namespaces with prefix {self.prefix} exist ({', '.join(existing)}); "
                               f"tear them down first (mcgwlab.py down --prefix {self.prefix})")
            Lab.attach(self.prefix, str(self.dir)).down()
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            (self.dir / "run").mkdir(exist_ok=True)
            REGISTRY.mkdir(parents=True, exist_ok=True)
            (REGISTRY / self.prefix.rstrip("-")).write_text(str(self.dir) + "\n")
            self.state = {"prefix": self.prefix, "dir": str(self.dir), "phase": "building",
                          "options": asdict(self.options), "mcgwd": self.mcgwd, "mcgwctl": self.mcgwctl,
                          "nodes": list(self.topo.nodes), "gateways": {}, "captures": {}, "macs": {}}
            self._save()
            self._build()
            if self.options.kernel_static_neighbors:
                self._kernel_neighbors()
            for iface, mtu in sorted(self.options.rtr_mtu.items()):
                self.set_ip_mtu("rtr", iface, int(mtu))
            if self.options.rtr_drop_icmp:
                self.drop_icmp("rtr")
            self._write_configs()
            (self.dir / "topology.txt").write_text(self.describe())
            # FRR runs before mcgwd, as frr.service does in production: mcgwd
            # renders its config and applies it with frr-reload.py.
            for g in self.frr_gateways():
                self.start_frr(g)
            self.state["phase"] = "up"
            self._save()
            if start_gateways:
                for g in self.topo.gateways:
                    self.start_gateway(g)
            # BIRD after mcgwd: mcgwd taking over gwa's lan0 (XDP) flaps it,
            # and a session dropped by BFD waits (error wait time) to return.
            if self.options.idc_router:
                self.start_bird()
            if start_gateways:
                # With BGP the routes come once the sessions are up: traffic
                # right after up() must find them (see wait_routes).
                for g in self.frr_gateways():
                    self.wait_routes(g)
        except BaseException:
            try:
                self.down()
            except Exception as e:  # keep the original exception
                print(f"mcgwlab: cleanup after a failed up also failed: {e}", file=sys.stderr)
            raise
        return self

    def _build(self) -> None:
        t = self.topo
        for node in t.nodes.values():
            ns = self.ns(node.name)
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            sysctls = {**BASE_SYSCTLS, **node.sysctls}
            sh("ip", "netns", "exec", ns, "sysctl", "-qw", *(f"{k}={v}" for k, v in sysctls.items()))
        for lk in t.links:
            argv = ["ip", "-n", self.ns(lk.a.node), "link", "add", lk.a.name, "mtu", lk.mtu_of(lk.a)]
            if lk.a.mac:
                argv += ["address", lk.a.mac]
            argv += ["type", "veth", "peer", "name", lk.b.name, "netns", self.ns(lk.b.node),
                     "mtu", lk.mtu_of(lk.b)]
            if lk.b.mac:
                argv += ["address", lk.b.mac]
            sh(*argv)
        for i in t.ifaces():
            ns = self.ns(i.node)
            if i.addrgenmode:
                sh("ip", "-n", ns, "link", "set", i.name, "addrgenmode", i.addrgenmode)
            if i.kernel_addrs:
                for a in i.addrs:
                    sh("ip", "-n", ns, "addr", "add", a, "dev", i.name, *(["nodad"] if _is_v6(a) else []))
            if not i.tx_offload:
                sh("ip", "netns", "exec", ns, "ethtool", "-K", i.name, "tx", "off")
            sh("ip", "-n", ns, "link", "set", i.name, "up")
        for node in t.nodes.values():
            ns = self.ns(node.name)
            for br in node.bridges:
                # A plain switch: no STP (the ports forward at once), no
                # multicast snooping (IPv6 ND must always get through).
                sh("ip", "-n", ns, "link", "add", br.name, "type", "bridge", "stp_state", "0",
                   "mcast_snooping", "0")
                for m in br.members:
                    sh("ip", "-n", ns, "link", "set", m, "master", br.name)
                for a in br.addrs:
                    sh("ip", "-n", ns, "addr", "add", a, "dev", br.name, *(["nodad"] if _is_v6(a) else []))
                # What the node itself sends through the bridge to a gateway
                # port carries complete checksums (see standard_topology).
                sh("ip", "netns", "exec", ns, "ethtool", "-K", br.name, "tx", "off")
                sh("ip", "-n", ns, "link", "set", br.name, "up")
            for v in node.vxlans:
                argv = ["ip", "-n", ns, "link", "add", v.name, "address", v.mac, "type", "vxlan",
                        "id", v.vni, "local", v.local, "remote", v.remote, "dstport", v.port,
                        "dev", v.dev, "nolearning"]
                if _is_v6(v.local):
                    argv.append("udp6zerocsumrx")
                sh(*argv)
                for a in v.addrs:
                    sh("ip", "-n", ns, "addr", "add", a, "dev", v.name, *(["nodad"] if _is_v6(a) else []))
                sh("ip", "-n", ns, "link", "set", v.name, "up")
                for addr, mac in v.neighbors:
                    sh("ip", "-n", ns, "neigh", "replace", addr, "lladdr", mac, "dev", v.name,
                       "nud", "permanent")
            for r in node.routes:
                sh("ip", r.family, "-n", ns, "route", "add", r.prefix, "via", r.via,
                   *(["dev", r.dev] if r.dev else []))
        for node in t.nodes:
            links = json.loads(sh("ip", "-j", "-n", self.ns(node), "link", "show").stdout or "[]")
            self.state["macs"][node] = {lk["ifname"]: lk.get("address") for lk in links
                                        if lk["ifname"] != "lo"}

    def _kernel_neighbors(self) -> None:
        """The far end of every gateway port gets a permanent neighbour entry
        for each gateway address on its subnets."""
        t = self.topo
        for g in t.gateways.values():
            for p in g.ports:
                i = t.iface(g.node, p.iface)
                other = t.other_end(g.node, p.iface)
                nets = [ipaddress.ip_interface(a).network for a in other.addrs]
                for a in i.addrs:
                    if any(ipaddress.ip_address(_ip(a)) in n for n in nets):
                        sh("ip", "-n", self.ns(other.node), "neigh", "replace", _ip(a), "lladdr",
                           self.mac(g.node, i.name), "dev", other.name, "nud", "permanent")

    # ---- a narrower path, an ICMP black hole

    def set_ip_mtu(self, node: str, iface: str, mtu: int | None) -> None:
        """The IP MTU of what `node` forwards or sends out of `iface` (None:
        the link's MTU again), for IPv4 through the route MTU of the
        interface's subnets, for IPv6 through net.ipv6.conf.IFACE.mtu.  The
        link MTU stays: the interface still receives full-size frames (see
        Options.rtr_mtu)."""
        link = self.ip(node, "addr", "show", "dev", iface)[0]
        mtu = mtu or link["mtu"]
        if not 1280 <= mtu <= link["mtu"]:
            raise LabError(f"{node}/{iface}: IP MTU {mtu} outside 1280..{link['mtu']} (the link MTU)")
        ns = self.ns(node)
        for a in link.get("addr_info", []):
            if a["family"] != "inet":
                continue
            net = ipaddress.ip_interface(f"{a['local']}/{a['prefixlen']}").network
            sh("ip", "-n", ns, "route", "replace", net, "dev", iface, "proto", "kernel", "scope", "link",
               "src", a["local"], *(["mtu", mtu] if mtu != link["mtu"] else []))
        sh("ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{iface}.mtu={mtu}")
        self.state.setdefault("ip_mtu", {})[f"{node}/{iface}"] = mtu
        self._save()

    NFT_TABLE = "mcgwlab_icmp"

    def drop_icmp(self, node: str = "rtr", on: bool = True) -> None:
        """nft in `node` drops every IPv4 ICMP packet and the ICMPv6 errors it
        forwards or sends (on=False: the table goes again).  Named counters
        `toobig` (frag-needed, Packet Too Big) and `other`."""
        ns = self.ns(node)
        sh("ip", "netns", "exec", ns, "nft", "delete", "table", "inet", self.NFT_TABLE, check=False)
        if not on:
            return
        rules = ("icmp type destination-unreachable icmp code frag-needed counter name toobig drop; "
                 "icmpv6 type packet-too-big counter name toobig drop; "
                 "meta l4proto icmp counter name other drop; "
                 "icmpv6 type { destination-unreachable, time-exceeded, parameter-problem } counter name other drop")
        sh("ip", "netns", "exec", ns, "nft", "-f", "-", input=f"""table inet {self.NFT_TABLE} {{
  counter toobig {{}}
  counter other {{}}
  chain forward {{ type filter hook forward priority filter; policy accept; {rules}; }}
  chain output {{ type filter hook output priority filter; policy accept; {rules}; }}
}}
""")

    def nft_counters(self, node: str = "rtr") -> dict:
        """{counter name: packets} of drop_icmp's table in `node` ({} without it)."""
        r = self.run(node, "nft", "-j", "list", "counters", "table", "inet", self.NFT_TABLE, check=False)
        if r.returncode != 0:
            return {}
        out = {}
        for item in json.loads(r.stdout).get("nftables", []):
            c = item.get("counter")
            if c:
                out[c["name"]] = c["packets"]
        return out

    # ---- gateway configs

    def mac(self, node: str, iface: str) -> str:
        return self.state["macs"][node][iface]

    def gateway_config(self, node: str, fake_macs: bool = False) -> dict:
        """The mcgwd config of gateway `node` as a dict (see to_yaml)."""
        t, o = self.topo, self.options
        g = t.gateways[node]
        drv = "net_af_xdp" if o.driver == "af_xdp" else "net_af_packet"
        ports = []
        for idx, p in enumerate(g.ports):
            i = t.iface(node, p.iface)
            entry = {"name": p.name, "role": p.role, "vdev": f"{drv}{idx},iface={p.iface}",
                     "mtu": t.mtu(i),
                     "addresses": list(i.addrs)}
            if p.role == "lan":
                entry["tenant"] = g.tenant
            if o.static_neighbors:
                other = t.other_end(node, p.iface)
                nets = [ipaddress.ip_interface(a).network for a in i.addrs]
                mac = (_fake_mac(other.node, other.name) if fake_macs
                       else self.mac(other.node, other.name))
                entry["neighbors"] = [{"address": _ip(a), "mac": mac} for a in other.addrs
                                      if any(ipaddress.ip_address(_ip(a)) in n for n in nets)]
            ports.append(entry)
        peers = []
        for p in g.peers:
            lines = []
            for ln in p.lines:
                d = {"name": ln.name, "port": ln.port, "local-vtep": ln.local, "remote-vtep": ln.remote}
                if ln.next_hop:
                    d["next-hop"] = ln.next_hop
                lines.append(d)
            mcgw_peer = any(p.name == other.site for other in t.gateways.values())
            peers.append({"name": p.name, "asn": p.asn, "site": p.site, "encapsulation": p.encap,
                          "lines": lines, "inner-mac": p.inner_mac,
                          "sla": dict(o.sla) if o.sla else None,
                          "encryption": self.peer_encryption(node) if o.encryption and mcgw_peer
                          else None})
        bgp = plan = None
        if o.bgp and g.asn:
            confdir, rundir = self.frr_dirs(node)
            bgp = {"asn": g.asn, "router-id": g.router_id, "timers": {"keepalive": 3, "hold": 9},
                   "bfd": {"enabled": True, "interval-ms": o.bfd_interval_ms, "multiplier": o.bfd_multiplier},
                   "graceful-restart": True, "maximum-prefix": 10000,
                   "neighbors": [dict(n) for n in g.neighbors],
                   "fpm": {"address": "127.0.0.1", "port": 2620, "stale-time": 120},
                   "frr": {"config-dir": str(confdir), "run-dir": str(rundir)}}
        if (o.bgp and t.vpcs) or t.mapped:
            plan = {"clouds": [{"name": "lab", "regions": [{"name": "r1", "vpcs": [
                {"name": v.name, "prefixes": list(v.prefixes), "tenant": v.tenant, "site": v.site}
                for v in t.vpcs]}]}],
                "mapped-ranges": [{"name": m.name, "real": m.real, "mapped": m.mapped, "site": m.site}
                                  for m in t.mapped]}
            plan.update(o.plan_extra or {})
        return {
            "node": {"name": g.name, "site": g.site,
                     "description": f"mcgwlab {self.prefix.rstrip('-')}: gateway {node}"},
            "eal": {"hugepages": False, "memory-mb": o.memory_mb, "mbufs": o.mbufs_for(len(g.ports)),
                    "file-prefix": self.ns(node)},
            "ports": ports,
            "tenants": [{"name": g.tenant, "vni": g.vni,
                         "routes": [{"prefix": pfx, "peer": peer} for pfx, peer in g.routes]
                         + [{"prefix": pfx, "next-hop": nh} for pfx, nh in g.lan_routes]}],
            "peers": peers,
            "bgp": bgp,
            "address-plan": plan,
            "api": {"socket": str(self.dir / f"{node}.sock")},
            "metrics": {"listen": self.metrics_target(node)} if o.monitor else None,
            "path-mtu": dict(o.path_mtu) if o.path_mtu else None,
            "flow-audit": dict(o.flow_audit) if o.flow_audit else None,
            "encryption": self.tls_section(node) if o.encryption and "static-keys" not in o.encryption
            else None,
            "vrrp": [{k: v for k, v in grp.items() if v is not None} for grp in g.vrrp],
            "logging": {"level": o.log_level},
        }

    def peer_encryption(self, node: str) -> dict:
        """The `encryption` section of gateway `node`'s mcgw peers:
        Options.encryption, with "static-keys": "auto" replaced by the key
        file make_static_keys wrote for the gateway."""
        enc = dict(self.options.encryption)
        if enc.get("static-keys") == "auto":
            enc["static-keys"] = str(self.dir / "tls" / f"{node}.keys")
        return enc

    def make_static_keys(self) -> None:
        """Static ESP keys for gateways A and B (Options.encryption
        "static-keys": "auto"): per line an SA each way, random SPIs and keys,
        DIR/tls/gwa.keys and gwb.keys with the directions swapped, mode 0600."""
        d = self.dir / "tls"
        d.mkdir(mode=0o700, exist_ok=True)
        rows = {"gwa": [], "gwb": []}
        for p in self.topo.gateways["gwa"].peers:
            if p.name != self.topo.gateways["gwb"].site:
                continue
            for ln in p.lines:
                ab, ba = (256 + secrets.randbelow(1 << 30) for _ in range(2))
                kab, kba = secrets.token_hex(36), secrets.token_hex(36)
                rows["gwa"] += [f"{ln.name} out {ab:#x} 0x{kab}", f"{ln.name} in {ba:#x} 0x{kba}"]
                rows["gwb"] += [f"{ln.name} out {ba:#x} 0x{kba}", f"{ln.name} in {ab:#x} 0x{kab}"]
        for node, lines in rows.items():
            path = d / f"{node}.keys"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write("# mcgwlab static ESP keys\n" + "\n".join(lines) + "\n")

    def tls_section(self, node: str) -> dict:
        """The top-level `encryption` section of gateway `node`: the files
        make_tls wrote."""
        d = self.dir / "tls"
        return {"ca": str(d / f"{node}-ca.pem"), "certificate": str(d / f"{node}.pem"),
                "private-key": str(d / f"{node}.key")}

    def make_tls(self, node: str | None = None, ca: str = "lab-ca") -> None:
        """Certificates for the TLS key agreement in DIR/tls: a CA `ca`
        (made once) and, for `node` (None: every gateway), a key (mode 0600)
        and a certificate signed by that CA whose DNS name is the gateway's
        site (the peer name the other gateways give it); node-ca.pem is the
        CA the gateway trusts.  A gateway given another CA than its peers
        cannot agree keys with them."""
        d = self.dir / "tls"
        d.mkdir(mode=0o700, exist_ok=True)
        ca_key, ca_pem = d / f"{ca}.key", d / f"{ca}.pem"
        if not ca_pem.exists():
            sh("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
               "-nodes", "-keyout", ca_key, "-out", ca_pem, "-days", "30", "-subj", f"/CN={ca}",
               check=True)
        for n in [node] if node else list(self.topo.gateways):
            name = self.topo.gateways[n].site
            key, csr, pem = d / f"{n}.key", d / f"{n}.csr", d / f"{n}.pem"
            ext = d / f"{n}.ext"
            ext.write_text(f"subjectAltName=DNS:{name}\nextendedKeyUsage=serverAuth,clientAuth\n")
            sh("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
               "-keyout", key, "-out", csr, "-subj", f"/CN={name}", check=True)
            sh("openssl", "x509", "-req", "-in", csr, "-CA", ca_pem, "-CAkey", ca_key,
               "-CAcreateserial", "-out", pem, "-days", "30", "-extfile", ext, check=True)
            os.chmod(key, 0o600)
            shutil.copyfile(ca_pem, d / f"{n}-ca.pem")

    def metrics_target(self, node: str) -> str:
        """Where gateway `node`'s /metrics listens (Options.monitor), as
        Prometheus's targets name it."""
        return f"{_monitor_addr(list(self.topo.gateways).index(node), 2)}:{METRICS_PORT}"

    def render(self, node: str, fake_macs: bool = False) -> str:
        head = (f"# Generated by tests/lab/mcgwlab.py for lab {self.prefix} (gateway {node}).\n"
                f"# Edit and apply with: mcgwctl -s {self.dir / (node + '.sock')} reload\n")
        return head + to_yaml(self.gateway_config(node, fake_macs))

    def _write_configs(self) -> None:
        o = self.options
        if o.encryption and "static-keys" not in o.encryption and not (self.dir / "tls").exists():
            self.make_tls()
        if o.encryption and o.encryption.get("static-keys") == "auto" and \
                not (self.dir / "tls" / "gwa.keys").exists():
            self.make_static_keys()
        for node in self.topo.gateways:
            path = self.dir / f"{node}.yaml"
            path.write_text(self.render(node))
            if self.mcgwctl:
                r = sh(self.mcgwctl, "check-config", path, check=False)
                if r.returncode != 0:
                    raise LabError(f"generated config {path} is invalid:\n{r.stdout}{r.stderr}")
            self.state["gateways"][node] = {
                "config": str(path), "socket": str(self.dir / f"{node}.sock"),
                "log": str(self.dir / f"{node}.log"), "pidfile": str(self.dir / "run" / f"{node}.pid")}

    def describe(self) -> str:
        t = self.topo
        out = [f"lab {self.prefix}  dir {self.dir}",
               f"options: {json.dumps(asdict(self.options))}", "",
               f"{'namespace':<28}{'iface':<8}{'mac':<19}{'mtu':<6}addresses"]
        for i in t.ifaces():
            mtu = t.mtu(i)
            mac = self.state.get("macs", {}).get(i.node, {}).get(i.name, "?")
            note = "" if i.kernel_addrs else "  (in mcgwd only)"
            out.append(f"{self.ns(i.node):<28}{i.name:<8}{mac:<19}{mtu:<6}{' '.join(i.addrs)}{note}")
        for n in t.nodes.values():
            for v in n.vxlans:
                out.append(f"{self.ns(n.name):<28}{v.name:<8}{v.mac:<19}{'':<6}{' '.join(v.addrs)}"
                           f"  (vxlan id {v.vni} local {v.local} remote {v.remote} dstport {v.port})")
        out.append("")
        for g in t.gateways.values():
            for p in g.peers:
                for ln in p.lines:
                    out.append(f"{g.node}: peer {p.name} ({p.encap}) {ln.name} port {ln.port} "
                               f"{ln.local} -> {ln.remote} next-hop {ln.next_hop}")
        return "\n".join(out) + "\n"

    # ---- processes

    def _spawn(self, name: str, node: str, argv: list, log: Path) -> int:
        ns = self.ns(node)
        if ns not in list_netns():
            raise LabError(f"namespace {ns} does not exist (is the lab up?)")
        with open(log, "ab") as f:
            p = subprocess.Popen(["ip", "netns", "exec", ns, *map(str, argv)], stdin=subprocess.DEVNULL,
                                 stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        self._children[p.pid] = p
        (self.dir / "run").mkdir(parents=True, exist_ok=True)
        (self.dir / "run" / f"{name}.pid").write_text(f"{p.pid}\n")
        return p.pid

    def _alive(self, pid: int) -> bool:
        if pid in self._children:
            return self._children[pid].poll() is None
        return _pid_alive(pid)

    def _ours(self, pid: int) -> bool:
        """Only processes this lab started, or that run in its namespaces."""
        if pid in self._children:
            return True
        ns = sh("ip", "netns", "identify", pid, check=False).stdout.strip()
        return ns.startswith(self.prefix)

    def _terminate(self, pids: list[int], timeout: float) -> None:
        pids = [p for p in pids if self._alive(p)]
        for p in pids:
            try:
                os.kill(p, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(self._alive(p) for p in pids):
            time.sleep(0.05)
        for p in pids:
            if self._alive(p):
                comm = Path(f"/proc/{p}/comm").read_text().strip() if Path(f"/proc/{p}/comm").exists() else "?"
                print(f"mcgwlab: pid {p} ({comm}) ignored SIGTERM for {timeout} s; SIGKILL", file=sys.stderr)
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(self._alive(p) for p in pids):
            time.sleep(0.05)

    def _stop_process(self, name: str, pid: int, timeout: float) -> int | None:
        """SIGTERM (then SIGKILL) one process the lab started; its exit code if it is our child."""
        pidfile = self.dir / "run" / f"{name}.pid"
        if self._alive(pid) and self._ours(pid):
            self._terminate([pid], timeout)
        pidfile.unlink(missing_ok=True)
        p = self._children.pop(pid, None)
        return p.wait() if p else None

    def _pidfile_pid(self, name: str) -> int | None:
        try:
            return int((self.dir / "run" / f"{name}.pid").read_text().split()[0])
        except (FileNotFoundError, ValueError, IndexError):
            return None

    # ---- mcgwd

    def gateways(self) -> list[str]:
        return list(self.state.get("gateways", {}))

    def start_gateway(self, node: str, wait: bool = True, timeout: float = 60) -> int:
        """Start mcgwd in the gateway's namespace; wait until `mcgwctl status`
        answers (healthy or degraded).  Returns its pid."""
        g = self.state["gateways"][node]
        pid = self._pidfile_pid(node)
        if pid and self._alive(pid):
            raise LabError(f"mcgwd of {node} runs already (pid {pid})")
        if not self.mcgwd:
            raise LabError("mcgwd not found: build it (cmake --build build --target mcgwd mcgwctl) "
                           "or set MCGW_BUILD_DIR")
        Path(g["log"]).write_text("")
        # The last good copy of the config stays in the lab's directory.
        state = str(Path(g["config"]).parent / f"{node}-state")
        pid = self._spawn(node, node, [self.mcgwd, "--config", g["config"], "--state-dir", state],
                          Path(g["log"]))
        if wait:
            self.wait_gateway(node, timeout)
        return pid

    def wait_gateway(self, node: str, timeout: float = 60) -> dict:
        g = self.state["gateways"][node]
        pid = self._pidfile_pid(node)
        deadline = time.monotonic() + timeout
        while True:
            if pid is None or not self._alive(pid):
                raise LabError(f"mcgwd of {node} is not running; its log {g['log']}:\n{_tail(Path(g['log']))}")
            st = self.status(node)
            if st is not None:
                return st
            if time.monotonic() > deadline:
                raise LabError(f"mcgwd of {node} did not answer on {g['socket']} within {timeout} s; "
                               f"log:\n{_tail(Path(g['log']))}")
            time.sleep(0.2)

    def ctl(self, node: str, *args, check: bool = False) -> subprocess.CompletedProcess:
        """Run mcgwctl against the gateway's socket (mcgwctl needs no namespace)."""
        return sh(self.mcgwctl, "--socket", self.state["gateways"][node]["socket"], *args, check=check)

    def status(self, node: str) -> dict | None:
        """`mcgwctl status --json` of the gateway, or None when it does not answer."""
        if not Path(self.state["gateways"][node]["socket"]).exists():
            return None
        r = self.ctl(node, "status", "--json")
        if r.returncode not in (0, 1):
            return None
        try:
            return json.loads(r.stdout)
        except json.JSONDecodeError:
            return None

    def stop_gateway(self, node: str, timeout: float = 15) -> int | None:
        """SIGTERM mcgwd (SIGKILL after `timeout`); its exit code if this process started it."""
        pid = self._pidfile_pid(node)
        if pid is None:
            return None
        return self._stop_process(node, pid, timeout)

    # ---- captures and commands

    def capture(self, node: str, iface: str, name: str | None = None, bpf_filter: list[str] | None = None,
                timeout: float = 10, snaplen: int = 0) -> Capture:
        """Start tcpdump on `iface` in `node`'s namespace; returns once it listens.
        `snaplen`: bytes kept of each packet (0: all).
        On af_xdp gateway ports packets bypass the kernel: capture on the other end."""
        name = name or f"cap-{node}-{iface}"
        path = self.dir / f"{name}.pcap"
        log = self.dir / f"{name}.log"
        log.write_text("")
        pid = self._spawn(name, node, ["tcpdump", "-n", "-U", "--immediate-mode", "-Z", "root", "-i", iface,
                                       "-s", snaplen, "-w", path, *(bpf_filter or [])], log)
        self.state.setdefault("captures", {})[name] = {"node": node, "iface": iface, "pcap": str(path)}
        self._save()
        deadline = time.monotonic() + timeout
        while "listening on" not in log.read_text(errors="replace"):
            if not self._alive(pid):
                raise LabError(f"tcpdump on {node}/{iface} exited: {log.read_text()}")
            if time.monotonic() > deadline:
                self._stop_process(name, pid, 2)
                raise LabError(f"tcpdump on {node}/{iface} did not start: {log.read_text()}")
            time.sleep(0.05)
        return Capture(self, name, node, iface, path, pid)

    def start(self, name: str, node: str, *argv, listen: int | None = None, timeout: float = 10) -> int:
        """Start a long-running command in `node`'s namespace (its output in
        <dir>/<name>.log); `down()` stops it.  `listen`: wait until a TCP
        socket listens on that port in the namespace.  Returns its pid."""
        log = self.dir / f"{name}.log"
        log.write_text("")
        pid = self._spawn(name, node, list(argv), log)
        deadline = time.monotonic() + timeout
        while listen and not self.run(node, "ss", "-Hltn", f"sport = :{listen}", check=False).stdout.strip():
            if not self._alive(pid):
                raise LabError(f"{name} in {node} exited: {log.read_text()}")
            if time.monotonic() > deadline:
                self._stop_process(name, pid, 2)
                raise LabError(f"{name} in {node} does not listen on port {listen}: {log.read_text()}")
            time.sleep(0.05)
        return pid

    def stop(self, name: str, timeout: float = 5) -> int | None:
        """Stop a process start() started (SIGTERM, then SIGKILL); its exit code."""
        pid = self._pidfile_pid(name)
        return self._stop_process(name, pid, timeout) if pid is not None else None

    def stop_capture(self, name: str, settle: float = 0.2) -> Path:
        pid = self._pidfile_pid(name)
        if pid is not None:
            time.sleep(settle)
            self._stop_process(name, pid, 5)
        return Path(self.state.get("captures", {}).get(name, {}).get("pcap", self.dir / f"{name}.pcap"))

    def run(self, node: str, *cmd, check: bool = True, timeout: float = 60,
            input: str | None = None) -> subprocess.CompletedProcess:
        """Run a command in `node`'s namespace (with `input` on its stdin) and wait for it."""
        return sh("ip", "netns", "exec", self.ns(node), *cmd, check=check, timeout=timeout, input=input)

    def ping(self, node: str, dst: str, src: str | None = None, count: int = 1, timeout: float = 1.0,
             size: int = 56, df: bool = False, tos: int = 0) -> int:
        """ICMP echo from `node` to `dst` (from address `src`, with TOS/traffic
        class `tos`); the number of replies."""
        return len(self.ping_rtts(node, dst, src, count, timeout, size, df, tos))

    def ping_rtts(self, node: str, dst: str, src: str | None = None, count: int = 1, timeout: float = 1.0,
                  size: int = 56, df: bool = False, tos: int = 0) -> list[float]:
        """Like ping(): the round-trip times (ms) of the replies received."""
        return self.ping_stats(node, dst, src, count, timeout, size, df, tos)[0]

    def ping_stats(self, node: str, dst: str, src: str | None = None, count: int = 1, timeout: float = 1.0,
                   size: int = 56, df: bool = False, tos: int = 0) -> tuple[list[float], int]:
        """Like ping(): the round-trip times (ms) of the replies, and the
        number of duplicate replies (a request answered more than once)."""
        argv = ["/usr/bin/python3", Path(__file__).resolve(), "icmp-echo", dst, "-c", count,
                "-W", timeout, "-s", size, "--tos", tos, *(["--from", src] if src else []),
                *(["--df"] if df else [])]
        r = self.run(node, *argv, check=False, timeout=count * (timeout + 1) + 10)
        if r.returncode not in (0, 1):
            raise LabError(f"icmp-echo in {node}: {r.stderr.strip()}")
        f = r.stdout.split()
        return [float(x) for x in f[3:]], int(f[2])

    def address(self, node: str, v6: bool = False) -> str:
        """The first global address of the family in `node`'s namespace (a host's eth0 address)."""
        for link in self.ip(node, "addr", "show"):
            for a in link.get("addr_info", []):
                if a.get("scope") == "global" and (a["family"] == "inet6") == v6:
                    return a["local"]
        raise LabError(f"{node} has no global IPv{6 if v6 else 4} address")

    def iperf(self, sender: str, receiver: str, addr: str | None = None, v6: bool = False,
              nbytes: int | None = 10 << 20, seconds: float | None = None, interval: float | None = None,
              bitrate: str | None = None, timeout: float = 60, connect: str | None = None) -> "Transfer":
        """A TCP transfer with iperf3 from `sender` to `receiver`: the iperf3
        server runs in `sender` (on its address `addr`, default its first
        global address of the family) and the client in `receiver` with
        --reverse, so the receiving end is the one that decides when `nbytes`
        have arrived (an iperf3 receiver in server mode stops counting when
        the sender says it is done, with data still in flight: esnet/iperf
        issue 382).  `seconds` instead of `nbytes`: a timed transfer;
        `interval`: seconds per entry of .intervals; `bitrate`: pace the
        sender (iperf3 -b, e.g. "100M"); `connect`: the address the receiver
        connects to when it is not `addr` (the sender's mapped address,
        Options.overlap).
        Raises LabError when iperf3 fails (the result still in .error)."""
        addr = addr or self.address(sender, v6)
        self._iperf_port = getattr(self, "_iperf_port", 5200) + 1
        port = self._iperf_port
        name = f"iperf3-{sender}-{port}"
        self.start(name, sender, "iperf3", "-s", "-1", "-p", port, "-B", addr, listen=port)
        try:
            argv = ["iperf3", "-c", connect or addr, "-p", port, "--reverse", "--json", "--connect-timeout", 3000]
            argv += ["-t", seconds] if seconds else ["-n", nbytes]
            if interval:
                argv += ["-i", interval]
            if bitrate:
                argv += ["-b", bitrate]
            r = self.run(receiver, *argv, check=False,
                         timeout=timeout if not seconds else seconds + timeout)
        finally:
            self.stop(name, 2)
        try:
            doc = json.loads(r.stdout)
        except json.JSONDecodeError:
            doc = {"error": (r.stdout + r.stderr).strip()[-500:] or f"exit {r.returncode}"}
        t = Transfer(sender, receiver, connect or addr, doc, r.returncode)
        if t.error:
            raise LabError(f"iperf3 {sender} -> {receiver} ({connect or addr}): {t.error}")
        return t

    def ip(self, node: str, *args) -> list | dict:
        """`ip -j -n NS ARGS...`, parsed."""
        out = sh("ip", "-j", "-n", self.ns(node), *args).stdout
        return json.loads(out) if out.strip() else []


    # ---- FRR in the gateways' namespaces (Options.bgp)

    FRR_BIN = Path("/usr/lib/frr")
    FRR_DAEMONS = ("zebra", "bgpd", "bfdd", "staticd")

    def frr_gateways(self) -> list[str]:
        """The gateways that run FRR: all of them with Options.bgp."""
        gws = self.topo.gateways if self.topo else self.state.get("gateways", {})
        return list(gws) if self.options.bgp else []

    def frr_dirs(self, node: str) -> tuple[Path, Path]:
        """FRR's config directory (daemons, vtysh.conf, the frr.conf mcgwd
        writes, the daemons' logs) and run directory (vty sockets, zserv.api,
        bfdd.sock, pidfiles) of a gateway: `bgp.frr` in its config."""
        confdir = self.dir / f"{node}-frr"
        return confdir, confdir / "run"

    def _write_frr_files(self, node: str) -> None:
        confdir, rundir = self.frr_dirs(node)
        rundir.mkdir(parents=True, exist_ok=True)
        # What Debian's frr.service would read from /etc/frr/daemons; the lab
        # starts the daemons itself (start_frr) with these options.
        opts = {d: " ".join(map(str, self._frr_argv(node, d)[1:])) for d in self.FRR_DAEMONS}
        (confdir / "daemons").write_text(
            f"# FRR daemons of lab gateway {node} (tests/lab/mcgwlab.py starts them with these options)\n"
            + "".join(f"{d}=yes\n" for d in self.FRR_DAEMONS if d != "zebra")
            + "vtysh_enable=yes\n"
            + "".join(f'{d}_options="{opts[d]}"\n' for d in self.FRR_DAEMONS))
        # frr-reload.py refuses to work without the integrated config.
        (confdir / "vtysh.conf").write_text("service integrated-vtysh-config\n")
        (confdir / "empty.conf").write_text("")
        # The daemons drop root for user frr (as in production): they need to
        # write here, and to reach the directory through its parents (a test's
        # mkdtemp directory is 0700).
        for path in [confdir, rundir, *confdir.iterdir()]:
            shutil.chown(path, "frr", "frr")
        for parent in confdir.parents:
            mode = parent.stat().st_mode
            if not mode & 0o001:
                parent.chmod(mode | 0o001)

    def _frr_argv(self, node: str, daemon: str) -> list:
        confdir, rundir = self.frr_dirs(node)
        argv = [self.FRR_BIN / daemon, "--vty_socket", rundir, "-z", rundir / "zserv.api",
                "-i", rundir / f"{daemon}.pid", "-f", confdir / "empty.conf",
                "--log", f"file:{confdir / (daemon + '.log')}", "-P", "0"]
        if daemon == "zebra":
            argv += ["-M", "dplane_fpm_nl"]
        if daemon == "bfdd":
            argv += ["--bfdctl", rundir / "bfdd.sock"]
        return argv

    def frr_pids(self, node: str) -> dict[str, int]:
        """{daemon: pid} of the FRR daemons of `node` that run."""
        out = {}
        for d in self.FRR_DAEMONS:
            pid = self._pidfile_pid(f"{node}-{d}")
            if pid and self._alive(pid):
                out[d] = pid
        return out

    def start_frr(self, node: str, daemons=None, timeout: float = 20) -> None:
        """Start FRR's daemons (default all: zebra with dplane_fpm_nl, bgpd,
        bfdd, staticd) in the gateway's namespace, in the foreground (the
        lab's pidfiles, `down()` stops them), each with its own vty socket in
        the run directory and an empty config.  When mcgwd has written
        frr.conf already, the restarted daemons get it with `vtysh -b` (as
        frr.service's boot does)."""
        daemons = list(daemons or self.FRR_DAEMONS)
        confdir, rundir = self.frr_dirs(node)
        if not (confdir / "daemons").exists():
            self._write_frr_files(node)
        running = self.frr_pids(node)
        # zebra first: the others connect to its zserv.api.
        for d in sorted(daemons, key=lambda d: d != "zebra"):
            if d in running:
                raise LabError(f"{node}: FRR {d} runs already (pid {running[d]})")
            if d == "zebra":
                (rundir / "zserv.api").unlink(missing_ok=True)
            (rundir / f"{d}.vty").unlink(missing_ok=True)
            out = confdir / f"{d}.out"
            pid = self._spawn(f"{node}-{d}", node, self._frr_argv(node, d), out)
            deadline = time.monotonic() + timeout
            want = [rundir / f"{d}.vty"] + ([rundir / "zserv.api"] if d == "zebra" else [])
            while not all(w.exists() for w in want):
                if not self._alive(pid):
                    raise LabError(f"{node}: FRR {d} exited: {_tail(out)}\n{_tail(confdir / (d + '.log'))}")
                if time.monotonic() > deadline:
                    raise LabError(f"{node}: FRR {d} made no {want} within {timeout} s: "
                                   f"{_tail(confdir / (d + '.log'))}")
                time.sleep(0.05)
        # One daemon per vtysh: with several -d vtysh 8.4 configures only one.
        for d in daemons if (confdir / "frr.conf").exists() else []:
            r = self.run(node, "vtysh", "--vty_socket", rundir, "--config_dir", confdir, "-b", "-d", d,
                         check=False)
            if r.returncode != 0:
                raise LabError(f"{node}: vtysh -b -d {d} (frr.conf): {r.stdout}{r.stderr}")

    def stop_frr(self, node: str, daemons=None, kill: bool = False, timeout: float = 10) -> None:
        """Stop FRR's daemons of the gateway (default all): SIGTERM, or SIGKILL
        with kill=True (a crash: nothing cleaned up, zebra's routes stay)."""
        for d in daemons or self.FRR_DAEMONS:
            pid = self._pidfile_pid(f"{node}-{d}")
            if pid is None or not self._alive(pid):
                continue
            if kill:
                os.kill(pid, signal.SIGKILL)
                deadline = time.monotonic() + 5
                while self._alive(pid) and time.monotonic() < deadline:
                    time.sleep(0.01)
                (self.dir / "run" / f"{node}-{d}.pid").unlink(missing_ok=True)
                self._children.pop(pid, None)
            else:
                self._stop_process(f"{node}-{d}", pid, timeout)

    def vtysh(self, node: str, command: str, check: bool = True):
        """A vtysh command against the gateway's FRR; parsed when it is a
        `... json` command (None when FRR printed nothing), else the text."""
        confdir, rundir = self.frr_dirs(node)
        r = self.run(node, "vtysh", "--vty_socket", rundir, "--config_dir", confdir, "-c", command,
                     check=check, timeout=30)
        if command.rstrip().endswith("json"):
            return json.loads(r.stdout) if r.stdout.strip() else None
        return r.stdout

    def bgp_states(self, node: str) -> dict[str, str]:
        """{neighbour address: BGP state} from FRR's `show bgp neighbors json`."""
        d = self.vtysh(node, "show bgp neighbors json", check=False) or {}
        return {addr: n.get("bgpState", "?") for addr, n in d.items() if isinstance(n, dict)}

    def wait_bgp(self, node: str, timeout: float = 60, count: int | None = None) -> dict[str, str]:
        """Wait until FRR of `node` has BGP neighbours (`count` of them when
        given) and every one is Established; returns their states."""
        deadline = time.monotonic() + timeout
        while True:
            st = self.bgp_states(node)
            if st and all(v == "Established" for v in st.values()) and (count is None or len(st) == count):
                return st
            if time.monotonic() > deadline:
                raise LabError(f"{node}: BGP sessions not all Established after {timeout} s: {st}")
            time.sleep(0.25)

    def wait_routes(self, node: str, timeout: float = 60) -> None:
        """Wait until the gateway's BGP sessions are Established and mcgwd
        has every VPC range of the other sites that BGP carries in its fast
        path (`mcgwctl show routes --source frr --json`)."""
        self.wait_bgp(node, timeout)
        want = set(self.bgp_prefixes(node))
        deadline = time.monotonic() + timeout
        while True:
            have = {r.get("prefix") for r in self.frr_routes(node)}
            if want <= have:
                return
            if time.monotonic() > deadline:
                raise LabError(f"{node}: mcgwd has not all BGP routes after {timeout} s: missing "
                               f"{sorted(want - have)}")
            time.sleep(0.25)

    def bgp_prefixes(self, node: str) -> list[str]:
        """The VPC ranges of the A-B peer that `node` should learn by BGP."""
        t = self.topo or standard_topology(self.options)
        g = t.gateways[node]
        v6 = self.options.underlay == "ipv6"
        mine = g.site
        if self.options.ha:
            # No plan: each gateway announces its LAN subnet (IPv4 sessions).
            return ["10.1.0.0/24"] if node == "gwb" else ["10.2.0.0/24"]
        peers = {p.name for p in g.peers if p.asn}
        # A legacy VPC's prefix behind a mapped range of its site is announced
        # as the mapped range (below), never as itself.
        behind = {(m.real, m.site) for m in t.mapped}
        return [pfx for v in t.vpcs if v.site in peers and v.site != mine
                for pfx in v.prefixes
                if (v6 or not _is_v6(pfx)) and (pfx, v.site) not in behind] + \
            [m.mapped for m in t.mapped if m.site in peers and m.site != mine and (v6 or not _is_v6(m.mapped))]

    def frr_routes(self, node: str) -> list[dict]:
        """mcgwd's fast-path routes from FRR (`mcgwctl show routes --source frr --json`)."""
        r = self.ctl(node, "show", "routes", "--source", "frr", "--json")
        if r.returncode != 0:
            raise LabError(f"{node}: mcgwctl show routes --source frr --json: exit {r.returncode}: "
                           f"{r.stderr or r.stdout}")
        doc = json.loads(r.stdout)
        return doc.get("routes", []) if isinstance(doc, dict) else doc

    # ---- the IDC router (Options.idc_router): BIRD 2 in namespace idc

    def bird_paths(self) -> dict[str, Path]:
        return {"conf": self.dir / "idc-bird.conf", "sock": self.dir / "run" / "idc-bird.ctl",
                "pid": self.dir / "run" / "idc-bird.bird-pid", "log": self.dir / "idc-bird.log"}

    def bird_config(self) -> str:
        gwa = _ip(self.topo.iface("gwa", "lan0").addrs[0])
        i = self.options.bfd_interval_ms
        return f"""# BIRD 2 as the IDC router behind gateway A (tests/lab/mcgwlab.py, Options.idc_router)
log "{self.bird_paths()['log']}" all;
router id {IDC_ROUTER};
protocol device {{ scan time 10; }}
# The IDC's ranges, announced to gateway A: {IDC_RANGE} is in the address plan
# (VPC idc-a of site A), {IDC_FOREIGN_RANGE} is in no plan (gateway A refuses it).
# The hosts live in the connected {IDC_RANGE[:-4]}0/24 (idchost).
protocol static idc {{
  ipv4;
  route {IDC_RANGE} blackhole;
  route {IDC_FOREIGN_RANGE} blackhole;
}}
# What gateway A announces goes into the IDC router's kernel, so that the
# IDC's hosts are answered through gateway A.
protocol kernel {{
  ipv4 {{ import none; export where source = RTS_BGP; }};
}}
protocol bfd {{
  interface "br0" {{ min rx interval {i} ms; min tx interval {i} ms; multiplier {self.options.bfd_multiplier}; }};
}}
protocol bgp gwa {{
  local {IDC_ROUTER} as {IDC_ASN};
  neighbor {gwa} as {GWA_ASN};
  hold time 9;
  keepalive time 3;
  connect retry time 3;
  error wait time 1, 10;
  bfd on;
  ipv4 {{ import all; export where proto = "idc"; }};
}}
"""

    def start_bird(self, timeout: float = 20) -> int:
        """BIRD in namespace idc (foreground; `down()` stops it)."""
        p = self.bird_paths()
        p["conf"].write_text(self.bird_config())
        p["log"].write_text("")
        out = self.dir / "idc-bird.out"
        pid = self._spawn("idc-bird", "idc", ["bird", "-f", "-c", p["conf"], "-s", p["sock"], "-P", p["pid"]],
                          out)
        deadline = time.monotonic() + timeout
        while self.run("idc", "birdc", "-s", p["sock"], "show", "status", check=False).returncode != 0:
            if not self._alive(pid):
                raise LabError(f"BIRD exited: {_tail(out)}\n{_tail(p['log'])}")
            if time.monotonic() > deadline:
                raise LabError(f"BIRD does not answer on {p['sock']}: {_tail(p['log'])}")
            time.sleep(0.1)
        return pid

    def birdc(self, *command: str) -> str:
        """A birdc command against the IDC router's BIRD; its output."""
        return self.run("idc", "birdc", "-s", self.bird_paths()["sock"], *command).stdout

    # ---- a line cut silently: nft drops everything, the links stay up

    NFT_CUT_TABLE = "mcgwlab_cut"

    def cut(self, node: str, ifaces, on: bool = True) -> None:
        """nft (netdev ingress) in `node` drops every frame that arrives on
        each of `ifaces` (ARP included) while their links stay up; on=False
        removes the rule.  The router's a1 and b1: line 1 silently dead both
        ways (what the gateways send into it never leaves the router)."""
        ns = self.ns(node)
        sh("ip", "netns", "exec", ns, "nft", "delete", "table", "netdev", self.NFT_CUT_TABLE, check=False)
        if not on:
            return
        chains = "".join(f'  chain in_{i} {{ type filter hook ingress device "{i}" priority -500; '
                         f"policy accept; counter drop; }}\n" for i in ifaces)
        sh("ip", "netns", "exec", ns, "nft", "-f", "-", input=f"table netdev {self.NFT_CUT_TABLE} {{\n{chains}}}\n")

    # ---- a steady UDP probe stream (loss windows)

    def probe(self, sender: str, receiver: str, dst: str | None = None, port: int = 9999,
              rate: int = 1000, seconds: float = 10.0) -> "Probe":
        """Start a UDP probe stream of `rate` packets/s for `seconds` from
        `sender` to `receiver` (address `dst`, default its first IPv4
        address); each datagram carries a sequence number, the receiver
        records when each arrived.  Probe.wait() returns the result."""
        dst = dst or self.address(receiver, _is_v6(dst or ""))
        self._probe_n = getattr(self, "_probe_n", 0) + 1
        name = f"probe{self._probe_n}"
        out = self.dir / f"{name}.arrivals"
        me = Path(__file__).resolve()
        self.start(f"{name}-recv", receiver, "/usr/bin/python3", me, "probe-recv", "--port", port,
                   "--out", out, *(["-6"] if _is_v6(dst) else []))
        log = self.dir / f"{name}-recv.log"
        deadline = time.monotonic() + 10
        while "ready" not in log.read_text():
            if time.monotonic() > deadline:
                raise LabError(f"probe receiver in {receiver} did not start: {log.read_text()}")
            time.sleep(0.02)
        pid = self.start(f"{name}-send", sender, "/usr/bin/python3", me, "probe-send", dst, "--port", port,
                         "--rate", rate, "--seconds", seconds)
        return Probe(self, name, pid, rate, seconds, out)

    # ---- down

    def down(self, remove_dir: bool = False) -> None:
        """Stop the lab's processes (pidfiles first, gracefully; then anything
        else left in its namespaces), delete the namespaces, and check that no
        namespace with the prefix is left."""
        namespaces = [n for n in list_netns() if n.startswith(self.prefix)]
        rundir = self.dir / "run"
        # FRR first, zebra last: a zebra stopped together with its clients
        # and mcgwd (its FPM server) sits out SIGTERM's 15 s.
        for node in self.state.get("gateways", {}):
            if self.frr_pids(node):
                self.stop_frr(node, ["bgpd", "bfdd", "staticd", "zebra"], timeout=5)
        pids = []
        for pf in sorted(rundir.glob("*.pid")) if rundir.is_dir() else []:
            pid = self._pidfile_pid(pf.stem)
            if pid and self._alive(pid) and self._ours(pid):
                pids.append(pid)
        self._terminate(pids, timeout=15)
        stray = []
        for ns in namespaces:
            r = sh("ip", "netns", "pids", ns, check=False)
            stray += [int(p) for p in r.stdout.split() if p.isdigit()]
        if stray:
            self._terminate(stray, timeout=5)
        for p in list(self._children.values()):
            if p.poll() is not None:
                self._children.pop(p.pid, None)
        errors = []
        for ns in namespaces:
            r = sh("ip", "netns", "del", ns, check=False)
            if r.returncode != 0:
                errors.append(f"ip netns del {ns}: {r.stderr.strip()}")
        left = [n for n in list_netns() if n.startswith(self.prefix)]
        if rundir.is_dir():
            for pf in rundir.glob("*.pid"):
                pf.unlink(missing_ok=True)
        (REGISTRY / self.prefix.rstrip("-")).unlink(missing_ok=True)
        if self.state:
            self.state["phase"] = "down"
            if self.dir.is_dir():
                self._save()
        if remove_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
        if left or errors:
            raise LabError("teardown left namespaces behind: " + ", ".join(left) + "; " + "; ".join(errors))


_HEURISTICS: list[str] = []


def _payload_heuristics() -> list[str]:
    """The protocols with heuristic dissectors of TCP and UDP payloads in tshark."""
    if not _HEURISTICS:
        out = sh("tshark", "-G", "heuristic-decodes").stdout
        _HEURISTICS.extend(sorted({f[1] for f in (line.split("\t") for line in out.splitlines())
                                   if len(f) >= 2 and f[0] in ("tcp", "udp")}))
    return _HEURISTICS


def registered() -> list[str]:
    """Prefixes of the labs that are up (registered in REGISTRY)."""
    if not REGISTRY.is_dir():
        return []
    return sorted(p.name + "-" for p in REGISTRY.iterdir() if p.is_file())


def _binary(path: Path, name: str) -> str | None:
    if path.is_file() and os.access(path, os.X_OK):
        return str(path)
    return shutil.which(name)


def _fake_mac(node: str, iface: str) -> str:
    h = zlib.crc32(f"{node}/{iface}".encode()) & 0xFFFFFF
    return f"02:00:5e:{h >> 16:02x}:{(h >> 8) & 0xFF:02x}:{h & 0xFF:02x}"


# --------------------------------------------------------------------------
# CLI


def _options_from(args) -> Options:
    return Options(encap=args.encap, underlay=args.underlay, driver=args.driver,
                   static_neighbors=args.static_neighbors,
                   kernel_static_neighbors=args.kernel_static_neighbors,
                   kernel_addrs={"auto": None, "yes": True, "no": False}[args.kernel_addrs],
                   vni=args.vni, log_level=args.log_level, host_mtu=args.host_mtu,
                   rtr_mtu=dict(_kv(x, int) for x in args.rtr_mtu), rtr_drop_icmp=args.drop_icmp,
                   path_mtu=dict(_kv(x, _yaml_value) for x in args.path_mtu) or None,
                   bgp=args.bgp, idc_router=args.idc_router, overlap=args.overlap,
                   ha=args.ha, vrrp_interval_ms=args.vrrp_interval_ms, vrrp_unicast=args.vrrp_unicast,
                   vrrp_ipv6=args.vrrp_ipv6, vrrp_track=args.vrrp_track)


def _kv(text: str, conv) -> tuple[str, object]:
    k, sep, v = text.partition("=")
    if not sep or not k:
        raise LabError(f"{text!r}: want KEY=VALUE")
    return k, conv(v)


def _yaml_value(v: str):
    if v.lower() in ("true", "false"):
        return v.lower() == "true"
    try:
        return int(v)
    except ValueError:
        return v


def _print_status(lab: Lab, as_json: bool) -> int:
    nss = [n for n in list_netns() if n.startswith(lab.prefix)]
    result = {"prefix": lab.prefix, "dir": str(lab.dir), "phase": lab.state.get("phase"),
              "namespaces": nss, "gateways": {}}
    rc = 0
    for node in lab.gateways():
        pid = lab._pidfile_pid(node)
        running = bool(pid and lab._alive(pid))
        st = lab.status(node) if running else None
        result["gateways"][node] = {"pid": pid if running else None, "status": st,
                                    **lab.state["gateways"][node]}
        if st is None or st.get("health", {}).get("state") != "healthy":
            rc = 1
    if as_json:
        print(json.dumps(result, indent=2))
        return rc
    print(f"lab {lab.prefix} ({lab.state.get('phase', '?')}), dir {lab.dir}")
    print(f"namespaces: {' '.join(nss) if nss else '(none)'}")
    for node, g in result["gateways"].items():
        if g["status"] is None:
            print(f"{node}: mcgwd {'running, not answering' if g['pid'] else 'not running'}"
                  f" (config {g['config']}, log {g['log']})")
            continue
        st = g["status"]
        fp = st.get("fast_path", {})
        print(f"{node}: mcgwd pid {g['pid']} {st['health']['state']}"
              f"{': ' + '; '.join(st['health']['reasons']) if st['health'].get('reasons') else ''}"
              f"  ports {' '.join(p['name'] + '=' + ('up' if p['link']['up'] else 'down') for p in st['ports'])}"
              f"  tunnels {fp.get('tunnels')} lines {fp.get('lines_usable')}/{fp.get('lines')}"
              f"  socket {g['socket']}")
    return rc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="mcgwlab.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prefix", help="namespace prefix (env MCGWLAB_PREFIX; default mcgwlab-<id>- on up)")
    ap.add_argument("--dir", help="lab directory (env MCGWLAB_DIR; default /tmp/<prefix>)")
    sub = ap.add_subparsers(dest="cmd", required=True)

    def topo_opts(p):
        p.add_argument("--encap", choices=["vxlan", "geneve"], default="vxlan")
        p.add_argument("--underlay", choices=["ipv4", "ipv6"], default="ipv4")
        p.add_argument("--driver", choices=["af_xdp", "af_packet"], default="af_xdp")
        p.add_argument("--static-neighbors", dest="static_neighbors", action="store_true",
                       help="the far ends' MACs as ports[].neighbors in the gateway configs "
                            "(default: the kernel resolves them)")
        p.add_argument("--no-static-neighbors", dest="static_neighbors", action="store_false",
                       help=argparse.SUPPRESS)  # the default; kept for old command lines
        p.add_argument("--host-mtu", type=int, default=Options.host_mtu,
                       help="MTU of the hosts' eth0 (default %(default)s)")
        p.add_argument("--rtr-mtu", action="append", default=[], metavar="IF=MTU",
                       help="IP MTU of what the router sends out of IF (a1 a2 b1 b2 c1), e.g. b1=1400; "
                            "repeatable (the link MTU stays: see Options.rtr_mtu)")
        p.add_argument("--drop-icmp", action="store_true",
                       help="the router drops IPv4 ICMP and ICMPv6 errors (nft): a PMTUD black hole")
        p.add_argument("--path-mtu", action="append", default=[], metavar="KEY=VALUE",
                       help="a key of the gateways' path-mtu config section, e.g. probe-interval=2; repeatable")
        p.add_argument("--kernel-static-neighbors", action="store_true",
                       help="permanent ARP/ND entries for the gateways in hosts and router")
        p.add_argument("--kernel-addrs", choices=["auto", "yes", "no"], default="auto",
                       help="gateway addresses on the kernel interfaces too (auto: af_xdp only)")
        p.add_argument("--vni", type=int, default=1000)
        p.add_argument("--bgp", action=argparse.BooleanOptionalAction, default=True,
                       help="FRR in the gateways, routes A<->B by BGP (default); --no-bgp: static routes only")
        p.add_argument("--idc-router", action="store_true",
                       help="an IDC router (BIRD 2, namespace idc, with idchost) on gateway A's LAN")
        p.add_argument("--overlap", action="store_true",
                       help="sites A and B both use 10.1.0.0/16 and fd00:a::/56, each reached at its own "
                            "mapped ranges (10.201.0.0/16 + fd00:201::/56, 10.202.0.0/16 + fd00:202::/56); "
                            "router lanb in front of hostb")
        p.add_argument("--ha", action="store_true",
                       help="site A gets a second gateway gwa2 and a LAN switch (sw); VRRP between gwa and gwa2 "
                            "(virtual 10.1.0.1, fd00:a::1)")
        p.add_argument("--vrrp-interval-ms", type=int, default=Options.vrrp_interval_ms,
                       help="VRRP advertisement interval with --ha (default %(default)s)")
        p.add_argument("--vrrp-unicast", action="store_true", help="VRRP by unicast between gwa and gwa2 (--ha)")
        p.add_argument("--no-vrrp-ipv6", dest="vrrp_ipv6", action="store_false",
                       help="no IPv6 VRRP group (--ha)")
        p.add_argument("--no-vrrp-track", dest="vrrp_track", action="store_false",
                       help="the VRRP groups do not track peer site-b and fpm (--ha)")
        p.add_argument("--log-level", default="info")
        p.add_argument("--build-dir", help="where mcgwd/mcgwctl are (env MCGW_BUILD_DIR)")

    p = sub.add_parser("up", help="build the standard topology and start both gateways")
    topo_opts(p)
    p.add_argument("--no-gateways", action="store_true", help="do not start mcgwd")
    p.add_argument("--replace", action="store_true", help="tear down a lab with the same prefix first")
    p = sub.add_parser("down", help="stop everything and delete the namespaces")
    p.add_argument("--purge", action="store_true", help="also delete the lab directory")
    p = sub.add_parser("status", help="namespaces and gateway health")
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("exec", help="run a command in a node's namespace: exec NODE -- CMD...")
    p.add_argument("node")
    p.add_argument("command", nargs=argparse.REMAINDER)
    p = sub.add_parser("gw", help="start|stop|status a gateway's mcgwd")
    p.add_argument("action", choices=["start", "stop", "status"])
    p.add_argument("node")
    p = sub.add_parser("capture", help="capture start NODE IFACE [--name N] [-- FILTER] | capture stop NAME")
    p.add_argument("action", choices=["start", "stop"])
    p.add_argument("args", nargs=argparse.REMAINDER)
    p = sub.add_parser("render", help="print the generated config of a gateway (fake MACs; no root)")
    topo_opts(p)
    p.add_argument("node", choices=["gwa", "gwb", "gwa2"])
    p = sub.add_parser("ping", help="ICMP echo from a node (no ping binary needed): ping NODE DST")
    p.add_argument("node")
    p.add_argument("dst")
    p.add_argument("--from", dest="src")
    p.add_argument("-c", "--count", type=int, default=3)
    p.add_argument("-W", "--timeout", type=float, default=1.0)
    p.add_argument("-s", "--size", type=int, default=56)
    p.add_argument("--df", action="store_true", help="IPv4: set Don't Fragment")
    p.add_argument("-Q", "--tos", type=lambda v: int(v, 0), default=0,
                   help="IPv4 TOS / IPv6 traffic class, e.g. 0xb8 (DSCP 46)")
    p = sub.add_parser("iperf", help="TCP transfer with iperf3: iperf SENDER RECEIVER [-n BYTES | -t SECONDS]")
    p.add_argument("sender")
    p.add_argument("receiver")
    p.add_argument("-6", dest="v6", action="store_true", help="over IPv6 (default IPv4)")
    p.add_argument("--addr", help="the sender's address to use (default: its first global one)")
    p.add_argument("-n", "--bytes", default="10M", help="bytes to transfer, K/M/G suffixes (default 10M)")
    p.add_argument("-t", "--time", type=float, help="transfer for this many seconds instead")
    p.add_argument("--json", action="store_true", help="print iperf3's JSON document")
    p = sub.add_parser("vtysh", help="a vtysh command against a gateway's FRR: vtysh NODE 'show bgp summary'")
    p.add_argument("node")
    p.add_argument("command", nargs="+")
    p = sub.add_parser("wait-bgp", help="wait until every gateway's BGP sessions are Established")
    p.add_argument("--timeout", type=float, default=60)
    p = sub.add_parser("birdc", help="a birdc command against the IDC router's BIRD: birdc show route")
    p.add_argument("command", nargs="+")
    p = sub.add_parser("frr", help="start|stop a gateway's FRR daemons: frr stop gwa [zebra bgpd]")
    p.add_argument("action", choices=["start", "stop", "kill"])
    p.add_argument("node")
    p.add_argument("daemons", nargs="*")
    p = sub.add_parser("probe-send", help=argparse.SUPPRESS)  # runs inside a namespace
    p.add_argument("dst")
    p.add_argument("--port", type=int, default=9999)
    p.add_argument("--rate", type=int, default=1000)
    p.add_argument("--seconds", type=float, default=10)
    p = sub.add_parser("probe-recv", help=argparse.SUPPRESS)  # runs inside a namespace
    p.add_argument("--port", type=int, default=9999)
    p.add_argument("--out", required=True)
    p.add_argument("-6", dest="v6", action="store_true")
    p = sub.add_parser("icmp-echo", help=argparse.SUPPRESS)  # runs inside a namespace
    p.add_argument("dst")
    p.add_argument("--from", dest="src")
    p.add_argument("-c", "--count", type=int, default=1)
    p.add_argument("-W", "--timeout", type=float, default=1.0)
    p.add_argument("-s", "--size", type=int, default=56)
    p.add_argument("--df", action="store_true")
    p.add_argument("--tos", type=lambda v: int(v, 0), default=0)
    p = sub.add_parser("table", help="print the standard topology's address table")
    args = ap.parse_args(argv)

    # SIGTERM/SIGHUP during `up` unwind like Ctrl-C, so the cleanup runs.
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, lambda n, f: sys.exit(128 + n))

    try:
        if args.cmd == "icmp-echo":
            sent, rtts, dups = icmp_echo(args.dst, args.src, args.count, args.timeout, size=args.size,
                                         df=args.df, tos=args.tos)
            print(len(rtts), sent, dups, " ".join(f"{r:.3f}" for r in rtts))
            return 0 if rtts else 1
        if args.cmd == "probe-send":
            n, w0, errors = probe_send(args.dst, args.port, args.rate, args.seconds)
            print(f"sent {n} start {w0:.6f} errors {errors}", flush=True)
            return 0
        if args.cmd == "probe-recv":
            probe_recv(args.port, Path(args.out), args.v6)
            return 0
        if args.cmd == "table":
            print(ADDRESS_TABLE, end="")
            return 0
        if args.cmd == "render":
            lab = Lab(prefix=args.prefix or "mcgwlab-render-", workdir=args.dir or "/tmp/mcgwlab-render",
                      options=_options_from(args), build_dir=args.build_dir)
            lab.topo = standard_topology(lab.options)
            print(lab.render(args.node, fake_macs=True), end="")
            return 0
        if args.cmd == "up":
            lab = Lab(prefix=args.prefix, workdir=args.dir, options=_options_from(args),
                      build_dir=args.build_dir)
            lab.up(start_gateways=not args.no_gateways, replace=args.replace)
            print(lab.describe())
            _print_status(lab, False)
            print(f"\nconfigs: {' '.join(g['config'] for g in lab.state['gateways'].values())}")
            print(f"run in a node:  {sys.argv[0]} --prefix {lab.prefix} exec hosta -- ip route")
            print(f"ping:           {sys.argv[0]} --prefix {lab.prefix} ping hosta 10.2.0.10")
            print(f"tear down:      {sys.argv[0]} --prefix {lab.prefix} down")
            return 0
        lab = Lab.attach(args.prefix, args.dir)
        if args.cmd == "down":
            lab.down(remove_dir=args.purge)
            print(f"mcgwlab: lab {lab.prefix} is down"
                  + ("" if args.purge else f" (logs and captures kept in {lab.dir})"))
            return 0
        if args.cmd == "status":
            return _print_status(lab, args.json)
        if args.cmd == "vtysh":
            out = lab.vtysh(args.node, " ".join(args.command))
            print(json.dumps(out, indent=2) if not isinstance(out, str) else out, end="" if isinstance(out, str) else "\n")
            return 0
        if args.cmd == "birdc":
            print(lab.birdc(*args.command), end="")
            return 0
        if args.cmd == "wait-bgp":
            if not lab.options.bgp:
                print("mcgwlab: this lab runs without BGP (--no-bgp)")
                return 0
            t0 = time.monotonic()
            for g in lab.frr_gateways():
                st = lab.wait_bgp(g, timeout=max(1.0, args.timeout - (time.monotonic() - t0)))
                print(f"{g}: BGP sessions Established: {' '.join(sorted(st))}")
            return 0
        if args.cmd == "frr":
            if args.action == "start":
                lab.start_frr(args.node, args.daemons or None)
            else:
                lab.stop_frr(args.node, args.daemons or None, kill=args.action == "kill")
            print(json.dumps(lab.frr_pids(args.node)))
            return 0
        if args.cmd == "exec":
            cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
            if not cmd:
                ap.error("exec NODE -- CMD...")
            if lab.ns(args.node) not in list_netns():
                raise LabError(f"no namespace {lab.ns(args.node)}")
            os.execvp("ip", ["ip", "netns", "exec", lab.ns(args.node), *cmd])
        if args.cmd == "ping":
            rtts, dups = lab.ping_stats(args.node, args.dst, args.src, args.count, args.timeout, args.size,
                                        args.df, args.tos)
            avg = f", rtt avg {sum(rtts) / len(rtts):.2f} ms" if rtts else ""
            dup = f", {dups} DUPLICATES" if dups else ""
            print(f"{args.node} -> {args.dst}: {args.count} sent, {len(rtts)} received{dup}{avg}")
            return 0 if len(rtts) == args.count and not dups else 1
        if args.cmd == "iperf":
            units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
            b = args.bytes.upper()
            nbytes = int(float(b[:-1]) * units[b[-1]]) if b[-1:] in units else int(b)
            try:
                t = lab.iperf(args.sender, args.receiver, addr=args.addr, v6=args.v6,
                              nbytes=None if args.time else nbytes, seconds=args.time)
            except LabError as e:
                print(f"{args.sender} -> {args.receiver}: TCP transfer FAILED: {e}")
                return 1
            print(json.dumps(t.doc, indent=2) if args.json else f"{t} (iperf3)")
            return 0
        if args.cmd == "gw":
            if args.action == "start":
                lab.start_gateway(args.node)
                print(json.dumps(lab.status(args.node)["health"]))
            elif args.action == "stop":
                lab.stop_gateway(args.node)
            else:
                st = lab.status(args.node)
                print(json.dumps(st, indent=2) if st else "not answering")
                return 0 if st else 2
            return 0
        if args.cmd == "capture":
            a = args.args
            if args.action == "stop":
                if len(a) != 1:
                    ap.error("capture stop NAME")
                print(lab.stop_capture(a[0]))
                return 0
            name = None
            if "--name" in a:
                k = a.index("--name")
                name, a = a[k + 1], a[:k] + a[k + 2:]
            filt = a[a.index("--") + 1:] if "--" in a else []
            a = a[:a.index("--")] if "--" in a else a
            if len(a) != 2:
                ap.error("capture start NODE IFACE [--name N] [-- FILTER...]")
            cap = lab.capture(a[0], a[1], name=name, bpf_filter=filt)
            print(f"{cap.name} {cap.path}")
            return 0
    except LabError as e:
        print(f"mcgwlab: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
