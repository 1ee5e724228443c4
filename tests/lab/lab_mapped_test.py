#!/usr/bin/python3
"""Lab test: 1:1 mapped ranges (issue 15, part 5), af_xdp, VXLAN, IPv4
underlay, Options.overlap.

Sites A and B both use 10.1.0.0/16 (and fd00:a::/56, see IPv6 below):
hosta 10.1.0.10 behind gwa (10.1.0.1), hostb 10.1.1.20 behind router lanb
(10.1.0.3 / 10.1.1.1) behind gwb (10.1.0.2).  The plan maps site A's copy to 10.201.0.0/16 and site B's to
10.202.0.0/16; each gateway translates its own site's (source real ->
mapped before encapsulation, destination mapped -> real after
decapsulation, and the quoted header of ICMP errors), so the hosts reach
each other at hosta 10.201.0.10 and hostb 10.202.1.20.  Arguments: `bgp`
(default; FRR announces each site's mapped ranges) or `static` (static
routes to the mapped ranges), then the underlay, `ipv4` (default) or
`ipv6` (the tunnel carries 1430-byte inner packets instead of 1450).

- bgp: gwa has 10.202.0.0/16 via site-b from FRR and gwb 10.201.0.0/16 via
  site-a (over an IPv6 underlay fd00:202::/56 and fd00:201::/56 too), and
  neither has anything of 10.1.0.0/16 or fd00:a::/56 from FRR or in FRR's
  BGP table (the real ranges are never announced).
- Ping hosta -> 10.202.1.20 and hostb -> 10.201.0.10, 3 of 3 each; tshark:
  hostb sees the requests from 10.201.0.10 to its real 10.1.1.20, hosta sees
  them from 10.202.1.20 to its real 10.1.0.10; between the gateways (rtr a1
  and a2, VXLAN decoded) every inner address is a mapped one, none in
  10.1.0.0/16.
- 10 MiB TCP (iperf3) hosta -> hostb and hostb -> hosta, by mapped addresses.
- Gateway A's own work on a mapped flow sees real addresses: 1500-byte UDP
  from hosta to 10.202.1.20 without DF is fragmented by gwa (the tunnel
  carries 1450; 1430 over an IPv6 underlay) and each fragment mapped: hostb
  receives 3 intact from 10.201.0.10; with DF hosta gets frag-needed with
  MTU 1450 (1430) from gwa's LAN
  address 10.1.0.1 (its socket's error queue: the quote is its own packet).
- Frag-needed for a mapped flow: lanb forwards at most 1400 bytes towards
  hostb (route MTU); hosta sends UDP packets of 1450 (1430) bytes with DF to
  10.202.1.20.  Hosta's socket gets ICMP 3/4 with MTU 1400 from 10.202.0.3
  (lanb's mapped address) in its error queue (the kernel matched the quoted
  header to the socket), caches mtu 1400 towards 10.202.1.20, and a
  1400-byte packet then reaches hostb.  tshark: lanb sends it as 10.1.0.3
  -> 10.201.0.10 quoting 10.201.0.10 -> 10.1.1.20; in the tunnel it is
  10.202.0.3 -> 10.201.0.10 quoting 10.201.0.10 -> 10.202.1.20; hosta
  receives 10.202.0.3 -> 10.1.0.10 quoting its own real 10.1.0.10 ->
  10.202.1.20, every IPv4 header checksum (outer and quoted) good.
- TCP path MTU discovery through the mapping: with hosta's cached MTU
  flushed, 10 MiB hosta -> hostb through lanb still narrowed to 1400
  completes; hosta received frag-needed only from 10.202.0.3 quoting its
  real 10.1.0.10 -> 10.202.1.20, and caches mtu 1400 again.
- IPv6: both sites also use fd00:a::/56 (hosta fd00:a::10, hostb
  fd00:a:0:1::20), A mapped to fd00:201::/56, B to fd00:202::/56: ping
  hosta -> fd00:202:0:1::20 and hostb -> fd00:201::10 (hostb sees the
  requests from fd00:201::10 to its real address), 10 MiB TCP both ways,
  and Packet Too Big from lanb (MTU 1400): from fd00:202::3 in hosta's
  socket error queue, and at hosta (tshark) quoting hosta's real fd00:a::10
  -> fd00:202:0:1::20.
- Per-range counters (`mcgwctl show counters --json`, `mapped[]`): gwa
  lists only legacy-a and legacy-a6, gwb only legacy-b and legacy-b6; `out`
  (sources mapped into the tunnel) and `in` (destinations unmapped out of
  it) of each moved by at least the 10 MiB of TCP that way (7231 packets of
  <= 1450 bytes).

Run as root with /usr/bin/python3; MCGW_BUILD_DIR names the build.
"""

