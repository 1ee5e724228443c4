#!/usr/bin/python3
"""Lab test: MSS clamping and path MTU (issue 5), af_xdp, VXLAN over IPv4
unless said otherwise, hosts with MTU 1500.  One scenario per run (each its own ctest entry):

  lab_pmtu_test.py mss | mss-geneve-ipv6 | icmp | shrink | probe | blackhole | df

mss    The plain lab (1500-byte underlay).  show tunnels: line1 path_mtu 1500,
       inner_mtu 1450, mss4 1410, mss6 1390 in both gateways.  iperf3 10 MiB
       A->B and B->A over inner IPv4 and IPv6; tcpdump on both hosts' eth0:
       every SYN and SYN-ACK arrives with MSS <= 1410 (IPv4) / <= 1390 (IPv6)
       although it left the other host with 1460 / 1440.  No outer IP
       fragment on the router's a1 a2 b1 b2; no too-big drop.
mss-geneve-ipv6  The same with Geneve over an IPv6 underlay: inner_mtu 1430, MSS
       1390 / 1370, no outer IPv6 fragment header.
icmp   rtr forwards at most 1400 bytes out of a1 and b1 (every A<->B packet on
       line 1; Options.rtr_mtu) and sends frag-needed / Packet Too Big; probing
       off.  DF datagrams from each host, 1500 bytes first and then filling
       the MTU its kernel learned (as PMTUD does), make each gateway learn
       path_mtu 1400 (source icmp; inner_mtu 1350, mss4 1310, mss6 1290) and
       then answer the host itself: hosta's kernel caches mtu 1350 towards
       10.2.0.10 and fd00:b::10 (`ip route get`), hostb likewise, from ICMP
       sent by 10.1.0.1 / fd00:a::1 (10.2.0.1 / fd00:b::1).  Then, with the
       hosts' caches flushed, 10 MiB both ways, IPv4 and IPv6, SYNs clamped to
       <= 1310 / 1290; no outer fragment.
shrink The path narrows to 1400 (as in icmp, probing off) 1.5 s into two
       paced TCP transfers (A->B IPv4, B->A IPv6, 20 Mbit/s, 10 MiB): both
       gateways learn it from rtr's ICMP (within 10 s; printed), tell the
       senders (frag-needed from 10.1.0.1 / PTB from fd00:b::1, MTU 1350,
       tcpdump on the hosts; `ip route get`), and both transfers complete.
probe  As icmp, but rtr drops ICMP (nft: all IPv4 ICMP and ICMPv6 errors) and
       the gateways probe (path-mtu: probe true, probe-interval 2): both find
       line1's MTU (source probe, exactly 1400) within 30 s (the time is
       printed; about 2 s) while line2 stays at 1500; nft's counter shows
       that rtr's frag-needed/PTB were dropped; the hosts get ICMP from their
       gateway for the probed MTU; 10 MiB both ways, IPv4 and IPv6; no outer
       fragment.
blackhole  Issue 11.  Probing on with the defaults (a keepalive every second).
       Healthy first: once every A-B line's probing is ok and a few
       keepalives later, no probe of theirs was lost (probes_lost 0; the
       first rounds of the gateway that starts first are refused by the
       other's kernel, not lost).  Then two paced TCP transfers (A->B IPv4,
       B->A IPv6, 40 Mbit/s, 20 MiB) and, 1.5 s in, rtr drops all ICMP
       errors (nft) and narrows line 1 to 1400 both ways: both gateways
       learn path_mtu 1400 (source probe) in < 5 s of the cut (printed;
       about 1-2 s), the senders get frag-needed / PTB from their gateway
       (MTU 1350), both transfers complete and the longest stall of each is
       printed (0.1 s intervals at the receiver); line 2 lost no probe.
df     UDP datagrams of 1472 bytes (1500-byte packets) from hosta to hostb:
       without DF they arrive whole (hostb reassembles what gwa fragmented
       before encapsulation: inner fragments on the wire, no outer one); with
       DF hosta gets ICMP frag-needed from 10.1.0.1 with MTU 1450 quoting its
       packet (socket error queue, tcpdump at hosta, `ip route get`), nothing
       reaches hostb, and a 1450-byte packet with DF then does; the same from
       hostb (10.2.0.1); IPv6: Packet Too Big from fd00:a::1 with MTU 1450.

Failures print what was seen; show tunnels and counters of both gateways are
printed when a scenario fails.  Run as root with /usr/bin/python3;
MCGW_BUILD_DIR names the build.  Helpers run inside the namespaces:
  lab_pmtu_test.py udp-send DST PORT SIZE [--df] [--count N] [--interval S] [--stop-below MTU]
  lab_pmtu_test.py udp-recv PORT
"""

import argparse
import errno
import json
import os
import re
import secrets
import select
import socket
import struct
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(HERE))
import mcgwlab  # noqa: E402
from labtest import check, ok, run_parts  # noqa: E402

BUILD = Path(os.environ.get("MCGW_BUILD_DIR", HERE.parents[1] / "build"))
MIB10 = 10 << 20
NARROW = 1400  # the narrowed underlay in icmp and probe
OVERHEAD = 50  # VXLAN over IPv4: 14 + 20 + 8 + 8
ADDR = {"hosta": ("10.1.0.10", "fd00:a::10"), "hostb": ("10.2.0.10", "fd00:b::10")}
GW_LAN = {"hosta": ("10.1.0.1", "fd00:a::1"), "hostb": ("10.2.0.1", "fd00:b::1")}
OTHER = {"hosta": "hostb", "hostb": "hosta"}
# Outer (or any) IP fragments: IPv4 MF or offset, IPv6 with a Fragment header next.
FRAGMENTS = "(ip and ip[6:2] & 0x3fff != 0) or (ip6 and ip6[6] == 44)"
SYNS = "(ip and tcp and tcp[13] & 2 != 0) or (ip6 and ip6[6] == 6 and ip6[53] & 2 != 0)"
ICMP_ERRORS = "(icmp and icmp[0] == 3) or (icmp6 and ip6[40] == 2)"

# socket options (linux/in.h, linux/in6.h)
IP_MTU_DISCOVER, IP_RECVERR, IP_MTU = 10, 11, 14
IPV6_MTU, IPV6_MTU_DISCOVER, IPV6_RECVERR, IPV6_DONTFRAG = 24, 23, 25, 62
PMTUDISC_DONT, PMTUDISC_DO = 0, 2
MSG_ERRQUEUE = 0x2000


