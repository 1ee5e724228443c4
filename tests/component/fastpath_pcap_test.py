#!/usr/bin/python3
"""Component test of the fast path on real DPDK virtual devices (issue 3, item 6).

mcgwd runs with net_pcap ports: each port reads its input packets from an
rx_pcap file and writes what the fast path sends into a tx_pcap file.  For
every case the test writes the input pcaps, starts mcgwd (EAL --no-huge), waits
until the counters show that every input packet was processed, reads the
counters, stops mcgwd with SIGTERM (the tx pcaps are complete once it has
exited) and compares every output packet field by field with the packet it
must be.  Every output pcap must also decode in tshark without a malformed
packet or an expert error (checksum verification on).

Run by ctest (component.fastpath_pcap):
    /usr/bin/python3 fastpath_pcap_test.py --mcgwd PATH --mcgwctl PATH [-v] [--keep]
--keep leaves each case's directory (config, pcaps, mcgwd log) in /tmp.

Needs scapy (python3-scapy) and tshark.
"""

import argparse
import itertools
import json
import logging
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)

from scapy.all import (  # noqa: E402
    ARP,
    ICMP,
    IP,
    UDP,
    Ether,
    IPv6,
    TCP,
    IPv6ExtHdrFragment,
    ICMPv6PacketTooBig,
    ICMPv6TimeExceeded,
    defragment,
    NoPayload,
    Raw,
    checksum,
    in4_chksum,
    in6_chksum,
    load_contrib,
)

load_contrib("geneve")  # scapy dissects UDP 6081 as Geneve, for readable diffs

MCGWD = None
MCGWCTL = None
KEEP = False
TSHARK = shutil.which("tshark") or "/usr/bin/tshark"

# --- The topology every case runs on -----------------------------------------
#
#   host 10.1.0.10 / fd00:1::10 ── lan0 [mcgwd] wan0 ── 192.0.2.2 / 2001:db8:0:2::2 (underlay router)
#                                              ├─── 192.0.2.3   (second router, ECMP line l3)
#                                              └─── 192.0.2.12  (gn4's VTEP, on-link)
#                                         wan1 ── 198.51.100.2  (router of the second WAN port)

# net_pcap ports get 02:70:63:61:70:NN ("\x02pcap" + index) in the order the
# config lists them; checked against `mcgwctl status` in every case.
LAN_MAC = "02:70:63:61:70:00"
WAN0_MAC = "02:70:63:61:70:01"
WAN1_MAC = "02:70:63:61:70:02"
PORT_MACS = {"lan0": LAN_MAC, "wan0": WAN0_MAC, "wan1": WAN1_MAC}
PORT_ORDER = ["lan0", "wan0", "wan1"]

HOST_MAC = "02:00:00:00:0a:01"  # the LAN host (static neighbour, v4 and v6)
HOST4, HOST6 = "10.1.0.10", "fd00:1::10"
LAN4, LAN6 = "10.1.0.1", "fd00:1::1"  # the gateway's LAN addresses
WAN4, WAN6, WAN1_4 = "192.0.2.1", "2001:db8:0:2::1", "198.51.100.1"
NH4, NH4_MAC = "192.0.2.2", "02:00:00:00:0b:01"
NH4B, NH4B_MAC = "192.0.2.3", "02:00:00:00:0b:03"
NH6, NH6_MAC = "2001:db8:0:2::2", "02:00:00:00:0b:06"
GN4_VTEP, GN4_VTEP_MAC = "192.0.2.12", "02:00:00:00:0b:12"
NHW1, NHW1_MAC = "198.51.100.2", "02:00:00:00:0c:01"
OTHER_MAC = "02:00:00:00:99:99"

VNI = 70001  # more than 16 bits: all three VNI bytes matter
VXLAN_PORT, GENEVE_PORT = 4789, 6081
DEFAULT_INNER_MAC = "02:00:00:00:00:01"
# mcgwd builds its ICMP errors with TTL 64 and then routes them through the
# same forwarding step as transit packets, which takes one off: 63 leaves.
# Both are accepted.
ICMP_ERROR_TTLS = (64,)  # originated, not forwarded: never decremented


class Line:
    def __init__(self, name, port, local, remote, nh, nh_mac, outer_ttl=None):
        self.name, self.port, self.local, self.remote = name, port, local, remote
        self.nh, self.nh_mac, self.outer_ttl = nh, nh_mac, outer_ttl

    @property
    def ipv6(self):
        return ":" in self.remote

    @property
    def ttl(self):
        return self.outer_ttl or 64

    def config(self):
        c = {"name": self.name, "port": self.port, "local-vtep": self.local,
             "remote-vtep": self.remote}
        if self.nh != self.remote:
            c["next-hop"] = self.nh
        if self.outer_ttl is not None:
            c["outer-ttl"] = self.outer_ttl
        return c


class Peer:
    def __init__(self, name, encap, lines, prefix4, prefix6=None, inner_mac=None,
                 line_mode=None):
        self.name, self.encap, self.lines = name, encap, lines
        self.prefix4, self.prefix6 = prefix4, prefix6
        self.inner_mac, self.line_mode = inner_mac, line_mode

    @property
    def dst_mac(self):
        return self.inner_mac or DEFAULT_INNER_MAC

    def host(self, v6, n=5):
        """An address behind this peer."""
        if v6:
            return self.prefix6.split("/")[0] + str(n)
        a = self.prefix4.split("/")[0].split(".")
        return "%s.%s.0.%d" % (a[0], a[1], n)

    def config(self):
        c = {"name": self.name, "encapsulation": self.encap,
             "lines": [l.config() for l in self.lines]}
        if self.inner_mac:
            c["inner-mac"] = self.inner_mac
        if self.line_mode:
            c["line-mode"] = self.line_mode
        return c


# One peer per cell of {VXLAN, Geneve} x {IPv4, IPv6 underlay}; ECMP and
# active-backup peers with several lines.
PEERS = {
    "vx4": Peer("vx4", "vxlan",  # inner-mac left to its default
                [Line("l1", "wan0", WAN4, "203.0.113.11", NH4, NH4_MAC)],
                "10.11.0.0/16", "fd00:11::/48"),
    "vx6": Peer("vx6", "vxlan",
                [Line("l1", "wan0", WAN6, "2001:db8:ff::11", NH6, NH6_MAC)],
                "10.12.0.0/16", "fd00:12::/48", inner_mac="02:00:00:00:00:16"),
    "gn4": Peer("gn4", "geneve",  # remote VTEP on-link: next hop is the VTEP
                [Line("l1", "wan0", WAN4, GN4_VTEP, GN4_VTEP, GN4_VTEP_MAC)],
                "10.13.0.0/16", "fd00:13::/48", inner_mac="02:00:00:00:00:24"),
    "gn6": Peer("gn6", "geneve",
                [Line("l1", "wan0", WAN6, "2001:db8:ff::12", NH6, NH6_MAC, outer_ttl=100)],
                "10.14.0.0/16", "fd00:14::/48", inner_mac="02:00:00:00:00:26"),
    "ec": Peer("ec", "vxlan",
               [Line("l1", "wan0", WAN4, "203.0.113.21", NH4, NH4_MAC),
                Line("l2", "wan1", WAN1_4, "203.0.113.22", NHW1, NHW1_MAC),
                Line("l3", "wan0", WAN4, "203.0.113.23", NH4B, NH4B_MAC)],
               "10.21.0.0/16", line_mode="ecmp"),
    "ab": Peer("ab", "geneve",
               [Line("l1", "wan0", WAN4, "203.0.113.31", NH4, NH4_MAC),
                Line("l2", "wan1", WAN1_4, "203.0.113.32", NHW1, NHW1_MAC)],
               "10.31.0.0/16", line_mode="active-backup"),
}
MATRIX_PEERS = ["vx4", "vx6", "gn4", "gn6"]


def make_config(case_dir, prefix):
    routes = []
    for p in PEERS.values():
        routes.append({"prefix": p.prefix4, "peer": p.name})
        if p.prefix6:
            routes.append({"prefix": p.prefix6, "peer": p.name})

    def pcap_port(i, name):
        return ("net_pcap%d,rx_pcap=%s,tx_pcap=%s" %
                (i, os.path.join(case_dir, name + "_in.pcap"),
                 os.path.join(case_dir, name + "_out.pcap")))

    return {
        "node": {"name": "gw-a", "site": "a"},
        "eal": {"hugepages": False, "memory-mb": 512, "mbufs": 2047, "file-prefix": prefix},
        "api": {"socket": os.path.join(case_dir, "mcgw.sock")},
        "logging": {"level": "info"},
        "ports": [
            {"name": "lan0", "role": "lan", "vdev": pcap_port(0, "lan0"),
             "addresses": [LAN4 + "/24", LAN6 + "/64"],
             "neighbors": [{"address": HOST4, "mac": HOST_MAC},
                           {"address": HOST6, "mac": HOST_MAC}]},
            {"name": "wan0", "role": "wan", "vdev": pcap_port(1, "wan0"),
             "addresses": [WAN4 + "/24", WAN6 + "/64"],
             "neighbors": [{"address": NH4, "mac": NH4_MAC},
                           {"address": NH4B, "mac": NH4B_MAC},
                           {"address": GN4_VTEP, "mac": GN4_VTEP_MAC},
                           {"address": NH6, "mac": NH6_MAC}]},
            {"name": "wan1", "role": "wan", "vdev": pcap_port(2, "wan1"),
             "addresses": [WAN1_4 + "/24"],
             "neighbors": [{"address": NHW1, "mac": NHW1_MAC}]},
        ],
        "tenants": [{"name": "blue", "vni": VNI, "routes": routes}],
        "peers": [p.config() for p in PEERS.values()],
    }