import json
import os
import secrets
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(HERE))
import mcgwlab  # noqa: E402
from labtest import check, ok, run_parts  # noqa: E402

BUILD = Path(os.environ.get("MCGW_BUILD_DIR", HERE.parents[1] / "build"))
MODE = sys.argv[1] if len(sys.argv) > 1 else "bgp"
UNDERLAY = sys.argv[2] if len(sys.argv) > 2 else "ipv4"
PMTU_TEST = HERE / "lab_pmtu_test.py"  # its udp-send / udp-recv helpers
# Real and mapped addresses.
HOSTA, HOSTA_MAPPED = "10.1.0.10", "10.201.0.10"
HOSTB, HOSTB_MAPPED = "10.1.1.20", "10.202.1.20"
LANB, LANB_MAPPED = "10.1.0.3", "10.202.0.3"
# IPv6: both sites use fd00:a::/56, A mapped to fd00:201::/56, B to fd00:202::/56.
HOSTA6, HOSTA6_MAPPED = "fd00:a::10", "fd00:201::10"
HOSTB6, HOSTB6_MAPPED = "fd00:a:0:1::20", "fd00:202:0:1::20"
LANB6_MAPPED = "fd00:202::3"
NARROW = 1400  # lanb's IP MTU towards hostb in the frag-needed part
PORT = 9001
# The largest inner packet the tunnel carries on a 1500-byte line (VXLAN over IPv4 / IPv6).
INNER = 1450 if UNDERLAY == "ipv4" else 1430
# The outer IPv4 addresses in the tunnel on rtr b1 (gwb's line-1 VTEP to gwa's); none over IPv6.
OUTER4 = ["100.64.3.1", "100.64.1.1"] if UNDERLAY == "ipv4" else []


def new_lab(tmp: Path) -> mcgwlab.Lab:
    prefix = f"mapped-{secrets.token_hex(3)}-"
    o = mcgwlab.Options(overlap=True, bgp=MODE == "bgp", underlay=UNDERLAY)
    return mcgwlab.Lab(prefix=prefix, workdir=tmp / prefix.rstrip("-"), options=o, build_dir=BUILD)