# --------------------------------------------------------------------------
# helpers that run inside a namespace


def payload(seq: int, size: int) -> bytes:
    return bytes((seq + i) & 0xFF for i in range(size))


def udp_send(dst: str, port: int, size: int, df: bool, count: int, interval: float,
             stop_below: int | None, fill: bool = False) -> dict:
    """Send `count` UDP datagrams of `size` bytes to dst:port on a connected
    socket, DF (IPv4: IP_PMTUDISC_DO; IPv6: IPV6_DONTFRAG) or not; collect
    what each send returned, the socket's error queue (ICMP errors with type,
    code, info = MTU and the offender's address) and the path MTU
    (IP_MTU/IPV6_MTU) after each send.  stop_below: stop once that is lower.
    fill: after the first, each datagram fills the current path MTU (as a
    PMTUD sender does), so a too-big packet quoted by ICMP is retried at the
    MTU the ICMP announced."""
    v6 = ":" in dst
    s = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET, socket.SOCK_DGRAM)
    if v6:
        s.setsockopt(socket.IPPROTO_IPV6, IPV6_MTU_DISCOVER, PMTUDISC_DO if df else PMTUDISC_DONT)
        s.setsockopt(socket.IPPROTO_IPV6, IPV6_DONTFRAG, 1 if df else 0)
        s.setsockopt(socket.IPPROTO_IPV6, IPV6_RECVERR, 1)
    else:
        s.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, PMTUDISC_DO if df else PMTUDISC_DONT)
        s.setsockopt(socket.IPPROTO_IP, IP_RECVERR, 1)
    s.connect((dst, port))
    sends, errors, mtus = [], [], []

    def drain() -> None:
        while True:
            try:
                _, anc, _, _ = s.recvmsg(2048, 1024, MSG_ERRQUEUE | socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            for _level, _type, data in anc:
                ee_errno, origin, typ, code, _pad, info, _data = struct.unpack("=IBBBBII", data[:16])
                off = data[16:]
                fam = struct.unpack("=H", off[:2])[0] if len(off) >= 2 else 0
                who = (socket.inet_ntop(socket.AF_INET, off[4:8]) if fam == socket.AF_INET else
                       socket.inet_ntop(socket.AF_INET6, off[8:24]) if fam == socket.AF_INET6 else None)
                errors.append({"errno": errno.errorcode.get(ee_errno, ee_errno),
                               "origin": {0: "none", 1: "local", 2: "icmp", 3: "icmp6"}.get(origin, origin),
                               "type": typ, "code": code, "info": info, "offender": who})

    header = 48 if v6 else 28
    for seq in range(count):
        if fill and mtus:
            size = mtus[-1] - header
        try:
            s.send(payload(seq, size))
            sends.append("sent")
        except OSError as e:
            sends.append(errno.errorcode.get(e.errno, str(e.errno)))
        deadline = time.monotonic() + interval
        while (left := deadline - time.monotonic()) > 0:
            select.select([], [], [s], left)  # the error queue readies "exceptional" conditions
            drain()
            time.sleep(min(0.02, max(left, 0)))
        drain()
        mtu = s.getsockopt(socket.IPPROTO_IPV6, IPV6_MTU) if v6 else s.getsockopt(socket.IPPROTO_IP, IP_MTU)
        mtus.append(mtu)
        if stop_below and mtu < stop_below:
            break
    return {"sends": sends, "errors": errors, "mtus": mtus, "mtu": mtus[-1] if mtus else None}


def udp_recv(port: int) -> None:
    """Print one JSON line per datagram received on [::]:port (IPv4 too):
    its length, source, first byte (the sequence number) and whether the
    bytes are the ones udp_send sent."""
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.bind(("::", port))
    while True:
        data, addr = s.recvfrom(65535)
        src = addr[0].removeprefix("::ffff:")
        print(json.dumps({"len": len(data), "src": src, "seq": data[0] if data else None,
                          "intact": bool(data) and data == payload(data[0], len(data))}), flush=True)


# --------------------------------------------------------------------------
# lab side


def new_lab(tmp: Path, scenario: str, **opts) -> mcgwlab.Lab:
    prefix = f"pmtu-{scenario}-{secrets.token_hex(3)}-"
    return mcgwlab.Lab(prefix=prefix, workdir=tmp / prefix.rstrip("-"), options=mcgwlab.Options(**opts),
                       build_dir=BUILD)


def show(lab, gw: str, what: str) -> dict:
    return json.loads(lab.ctl(gw, "show", what, "--json", check=True).stdout)


def line(lab, gw: str, name: str = "line1") -> dict:
    """The A-B tunnel's line `name` in `show tunnels --json` of gateway `gw`,
    with the tunnel's mss4/mss6 filled in where the line has none."""
    t = next(t for t in show(lab, gw, "tunnels")["tunnels"] if t["peer"] in ("site-a", "site-b"))
    ln = dict(next(x for x in t["lines"] if x["name"] == name))
    for k in ("mss4", "mss6"):
        if k not in ln and k in t:
            ln[k] = t[k]
    return ln


PMTU_KEYS = ("path_mtu", "path_mtu_source", "path_mtu_reason", "mtu", "inner_mtu", "mss4", "mss6", "probe")


def brief(ln: dict) -> dict:
    return {k: ln.get(k, "(absent)") for k in PMTU_KEYS}


def wait_for(pred, timeout: float, step: float = 0.2):
    """Poll pred() until it returns something true, or `timeout` seconds; its last value."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(step)


def check_line(lab, gw: str, path_mtu: int, sources: tuple, name: str = "line1", overhead: int = OVERHEAD) -> dict:
    ln = line(lab, gw, name)
    inner = path_mtu - overhead
    check(ln.get("path_mtu") == path_mtu and ln.get("path_mtu_source") in sources
          and ln.get("inner_mtu") == inner,
          f"{gw} {name}: want path_mtu {path_mtu} (source {'|'.join(sources)}), inner_mtu {inner}", brief(ln))
    if name == "line1":
        check(ln.get("mss4") == inner - 40 and ln.get("mss6") == inner - 60,
              f"{gw}: want mss4 {inner - 40}, mss6 {inner - 60}", brief(ln))
    return ln


def diagnostics(lab) -> None:
    """What the gateways say, for a failed scenario: each line's path MTU
    state and counters, the counters that are not zero, the hosts' cached
    path MTUs, the router's nft counters."""
    def nonzero(d):
        """Numbers that are not zero, with the labels (strings, booleans) of
        the objects that hold some; None when nothing is left."""
        if isinstance(d, dict):
            sub = {k: nonzero(v) for k, v in d.items() if k not in ("workers", "schema")}
            if not any(v is not None and not isinstance(v, (str, bool)) for v in sub.values()):
                return None
            return {k: v for k, v in sub.items() if v is not None}
        if isinstance(d, list):
            items = [x for x in (nonzero(v) for v in d) if x is not None]
            return items or None
        if isinstance(d, (int, float)) and not isinstance(d, bool):
            return d or None
        return d

    for gw in ("gwa", "gwb"):
        r = lab.ctl(gw, "show", "tunnels", "--json")
        try:
            for t in json.loads(r.stdout)["tunnels"]:
                print(f"--- {gw} tunnel {t['peer']}: active {t.get('active_lines')}, "
                      f"{ {k: v for k, v in t.items() if k not in ('lines', 'peer', 'active_lines')} }",
                      file=sys.stderr)
                for ln in t["lines"]:
                    print(f"      {ln['name']}: {brief(ln)} up {ln.get('up')} counters {ln.get('counters')}",
                          file=sys.stderr)
        except (json.JSONDecodeError, KeyError):
            print(f"--- {gw}: show tunnels (exit {r.returncode}): {r.stdout}{r.stderr}", file=sys.stderr)
        r = lab.ctl(gw, "show", "counters", "--json")
        try:
            print(f"--- {gw} counters (not zero): {json.dumps(nonzero(json.loads(r.stdout)))}", file=sys.stderr)
        except json.JSONDecodeError:
            print(f"--- {gw}: show counters (exit {r.returncode}): {r.stdout}{r.stderr}", file=sys.stderr)
    for node in ("hosta", "hostb"):
        cache = [lab.run(node, "ip", *f, "route", "show", "cache", check=False).stdout.strip() for f in ([], ["-6"])]
        print(f"--- {node} route cache: {' | '.join(c for c in cache if c) or '(empty)'}", file=sys.stderr)
    if lab.options.rtr_drop_icmp:
        print(f"--- rtr nft counters: {lab.nft_counters('rtr')}", file=sys.stderr)


def start_receiver(lab, node: str, port: int) -> str:
    name = f"udp-recv-{node}-{port}"
    lab.start(name, node, "/usr/bin/python3", Path(__file__).resolve(), "udp-recv", port)
    got = wait_for(lambda: lab.run(node, "ss", "-Hlun", f"sport = :{port}", check=False).stdout.strip(), 10, 0.05)
    check(got, f"UDP receiver on {node} port {port} listening")
    return name


def received(lab, name: str) -> list[dict]:
    log = lab.dir / f"{name}.log"
    return [json.loads(x) for x in log.read_text().splitlines() if x.startswith("{")]


def send(lab, node: str, dst: str, port: int, size: int, df: bool, count: int = 3, interval: float = 0.3,
         stop_below: int | None = None, fill: bool = False) -> dict:
    argv = ["/usr/bin/python3", Path(__file__).resolve(), "udp-send", dst, port, size, "--count", count,
            "--interval", interval]
    if df:
        argv.append("--df")
    if stop_below:
        argv += ["--stop-below", stop_below]
    if fill:
        argv.append("--fill")
    r = lab.run(node, *argv, timeout=count * (interval + 1) + 10)
    return json.loads(r.stdout)


def route_mtu(lab, node: str, dst: str) -> int | None:
    """The MTU `ip route get` reports towards dst (a cached PMTU), None without one."""
    out = lab.run(node, "ip", *(["-6"] if ":" in dst else []), "route", "get", dst).stdout
    m = re.search(r"\bmtu (?:lock )?(\d+)", out)
    return int(m.group(1)) if m else None


def flush_route_caches(lab) -> None:
    for node in ("hosta", "hostb"):
        lab.run(node, "ip", "route", "flush", "cache")
        lab.run(node, "ip", "-6", "route", "flush", "cache")


def fragment_captures(lab) -> dict:
    return {i: lab.capture("rtr", i, name=f"frag-rtr-{i}", bpf_filter=[FRAGMENTS], snaplen=96)
            for i in ("a1", "a2", "b1", "b2")}


def check_no_fragments(caps: dict) -> None:
    seen = {}
    for i, c in caps.items():
        c.stop()
        rows = c.fields("ip.src", "ip.dst", "ipv6.src", "ipv6.dst", "ip.flags.mf", "ip.frag_offset", "ip.len")
        if rows:
            seen[i] = (len(rows), rows[:3])
    check(not seen, "IP fragments on the underlay (rtr interface: count, first ones)", seen)


def syn_captures(lab) -> dict:
    return {h: lab.capture(h, "eth0", name=f"syn-{h}", bpf_filter=[SYNS], snaplen=128) for h in ("hosta", "hostb")}


def syns(cap) -> list[dict]:
    out = []
    for r in cap.fields("ip.src", "ipv6.src", "ip.dst", "ipv6.dst", "tcp.flags.ack", "tcp.options.mss_val",
                        display_filter="tcp.flags.syn == 1"):
        r += [""] * (6 - len(r))
        out.append({"src": r[0] or r[1], "dst": r[2] or r[3], "synack": r[4] in ("1", "True"),
                    "mss": int(r[5]) if r[5] else None})
    return out


def check_mss(caps: dict, mss4: int, mss6: int) -> str:
    """Every SYN and SYN-ACK between the hosts: as received, MSS <= mss4/mss6;
    as sent, 1460/1440 (the hosts' own, so the gateways lowered it)."""
    for c in caps.values():
        c.stop()
    seen = {h: syns(c) for h, c in caps.items()}
    summary = []
    for host, other in OTHER.items():
        for fam, (limit, own) in enumerate(((mss4, 1460), (mss6, 1440))):
            peer_addr, my_addr = ADDR[other][fam], ADDR[host][fam]
            got = [p for p in seen[host] if p["src"] == peer_addr and p["dst"] == my_addr]
            sent = [p for p in seen[host] if p["src"] == my_addr and p["dst"] == peer_addr]
            for synack in (False, True):
                kind = "SYN-ACK" if synack else "SYN"
                rx = [p["mss"] for p in got if p["synack"] == synack]
                tx = [p["mss"] for p in sent if p["synack"] == synack]
                check(rx and all(m is not None and m <= limit for m in rx),
                      f"{kind}s {peer_addr} -> {my_addr} as received by {host}: MSS <= {limit}", rx)
                check(tx and all(m == own for m in tx), f"{kind}s {my_addr} -> {peer_addr} as sent by {host}: "
                      f"MSS {own} (the host's own)", tx)
                summary.append(f"{kind} {peer_addr}->{my_addr} {max(rx)}")
    return ", ".join(summary)


def transfers(lab, what: str, timeout: float = 30) -> list[str]:
    """iperf3 10 MiB A->B, B->A over IPv4 and IPv6 (each normally takes a
    second or two); what went wrong (checked by the caller after the MSS, so
    a failed transfer does not hide what the SYNs carried)."""
    failed = []
    for sender, v6 in (("hosta", False), ("hostb", False), ("hosta", True), ("hostb", True)):
        receiver = OTHER[sender]
        what_ = f"{what}: TCP {sender} -> {receiver} IPv{6 if v6 else 4}"
        try:
            t = lab.iperf(sender, receiver, v6=v6, nbytes=MIB10, timeout=timeout)
        except mcgwlab.LabError as e:
            failed.append(f"{what_}: {e}")
            print(f"   {what_}: FAILED (the other transfers not tried)", flush=True)
            break
        if t.bytes < MIB10:
            failed.append(f"{what_}: 10 MiB not received: {t}")
        print(f"   {t}", flush=True)
    return failed


def too_big_drops(lab) -> dict:
    return {gw: show(lab, gw, "counters")["drops"].get("too-big") for gw in ("gwa", "gwb")}


def icmp_errors(cap) -> list[dict]:
    """ICMP frag-needed and ICMPv6 Packet Too Big in a capture: sender, MTU,
    and the packet they quote (source, destination, length)."""
    out = []
    for r in cap.fields("ip.src", "ipv6.src", "icmp.type", "icmp.code", "icmp.mtu", "icmpv6.type", "icmpv6.mtu",
                        "ip.dst", "ipv6.dst", "ip.len", "ipv6.plen",
                        display_filter="(icmp.type == 3 and icmp.code == 4) or icmpv6.type == 2"):
        r += [""] * (11 - len(r))
        v4, v6 = r[0].split(","), r[1].split(",")
        if r[2]:
            out.append({"from": v4[0], "mtu": int(r[4] or 0), "quoted_src": v4[-1],
                        "quoted_dst": r[7].split(",")[-1], "quoted_len": int(r[9].split(",")[-1] or 0)})
        else:
            out.append({"from": v6[0], "mtu": int(r[6] or 0), "quoted_src": v6[-1],
                        "quoted_dst": r[8].split(",")[-1], "quoted_len": int(r[10].split(",")[-1] or 0) + 40})
    return out


def scenario(lab, body) -> None:
    t0 = time.monotonic()
    with lab.up(start_gateways=True):
        print(f"   lab {lab.prefix} up in {time.monotonic() - t0:.1f} s", flush=True)
        try:
            body(lab)
        except Exception:
            diagnostics(lab)
            raise
    check(not [n for n in mcgwlab.list_netns() if n.startswith(lab.prefix)], "namespaces left")
    print(f"   {time.monotonic() - t0:.1f} s", flush=True)


# --------------------------------------------------------------------------
# the scenarios


def mss(tmp: Path, encap: str = "vxlan", underlay: str = "ipv4") -> None:
    overhead = OVERHEAD + (20 if underlay == "ipv6" else 0)  # Geneve without options: 8 bytes, as VXLAN
    inner = 1500 - overhead
    mss4, mss6 = inner - 40, inner - 60

    def body(lab):
        frags = fragment_captures(lab)
        caps = syn_captures(lab)
        failed = transfers(lab, f"1500-byte underlay ({encap}, {underlay})")
        seen = check_mss(caps, mss4, mss6)
        check(not failed, "transfers", "\n".join(failed))
        ok(f"{encap}/{underlay}: 10 MiB A->B and B->A over IPv4 and IPv6; SYN/SYN-ACK MSS as received: {seen} "
           "(sent with 1460/1440)")
        check_no_fragments(frags)
        drops = too_big_drops(lab)
        check(drops == {"gwa": 0, "gwb": 0}, "too-big drops", drops)
        mss_c = {gw: show(lab, gw, "counters").get("mss", {}) for gw in ("gwa", "gwb")}
        check(all(c.get("clamped", 0) >= 4 and c.get("malformed") == 0 for c in mss_c.values()),
              "counters mss: each gateway clamped the SYN or SYN-ACK its host sent for each of the 4 "
              "transfers (clamped >= 4), none malformed", mss_c)
        ok(f"no IP fragment on rtr a1 a2 b1 b2; no too-big drop; MSS clamped by gwa {mss_c['gwa']['clamped']}, "
           f"gwb {mss_c['gwb']['clamped']} times")
        for gw in ("gwa", "gwb"):
            ln = check_line(lab, gw, 1500, ("configured", "probe"), overhead=overhead)
        ok(f"show tunnels: line1 path_mtu 1500 ({ln.get('path_mtu_source')}), inner_mtu {inner}, mss4 {mss4}, "
           f"mss6 {mss6} in both gateways")

    scenario(new_lab(tmp, "mss" if encap == "vxlan" else "mss6", encap=encap, underlay=underlay), body)


def learn_from_hosts(lab, want: int, timeout: float) -> dict:
    """Each host sends DF datagrams filling its path MTU towards the other
    (1500 bytes first, then what ICMP announced), IPv4 then IPv6, until its
    kernel has path MTU `want` for it: the gateway first answers 1500 with its
    inner MTU; a packet of that size, if the narrower underlay drops it, tells
    the gateway the path MTU (rtr's ICMP or probing), and the gateway answers
    the next one with `want`.  Checked: IP_MTU, `ip route get`, and tcpdump on
    the host: every frag-needed/PTB came from its gateway's LAN address, quotes
    a packet of the host's bigger than the MTU it announces, the last says `want`."""
    icmp = {h: lab.capture(h, "eth0", name=f"icmp-{h}", bpf_filter=[ICMP_ERRORS]) for h in ("hosta", "hostb")}
    reports = {}
    for host in ("hosta", "hostb"):
        for fam, size in ((0, 1472), (1, 1452)):
            dst = ADDR[OTHER[host]][fam]
            reports[(host, fam)] = r = send(lab, host, dst, 9000, size, df=True, count=int(timeout / 0.3),
                                            interval=0.3, stop_below=want + 1, fill=True)
            check(r["mtu"] == want, f"{host} -> {dst}: DF datagrams filling the path MTU: path MTU "
                  f"(IP{'V6' if fam else ''}_MTU) {want} learned within {timeout} s", r)
    for c in icmp.values():
        c.stop()
    seen = {h: icmp_errors(c) for h, c in icmp.items()}
    for host in ("hosta", "hostb"):
        for fam in (0, 1):
            dst = ADDR[OTHER[host]][fam]
            m = route_mtu(lab, host, dst)
            check(m == want, f"{host}: ip{' -6' if fam else ''} route get {dst}: mtu {want}", m)
            errs = [e for e in seen[host] if e["quoted_dst"] == dst]
            check(errs and all(e["from"] == GW_LAN[host][fam] and e["quoted_src"] == ADDR[host][fam]
                               and e["quoted_len"] > e["mtu"] for e in errs) and errs[-1]["mtu"] == want,
                  f"{host}: frag-needed/PTB (tcpdump on {host} eth0) all from its gateway {GW_LAN[host][fam]}, "
                  f"quoting its packets to {dst}, the last with MTU {want}", errs)
    return reports


def sends(reports: dict) -> str:
    return ", ".join(f"{h} IPv{6 if fam else 4} {len(r['sends'])}" for (h, fam), r in reports.items())


def icmp(tmp: Path) -> None:
    def body(lab):
        for gw in ("gwa", "gwb"):
            check_line(lab, gw, 1500, ("configured",))
        frags = fragment_captures(lab)
        t0 = time.monotonic()
        reports = learn_from_hosts(lab, NARROW - OVERHEAD, 10)
        dt = time.monotonic() - t0
        for gw in ("gwa", "gwb"):
            ln = check_line(lab, gw, NARROW, ("icmp",))
            pc = ln.get("path_mtu_counters", {})
            check(ln.get("probe") == "off" and pc.get("icmp_accepted", 0) >= 1 and pc.get("probes_sent") == 0,
                  f"{gw} line1: probe off, path_mtu_counters icmp_accepted >= 1, probes_sent 0", ln)
            check_line(lab, gw, 1500, ("configured",), "line2")
            ic = show(lab, gw, "counters").get("icmp", {})
            check(ic.get("frag_needed", 0) >= 1 and ic.get("packet_too_big", 0) >= 1,
                  f"{gw} counters icmp: frag_needed and packet_too_big sent to its host", ic)
        ok(f"rtr's frag-needed/PTB taught both gateways line1 path_mtu {NARROW} (source icmp; inner_mtu "
           f"{NARROW - OVERHEAD}, mss4 {NARROW - OVERHEAD - 40}, mss6 {NARROW - OVERHEAD - 60}; line2 1500); "
           f"the hosts then got frag-needed/PTB from their gateway's LAN address and cache mtu "
           f"{NARROW - OVERHEAD} towards each other (IPv4 and IPv6), in {dt:.1f} s; DF datagrams sent "
           f"(0.3 s apart): {sends(reports)}")
        flush_route_caches(lab)
        caps = syn_captures(lab)
        failed = transfers(lab, f"underlay {NARROW}")
        seen = check_mss(caps, NARROW - OVERHEAD - 40, NARROW - OVERHEAD - 60)
        check(not failed, "transfers", "\n".join(failed))
        ok(f"10 MiB A->B and B->A over IPv4 and IPv6 through the {NARROW}-byte path; MSS as received: {seen}")
        check_no_fragments(frags)
        ok("no IP fragment on rtr a1 a2 b1 b2")

    scenario(new_lab(tmp, "icmp", rtr_mtu={"a1": NARROW, "b1": NARROW}, path_mtu={"probe": False}), body)


def probe(tmp: Path) -> None:
    def body(lab):
        t0 = time.monotonic()
        frags = fragment_captures(lab)

        def learned():
            lines = {gw: line(lab, gw) for gw in ("gwa", "gwb")}
            done = all(ln.get("path_mtu_source") == "probe" and (ln.get("path_mtu") or 1500) <= NARROW
                       for ln in lines.values())
            return lines if done else None

        got = wait_for(learned, 30, 0.5)
        dt = time.monotonic() - t0
        check(got, f"both gateways' line1 path MTU probed (source probe, <= {NARROW}) within 30 s",
              {gw: brief(line(lab, gw)) for gw in ("gwa", "gwb")})
        pm = {gw: ln["path_mtu"] for gw, ln in got.items()}
        # The search narrows its range to one byte (docs/architecture.md "Path MTU").
        check(all(m == NARROW for m in pm.values()), f"probed path MTU exactly {NARROW}", pm)
        for gw in ("gwa", "gwb"):
            check_line(lab, gw, pm[gw], ("probe",))
            check_line(lab, gw, 1500, ("probe", "configured"), "line2")
            ln = wait_for(lambda: (x := line(lab, gw)).get("probe") == "ok" and x, 10, 0.5) or line(lab, gw)
            pc = ln.get("path_mtu_counters", {})
            check(ln.get("probe") == "ok" and pc.get("icmp_accepted") == 0 and pc.get("probes_lost", 0) > 0
                  and pc.get("probes_answered", 0) > 0 and pc.get("searches", 0) >= 1,
                  f"{gw} line1: probe ok; path_mtu_counters: no ICMP accepted, probes lost and answered, "
                  "a search", ln)
        dropped = lab.nft_counters("rtr")
        check(dropped.get("toobig", 0) > 0, "rtr's frag-needed/PTB dropped by nft (counter toobig)", dropped)
        ok(f"ICMP dropped on rtr ({dropped.get('toobig')} frag-needed/PTB dropped): probing found line1's "
           f"path MTU {pm['gwa']} (gwa) / {pm['gwb']} (gwb) in {dt:.1f} s; line2 stays 1500")
        check(pm["gwa"] == pm["gwb"], "both gateways probe the same MTU", pm)
        reports = learn_from_hosts(lab, pm["gwa"] - OVERHEAD, 5)
        ok(f"the hosts got frag-needed/PTB with MTU {pm['gwa'] - OVERHEAD} from their gateways (IPv4, IPv6); "
           f"DF datagrams sent: {sends(reports)}")
        flush_route_caches(lab)
        caps = syn_captures(lab)
        failed = transfers(lab, f"underlay {NARROW}, ICMP dropped")
        seen = check_mss(caps, pm["gwa"] - OVERHEAD - 40, pm["gwa"] - OVERHEAD - 60)
        check(not failed, "transfers", "\n".join(failed))
        ok(f"10 MiB A->B and B->A over IPv4 and IPv6 through the black-holed {NARROW}-byte path; MSS: {seen}")
        check_no_fragments(frags)
        ok("no IP fragment on rtr a1 a2 b1 b2")

    scenario(new_lab(tmp, "probe", rtr_mtu={"a1": NARROW, "b1": NARROW}, rtr_drop_icmp=True,
                     path_mtu={"probe": True, "probe-interval": 2}), body)


FLOWS = [("A->B IPv4", "hosta", False), ("B->A IPv6", "hostb", True)]


def start_transfers(lab, results: dict, **iperf) -> list:
    """One paced iperf3 transfer per FLOWS entry, each in a thread; its
    Transfer (or the exception) lands in results[key]."""
    def transfer(key, sender, v6):
        try:
            results[key] = lab.iperf(sender, OTHER[sender], v6=v6, **iperf)
        except Exception as e:  # noqa: BLE001 - reported by the caller
            results[key] = e

    threads = [threading.Thread(target=transfer, args=f) for f in FLOWS]
    for th in threads:
        th.start()
    return threads


def shrink(tmp: Path) -> None:
    def body(lab):
        for gw in ("gwa", "gwb"):
            check_line(lab, gw, 1500, ("configured",))
        icmp_caps = {h: lab.capture(h, "eth0", name=f"icmp-{h}", bpf_filter=[ICMP_ERRORS]) for h in OTHER}
        frags = fragment_captures(lab)
        results: dict = {}
        flows = FLOWS
        threads = start_transfers(lab, results, nbytes=MIB10, bitrate="20M", timeout=40)
        time.sleep(1.5)
        t_cut = time.monotonic()
        lab.set_ip_mtu("rtr", "a1", NARROW)
        lab.set_ip_mtu("rtr", "b1", NARROW)
        learned = wait_for(lambda: all(line(lab, gw).get("path_mtu") == NARROW for gw in ("gwa", "gwb")), 10, 0.1)
        dt = time.monotonic() - t_cut
        for th in threads:
            th.join(60)
        check(not any(th.is_alive() for th in threads), "iperf3 did not end")
        for c in icmp_caps.values():
            c.stop()
        check(learned, f"both gateways learned line1 path_mtu {NARROW} within 10 s of the cut",
              {gw: brief(line(lab, gw)) for gw in ("gwa", "gwb")})
        for gw in ("gwa", "gwb"):
            ln = check_line(lab, gw, NARROW, ("icmp",))
            check(ln.get("path_mtu_counters", {}).get("icmp_accepted", 0) >= 1,
                  f"{gw} line1: path_mtu_counters icmp_accepted >= 1", ln)
        for key, sender, v6 in flows:
            t = results.get(key)
            check(isinstance(t, mcgwlab.Transfer) and t.bytes >= MIB10,
                  f"TCP {key} ({sender} sends, 20 Mbit/s) across the cut: 10 MiB received", t)
            print(f"   {key}: {t}", flush=True)
        for _, host, v6 in flows:
            dst, gwaddr = ADDR[OTHER[host]][v6], GW_LAN[host][v6]
            errs = [e for e in icmp_errors(icmp_caps[host]) if e["quoted_dst"] == dst]
            want = NARROW - OVERHEAD
            check(errs and all(e["from"] == gwaddr and e["mtu"] == want and e["quoted_src"] == ADDR[host][v6]
                               and e["quoted_len"] > want for e in errs),
                  f"{host}: frag-needed/PTB for its TCP segments to {dst}, from {gwaddr} with MTU {want}", errs)
            m = route_mtu(lab, host, dst)
            check(m == want, f"{host}: ip route get {dst}: mtu {want}", m)
        ok(f"path narrowed to {NARROW} under two TCP transfers (A->B IPv4, B->A IPv6): both gateways learned it "
           f"from rtr's ICMP within {dt:.1f} s, told their senders (frag-needed from 10.1.0.1, PTB from "
           f"fd00:b::1, MTU {NARROW - OVERHEAD}), both transfers completed")
        check_no_fragments(frags)
        ok("no IP fragment on rtr a1 a2 b1 b2")

    scenario(new_lab(tmp, "shrink", path_mtu={"probe": False}), body)


def stall(t: "mcgwlab.Transfer") -> float:
    """The longest stretch of the transfer in which the receiver got nothing
    (its 0.1 s reporting intervals), in seconds."""
    longest = run = 0.0
    for start, end, nbytes in t.intervals:
        run = run + (end - start) if nbytes == 0 else 0.0
        longest = max(longest, run)
    return longest


def probed(lab, gw: str, name: str = "line1") -> dict:
    """The A-B line's path MTU, source and probe state, and its path_mtu_counters."""
    ln = line(lab, gw, name)
    return {k: ln.get(k) for k in ("path_mtu", "path_mtu_source", "probe")} | ln.get("path_mtu_counters", {})


def blackhole(tmp: Path) -> None:
    gws, lines = ("gwa", "gwb"), ("line1", "line2")

    def body(lab):
        # Healthy: every A-B line's probing settles, then a few keepalives.
        settled = wait_for(lambda: all(line(lab, gw, n).get("probe") == "ok" for gw in gws for n in lines), 20, 0.2)
        check(settled, "probing ok on line1 and line2 of both gateways within 20 s",
              {(gw, n): probed(lab, gw, n) for gw in gws for n in lines})
        time.sleep(3)
        healthy = {(gw, n): probed(lab, gw, n) for gw in gws for n in lines}
        check(all(c.get("probes_lost") == 0 and c.get("probes_answered", 0) >= 6 and c.get("path_mtu") == 1500
                  for c in healthy.values()),
              "healthy path: no probe lost on line1/line2 of either gateway (>= 6 answered each), path_mtu 1500",
              healthy)
        ok("healthy lab: " + ", ".join(f"{gw} {n} {c['probes_answered']} answered, {c['probes_lost']} lost, "
                                       f"{c.get('probes_refused')} refused" for (gw, n), c in healthy.items()))

        icmp_caps = {h: lab.capture(h, "eth0", name=f"icmp-{h}", bpf_filter=[ICMP_ERRORS]) for h in OTHER}
        frags = fragment_captures(lab)
        results: dict = {}
        flows = FLOWS
        threads = start_transfers(lab, results, nbytes=2 * MIB10, bitrate="40M", interval=0.1, timeout=50)
        time.sleep(1.5)
        # The black hole: ICMP errors dropped first, then line 1 narrowed both ways.
        lab.drop_icmp("rtr")
        t_cut = time.monotonic()
        lab.set_ip_mtu("rtr", "a1", NARROW)
        lab.set_ip_mtu("rtr", "b1", NARROW)
        learned: dict = {}
        deadline = t_cut + 10
        while len(learned) < 2 and time.monotonic() < deadline:
            for gw in gws:
                if gw not in learned and line(lab, gw).get("path_mtu") == NARROW:
                    learned[gw] = time.monotonic() - t_cut
            time.sleep(0.05)
        for th in threads:
            th.join(60)
        check(not any(th.is_alive() for th in threads), "iperf3 did not end")
        for c in icmp_caps.values():
            c.stop()
        figures = ", ".join(f"{gw} {dt:.2f} s" for gw, dt in sorted(learned.items()))
        check(len(learned) == 2 and all(dt < 5 for dt in learned.values()),
              f"both gateways learned line1 path_mtu {NARROW} within 5 s of the cut (learned: {figures or 'none'})",
              {gw: probed(lab, gw) for gw in gws})
        for gw in gws:
            ln = check_line(lab, gw, NARROW, ("probe",))
            pc = ln.get("path_mtu_counters", {})
            check(pc.get("icmp_accepted") == 0 and pc.get("searches", 0) >= 1,
                  f"{gw} line1: found by a probe search, no ICMP accepted", ln)
            c2 = probed(lab, gw, "line2")
            check(c2.get("path_mtu") == 1500 and c2.get("probes_lost") == 0,
                  f"{gw} line2 (not narrowed): path_mtu 1500, no probe lost", c2)
        dropped = lab.nft_counters("rtr")
        check(dropped.get("toobig", 0) > 0, "rtr's frag-needed/PTB dropped by nft (counter toobig)", dropped)
        ok(f"black hole (line 1 narrowed to {NARROW}, rtr dropped {dropped.get('toobig')} frag-needed/PTB): "
           f"path MTU {NARROW} learned by probing in {figures} after the cut")

        stalls = []
        for key, sender, v6 in flows:
            t = results.get(key)
            check(isinstance(t, mcgwlab.Transfer) and t.bytes >= 2 * MIB10,
                  f"TCP {key} ({sender} sends, 40 Mbit/s) across the black hole: 20 MiB received", t)
            stalls.append(f"{key} {stall(t):.1f} s")
            print(f"   {key}: {t}; longest stall {stall(t):.1f} s", flush=True)
        for _, host, v6 in flows:
            dst, gwaddr = ADDR[OTHER[host]][v6], GW_LAN[host][v6]
            want = NARROW - OVERHEAD
            errs = [e for e in icmp_errors(icmp_caps[host]) if e["quoted_dst"] == dst]
            check(errs and all(e["from"] == gwaddr and e["mtu"] == want and e["quoted_src"] == ADDR[host][v6]
                               for e in errs),
                  f"{host}: frag-needed/PTB for its TCP segments to {dst}, from {gwaddr} with MTU {want}", errs)
            m = route_mtu(lab, host, dst)
            check(m == want, f"{host}: ip route get {dst}: mtu {want}", m)
        ok(f"both transfers completed (senders told MTU {NARROW - OVERHEAD} by their gateways); longest stall: "
           + ", ".join(stalls))
        check_no_fragments(frags)
        ok("no IP fragment on rtr a1 a2 b1 b2")

    scenario(new_lab(tmp, "bh", path_mtu={"probe": True}), body)


def df(tmp: Path) -> None:
    def body(lab):
        recv_b = start_receiver(lab, "hostb", 9001)
        recv_a = start_receiver(lab, "hosta", 9001)
        frags = fragment_captures(lab)
        line1 = lab.capture("rtr", "b1", name="tunnel-b1", bpf_filter=["udp port 4789"], snaplen=200)
        at_a = lab.capture("hosta", "eth0", name="hosta-eth0", bpf_filter=["icmp or icmp6 or udp port 9001"],
                           snaplen=200)
        flush_route_caches(lab)

        # Without DF: gwa fragments the inner packet; hostb reassembles.
        r = send(lab, "hosta", "10.2.0.10", 9001, 1472, df=False)
        check(r["sends"] == ["sent"] * 3 and not r["errors"], "hosta: 3 datagrams of 1472 bytes without DF", r)
        got = wait_for(lambda: [d for d in received(lab, recv_b) if d["len"] == 1472], 3)
        check(len(got) == 3 and all(d["intact"] and d["src"] == "10.1.0.10" for d in got),
              "hostb: the 3 datagrams of 1472 bytes, intact", received(lab, recv_b))
        line1.stop()
        inner = []
        for f in line1.fields("ip.src", "ip.dst", "ip.flags.mf", "ip.frag_offset", "ip.len", display_filter="vxlan"):
            src, dst, mf, off, ln = (x.split(",") for x in f)
            check(mf[0] in ("0", "False") and off[0] == "0", "outer packet fragmented on rtr b1", f)
            if len(src) > 1 and src[1] == "10.1.0.10" and dst[1] == "10.2.0.10":
                inner.append((mf[1] in ("1", "True"), int(off[1]), int(ln[1])))
        firsts = [x for x in inner if x[0] and x[1] == 0]
        lasts = [x for x in inner if not x[0] and x[1] > 0]
        check(len(firsts) == 3 and len(lasts) == 3 and all(x[2] <= 1450 for x in inner),
              "inner IPv4 fragments A->B on line1 (more-fragments, offset, length): 3 first and 3 last "
              "fragments of at most 1450 bytes", inner)
        ok(f"1500-byte datagrams without DF: gwa fragmented them ({len(inner)} inner fragments of at most "
           f"{max(x[2] for x in inner)} bytes on line1, outer packets whole), hostb received 3 x 1472 bytes intact")

        # With DF: ICMP frag-needed from gwa's LAN address, nothing through.
        r = send(lab, "hosta", "10.2.0.10", 9001, 1472, df=True)
        icmp_err = [e for e in r["errors"] if e["origin"] == "icmp"]
        check(icmp_err and all(e["type"] == 3 and e["code"] == 4 and e["info"] == 1450
                               and e["offender"] == "10.1.0.1" for e in icmp_err),
              "hosta's socket: ICMP frag-needed (3/4) with MTU 1450 from 10.1.0.1 in the error queue", r)
        check(r["mtu"] == 1450 and "EMSGSIZE" in r["sends"],
              "hosta's socket: path MTU 1450, later 1500-byte sends refused (EMSGSIZE)", r)
        check(route_mtu(lab, "hosta", "10.2.0.10") == 1450, "hosta: ip route get 10.2.0.10: mtu 1450",
              lab.run("hosta", "ip", "route", "get", "10.2.0.10").stdout)
        time.sleep(0.3)
        got = [d for d in received(lab, recv_b) if d["len"] == 1472]
        check(len(got) == 3, "hostb: no datagram of 1472 bytes with DF (only the 3 without)", received(lab, recv_b))
        r = send(lab, "hosta", "10.2.0.10", 9001, 1422, df=True, count=1, interval=0.5)
        got = wait_for(lambda: [d for d in received(lab, recv_b) if d["len"] == 1422], 3)
        check(r["sends"] == ["sent"] and len(got) == 1 and got[0]["intact"],
              "hosta -> hostb: a 1450-byte packet with DF (the inner MTU) gets through", (r, received(lab, recv_b)))
        at_a.stop()
        errs = [e for e in icmp_errors(at_a) if e["quoted_dst"] == "10.2.0.10"]
        check(errs and all(e["from"] == "10.1.0.1" and e["mtu"] == 1450 and e["quoted_src"] == "10.1.0.10"
                           and e["quoted_len"] == 1500 for e in errs),
              "tcpdump at hosta: frag-needed from 10.1.0.1, MTU 1450, quoting hosta's 1500-byte packet", errs)
        sent = [f for f in at_a.fields("ip.len", "ip.flags.df", "ip.flags.mf",
                                       display_filter="ip.src == 10.1.0.10 and udp.dstport == 9001")]
        check(sum(1 for f in sent if f == ["1500", "0", "0"] or f == ["1500", "False", "False"]) == 3,
              "hosta sent the 3 datagrams without DF as 1500-byte packets, unfragmented", sent)
        ok(f"1500-byte datagram with DF: frag-needed from 10.1.0.1 with MTU 1450 ({len(icmp_err)} in hosta's "
           "error queue, seen at hosta quoting its packet), hosta caches mtu 1450, nothing through; "
           "a 1450-byte one gets through")

        # The other way, and IPv6.
        r = send(lab, "hostb", "10.1.0.10", 9001, 1472, df=True)
        e4 = [e for e in r["errors"] if e["origin"] == "icmp"]
        check(e4 and all(e["type"] == 3 and e["code"] == 4 and e["info"] == 1450 and e["offender"] == "10.2.0.1"
                         for e in e4) and r["mtu"] == 1450,
              "hostb -> hosta, DF, 1500 bytes: frag-needed with MTU 1450 from 10.2.0.1", r)
        check(not [d for d in received(lab, recv_a) if d["len"] == 1472], "hosta: nothing of 1472 bytes with DF",
              received(lab, recv_a))
        for host in ("hosta", "hostb"):
            dst, gw = ADDR[OTHER[host]][1], GW_LAN[host][1]
            r = send(lab, host, dst, 9001, 1452, df=True)
            e6 = [e for e in r["errors"] if e["origin"] == "icmp6"]
            check(e6 and all(e["type"] == 2 and e["info"] == 1450 and e["offender"] == gw for e in e6)
                  and r["mtu"] == 1450, f"{host} -> {dst}, IPv6, 1500 bytes: Packet Too Big with MTU 1450 "
                  f"from {gw}", r)
            check(route_mtu(lab, host, dst) == 1450, f"{host}: ip -6 route get {dst}: mtu 1450",
                  lab.run(host, "ip", "-6", "route", "get", dst).stdout)
        ok("hostb -> hosta with DF: frag-needed from 10.2.0.1 (MTU 1450); IPv6 both ways: Packet Too Big "
           "from fd00:a::1 / fd00:b::1 with MTU 1450, cached by the hosts")
        check_no_fragments(frags)
        ok("no outer IP fragment on rtr a1 a2 b1 b2")
        c = {gw: show(lab, gw, "counters") for gw in ("gwa", "gwb")}
        summary = {gw: {k: c[gw].get(k) for k in ("drops", "icmp", "fragmentation")} for gw in c}
        fr = c["gwa"].get("fragmentation", {})
        check(fr.get("packets") == 3 and fr.get("fragments") == 6,
              "gwa counters fragmentation: 3 packets in 6 fragments", summary)
        for gw in ("gwa", "gwb"):
            ic = c[gw].get("icmp", {})
            check(1 <= ic.get("frag_needed", 0) <= 3 and 1 <= ic.get("packet_too_big", 0) <= 3,
                  f"{gw} counters icmp: frag_needed and packet_too_big 1..3 (3 datagrams with DF each)", summary)
        ok(f"counters: gwa fragmented 3 packets into 6; ICMP sent by gwa {c['gwa']['icmp']['sent']}, "
           f"gwb {c['gwb']['icmp']['sent']}")

    scenario(new_lab(tmp, "df"), body)


SCENARIOS = {"mss": mss, "mss-geneve-ipv6": lambda tmp: mss(tmp, "geneve", "ipv6"), "icmp": icmp,
             "shrink": shrink, "probe": probe, "blackhole": blackhole, "df": df}


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] in ("udp-send", "udp-recv"):
        ap = argparse.ArgumentParser(prog="lab_pmtu_test.py")
        sub = ap.add_subparsers(dest="cmd", required=True)
        p = sub.add_parser("udp-send")
        p.add_argument("dst")
        p.add_argument("port", type=int)
        p.add_argument("size", type=int)
        p.add_argument("--df", action="store_true")
        p.add_argument("--count", type=int, default=1)
        p.add_argument("--interval", type=float, default=0.3)
        p.add_argument("--stop-below", type=int)
        p.add_argument("--fill", action="store_true")
        p = sub.add_parser("udp-recv")
        p.add_argument("port", type=int)
        a = ap.parse_args()
        if a.cmd == "udp-recv":
            udp_recv(a.port)
            return 0
        print(json.dumps(udp_send(a.dst, a.port, a.size, a.df, a.count, a.interval, a.stop_below, a.fill)))
        return 0
    names = sys.argv[1:] or list(SCENARIOS)
    bad = [n for n in names if n not in SCENARIOS]
    if bad:
        print(f"unknown scenario {' '.join(bad)}; scenarios: {' '.join(SCENARIOS)}", file=sys.stderr)
        return 2
    return run_parts("pmtu", [(n, SCENARIOS[n]) for n in names], log_lines=20)


if __name__ == "__main__":
    sys.exit(main())
