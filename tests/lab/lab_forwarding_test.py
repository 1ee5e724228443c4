#!/usr/bin/python3
"""Lab test: traffic through the standard lab (tests/lab/mcgwlab.py), one
variant per run (so each ctest entry stays short):

  lab_forwarding_test.py DRIVER ENCAP UNDERLAY [VNI]
      e.g. af_xdp vxlan ipv4 1000, af_packet geneve ipv6 5000

No static neighbour anywhere: the gateways' kernel sides (the af_xdp
interface with mcgw's XDP program, or a TAP for af_packet) answer ARP/ND,
and mcgwd resolves hosts and next hops through the kernel's neighbour table.
The hosts' MTU is 1500: the gateways clamp the TCP MSS (issue 5; tested in
lab_pmtu_test.py).

1. ICMP echo A <-> B (IPv4, IPv6) through two mcgwd, and A <-> C, where C is
   a Linux VXLAN device (interop); some sent with DSCP 46 (TOS 0xb8).
2. TCP with iperf3, 10 MiB received by the receiving end: A -> B and B -> A
   over IPv4 and IPv6 inside the tunnel, A -> C and C -> A over IPv4 and IPv6.
3. On the wire, from captures on the underlay router (tshark): the A-B tunnel
   packets use line1 only (active-backup; line2 sees only path MTU probes
   on UDP 4788), carry the configured VNI on UDP 4789 (VXLAN) or 6081
   (Geneve) between the line1 VTEPs and the inner hosts;
   site C's packets are VXLAN with the VNI and site C's inner MAC; every
   packet mcgw encapsulates has the inner DSCP in its outer header (46 for
   the marked pings, outer and inner); nothing is malformed.
4. Counters: no packet dropped as too-big, malformed, unknown-vtep or
   unknown-vni.

Run as root with /usr/bin/python3; MCGW_BUILD_DIR names the build.
"""

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
TOS_EF = 0xB8  # DSCP 46 (expedited forwarding), ECN 0
MIB10 = 10 << 20
PROBE_PORT = "4788"  # path-mtu.probe-port (default)





# tshark prints every occurrence of a field, comma-separated: outer header
# first, then the inner one.
FIELDS = ("frame.number", "ip.src", "ip.dst", "ipv6.src", "ipv6.dst", "ip.dsfield.dscp", "ipv6.tclass.dscp",
          "udp.dstport", "vxlan.vni", "geneve.vni", "eth.dst", "icmp.type", "icmpv6.type", "tcp.len",
          "_ws.malformed", "_ws.expert.severity")
EXPERT_ERROR = 0x00800000  # tshark's PI_ERROR: malformed packets, bad fields


def packets(cap: mcgwlab.Capture, v6_outer: bool) -> tuple[list[dict], list[str]]:
    """One tshark pass over a capture: its tunnel packets (outer and inner
    addresses and DSCP, VNI, UDP port) and the frame numbers tshark finds
    malformed or in error."""
    out, bad = [], []
    for row in cap.fields(*FIELDS, heuristics=False):
        f = {k: (v.split(",") if v else []) for k, v in zip(FIELDS, row + [""] * (len(FIELDS) - len(row)))}
        if f["_ws.malformed"] or any(int(x, 0) >= EXPERT_ERROR for x in f["_ws.expert.severity"]):
            bad.append(f["frame.number"][0])
        if not f["udp.dstport"] or not (f["vxlan.vni"] or f["geneve.vni"]):
            continue
        o4, o6 = ("ipv6", "ip") if v6_outer else ("ip", "ipv6")  # outer family, the other one
        src, dst = f[f"{o4}.src"], f[f"{o4}.dst"]
        dscp_o = f["ipv6.tclass.dscp" if v6_outer else "ip.dsfield.dscp"]
        dscp_x = f["ip.dsfield.dscp" if v6_outer else "ipv6.tclass.dscp"]
        if len(src) > 1:  # inner of the outer's family
            inner = (src[1], dst[1], dscp_o[1])
        elif f[f"{o6}.src"]:
            inner = (f[f"{o6}.src"][0], f[f"{o6}.dst"][0], dscp_x[0])
        else:
            inner = (None, None, None)
        vni = (f["vxlan.vni"] or f["geneve.vni"] or [None])[0]
        out.append({"src": src[0], "dst": dst[0], "dscp": int(dscp_o[0], 0), "port": int(f["udp.dstport"][0]),
                    "vni": int(vni, 0) if vni else None, "isrc": inner[0], "idst": inner[1],
                    "idscp": int(inner[2], 0) if inner[2] else None, "eth_dst": f["eth.dst"],
                    "icmp": (f["icmp.type"] or f["icmpv6.type"] or [None])[0], "tcp": bool(f["tcp.len"])})
    return out, bad