# --- pcap files ----------------------------------------------------------------

def write_pcap(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, frame in enumerate(frames):
            b = bytes(frame)
            f.write(struct.pack("<IIII", 1700000000 + i // 1000, (i % 1000) * 1000, len(b), len(b)))
            f.write(b)


def read_pcap(path):
    """The frames of a pcap file (micro- or nanosecond, either byte order)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        raise AssertionError("%s: not a pcap file (%d bytes)" % (path, len(data)))
    for endian in "<>":
        if struct.unpack(endian + "I", data[:4])[0] in (0xA1B2C3D4, 0xA1B23C4D):
            break
    else:
        raise AssertionError("%s: bad pcap magic %s" % (path, data[:4].hex()))
    linktype = struct.unpack(endian + "I", data[20:24])[0]
    if linktype != 1:
        raise AssertionError("%s: link type %d, expected Ethernet (1)" % (path, linktype))
    frames, off = [], 24
    while off < len(data):
        if off + 16 > len(data):
            raise AssertionError("%s: truncated record header at %d" % (path, off))
        _, _, incl, orig = struct.unpack(endian + "IIII", data[off:off + 16])
        if incl != orig:
            raise AssertionError("%s: frame at %d captured %d of %d bytes" % (path, off, incl, orig))
        frames.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    return frames


# --- Packets --------------------------------------------------------------------

def marker(tag):
    """A payload that names its packet, found again in the output."""
    b = ("mcgw-fastpath:%s:" % tag).encode()
    return b + b"." * (48 - len(b)) if len(b) < 48 else b


def find(frames, tag):
    m = marker(tag)
    return [f for f in frames if m in f]


def lan_packet(dst, tag, v6=None, ttl=64, tos=0, sport=40000, dport=9000, src=None,
               eth_dst=LAN_MAC, payload=None):
    """A UDP packet from the LAN host, as it arrives on lan0."""
    v6 = ":" in dst if v6 is None else v6
    if v6:
        ip = IPv6(src=src or HOST6, dst=dst, hlim=ttl, tc=tos, fl=0x12345)
    else:
        ip = IP(src=src or HOST4, dst=dst, ttl=ttl, tos=tos, id=0x4242, flags="DF")
    return Ether(dst=eth_dst, src=HOST_MAC) / ip / UDP(sport=sport, dport=dport) / Raw(
        payload if payload is not None else marker(tag))


def inner_packet(src, tag, ttl=64, tos=0, dst=None, sport=41000, dport=9001):
    """An inner frame as a peer sends it towards the LAN host."""
    v6 = ":" in src
    if v6:
        ip = IPv6(src=src, dst=dst or HOST6, hlim=ttl, tc=tos, fl=0xABCDE)
    else:
        ip = IP(src=src, dst=dst or HOST4, ttl=ttl, tos=tos, id=0x1717)
    return (Ether(dst=DEFAULT_INNER_MAC, src="02:00:00:00:0d:0d") / ip /
            UDP(sport=sport, dport=dport) / Raw(marker(tag)))


def geneve_header(vni, proto=0x6558, options=b"", oam=False, critical=False, version=0):
    assert len(options) % 4 == 0
    return bytes([(version << 6) | (len(options) // 4),
                  (0x80 if oam else 0) | (0x40 if critical else 0)]) + \
        struct.pack("!H", proto) + struct.pack("!I", vni << 8) + options


def geneve_option(opt_class, opt_type, data):
    assert len(data) % 4 == 0
    return struct.pack("!HBB", opt_class, opt_type, len(data) // 4) + data


def vxlan_header(vni, flags=0x08):
    return bytes([flags, 0, 0, 0]) + struct.pack("!I", vni << 8)


def tunnel_packet(line, encap, inner, vni=VNI, tos=0, tunnel_header=None, src=None,
                  frag=None, eth_dst=None):
    """A tunnel packet from the peer's VTEP on `line`, as it arrives on the line's port.
    frag: None, or "mf" for a first fragment (more fragments, offset 0)."""
    hdr = tunnel_header if tunnel_header is not None else (
        vxlan_header(vni) if encap == "vxlan" else geneve_header(vni))
    dport = VXLAN_PORT if encap == "vxlan" else GENEVE_PORT
    src = src or line.remote
    if line.ipv6:
        ip = IPv6(src=src, dst=line.local, tc=tos, hlim=64, fl=0x11111)
        if frag:
            ip = ip / IPv6ExtHdrFragment(offset=0, m=1, id=0x5151)
    else:
        ip = IP(src=src, dst=line.local, tos=tos, ttl=64, id=0x2323,
                flags="MF" if frag else "DF")
    udp = UDP(sport=50001, dport=dport)
    if not line.ipv6:
        udp.chksum = 0
    return (Ether(dst=eth_dst or PORT_MACS[line.port], src=line.nh_mac) / ip / udp /
            Raw(hdr + bytes(inner)))


def tos_of(frame):
    p = Ether(bytes(frame))
    return p[IP].tos if IP in p else p[IPv6].tc


def field_list(pkt):
    """(layer:field, value) of every field of every layer, for a readable diff."""
    out, layer, i = [], pkt, 0
    while layer is not None and not isinstance(layer, NoPayload):
        for f in layer.fields_desc:
            v = layer.getfieldval(f.name)
            try:
                shown = f.i2repr(layer, v)
            except Exception:  # noqa: BLE001
                shown = repr(v)
            out.append(("%d:%s.%s" % (i, layer.name, f.name), shown))
        layer, i = layer.payload, i + 1
    return out


def packet_diff(expected, actual):
    """Field-by-field differences between two frames (bytes or scapy)."""
    eb, ab = bytes(expected), bytes(actual)
    if eb == ab:
        return []
    e, a = dict(field_list(Ether(eb))), dict(field_list(Ether(ab)))
    diffs = []
    for k in list(dict.fromkeys(list(e) + list(a))):
        if e.get(k) != a.get(k):
            diffs.append("%s: expected %s, got %s" % (k, e.get(k, "<absent>"), a.get(k, "<absent>")))
    if not diffs:
        first = next((i for i in range(min(len(eb), len(ab))) if eb[i] != ab[i]),
                     min(len(eb), len(ab)))
        diffs.append("bytes differ from offset %d (lengths %d/%d)" % (first, len(eb), len(ab)))
    return diffs


def ipv4_checksum_ok(ip_header_bytes):
    return checksum(ip_header_bytes) == 0


def udp6_checksum_ok(ip6, udp_bytes):
    """Recomputes the UDP checksum over IPv6 with scapy."""
    declared = struct.unpack("!H", udp_bytes[6:8])[0]
    zeroed = udp_bytes[:6] + b"\0\0" + udp_bytes[8:]
    c = in6_chksum(socket.IPPROTO_UDP, ip6, zeroed)
    return declared != 0 and declared == (c or 0xFFFF), declared, (c or 0xFFFF)


def expected_routed(frame, dst_mac, src_mac, ecn=None):
    """`frame` forwarded by a router: MACs rewritten, TTL/hop limit - 1, and
    optionally a new ECN field; the IPv4 checksum recomputed."""
    p = Ether(bytes(frame))
    p.dst, p.src = dst_mac, src_mac
    if IP in p:
        p[IP].ttl -= 1
        if ecn is not None:
            p[IP].tos = (p[IP].tos & 0xFC) | ecn
        del p[IP].chksum
    else:
        p[IPv6].hlim -= 1
        if ecn is not None:
            p[IPv6].tc = (p[IPv6].tc & 0xFC) | ecn
    return Ether(bytes(p))


class Outer:
    """An encapsulated frame taken apart by hand (independently of scapy's
    VXLAN/Geneve layers)."""

    def __init__(self, raw):
        self.raw = raw
        self.eth = Ether(raw)
        self.v6 = IPv6 in self.eth and self.eth.type == 0x86DD
        if self.v6:
            self.ip = self.eth[IPv6]
            ip_len = 40
        else:
            self.ip = self.eth[IP]
            ip_len = self.ip.ihl * 4
        self.ip_bytes = raw[14:14 + ip_len]
        self.udp_bytes = raw[14 + ip_len:]
        (self.sport, self.dport, self.udp_len, self.udp_csum) = struct.unpack(
            "!HHHH", self.udp_bytes[:8])
        self.tunnel = self.udp_bytes[8:]
        if self.dport == VXLAN_PORT:
            self.tunnel_len = 8
        else:
            self.tunnel_len = 8 + (self.tunnel[0] & 0x3F) * 4
        self.inner = self.tunnel[self.tunnel_len:]


# --- The daemon -------------------------------------------------------------------

_case_serial = itertools.count()


class Run:
    """The result of one mcgwd run: output frames per port, and the API's answers."""

    def __init__(self, case_dir, outputs, counters, tunnels, status):
        self.dir, self.out, self.counters = case_dir, outputs, counters
        self.tunnels, self.status = tunnels, status

    def drops(self):
        return {k: v for k, v in self.counters["drops"].items() if v}

    def tunnel(self, peer):
        for t in self.tunnels["tunnels"]:
            if t["peer"] == peer:
                return t
        raise AssertionError("no tunnel to peer %s in show tunnels" % peer)


class FastPathTestCase(unittest.TestCase):
    maxDiff = None

    def ctl(self, sock, *args, check=True):
        r = subprocess.run([MCGWCTL, "-s", sock] + list(args), capture_output=True, text=True,
                           timeout=10)
        if check and r.returncode not in (0, 1):
            raise AssertionError("mcgwctl %s: exit %d: %s%s" % (" ".join(args), r.returncode,
                                                                r.stdout, r.stderr))
        return r

    def ctl_json(self, sock, *args):
        r = self.ctl(sock, *args)
        try:
            return json.loads(r.stdout)
        except ValueError as e:
            raise AssertionError("mcgwctl %s: not JSON (%s): %r" % (" ".join(args), e, r.stdout))

    def run_gateway(self, name, inputs, edit_config=None):
        """Runs mcgwd over `inputs` ({port: [frames]}) and returns a Run once
        every input frame has been processed and mcgwd has exited.
        edit_config: changes the case's config (a dict) before it is written."""
        serial = next(_case_serial)
        case_dir = tempfile.mkdtemp(prefix="mcgw-fp-%s-" % name)
        if not KEEP:
            self.addCleanup(shutil.rmtree, case_dir, True)
        prefix = "mcgwfp%d_%d" % (os.getpid(), serial)
        # The EAL leaves an (empty) runtime directory named by the prefix.
        runtime = os.environ.get("XDG_RUNTIME_DIR", "/tmp") if os.getuid() else "/var/run"
        self.addCleanup(shutil.rmtree, os.path.join(runtime, "dpdk", prefix), True)
        config = make_config(case_dir, prefix)
        if edit_config:
            edit_config(config)
        cfg_path = os.path.join(case_dir, "gw.yaml")
        with open(cfg_path, "w") as f:
            json.dump(config, f, indent=2)  # JSON is YAML (flow style)
        total = 0
        for port in PORT_ORDER:
            frames = inputs.get(port, [])
            total += len(frames)
            write_pcap(os.path.join(case_dir, port + "_in.pcap"), frames)
        sock = config["api"]["socket"]
        log_path = os.path.join(case_dir, "mcgwd.log")
        log = open(log_path, "wb")
        proc = subprocess.Popen([MCGWD, "-c", cfg_path, "--state-dir", os.path.join(case_dir, "state")],
                                stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()

        def log_tail():
            try:
                with open(log_path, "rb") as f:
                    return f.read()[-4000:].decode(errors="replace")
            except OSError:
                return ""

        def kill():
            if proc.poll() is None:
                proc.kill()  # by its pid, the one we started
                proc.wait(timeout=10)

        self.addCleanup(kill)
        try:
            # Ready: the API answers.
            deadline = time.monotonic() + 30
            status = None
            while time.monotonic() < deadline:
                if proc.poll() is not None:
                    raise AssertionError("mcgwd exited with %d before it was ready (%s):\n%s"
                                         % (proc.returncode, case_dir, log_tail()))
                if os.path.exists(sock):
                    r = self.ctl(sock, "status", "--json", check=False)
                    if r.returncode in (0, 1) and r.stdout.strip():
                        status = json.loads(r.stdout)
                        break
                time.sleep(0.05)
            if status is None:
                raise AssertionError("mcgwd not ready within 30 s (%s):\n%s" % (case_dir, log_tail()))
            macs = {p["name"]: p["mac"].lower() for p in status["ports"]}
            if macs != PORT_MACS:
                raise AssertionError(
                    "the test assumes net_pcap port MACs %s (02:70:63:61:70:NN in config order); "
                    "mcgwd reports %s" % (PORT_MACS, macs))
            # Processed: every input frame counted by the fast path.
            deadline = time.monotonic() + 30
            while True:
                counters = self.ctl_json(sock, "show", "counters", "--json")
                seen = counters["lan"]["rx_packets"] + counters["wan"]["rx_packets"]
                if seen == total:
                    break
                if seen > total or time.monotonic() > deadline or proc.poll() is not None:
                    raise AssertionError(
                        "the fast path counted %d of %d input packets (%s); counters: %s\n%s"
                        % (seen, total, case_dir, json.dumps(counters), log_tail()))
                time.sleep(0.05)
            # A packet is counted on receipt, before its fate: wait until the
            # counters (drops, ICMP, transmit) stop moving.  Packets held for
            # a neighbour's MAC (these ports have no kernel side to resolve
            # it) meet theirs after the hold time (1 s).
            if counters.get("neighbors", {}).get("held_packets", 0):
                time.sleep(1.3)
            stable = ("drops", "drops_total", "lan", "wan", "icmp", "ports", "lines", "tunnels")
            previous = None
            while True:
                time.sleep(0.1)
                counters = self.ctl_json(sock, "show", "counters", "--json")
                now = {k: counters.get(k) for k in stable}
                if now == previous:
                    break
                if time.monotonic() > deadline:
                    raise AssertionError("counters still moving after 30 s (%s)" % case_dir)
                previous = now
            tunnels = self.ctl_json(sock, "show", "tunnels", "--json")
            # Stop: the tx pcaps are complete once mcgwd has exited.
            proc.send_signal(signal.SIGTERM)
            try:
                rc = proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                raise AssertionError("mcgwd did not exit within 20 s of SIGTERM:\n" + log_tail())
            if rc != 0:
                raise AssertionError("mcgwd exited with %d on SIGTERM:\n%s" % (rc, log_tail()))
        finally:
            kill()
        outputs = {}
        for port in PORT_ORDER:
            path = os.path.join(case_dir, port + "_out.pcap")
            outputs[port] = read_pcap(path)
            if outputs[port]:
                self.assert_tshark_clean(path, len(outputs[port]))
        # The ports' own counters agree with the files.
        for p in counters["ports"]:
            self.assertEqual(p["tx_packets"], len(outputs[p["name"]]),
                             "port %s: tx_packets vs frames in its tx pcap" % p["name"])
            self.assertEqual(p["rx_packets"], len(inputs.get(p["name"], [])),
                             "port %s: rx_packets vs frames in its rx pcap" % p["name"])
        return Run(case_dir, outputs, counters, tunnels, status)

    def assert_tshark_clean(self, path, n):
        r = subprocess.run(
            [TSHARK, "-n", "-r", path, "-V",
             "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE",
             "-o", "tcp.check_checksum:TRUE"],
            capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, "tshark -r %s: exit %d: %s" % (path, r.returncode, r.stderr))
        bad = [l.strip() for l in r.stdout.splitlines()
               if "Malformed" in l or "Expert Info (Error" in l]
        self.assertEqual(bad, [], "tshark reports errors in %s" % path)
        frames = sum(1 for l in r.stdout.splitlines() if l.startswith("Frame "))
        self.assertEqual(frames, n, "tshark decoded %d frames of %d in %s" % (frames, n, path))

    # --- Checks ---------------------------------------------------------------------

    def check_encap(self, raw, lan_frame, peer, line, what, exp_inner=None):
        """`raw` must be `lan_frame` encapsulated towards `peer` on `line`:
        every outer field, then the inner frame (`lan_frame` routed, unless
        `exp_inner` says what the inner frame must be)."""
        o = Outer(raw)
        if exp_inner is None:
            exp_inner = expected_routed(lan_frame, peer.dst_mac, PORT_MACS[line.port])
        inner_tos = tos_of(exp_inner)
        errors = []

        def want(field, expected, actual):
            if expected != actual:
                errors.append("%s: expected %s, got %s" % (field, expected, actual))

        want("eth.dst (next hop)", line.nh_mac, o.eth.dst)
        want("eth.src (WAN port)", PORT_MACS[line.port], o.eth.src)
        want("ethertype", 0x86DD if line.ipv6 else 0x0800, o.eth.type)
        want("ip.version", 6 if line.ipv6 else 4, o.ip.version)
        want("ip.src (local VTEP)", line.local, o.ip.src)
        want("ip.dst (remote VTEP)", line.remote, o.ip.dst)
        if line.ipv6:
            want("ipv6.dscp", inner_tos >> 2, o.ip.tc >> 2)
            want("ipv6.ecn", inner_tos & 3, o.ip.tc & 3)
            want("ipv6.hlim", line.ttl, o.ip.hlim)
            want("ipv6.nh", 17, o.ip.nh)
            want("ipv6.plen", len(o.udp_bytes), o.ip.plen)
            ok, declared, computed = udp6_checksum_ok(o.ip, o.udp_bytes)
            if not ok:
                errors.append("udp checksum over IPv6: 0x%04x, recomputed 0x%04x"
                              % (declared, computed))
        else:
            want("ip.ihl", 5, o.ip.ihl)
            want("ip.dscp", inner_tos >> 2, o.ip.tos >> 2)
            want("ip.ecn", inner_tos & 3, o.ip.tos & 3)
            want("ip.ttl", line.ttl, o.ip.ttl)
            want("ip.DF", True, bool(o.ip.flags.DF))
            want("ip.MF", False, bool(o.ip.flags.MF))
            want("ip.frag", 0, o.ip.frag)
            want("ip.proto", 17, o.ip.proto)
            want("ip.len", len(raw) - 14, o.ip.len)
            if not ipv4_checksum_ok(o.ip_bytes):
                errors.append("outer IPv4 header checksum 0x%04x is wrong" % o.ip.chksum)
            want("udp.checksum over IPv4", 0, o.udp_csum)
        want("udp.dport", VXLAN_PORT if peer.encap == "vxlan" else GENEVE_PORT, o.dport)
        if not 49152 <= o.sport <= 65535:
            errors.append("udp.sport %d outside 49152..65535" % o.sport)
        want("udp.len", len(o.udp_bytes), o.udp_len)
        t = o.tunnel
        if peer.encap == "vxlan":
            want("vxlan.flags", 0x08, t[0])
            want("vxlan.reserved1", b"\0\0\0", t[1:4])
            want("vxlan.vni", VNI, int.from_bytes(t[4:7], "big"))
            want("vxlan.reserved2", 0, t[7])
        else:
            want("geneve.version", 0, t[0] >> 6)
            want("geneve.optlen", 0, t[0] & 0x3F)
            want("geneve.O", 0, t[1] >> 7)
            want("geneve.C", 0, (t[1] >> 6) & 1)
            want("geneve.reserved", 0, t[1] & 0x3F)
            want("geneve.protocol", 0x6558, struct.unpack("!H", t[2:4])[0])
            want("geneve.vni", VNI, int.from_bytes(t[4:7], "big"))
            want("geneve.reserved2", 0, t[7])
        # The inner frame: MACs rewritten, TTL - 1, the rest (payload) unchanged.
        errors += ["inner " + d for d in packet_diff(exp_inner, o.inner)]
        inner = Ether(o.inner)
        if IP in inner and not ipv4_checksum_ok(o.inner[14:14 + inner[IP].ihl * 4]):
            errors.append("inner IPv4 header checksum 0x%04x is wrong" % inner[IP].chksum)
        if Raw not in inner or inner[Raw].load != Ether(bytes(exp_inner))[Raw].load:
            errors.append("inner payload changed")
        # The whole frame once more, against one built by scapy (lengths and
        # checksums computed by scapy).
        if not errors:
            if line.ipv6:
                ip = IPv6(tc=inner_tos, fl=o.ip.fl, nh=17, hlim=line.ttl, src=line.local,
                          dst=line.remote)
                udp = UDP(sport=o.sport, dport=o.dport)
            else:
                ip = IP(tos=inner_tos, id=o.ip.id, flags="DF", ttl=line.ttl, proto=17,
                        src=line.local, dst=line.remote)
                udp = UDP(sport=o.sport, dport=o.dport, chksum=0)
            hdr = vxlan_header(VNI) if peer.encap == "vxlan" else geneve_header(VNI)
            exp = Ether(dst=line.nh_mac, src=PORT_MACS[line.port]) / ip / udp / Raw(
                hdr + bytes(exp_inner))
            errors += packet_diff(exp, raw)
        if errors:
            self.fail("%s: encapsulated frame is wrong:\n  %s" % (what, "\n  ".join(errors)))
        return o

    def check_routed(self, raw, expected, what):
        diffs = packet_diff(expected, raw)
        p = Ether(raw)
        if IP in p and not ipv4_checksum_ok(raw[14:14 + p[IP].ihl * 4]):
            diffs.append("IPv4 header checksum 0x%04x is wrong" % p[IP].chksum)
        if diffs:
            self.fail("%s: forwarded frame is wrong:\n  %s" % (what, "\n  ".join(diffs)))

    def one(self, frames, tag, what):
        hits = find(frames, tag)
        self.assertEqual(len(hits), 1, "%s: %d output frames carry its payload, expected 1"
                         % (what, len(hits)))
        return hits[0]

    def assert_drops(self, run, expected):
        self.assertEqual(run.drops(), expected, "drops counted by reason (show counters)")
        self.assertEqual(run.counters["drops_total"], sum(expected.values()))

    def expected_time_exceeded(self, raw, original, v6, eth_dst=HOST_MAC, eth_src=LAN_MAC,
                               src=None, dst=None):
        """The ICMP time exceeded `raw` must be: to the sender of `original`
        (or `dst`), from the LAN port's address, quoting as much of the
        expired packet, as it arrived, as fits in 576 (IPv4, RFC 1812
        4.3.2.3) or 1280 bytes (IPv6, RFC 4443 2.4)."""
        p = Ether(raw)
        orig = Ether(bytes(original))
        quote = bytes(orig.payload)[:1232 if v6 else 548]
        ttl = p[IPv6].hlim if v6 else p[IP].ttl
        self.assertIn(ttl, ICMP_ERROR_TTLS, "TTL/hop limit of the ICMP error")
        if v6:
            return Ether(bytes(
                Ether(dst=eth_dst, src=eth_src) /
                IPv6(src=src or LAN6, dst=dst or orig[IPv6].src, nh=58, hlim=ttl, tc=0, fl=0) /
                ICMPv6TimeExceeded(code=0) / Raw(quote)))
        return Ether(bytes(
            Ether(dst=eth_dst, src=eth_src) /
            IP(src=src or LAN4, dst=dst or orig[IP].src, proto=1, ttl=ttl, tos=0,
               id=p[IP].id, flags=p[IP].flags) /
            ICMP(type=11, code=0) / Raw(quote)))

    def check_time_exceeded(self, raw, original, v6):
        """An ICMP time exceeded back out of the LAN port to the sender."""
        exp = self.expected_time_exceeded(raw, original, v6)
        diffs = packet_diff(exp, raw)
        if not v6:
            if not ipv4_checksum_ok(raw[14:34]):
                diffs.append("IPv4 header checksum is wrong")
            if checksum(raw[34:]) != 0:
                diffs.append("ICMP checksum is wrong")
        if diffs:
            self.fail("ICMP%s time exceeded is wrong:\n  %s" % ("v6" if v6 else "",
                                                                 "\n  ".join(diffs)))


# --- The cases ------------------------------------------------------------------------

class FastPathPcapTest(FastPathTestCase):

    def test_1_encap_matrix(self):
        """{VXLAN, Geneve} x {IPv4, IPv6 underlay} x {IPv4, IPv6 inner}: LAN in, WAN out."""
        cases, frames = [], []
        for name in MATRIX_PEERS:
            peer = PEERS[name]
            for v6 in (False, True):
                tag = "encap-%s-%s" % (name, "v6" if v6 else "v4")
                f = lan_packet(peer.host(v6), tag, tos=(26 << 2) | 2, ttl=17)
                cases.append((peer, v6, tag, f))
                frames.append(f)
        run = self.run_gateway("encap", {"lan0": frames})
        self.assertEqual(run.out["lan0"], [], "nothing goes back out of the LAN port")
        self.assertEqual(run.out["wan1"], [])
        self.assertEqual(len(run.out["wan0"]), len(frames))
        for peer, v6, tag, f in cases:
            with self.subTest(peer=peer.name, inner="IPv6" if v6 else "IPv4"):
                raw = self.one(run.out["wan0"], tag, tag)
                self.check_encap(raw, f, peer, peer.lines[0], tag)
        self.assert_drops(run, {})
        for name in MATRIX_PEERS:
            t = run.tunnel(name)
            self.assertEqual(t["counters"]["tx_packets"], 2, "tunnel %s tx_packets" % name)
            self.assertEqual(t["lines"][0]["counters"]["tx_packets"], 2, "line %s/l1" % name)
        self.assertEqual(run.counters["wan"]["tx_packets"], len(frames))
        self.assertEqual(run.counters["lan"]["rx_packets"], len(frames))

    def test_2_decap_matrix(self):
        """The same 8 combinations WAN in, LAN out to the host's static neighbour MAC."""
        cases, frames = [], []
        for name in MATRIX_PEERS:
            peer = PEERS[name]
            for v6 in (False, True):
                tag = "decap-%s-%s" % (name, "v6" if v6 else "v4")
                inner = inner_packet(peer.host(v6, 7), tag, ttl=33, tos=(10 << 2) | 1)
                f = tunnel_packet(peer.lines[0], peer.encap, inner, tos=(46 << 2))
                cases.append((peer, v6, tag, inner))
                frames.append(f)
        run = self.run_gateway("decap", {"wan0": frames})
        self.assertEqual(run.out["wan0"], [])
        self.assertEqual(run.out["wan1"], [])
        self.assertEqual(len(run.out["lan0"]), len(frames))
        for peer, v6, tag, inner in cases:
            with self.subTest(peer=peer.name, inner="IPv6" if v6 else "IPv4"):
                raw = self.one(run.out["lan0"], tag, tag)
                # Outer DSCP 46 / Not-ECT over inner DSCP 10 / ECT(1): the inner
                # DSCP and ECN stay as they were.
                self.check_routed(raw, expected_routed(inner, HOST_MAC, LAN_MAC), tag)
        self.assert_drops(run, {})
        for name in MATRIX_PEERS:
            t = run.tunnel(name)
            self.assertEqual(t["counters"]["rx_packets"], 2, "tunnel %s rx_packets" % name)
            self.assertEqual(t["lines"][0]["counters"]["rx_packets"], 2, "line %s/l1" % name)
        self.assertEqual(run.counters["lan"]["tx_packets"], len(frames))

    def test_3_dscp_copied_on_encap(self):
        """The outer DSCP is the inner one, for DSCP 0, 10, 46 and 63."""
        cases, frames = [], []
        for name in ("vx4", "gn6"):
            peer = PEERS[name]
            for v6 in (False, True):
                for dscp in (0, 10, 46, 63):
                    tag = "dscp-%s-%s-%d" % (name, "v6" if v6 else "v4", dscp)
                    f = lan_packet(peer.host(v6), tag, tos=dscp << 2)
                    cases.append((peer, dscp, tag, f))
                    frames.append(f)
        run = self.run_gateway("dscp", {"lan0": frames})
        self.assertEqual(len(run.out["wan0"]), len(frames))
        for peer, dscp, tag, f in cases:
            with self.subTest(tag=tag):
                o = self.check_encap(self.one(run.out["wan0"], tag, tag), f, peer,
                                     peer.lines[0], tag)
                outer_tos = o.ip.tc if o.v6 else o.ip.tos
                self.assertEqual(outer_tos >> 2, dscp, "%s: outer DSCP" % tag)
        self.assert_drops(run, {})

    def test_4a_ecn_on_encap(self):
        """RFC 6040 normal mode: the outer ECN field is the inner one, all four values."""
        cases, frames = [], []
        for name in ("vx4", "gn4", "vx6", "gn6"):
            peer = PEERS[name]
            for v6 in (False, True):
                for ecn in range(4):
                    tag = "ecn-encap-%s-%s-%d" % (name, "v6" if v6 else "v4", ecn)
                    f = lan_packet(peer.host(v6), tag, tos=(18 << 2) | ecn)
                    cases.append((peer, ecn, tag, f))
                    frames.append(f)
        run = self.run_gateway("ecn-encap", {"lan0": frames})
        self.assertEqual(len(run.out["wan0"]), len(frames))
        for peer, ecn, tag, f in cases:
            with self.subTest(tag=tag):
                o = self.check_encap(self.one(run.out["wan0"], tag, tag), f, peer,
                                     peer.lines[0], tag)
                outer_tos = o.ip.tc if o.v6 else o.ip.tos
                self.assertEqual(outer_tos & 3, ecn, "%s: outer ECN" % tag)
                self.assertEqual(tos_of(o.inner) & 3, ecn, "%s: inner ECN unchanged" % tag)
        self.assert_drops(run, {})

    # RFC 6040 §4.2, figure 4: (inner, outer) -> inner after decapsulation, None = drop.
    NOT_ECT, ECT1, ECT0, CE = 0, 1, 2, 3
    ECN_DECAP = {
        (NOT_ECT, NOT_ECT): NOT_ECT, (NOT_ECT, ECT0): NOT_ECT, (NOT_ECT, ECT1): NOT_ECT,
        (NOT_ECT, CE): None,
        (ECT0, NOT_ECT): ECT0, (ECT0, ECT0): ECT0, (ECT0, ECT1): ECT1, (ECT0, CE): CE,
        (ECT1, NOT_ECT): ECT1, (ECT1, ECT0): ECT1, (ECT1, ECT1): ECT1, (ECT1, CE): CE,
        (CE, NOT_ECT): CE, (CE, ECT0): CE, (CE, ECT1): CE, (CE, CE): CE,
    }

    def test_4b_ecn_on_decap(self):
        """RFC 6040 decapsulation: all 16 (inner, outer) cells, IPv4 and IPv6 on both sides."""
        cases, frames = [], []
        for name in ("vx4", "gn6"):  # IPv4 and IPv6 underlay
            peer = PEERS[name]
            for v6 in (False, True):
                for (inner_ecn, outer_ecn), result in sorted(self.ECN_DECAP.items()):
                    tag = "ecn-decap-%s-%s-%d-%d" % (name, "v6" if v6 else "v4", inner_ecn,
                                                     outer_ecn)
                    # Distinct DSCPs inside and outside: the inner DSCP stays.
                    inner = inner_packet(peer.host(v6), tag, tos=(34 << 2) | inner_ecn)
                    frames.append(tunnel_packet(peer.lines[0], peer.encap, inner,
                                                tos=(8 << 2) | outer_ecn))
                    cases.append((tag, inner, result))
        run = self.run_gateway("ecn-decap", {"wan0": frames})
        dropped = sum(1 for _, _, r in cases if r is None)
        self.assertEqual(len(run.out["lan0"]), len(frames) - dropped)
        for tag, inner, result in cases:
            with self.subTest(tag=tag):
                hits = find(run.out["lan0"], tag)
                if result is None:
                    self.assertEqual(hits, [], "%s: CE over Not-ECT must be dropped" % tag)
                    continue
                self.assertEqual(len(hits), 1, "%s: forwarded once" % tag)
                self.check_routed(hits[0], expected_routed(inner, HOST_MAC, LAN_MAC, ecn=result),
                                  tag)
        self.assert_drops(run, {"ecn": dropped})

    def test_5_drops_by_reason(self):
        """Every drop counted under its reason; TTL expiry answered with ICMP."""
        vx4, vx6, gn4, gn6 = (PEERS[n] for n in MATRIX_PEERS)
        lan, wan = [], []
        # Unknown VTEP: the source is no configured remote VTEP (v4 and v6).
        unknown_v4 = Line("x", "wan0", WAN4, "203.0.113.99", NH4, NH4_MAC)
        wan.append(tunnel_packet(unknown_v4, "vxlan", inner_packet("10.11.0.5", "vtep4")))
        unknown_v6 = Line("x", "wan0", WAN6, "2001:db8:ff::99", NH6, NH6_MAC)
        wan.append(tunnel_packet(unknown_v6, "geneve", inner_packet("10.14.0.5", "vtep6")))
        # Unknown VNI from known VTEPs.
        wan.append(tunnel_packet(vx4.lines[0], "vxlan", inner_packet("10.11.0.5", "vni1"),
                                 vni=999))
        wan.append(tunnel_packet(gn6.lines[0], "geneve", inner_packet("10.14.0.5", "vni2"),
                                 vni=VNI + 1))
        # Geneve: an unknown critical option (C flag, type with bit 0x80) is dropped ...
        crit = geneve_header(VNI, critical=True,
                             options=geneve_option(0x0102, 0x80 | 0x05, b"\x11\x22\x33\x44"))
        wan.append(tunnel_packet(gn4.lines[0], "geneve", inner_packet("10.13.0.5", "crit"),
                                 tunnel_header=crit))
        # ... an unknown non-critical one is skipped and the packet forwarded.
        noncrit_inner = inner_packet("10.13.0.5", "noncrit", ttl=9)
        noncrit = geneve_header(VNI, options=geneve_option(0x0102, 0x05, b"\x55\x66\x77\x88") +
                                geneve_option(0xFFFF, 0x7F, b""))
        wan.append(tunnel_packet(gn4.lines[0], "geneve", noncrit_inner, tunnel_header=noncrit))
        # Geneve OAM (O bit): never forwarded.
        wan.append(tunnel_packet(gn4.lines[0], "geneve", inner_packet("10.13.0.5", "oam"),
                                 tunnel_header=geneve_header(VNI, oam=True)))
        # No route, from the LAN and from a tunnel.
        lan.append(lan_packet("10.99.0.5", "noroute4"))
        lan.append(lan_packet("fd00:99::5", "noroute6"))
        wan.append(tunnel_packet(vx4.lines[0], "vxlan",
                                 inner_packet("10.11.0.5", "noroute-decap", dst="10.98.0.1")))
        # TTL / hop limit 1 on LAN packets: dropped and answered with time exceeded.
        ttl4 = lan_packet(vx4.host(False), "ttl4", ttl=1)
        ttl6 = lan_packet(vx6.host(True), "ttl6", ttl=1)
        lan += [ttl4, ttl6]
        # Not our MAC (LAN and WAN); ARP; non-overlay traffic on a WAN port.
        lan.append(lan_packet(vx4.host(False), "otherhost-lan", eth_dst=OTHER_MAC))
        wan.append(tunnel_packet(vx4.lines[0], "vxlan", inner_packet("10.11.0.5", "otherhost-wan"),
                                 eth_dst=OTHER_MAC))
        lan.append(Ether(dst=LAN_MAC, src=HOST_MAC) /
                   ARP(op=2, hwsrc=HOST_MAC, psrc=HOST4, hwdst=LAN_MAC, pdst=LAN4))
        wan.append(Ether(dst=WAN0_MAC, src=NH4_MAC) /
                   IP(src="203.0.113.11", dst=WAN4) / UDP(sport=1234, dport=5555) /
                   Raw(marker("plain-udp")))
        # Outer fragments (first fragments, the UDP header visible): IPv4 MF and
        # an IPv6 fragment header.
        wan.append(tunnel_packet(vx4.lines[0], "vxlan", inner_packet("10.11.0.5", "frag4"),
                                 frag="mf"))
        wan.append(tunnel_packet(vx6.lines[0], "vxlan", inner_packet("10.12.0.5", "frag6"),
                                 frag="mf"))
        run = self.run_gateway("drops", {"lan0": lan, "wan0": wan})

        expected = {"unknown-vtep": 2, "unknown-vni": 2, "critical-option": 1, "oam": 1,
                    "no-route": 3, "ttl-expired": 2, "other-host": 2, "not-ip": 1,
                    "not-overlay": 1, "outer-fragment": 2}
        drops = run.counters["drops"]
        for reason, n in expected.items():
            with self.subTest(reason=reason):
                self.assertEqual(drops.get(reason), n, "drops.%s" % reason)
        with self.subTest(reason="no other drops"):
            self.assert_drops(run, expected)

        with self.subTest(case="geneve non-critical option forwarded"):
            raw = self.one(run.out["lan0"], "noncrit", "non-critical option")
            self.check_routed(raw, expected_routed(noncrit_inner, HOST_MAC, LAN_MAC),
                              "non-critical option")

        with self.subTest(case="ICMP time exceeded (IPv4)"):
            icmp = [f for f in run.out["lan0"] if ICMP in Ether(f) and Ether(f)[ICMP].type == 11]
            self.assertEqual(len(icmp), 1, "one ICMP time exceeded out of lan0")
            self.check_time_exceeded(icmp[0], ttl4, v6=False)
        with self.subTest(case="ICMPv6 time exceeded"):
            icmp6 = [f for f in run.out["lan0"] if ICMPv6TimeExceeded in Ether(f)]
            self.assertEqual(len(icmp6), 1, "one ICMPv6 error out of lan0")
            self.check_time_exceeded(icmp6[0], ttl6, v6=True)
        self.assertEqual(run.counters["icmp"],
                         {"sent": 2, "time_exceeded": 2, "frag_needed": 0, "packet_too_big": 0,
                          "rate_limited": 0, "not_allowed": 0, "suppressed": 0})
        with self.subTest(case="nothing else forwarded"):
            self.assertEqual(len(run.out["lan0"]), 3, "lan0: the forwarded packet and 2 ICMP")
            self.assertEqual(run.out["wan0"], [])
            self.assertEqual(run.out["wan1"], [])

    def test_6_ecmp(self):
        """line-mode ecmp over 3 lines (two WAN ports, two next hops on wan0):
        200 flows spread over every line, each flow pinned to one line and one
        UDP source port."""
        peer = PEERS["ec"]
        flows = []
        for i in range(200):
            flows.append((peer.host(False, 5 + i % 7), 10000 + i * 7, 20000 + (i * 13) % 5000))
        frames = []
        for rnd in range(3):
            for i, (dst, sport, dport) in enumerate(flows):
                frames.append(lan_packet(dst, "ecmp-%d-%d" % (i, rnd), sport=sport, dport=dport))
        run = self.run_gateway("ecmp", {"lan0": frames})
        by_line = {("wan0", l.nh_mac, l.remote): l for l in peer.lines if l.port == "wan0"}
        by_line.update({("wan1", l.nh_mac, l.remote): l for l in peer.lines if l.port == "wan1"})
        seen = {}  # flow -> {(line, sport)}
        per_line = {l.name: 0 for l in peer.lines}
        for port in ("wan0", "wan1"):
            for raw in run.out[port]:
                o = Outer(raw)
                line = by_line.get((port, o.eth.dst, o.ip.dst))
                self.assertIsNotNone(line, "a frame out of %s to %s / %s belongs to no line"
                                     % (port, o.eth.dst, o.ip.dst))
                load = Ether(o.inner)[Raw].load
                tag = load.decode(errors="replace").split(":")[1]
                _, i, rnd = tag.split("-")
                f = frames[int(rnd) * len(flows) + int(i)]
                self.check_encap(raw, f, peer, line, tag)
                seen.setdefault(int(i), set()).add((line.name, o.sport))
                per_line[line.name] += 1
        self.assertEqual(sum(per_line.values()), len(frames), "every packet sent once")
        split = {i: s for i, s in seen.items() if len(s) != 1}
        self.assertEqual(split, {}, "flows that left on more than one line or source port")
        flows_per_line = {l.name: 0 for l in peer.lines}
        for s in seen.values():
            flows_per_line[next(iter(s))[0]] += 1
        for name, n in flows_per_line.items():
            self.assertGreater(n, len(flows) * 0.2, "line %s carries %d of %d flows (%s)"
                               % (name, n, len(flows), flows_per_line))
        sports = {next(iter(s))[1] for s in seen.values()}
        self.assertGreater(len(sports), len(flows) * 0.9, "distinct UDP source ports per flow")
        t = run.tunnel("ec")
        self.assertEqual(sorted(t["active_lines"]), ["l1", "l2", "l3"])
        for l in t["lines"]:
            self.assertEqual(l["counters"]["tx_packets"], per_line[l["name"]],
                             "line ec/%s tx_packets vs frames seen" % l["name"])
        self.assert_drops(run, {})

    def test_7_active_backup(self):
        """line-mode active-backup with two healthy lines: everything on the first."""
        peer = PEERS["ab"]
        frames = [lan_packet(peer.host(False, 5 + i % 3), "ab-%d" % i, sport=30000 + i,
                             dport=9000 + i) for i in range(60)]
        run = self.run_gateway("active-backup", {"lan0": frames})
        self.assertEqual(run.out["wan1"], [], "nothing on the backup line's port")
        self.assertEqual(len(run.out["wan0"]), len(frames))
        for i, f in enumerate(frames):
            raw = self.one(run.out["wan0"], "ab-%d" % i, "ab-%d" % i)
            self.check_encap(raw, f, peer, peer.lines[0], "ab-%d" % i)
        t = run.tunnel("ab")
        self.assertEqual(t["active_lines"], ["l1"])
        counts = {l["name"]: l["counters"]["tx_packets"] for l in t["lines"]}
        self.assertEqual(counts, {"l1": len(frames), "l2": 0})
        self.assert_drops(run, {})

    def test_8_edges(self):
        """Boundaries: Ethernet padding, TTL 2, the line MTU, long expired
        packets (ICMP quote limits), TTL expiry of tunnelled traffic, no
        neighbour, local and multicast destinations, VXLAN without the I flag."""
        vx4, gn6 = PEERS["vx4"], PEERS["gn6"]
        lan, wan, expect_wan = [], [], []
        # Ethernet trailer (padding) behind the IP packet is not carried into the tunnel.
        for v6 in (False, True):
            tag = "pad-%s" % ("v6" if v6 else "v4")
            f = lan_packet(vx4.host(v6), tag)
            lan.append(Ether(bytes(f) + b"\xee" * 12))
            expect_wan.append((tag, f, vx4))
        # TTL 2 leaves with TTL 1.
        for v6 in (False, True):
            tag = "ttl2-%s" % ("v6" if v6 else "v4")
            f = lan_packet(vx4.host(v6), tag, ttl=2)
            lan.append(f)
            expect_wan.append((tag, f, vx4))
        # The line MTU (1500): the largest inner IP packet is 1450 bytes over
        # IPv4 (outer 20 + 8 + 8 + 14) and 1430 over IPv6; one more is too big.
        def sized(peer, ip_len, tag, v6):
            head = 40 + 8 if v6 else 20 + 8
            m = marker(tag)
            return lan_packet(peer.host(v6), tag, payload=m + b"z" * (ip_len - head - len(m)))
        for peer, limit in ((vx4, 1450), (gn6, 1430)):
            for v6 in (False, True):
                tag = "mtu-%s-%s" % (peer.name, "v6" if v6 else "v4")
                f = sized(peer, limit, tag, v6)
                self.assertEqual(len(f) - 14, limit)
                lan.append(f)
                expect_wan.append((tag, f, peer))
                lan.append(sized(peer, limit + 1, tag + "-big", v6))
        # Long expired packets: the ICMP error quotes 548 (IPv4) / 1232 (IPv6) bytes.
        long4 = sized(vx4, 1000, "long-ttl4", False)
        long4[IP].ttl = 1
        long4 = Ether(bytes(long4))
        long6 = sized(vx4, 1400, "long-ttl6", True)
        long6[IPv6].hlim = 1
        long6 = Ether(bytes(long6))
        lan += [long4, long6]
        # An expired packet out of a tunnel: the ICMP error goes back into the tunnel.
        expired_inner = inner_packet(vx4.host(False), "tunnel-ttl1", ttl=1)
        wan.append(tunnel_packet(vx4.lines[0], "vxlan", expired_inner))
        # A connected destination without a static neighbour.
        wan.append(tunnel_packet(vx4.lines[0], "vxlan",
                                 inner_packet("10.11.0.5", "noneigh", dst="10.1.0.99")))
        # The gateway's own address, and multicast: not forwarded.
        lan.append(lan_packet(LAN4, "local4"))
        lan.append(lan_packet("224.0.0.5", "mcast4"))
        # VXLAN without the I flag.
        wan.append(tunnel_packet(vx4.lines[0], "vxlan", inner_packet("10.11.0.5", "noiflag"),
                                 tunnel_header=vxlan_header(VNI, flags=0x00)))
        run = self.run_gateway("edges", {"lan0": lan, "wan0": wan})

        for tag, f, peer in expect_wan:
            with self.subTest(tag=tag):
                raw = self.one(run.out["wan0"], tag, tag)
                self.check_encap(raw, f, peer, peer.lines[0], tag)
        for tag in ("mtu-vx4-v4-big", "mtu-vx4-v6-big", "mtu-gn6-v4-big", "mtu-gn6-v6-big"):
            with self.subTest(tag=tag):
                self.assertEqual(find(run.out["wan0"], tag), [], "%s: must not leave" % tag)
        with self.subTest(case="long IPv4 packet expired"):
            icmp = [f for f in run.out["lan0"] if ICMP in Ether(f) and Ether(f)[ICMP].type == 11]
            self.assertEqual(len(icmp), 1, "one ICMP time exceeded out of lan0")
            self.assertEqual(len(icmp[0]), 14 + 576, "the ICMP error fills 576 bytes")
            self.check_time_exceeded(icmp[0], long4, v6=False)
        with self.subTest(case="long IPv6 packet expired"):
            icmp6 = [f for f in run.out["lan0"] if ICMPv6TimeExceeded in Ether(f)]
            self.assertEqual(len(icmp6), 1, "one ICMPv6 error out of lan0")
            self.assertEqual(len(icmp6[0]), 14 + 1280, "the ICMPv6 error fills 1280 bytes")
            self.check_time_exceeded(icmp6[0], long6, v6=True)
        with self.subTest(case="ICMP back into the tunnel"):
            back = [f for f in run.out["wan0"] if Outer(f).eth.dst == NH4_MAC and
                    ICMP in Ether(Outer(f).inner)]
            self.assertEqual(len(back), 1, "one ICMP error into the tunnel to vx4")
            o = Outer(back[0])
            exp_inner = self.expected_time_exceeded(
                o.inner, expired_inner, False, eth_dst=vx4.dst_mac, eth_src=WAN0_MAC)
            self.check_encap(back[0], None, vx4, vx4.lines[0], "ICMP into the tunnel",
                             exp_inner=exp_inner)
        # The four too-big packets (DF / IPv6) are answered with frag-needed / PTB.
        self.assertEqual(run.counters["icmp"],
                         {"sent": 7, "time_exceeded": 3, "frag_needed": 2, "packet_too_big": 2,
                          "rate_limited": 0, "not_allowed": 0, "suppressed": 0})
        self.assertEqual(len(run.out["lan0"]), 6)
        self.assertEqual(len(run.out["wan0"]), len(expect_wan) + 1)
        self.assert_drops(run, {"too-big": 4, "ttl-expired": 3, "no-neighbor": 1, "local": 2,
                                "malformed": 1})



def tcp_syn(dst, tag, options, flags="S", v6=None, src=None, sport=40100, dport=443, ack=0):
    """A TCP segment (SYN unless flags say otherwise) from the LAN host."""
    v6 = ":" in dst if v6 is None else v6
    ip = (IPv6(src=src or HOST6, dst=dst, hlim=64) if v6 else
          IP(src=src or HOST4, dst=dst, ttl=64, id=0x5151, flags="DF"))
    return Ether(dst=LAN_MAC, src=HOST_MAC) / ip / TCP(
        sport=sport, dport=dport, flags=flags, seq=1000, ack=ack, window=64240,
        options=options) / Raw(marker(tag))


def tcp_mss(inner_frame):
    """The MSS option's value of a frame's TCP header, or None."""
    for name, value in Ether(bytes(inner_frame))[TCP].options:
        if name == "MSS":
            return value
    return None


def tcp_checksum_ok(frame):
    p = Ether(bytes(frame))
    declared = p[TCP].chksum
    ip = p[IPv6] if IPv6 in p else p[IP]
    tcp = bytes(p[TCP])
    zeroed = tcp[:16] + b"\0\0" + tcp[18:]
    if IPv6 in p:
        computed = in6_chksum(socket.IPPROTO_TCP, ip, zeroed)
    else:
        computed = in4_chksum(socket.IPPROTO_TCP, ip, zeroed)
    return declared == computed


class PathMtuPcapTest(FastPathTestCase):
    """Issue 5 in the fast path: MSS clamping, too-big packets (ICMP,
    fragmentation), ICMP rate limits."""

    def test_9_mss_clamp(self):
        vx4, vx6, gn4 = PEERS["vx4"], PEERS["vx6"], PEERS["gn4"]
        full = [("MSS", 1460), ("SAckOK", b""), ("Timestamp", (1, 0)), ("NOP", None),
                ("WScale", 7)]
        lan, expect = [], []
        # (peer, inner IP version, expected MSS): 1500 − overhead − IP − TCP.
        for peer, v6, mss in ((vx4, False, 1410), (vx4, True, 1390), (gn4, False, 1410),
                              (gn4, True, 1390), (vx6, False, 1390), (vx6, True, 1370)):
            tag = "syn-%s-%s" % (peer.name, "v6" if v6 else "v4")
            lan.append(tcp_syn(peer.host(v6), tag, full, v6=v6))
            expect.append((tag, peer, mss))
        # The MSS value at an odd offset (after one NOP), in a SYN-ACK.
        lan.append(tcp_syn(vx4.host(False), "synack-odd", [("NOP", None), ("MSS", 8960)],
                           flags="SA", ack=77))
        expect.append(("synack-odd", vx4, 1410))
        # Already below, no option, not a SYN, malformed options: unchanged.
        unchanged = [
            ("below", tcp_syn(vx4.host(False), "below", [("MSS", 536)])),
            ("nooption", tcp_syn(vx4.host(False), "nooption", [("WScale", 7)])),
            ("ack", tcp_syn(vx4.host(False), "ack", [("MSS", 1460)], flags="A", ack=5)),
        ]
        # (Malformed options: tests/unit/dataplane/mss_*; tshark would flag
        # them in the output capture.)
        lan += [f for _, f in unchanged]
        # The other direction: a SYN-ACK out of the tunnel towards the LAN host.
        synack = (Ether(dst=DEFAULT_INNER_MAC, src="02:00:00:00:0d:0d") /
                  IP(src=vx4.host(False), dst=HOST4, ttl=64, flags="DF") /
                  TCP(sport=443, dport=40100, flags="SA", seq=9, ack=1001,
                      options=[("MSS", 1460), ("SAckOK", b"")]) / Raw(marker("decap-synack")))
        wan = [tunnel_packet(vx4.lines[0], "vxlan", synack)]
        run = self.run_gateway("mss", {"lan0": lan, "wan0": wan})

        for tag, peer, mss in expect:
            with self.subTest(tag=tag):
                o = Outer(self.one(run.out["wan0"], tag, tag))
                self.assertEqual(tcp_mss(o.inner), mss, "%s: MSS in the tunnel" % tag)
                self.assertTrue(tcp_checksum_ok(o.inner), "%s: TCP checksum" % tag)
        for tag, f in unchanged:
            with self.subTest(tag=tag):
                o = Outer(self.one(run.out["wan0"], tag, tag))
                exp = expected_routed(f, vx4.dst_mac, WAN0_MAC)
                self.assertEqual(bytes(exp)[14:], o.inner[14:], "%s: inner packet unchanged" % tag)
        with self.subTest(tag="decap-synack"):
            out = Ether(self.one(run.out["lan0"], "decap-synack", "decap-synack"))
            self.assertEqual(tcp_mss(out), 1410)
            self.assertTrue(tcp_checksum_ok(out))
        self.assertEqual(run.counters["mss"], {"clamped": 8, "already_below": 1, "no_option": 1,
                                               "inserted": 0, "malformed": 0})
        self.assert_drops(run, {})

    def test_10_too_big(self):
        vx4, gn6 = PEERS["vx4"], PEERS["gn6"]

        def sized(peer, ip_len, tag, v6, df=True, src=None):
            head = 40 + 8 if v6 else 20 + 8
            m = marker(tag)
            f = lan_packet(peer.host(v6), tag, src=src,
                           payload=m + bytes(range(256)) * 6)
            f[Raw].load = f[Raw].load[:ip_len - head]
            if not v6 and not df:
                f[IP].flags = 0
            return Ether(bytes(f))

        lan = []
        big4 = sized(vx4, 1451, "big4-df", False)
        big6 = sized(vx4, 1451, "big6", True)
        big6_gn6 = sized(gn6, 1431, "big6-gn6", True)  # Geneve over IPv6: inner MTU 1430
        nodf = sized(vx4, 1500, "big4-nodf", False, df=False)
        nodf_gn6 = sized(gn6, 1500, "big4-nodf-gn6", False, df=False)
        lan += [big4, big6, big6_gn6, nodf, nodf_gn6]
        # An ICMP error that is too big: dropped, never answered.
        icmp_err = Ether(dst=LAN_MAC, src=HOST_MAC) / IP(src=HOST4, dst=vx4.host(False),
                                                          flags="DF") / ICMP(type=3, code=1) / \
            Raw(bytes(IP(src=vx4.host(False), dst=HOST4) / UDP()) + b"e" * 1400)
        lan.append(icmp_err)
        # Rate limit per source: 30 more too-big packets from one sender.
        flood = [sized(vx4, 1451, "flood-%d" % i, False) for i in range(30)]
        lan += flood
        run = self.run_gateway("toobig", {"lan0": lan})

        icmp4 = [Ether(f) for f in run.out["lan0"] if ICMP in Ether(f)]
        icmp6 = [Ether(f) for f in run.out["lan0"] if ICMPv6PacketTooBig in Ether(f)]
        with self.subTest(case="frag-needed"):
            first = icmp4[0]
            self.assertEqual((first[ICMP].type, first[ICMP].code), (3, 4))
            self.assertEqual(first[ICMP].nexthopmtu, 1450)
            self.assertEqual((first[IP].src, first[IP].dst), (LAN4, HOST4))
            self.assertEqual(first[Ether].dst, HOST_MAC)
            self.assertEqual(checksum(bytes(first[ICMP])), 0, "ICMP checksum")
            self.assertTrue(ipv4_checksum_ok(bytes(first[IP])[:20]))
            # The quote: the packet as the host sent it (TTL 64), 548 bytes.
            self.assertEqual(bytes(first[ICMP].payload), bytes(big4)[14:14 + 548])
        with self.subTest(case="packet too big"):
            self.assertEqual(len(icmp6), 2)
            by_mtu = sorted(p[ICMPv6PacketTooBig].mtu for p in icmp6)
            self.assertEqual(by_mtu, [1430, 1450])
            for p in icmp6:
                self.assertEqual((p[IPv6].src, p[IPv6].dst), (LAN6, HOST6))
                self.assertEqual(len(p) - 14, 1280, "the PTB fills 1280 bytes")
                quoted = bytes(p[ICMPv6PacketTooBig].payload)
                sent = bytes(big6 if p[ICMPv6PacketTooBig].mtu == 1450 else big6_gn6)[14:]
                self.assertEqual(quoted, sent[:len(quoted)], "quote as sent (hop limit 64)")
                zeroed = bytes(p[ICMPv6PacketTooBig])
                zeroed = zeroed[:2] + b"\0\0" + zeroed[4:]
                self.assertEqual(p[ICMPv6PacketTooBig].cksum,
                                 in6_chksum(58, p[IPv6], zeroed), "ICMPv6 checksum")
        for tag, f, peer, mtu in (("big4-nodf", nodf, vx4, 1450),
                                  ("big4-nodf-gn6", nodf_gn6, gn6, 1430)):
            with self.subTest(case=tag):
                outs = [Outer(r) for r in run.out["wan0"]
                        if IP in Ether(Outer(r).inner) and Ether(Outer(r).inner)[IP].id == 0x4242
                        and Outer(r).ip.dst == peer.lines[0].remote
                        and Ether(Outer(r).inner)[IP].len + 0 > 0
                        and (Ether(Outer(r).inner)[IP].flags.MF or Ether(Outer(r).inner)[IP].frag)]
                self.assertEqual(len(outs), 2, "%s: two fragments in the tunnel" % tag)
                for o in outs:
                    self.assertLessEqual(len(o.raw) - 14, 1500, "outer packet fits 1500")
                    inner = Ether(o.inner)
                    self.assertLessEqual(inner[IP].len, mtu)
                    self.assertTrue(ipv4_checksum_ok(o.inner[14:34]), "fragment header checksum")
                    if not o.v6:
                        self.assertTrue(o.ip.flags.DF and not o.ip.flags.MF and o.ip.frag == 0,
                                        "the outer packet is not a fragment")
                whole = defragment([Ether(o.inner)[IP] for o in outs])
                self.assertEqual(len(whole), 1)
                exp = expected_routed(f, peer.dst_mac, PORT_MACS[peer.lines[0].port])
                self.assertEqual(bytes(whole[0])[20:], bytes(exp)[34:], "reassembled payload")
                self.assertEqual(whole[0].ttl, 63)
        with self.subTest(case="rate limit per source"):
            flood_icmp = len(icmp4) - 1
            c = run.counters["icmp"]
            self.assertGreaterEqual(flood_icmp, 19)  # the bucket holds 20 (one went to big4)
            self.assertLessEqual(flood_icmp, 24)
            self.assertEqual(c["rate_limited"], 30 - flood_icmp)
            self.assertEqual(c["not_allowed"], 1, "the too-big ICMP error is not answered")
            self.assertEqual(c["frag_needed"], len(icmp4))
            self.assertEqual(c["packet_too_big"], 2)
        self.assertEqual(run.counters["fragmentation"], {"packets": 2, "fragments": 4})
        self.assert_drops(run, {"too-big": 3 + 1 + 30})


MAPPED4, MAPPED6 = "10.99.0.10", "fd00:99::10"  # HOST4, HOST6 as the other sites see them


class MappedRangePcapTest(FastPathTestCase):

    def test_11_mapped_ranges(self):
        """The LAN's ranges mapped 1:1 at this site (issue 15): sources mapped
        into the tunnel, destinations unmapped out of it, checksums right,
        counted per range in show counters."""
        def plan(config):
            config["address-plan"] = {"mapped-ranges": [
                {"name": "lan4", "real": "10.1.0.0/24", "mapped": "10.99.0.0/24", "site": "a"},
                {"name": "lan6", "real": "fd00:1::/64", "mapped": "fd00:99::/64", "site": "a"},
                {"name": "elsewhere", "real": "10.2.0.0/24", "mapped": "10.98.0.0/24",
                 "site": "b"}]}

        peer = PEERS["vx4"]
        out_cases, in_cases, frames_lan, frames_wan = [], [], [], []
        for v6 in (False, True):
            tag = "mapped-out-%s" % ("v6" if v6 else "v4")
            f = lan_packet(peer.host(v6), tag)
            exp = lan_packet(peer.host(v6), tag, src=MAPPED6 if v6 else MAPPED4)
            out_cases.append((tag, f, expected_routed(exp, peer.dst_mac, WAN0_MAC)))
            frames_lan.append(f)
            tag = "mapped-in-%s" % ("v6" if v6 else "v4")
            inner = inner_packet(peer.host(v6, 7), tag, dst=MAPPED6 if v6 else MAPPED4)
            exp = inner_packet(peer.host(v6, 7), tag, dst=HOST6 if v6 else HOST4)
            in_cases.append((tag, expected_routed(exp, HOST_MAC, LAN_MAC)))
            frames_wan.append(tunnel_packet(peer.lines[0], peer.encap, inner))
        run = self.run_gateway("mapped", {"lan0": frames_lan, "wan0": frames_wan},
                               edit_config=plan)
        for tag, f, exp in out_cases:
            with self.subTest(case=tag):
                raw = self.one(run.out["wan0"], tag, tag)
                self.check_encap(raw, f, peer, peer.lines[0], tag, exp_inner=exp)
        for tag, exp in in_cases:
            with self.subTest(case=tag):
                self.check_routed(self.one(run.out["lan0"], tag, tag), exp, tag)
        self.assert_drops(run, {})
        self.assertEqual(run.counters["mapped"], [
            {"name": "lan4", "tenant": "blue", "real": "10.1.0.0/24", "mapped": "10.99.0.0/24",
             "out": 1, "in": 1},
            {"name": "lan6", "tenant": "blue", "real": "fd00:1::/64", "mapped": "fd00:99::/64",
             "out": 1, "in": 1}])


def main():
    global MCGWD, MCGWCTL, KEEP
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mcgwd", required=True)
    ap.add_argument("--mcgwctl", required=True)
    ap.add_argument("--keep", action="store_true", help="keep each case's directory")
    args, rest = ap.parse_known_args()
    MCGWD, MCGWCTL, KEEP = args.mcgwd, args.mcgwctl, args.keep
    for tool in (MCGWD, MCGWCTL):
        if not os.access(tool, os.X_OK):
            sys.exit("%s: not executable" % tool)
    if not os.access(TSHARK, os.X_OK):
        sys.exit("tshark not found")
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