def wait_for(pred, timeout: float, step: float = 0.2):
    """Poll pred() until it returns something true, or `timeout` seconds; its last value."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(step)


def counters(lab, gw: str) -> dict:
    return json.loads(lab.ctl(gw, "show", "counters", "--json", check=True).stdout)


def mapped_counters(doc: dict) -> dict:
    """The per-range counters of `show counters --json` (`mapped[]`: name,
    real, mapped, out = sources mapped into a tunnel, in = destinations
    unmapped out of one): {range name: {counter: value}}."""
    ranges = doc.get("mapped")
    if isinstance(ranges, list):
        return {r.get("name", str(i)): {k: v for k, v in r.items() if k != "name"} for i, r in enumerate(ranges)}
    return ranges if isinstance(ranges, dict) else {}


def tshark(cap, *fields: str, display_filter: str) -> list[list[list[str]]]:
    """Fields of each matching packet, with the IPv4 header checksums
    verified; each field split into its occurrences (outer, inner, quoted)."""
    argv = ["tshark", "-n", "-r", cap.path, "-o", "ip.check_checksum:TRUE", "-T", "fields",
            "-E", "occurrence=a", "-E", "aggregator=,", "-Y", display_filter]
    for f in fields:
        argv += ["-e", f]
    out = mcgwlab.sh(*argv).stdout
    return [[x.split(",") if x else [] for x in line.split("\t")] for line in out.splitlines() if line.strip()]


def udp_send(lab, node: str, dst: str, size: int, count: int = 3, df: bool = True, port: int = PORT) -> dict:
    r = lab.run(node, "/usr/bin/python3", PMTU_TEST, "udp-send", dst, port, size, *(["--df"] if df else []),
                "--count", count, "--interval", 0.3, timeout=count * 2 + 10)
    return json.loads(r.stdout)


def received(lab, name: str) -> list[dict]:
    return [json.loads(x) for x in (lab.dir / f"{name}.log").read_text().splitlines() if x.startswith("{")]


def in_overlap(prefix: str) -> bool:
    """Whether a prefix lies in (or holds) one of the shared real ranges."""
    import ipaddress
    p = ipaddress.ip_network(prefix)
    for r in (mcgwlab.OVERLAP_RANGE, mcgwlab.OVERLAP_RANGE6):
        n = ipaddress.ip_network(r)
        if p.version == n.version and (p.subnet_of(n) or n.subnet_of(p)):
            return True
    return False


def routes_and_announcements(lab) -> None:
    """BGP carries the mapped ranges, never the real ones (IPv6 ranges ride
    the IPv6 sessions of an IPv6 underlay)."""
    from bgptest import frr_routes, wait_route
    fams = ["ipv4"] + (["ipv6"] if UNDERLAY == "ipv6" else [])
    got = []
    for gw, other in (("gwa", "site-b"), ("gwb", "site-a")):
        want = [mcgwlab.MAPPED[other]] + ([mcgwlab.MAPPED6[other]] if UNDERLAY == "ipv6" else [])
        for prefix in want:
            wait_route(lab, gw, prefix, other)
        leaked = [r["prefix"] for r in frr_routes(lab, gw) if in_overlap(r["prefix"])]
        check(not leaked, f"{gw}: nothing of the shared ranges among its FRR routes", leaked)
        learned = sorted(p for f in fams for p in (lab.vtysh(gw, f"show bgp {f} unicast json") or {}).get("routes", {}))
        check(set(want) <= set(learned) and not [p for p in learned if in_overlap(p)],
              f"{gw}: FRR's BGP table has {want} and nothing of the shared ranges", learned)
        got.append(f"{gw} {', '.join(want)} via {other}")
    ok(f"BGP: {'; '.join(got)} (FRR and the fast path); {mcgwlab.OVERLAP_RANGE} and "
       f"{mcgwlab.OVERLAP_RANGE6} announced by neither")


def pings(lab) -> None:
    at = {h: lab.capture(h, "eth0", name=f"echo-{h}", bpf_filter=["icmp"], snaplen=128) for h in ("hosta", "hostb")}
    tunnel = {i: lab.capture("rtr", i, name=f"tunnel-{i}", bpf_filter=["udp port 4789"], snaplen=160)
              for i in ("a1", "a2")}
    for src, dst in (("hosta", HOSTB_MAPPED), ("hostb", HOSTA_MAPPED)):
        n = lab.ping(src, dst, count=3, timeout=2)
        check(n == 3, f"ping {src} -> {dst}: 3 of 3 replies", n)
    for c in [*at.values(), *tunnel.values()]:
        c.stop()
    # What each host sees: the other at its mapped address, itself at its real one.
    want = {"hostb": {("8", HOSTA_MAPPED, HOSTB), ("0", HOSTB, HOSTA_MAPPED), ("8", HOSTB, HOSTA_MAPPED),
                      ("0", HOSTA_MAPPED, HOSTB)},
            "hosta": {("8", HOSTA, HOSTB_MAPPED), ("0", HOSTB_MAPPED, HOSTA), ("8", HOSTB_MAPPED, HOSTA),
                      ("0", HOSTA, HOSTB_MAPPED)}}
    for h, cap in at.items():
        seen = {(t, s, d) for t, s, d in cap.fields("icmp.type", "ip.src", "ip.dst")}
        check(seen == want[h], f"{h}: echo requests and replies between exactly these addresses",
              f"seen {sorted(seen)}, want {sorted(want[h])}")
    inner = set()
    for cap in tunnel.values():
        for f in cap.fields("ip.src", "ip.dst", display_filter="vxlan and icmp"):
            src, dst = (x.split(",") for x in f)
            inner.update(a for a in src + dst if not a.startswith("100.64."))  # not the VTEPs
    check(inner == {HOSTA_MAPPED, HOSTB_MAPPED}, "between the gateways (rtr a1, a2): every inner address a "
          "mapped one", sorted(inner))
    ok(f"ping hosta -> {HOSTB_MAPPED} and hostb -> {HOSTA_MAPPED}, 3 of 3 each; hostb sees {HOSTA_MAPPED} -> "
       f"{HOSTB}, hosta {HOSTB_MAPPED} -> {HOSTA}; in the tunnel only {sorted(inner)}")


def tcp(lab) -> None:
    for sender, receiver, real, mapped in (("hosta", "hostb", HOSTA, HOSTA_MAPPED),
                                           ("hostb", "hosta", HOSTB, HOSTB_MAPPED)):
        t = lab.iperf(sender, receiver, addr=real, connect=mapped)
        check(t.bytes >= 10 << 20, f"10 MiB {sender} -> {receiver} by {mapped}", t)
        print(f"   {t}", flush=True)
    ok("10 MiB TCP hosta -> hostb and hostb -> hosta by mapped addresses")


def frag_needed(lab) -> None:
    recv = f"udp-recv-hostb-{PORT}"
    lab.start(recv, "hostb", "/usr/bin/python3", PMTU_TEST, "udp-recv", PORT)
    check(wait_for(lambda: lab.run("hostb", "ss", "-Hlun", f"sport = :{PORT}", check=False).stdout.strip(), 10),
          f"UDP receiver on hostb port {PORT}")
    lab.run("hosta", "ip", "route", "flush", "cache")

    # The gateway's own work on a mapped flow sees real addresses: gwa
    # fragments a 1500-byte packet without DF (the tunnel carries INNER) and
    # maps each fragment; with DF it answers from its LAN address, quoting
    # hosta's packet as hosta sent it.
    r = udp_send(lab, "hosta", HOSTB_MAPPED, 1500 - 28, df=False)
    got = wait_for(lambda: [d for d in received(lab, recv) if d["len"] == 1500 - 28], 3)
    check(len(got) == 3 and all(d["intact"] and d["src"] == HOSTA_MAPPED for d in got),
          f"hostb: 3 datagrams of 1500 bytes without DF, fragmented by gwa, reassembled, from {HOSTA_MAPPED}",
          (r, received(lab, recv)))
    r = udp_send(lab, "hosta", HOSTB_MAPPED, 1500 - 28)
    errs = [e for e in r["errors"] if e["origin"] == "icmp"]
    check(errs and all(e["type"] == 3 and e["code"] == 4 and e["info"] == INNER and e["offender"] == "10.1.0.1"
                       for e in errs) and r["mtu"] == INNER,
          f"1500 bytes with DF: frag-needed with MTU {INNER} from gwa's LAN address 10.1.0.1", r)
    ok(f"gwa on a mapped flow: 1500-byte datagrams without DF fragmented and mapped (hostb got 3 intact from "
       f"{HOSTA_MAPPED}); with DF frag-needed from 10.1.0.1, MTU {INNER}")

    lab.set_ip_mtu("lanb", "hb", NARROW)
    at_a = lab.capture("hosta", "eth0", name="fn-hosta", bpf_filter=["icmp"], snaplen=256)
    at_lanb = lab.capture("lanb", "gw", name="fn-lanb", bpf_filter=["icmp"], snaplen=256)
    tunnel = lab.capture("rtr", "b1", name="fn-b1", bpf_filter=["udp port 4789"], snaplen=300)

    r = udp_send(lab, "hosta", HOSTB_MAPPED, INNER - 28)
    errs = [e for e in r["errors"] if e["origin"] == "icmp"]
    check(errs and all(e["type"] == 3 and e["code"] == 4 and e["info"] == NARROW and e["offender"] == LANB_MAPPED
                       for e in errs),
          f"hosta's socket (connected to {HOSTB_MAPPED}): ICMP frag-needed (3/4) with MTU {NARROW} from "
          f"{LANB_MAPPED} in its error queue", r)
    check(r["mtu"] == NARROW and "EMSGSIZE" in r["sends"],
          f"hosta's socket: path MTU {NARROW}, later {INNER}-byte sends refused (EMSGSIZE)", r)
    out = lab.run("hosta", "ip", "route", "get", HOSTB_MAPPED).stdout
    check(f"mtu {NARROW}" in out, f"hosta: ip route get {HOSTB_MAPPED}: mtu {NARROW}", out)
    time.sleep(0.3)
    check(not [d for d in received(lab, recv) if d["len"] == INNER - 28], f"hostb: no {INNER}-byte packet",
          received(lab, recv))
    r = udp_send(lab, "hosta", HOSTB_MAPPED, NARROW - 28, count=1)
    got = wait_for(lambda: [d for d in received(lab, recv) if d["len"] == NARROW - 28], 3)
    check(r["sends"] == ["sent"] and len(got) == 1 and got[0]["intact"] and got[0]["src"] == HOSTA_MAPPED,
          f"a {NARROW}-byte packet with DF reaches hostb, from {HOSTA_MAPPED}", (r, received(lab, recv)))
    ok(f"frag-needed for a mapped flow: hosta's socket got MTU {NARROW} from {LANB_MAPPED} ({len(errs)} in its "
       f"error queue), caches mtu {NARROW} towards {HOSTB_MAPPED}; a {NARROW}-byte packet then gets through")

    for c in (at_a, at_lanb, tunnel):
        c.stop()
    fields = ("ip.src", "ip.dst", "icmp.mtu", "udp.dstport", "ip.checksum.status")
    frag = "icmp.type == 3 and icmp.code == 4"
    # Each: every occurrence of ip.src / ip.dst (outer, [inner,] quoted).
    want = {"lanb (leaving it, before gwb)": (at_lanb, [LANB, HOSTA_MAPPED], [HOSTA_MAPPED, HOSTB]),
            "the tunnel (rtr b1)": (tunnel, OUTER4[:1] + [LANB_MAPPED, HOSTA_MAPPED],
                                    OUTER4[1:] + [HOSTA_MAPPED, HOSTB_MAPPED]),
            "hosta": (at_a, [LANB_MAPPED, HOSTA], [HOSTA, HOSTB_MAPPED])}
    for where, (cap, src, dst) in want.items():
        rows = tshark(cap, *fields, display_filter=frag)
        check(rows, f"{where}: frag-needed captured")
        for ip_src, ip_dst, mtu, dport, csum in rows:
            check(ip_src == src and ip_dst == dst,
                  f"{where}: frag-needed {src[-2]} -> {dst[-2]} quoting {src[-1]} -> {dst[-1]}",
                  f"ip.src {ip_src}, ip.dst {ip_dst}")
            # udp.dstport: in the tunnel the outer 4789 comes first.
            check(mtu == [str(NARROW)] and dport[-1:] == [str(PORT)],
                  f"{where}: MTU {NARROW}, quoting the UDP datagram to port {PORT}", (mtu, dport))
            # 1 good, 0 bad, 2 unverified (tshark's checksum status)
            check(len(csum) == len(src) and all(c == "1" for c in csum),
                  f"{where}: every IPv4 header checksum good (outer and quoted)", csum)
    ok(f"tshark: lanb sent {LANB} -> {HOSTA_MAPPED} quoting {HOSTA_MAPPED} -> {HOSTB}; in the tunnel "
       f"{LANB_MAPPED} -> {HOSTA_MAPPED} quoting {HOSTA_MAPPED} -> {HOSTB_MAPPED}; hosta received "
       f"{LANB_MAPPED} -> {HOSTA} quoting its real {HOSTA} -> {HOSTB_MAPPED}; checksums good")


def tcp_pmtud(lab) -> None:
    """TCP A -> B through the narrowed lanb with hosta's cached path MTU
    gone: its 1450-byte segments (MSS clamped to 1410 by the gateways; 1430
    and 1390 over an IPv6 underlay) do
    not fit, and the transfer completes only if hosta's TCP takes lanb's
    translated frag-needed for its own connection."""
    lab.set_ip_mtu("lanb", "hb", NARROW)
    lab.run("hosta", "ip", "route", "flush", "cache")
    check(f"mtu {NARROW}" not in lab.run("hosta", "ip", "route", "get", HOSTB_MAPPED).stdout,
          f"hosta: no cached path MTU towards {HOSTB_MAPPED} before the transfer")
    at_a = lab.capture("hosta", "eth0", name="pmtud-hosta", bpf_filter=["icmp"], snaplen=256)
    t = lab.iperf("hosta", "hostb", addr=HOSTA, connect=HOSTA_MAPPED)
    at_a.stop()
    check(t.bytes >= 10 << 20, f"10 MiB hosta -> hostb through lanb narrowed to {NARROW}", t)
    print(f"   {t}", flush=True)
    got = tshark(at_a, "ip.src", "ip.dst", "icmp.mtu", display_filter="icmp.type == 3 and icmp.code == 4")
    # ip.src: outer, quoted; ip.dst likewise.
    check(got and all(r == [[LANB_MAPPED, HOSTA], [HOSTA, HOSTB_MAPPED], [str(NARROW)]] for r in got),
          f"hosta: frag-needed from {LANB_MAPPED} (MTU {NARROW}) quoting its real {HOSTA} -> {HOSTB_MAPPED}", got)
    out = lab.run("hosta", "ip", "route", "get", HOSTB_MAPPED).stdout
    check(f"mtu {NARROW}" in out, f"hosta: ip route get {HOSTB_MAPPED}: mtu {NARROW} after the transfer", out)
    ok(f"TCP path MTU discovery through the mapping: 10 MiB hosta -> hostb with lanb at {NARROW}, "
       f"{len(got)} frag-needed quoting hosta's real address, hosta caches mtu {NARROW}")


def ipv6(lab) -> None:
    """The same over IPv6 (fd00:a::/56 on both sites): ping, 10 MiB TCP both
    ways, and Packet Too Big from lanb quoting hosta's real address."""
    at_b = lab.capture("hostb", "eth0", name="echo6-hostb", bpf_filter=["icmp6 and ip6[40] == 128"], snaplen=128)
    for src, dst in (("hosta", HOSTB6_MAPPED), ("hostb", HOSTA6_MAPPED)):
        n = lab.ping(src, dst, count=3, timeout=2)
        check(n == 3, f"ping {src} -> {dst}: 3 of 3 replies", n)
    at_b.stop()
    seen = {(s, d) for s, d in at_b.fields("ipv6.src", "ipv6.dst")}
    check(seen == {(HOSTA6_MAPPED, HOSTB6), (HOSTB6, HOSTA6_MAPPED)},
          f"hostb: echo requests from {HOSTA6_MAPPED} to its real {HOSTB6} (and its own to {HOSTA6_MAPPED})", seen)
    for sender, receiver, real, mapped in (("hosta", "hostb", HOSTA6, HOSTA6_MAPPED),
                                           ("hostb", "hosta", HOSTB6, HOSTB6_MAPPED)):
        t = lab.iperf(sender, receiver, addr=real, connect=mapped)
        check(t.bytes >= 10 << 20, f"10 MiB {sender} -> {receiver} by {mapped}", t)
        print(f"   {t}", flush=True)
    ok(f"IPv6: ping hosta -> {HOSTB6_MAPPED} and hostb -> {HOSTA6_MAPPED} (hostb sees {HOSTA6_MAPPED} -> {HOSTB6}), "
       "10 MiB TCP both ways by mapped addresses")

    port = PORT + 1
    lab.start(f"udp-recv-hostb-{port}", "hostb", "/usr/bin/python3", PMTU_TEST, "udp-recv", port)
    check(wait_for(lambda: lab.run("hostb", "ss", "-Hlun", f"sport = :{port}", check=False).stdout.strip(), 10),
          f"UDP receiver on hostb port {port}")
    lab.set_ip_mtu("lanb", "hb", NARROW)
    lab.run("hosta", "ip", "-6", "route", "flush", "cache")
    at_a = lab.capture("hosta", "eth0", name="ptb-hosta", bpf_filter=["icmp6 and ip6[40] == 2"], snaplen=256)
    r = udp_send(lab, "hosta", HOSTB6_MAPPED, INNER - 48, port=port)
    at_a.stop()
    errs = [e for e in r["errors"] if e["origin"] == "icmp6"]
    check(errs and all(e["type"] == 2 and e["info"] == NARROW and e["offender"] == LANB6_MAPPED for e in errs)
          and r["mtu"] == NARROW,
          f"hosta's socket (connected to {HOSTB6_MAPPED}): Packet Too Big with MTU {NARROW} from {LANB6_MAPPED} "
          f"in its error queue, path MTU {NARROW}", r)
    rows = tshark(at_a, "ipv6.src", "ipv6.dst", "icmpv6.mtu", display_filter="icmpv6.type == 2")
    # ipv6.src: outer, quoted; ipv6.dst likewise.
    check(rows and all(x == [[LANB6_MAPPED, HOSTA6], [HOSTA6, HOSTB6_MAPPED], [str(NARROW)]] for x in rows),
          f"tshark at hosta: Packet Too Big {LANB6_MAPPED} -> {HOSTA6} quoting its real {HOSTA6} -> {HOSTB6_MAPPED}",
          rows)
    ok(f"IPv6 Packet Too Big for a mapped flow: from {LANB6_MAPPED}, MTU {NARROW}, quoting hosta's real "
       f"{HOSTA6} -> {HOSTB6_MAPPED} (socket error queue, tshark)")