def variant(tmp: Path, driver: str, encap: str, underlay: str, vni: int) -> None:
    o = mcgwlab.Options(driver=driver, encap=encap, underlay=underlay, vni=vni)
    prefix = f"mcgwlab-{secrets.token_hex(3)}-"
    lab = mcgwlab.Lab(prefix=prefix, workdir=tmp / prefix.rstrip("-"), options=o, build_dir=BUILD)
    name = f"{driver}/{encap}/{underlay}/vni {vni}"
    v6u = underlay == "ipv6"
    port = {"vxlan": 4789, "geneve": 6081}[encap]
    t0 = time.monotonic()
    with lab.up(start_gateways=True):
        print(f"   {name}: lab up in {time.monotonic() - t0:.1f} s ({lab.prefix})", flush=True)
        # Enough of each packet for outer + inner headers + TCP (Geneve over IPv6 with inner IPv6: ~190 bytes).
        caps = {i: lab.capture("rtr", i, bpf_filter=["udp"], snaplen=256) for i in ("a2", "b1", "b2", "c1")}

        # 1. ICMP echo
        pings = [("hosta", "10.2.0.10", TOS_EF), ("hosta", "fd00:b::10", TOS_EF), ("hostb", "10.1.0.10", 0),
                 ("hostb", "fd00:a::10", 0), ("hosta", "10.3.0.10", TOS_EF), ("hosta", "fd00:c::10", 0),
                 ("hostc", "fd00:a::10", TOS_EF), ("hostc", "10.1.0.10", 0)]
        for node, dst, tos in pings:
            got = lab.ping(node, dst, count=3, timeout=2, tos=tos)
            check(got == 3, f"{name}: ping {node} -> {dst}", f"{got}/3 replies")
        ok(f"{name}: ping A<->B (IPv4, IPv6), A<->C (Linux VXLAN), 3/3 each")

        # 2. TCP
        for sender, receiver, v6 in (("hosta", "hostb", False), ("hostb", "hosta", False),
                                     ("hosta", "hostb", True), ("hostb", "hosta", True),
                                     ("hosta", "hostc", False), ("hostc", "hosta", False),
                                     ("hosta", "hostc", True), ("hostc", "hosta", True)):
            t = lab.iperf(sender, receiver, v6=v6, nbytes=MIB10, timeout=45)
            check(t.bytes >= MIB10, f"{name}: TCP {sender} -> {receiver}", t)
            print(f"   {t}", flush=True)
        ok(f"{name}: TCP (iperf3) 10 MiB A->B, B->A, A->C, C->A over IPv4 and IPv6")

        for c in caps.values():
            c.stop()

        # 3. On the wire
        a1, b1 = ("fd00:64:1::1", "fd00:64:3::1") if v6u else ("100.64.1.1", "100.64.3.1")
        ab, bad_b1 = packets(caps["b1"], v6u)
        check(ab, f"{name}: no tunnel packets on rtr b1 (line1)")
        flows = {(p["src"], p["dst"], p["port"], p["vni"]) for p in ab}
        check(flows == {(a1, b1, port, vni), (b1, a1, port, vni)},
              f"{name}: A<->B tunnel packets on line1: (outer src, dst, UDP dst port, VNI)", flows)
        inner = {(p["isrc"], p["idst"]) for p in ab}
        for want in (("10.1.0.10", "10.2.0.10"), ("10.2.0.10", "10.1.0.10"),
                     ("fd00:a::10", "fd00:b::10"), ("fd00:b::10", "fd00:a::10")):
            check(want in inner, f"{name}: inner {want[0]} -> {want[1]} on line1", inner)
        check(sum(p["tcp"] for p in ab) > 4 * 7000, f"{name}: TCP segments through line1",
              sum(p["tcp"] for p in ab))
        # Line 2 carries only the gateways' path MTU probes (UDP 4788, every line, issue 5).
        for i in ("a2", "b2"):
            rows = caps[i].fields("frame.number", "udp.srcport", "udp.dstport")
            other = [r for r in rows if PROBE_PORT not in r[1:]]
            check(not other, f"{name}: line2 (rtr {i}) unused but for path MTU probes (active-backup): "
                  "(frame, UDP ports)", other[:5])

        ac, bad_c1 = packets(caps["c1"], v6u)
        check({p["vni"] for p in ac} == {vni} and {p["port"] for p in ac} == {4789},
              f"{name}: site C VXLAN: VNI, port", {(p["vni"], p["port"]) for p in ac})
        to_c = [p for p in ac if p["src"] == a1]
        check(to_c and all(mcgwlab.VXLAN_C_MAC == p["eth_dst"][-1] for p in to_c),
              f"{name}: inner destination MAC of site C", {tuple(p["eth_dst"]) for p in to_c})

        # DSCP: every packet mcgw encapsulated carries the inner DSCP outside.
        ours = [p for p in ab + to_c if p["idscp"] is not None]
        bad = [p for p in ours if p["dscp"] != p["idscp"]]
        check(not bad, f"{name}: outer DSCP != inner DSCP", bad[:3])
        marked = [p for p in ours if p["icmp"] in ("8", "128") and p["idscp"] == 46]
        marked_dst = {p["idst"] for p in marked}
        check({"10.2.0.10", "fd00:b::10", "10.3.0.10"} <= marked_dst and all(p["dscp"] == 46 for p in marked),
              f"{name}: echo requests with DSCP 46 outer and inner", marked_dst)

        check(not bad_b1 and not bad_c1, f"{name}: malformed packets (frame numbers) on rtr b1, c1",
              (bad_b1[:5], bad_c1[:5]))
        ok(f"{name}: tshark on the underlay: {len(ab)} packets on line1 with VNI {vni} on UDP {port} "
           f"between {a1} and {b1}, none on line2; site C VXLAN; outer DSCP = inner DSCP "
           f"({len(marked)} echo requests with 46); none malformed")

        # 4. Counters
        for gw in ("gwa", "gwb"):
            c = lab.ctl(gw, "show", "counters", "--json", check=True)
            drops = mcgwlab.json.loads(c.stdout)["drops"]
            for reason in ("too-big", "malformed", "unknown-vtep", "unknown-vni", "segmented"):
                check(drops[reason] == 0, f"{name}: {gw} drops {reason}", drops[reason])
            print(f"   {gw} drops: {', '.join(f'{k} {v}' for k, v in drops.items() if v) or 'none'}")
            lan = next(p for p in lab.status(gw)["ports"] if p["name"] == "lan0")
            check(lan["counters"]["tx_packets"] >= 3, f"{name}: {gw} lan0 tx", lan["counters"])
        ok(f"{name}: no too-big, malformed, unknown-vtep/vni drops in either gateway")
    check(not [n for n in mcgwlab.list_netns() if n.startswith(prefix)], "namespaces left")
    print(f"   {name}: {time.monotonic() - t0:.1f} s", flush=True)


def main() -> int:
    args = sys.argv[1:] or ["af_xdp", "vxlan", "ipv4"]
    if len(args) not in (3, 4):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    driver, encap, underlay = args[:3]
    vni = int(args[3]) if len(args) == 4 else 1000
    return run_parts("fwd", [(f"{driver}/{encap}/{underlay}",
                              lambda tmp: variant(tmp, driver, encap, underlay, vni))])


if __name__ == "__main__":
    sys.exit(main())