def packets(v) -> int:
    """A counter of `show counters --json`: a number, or {"packets": n, ...}."""
    return int(v.get("packets", 0)) if isinstance(v, dict) else int(v or 0)


# At least 10 MiB each way in inner packets of at most 1450 bytes (1430 over IPv6).
MIN_TCP_PACKETS = (10 << 20) // 1450


def range_counters(lab, before: dict) -> None:
    after = {gw: mapped_counters(counters(lab, gw)) for gw in ("gwa", "gwb")}
    print(f"   per-range counters before: {json.dumps(before)}\n   after: {json.dumps(after)}", flush=True)
    for gw, name, other in (("gwa", "legacy-a", "legacy-b"), ("gwb", "legacy-b", "legacy-a"),
                            ("gwa", "legacy-a6", "legacy-b6"), ("gwb", "legacy-b6", "legacy-a6")):
        check(name in after[gw], f"{gw}: show counters --json has per-range counters for {name}", after[gw])
        check(other not in after[gw], f"{gw}: no counters for {other} (translated by the other site's gateway)",
              after[gw])
        for key in ("out", "in"):
            moved = packets(after[gw][name].get(key)) - packets(before.get(gw, {}).get(name, {}).get(key))
            check(moved >= MIN_TCP_PACKETS, f"{gw}: {name} `{key}` moved by at least {MIN_TCP_PACKETS} "
                  "(10 MiB of TCP that way)", after[gw][name])
    ok("per-range counters of both gateways moved: "
       + "; ".join(f"{gw} {json.dumps(after[gw])}" for gw in after))


def run(tmp: Path) -> None:
    t_start = time.monotonic()
    lab = new_lab(tmp)
    with lab.up(start_gateways=True):
        print(f"   lab {lab.prefix} up in {time.monotonic() - t_start:.1f} s ({MODE}, {UNDERLAY} underlay)",
              flush=True)
        before = {gw: mapped_counters(counters(lab, gw)) for gw in ("gwa", "gwb")}
        parts = ([("routes", routes_and_announcements)] if MODE == "bgp" else []) + [
            ("ping", pings), ("tcp", tcp), ("frag-needed", frag_needed), ("tcp-pmtud", tcp_pmtud),
            ("ipv6", ipv6), ("counters", lambda lab: range_counters(lab, before))]
        failed = []
        for label, part in parts:
            try:
                part(lab)
            except Exception as e:  # noqa: BLE001 - report and go on with the next part
                failed.append(label)
                print(f"FAIL: {label}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        if failed:
            for gw in ("gwa", "gwb"):
                r = lab.ctl(gw, "show", "counters", "--json")
                try:
                    c = json.loads(r.stdout)
                    print(f"--- {gw} counters: drops {json.dumps(c.get('drops'))}, mapped "
                          f"{json.dumps(c.get('mapped'))}", file=sys.stderr)
                except json.JSONDecodeError:
                    print(f"--- {gw}: show counters (exit {r.returncode}): {r.stdout}{r.stderr}", file=sys.stderr)
            raise mcgwlab.LabError(f"parts failed: {', '.join(failed)}")
    check(not [n for n in mcgwlab.list_netns() if n.startswith(lab.prefix)], "namespaces left")
    print(f"   {time.monotonic() - t_start:.1f} s", flush=True)


def main() -> int:
    if MODE not in ("bgp", "static") or UNDERLAY not in ("ipv4", "ipv6"):
        print(f"lab_mapped_test.py [bgp|static [ipv4|ipv6]], not {' '.join(sys.argv[1:])}", file=sys.stderr)
        return 2
    return run_parts(f"mapped-{MODE}-{UNDERLAY}", [("mapped", run)], log_lines=20)


if __name__ == "__main__":
    sys.exit(main())
