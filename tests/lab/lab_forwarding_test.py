#!/usr/bin/python3
"""Lab test: traffic through the standard lab (tests/lab/mcgwlab.py) with no
static neighbour anywhere: the gateways' kernel sides (the af_xdp interface
with mcgw's XDP program, or a TAP for af_packet) answer ARP/ND, and mcgwd
resolves hosts and next hops through the kernel's neighbour table.

Two variants: af_xdp + VXLAN + IPv4 underlay, and af_packet + Geneve + IPv6
underlay.  In each, ICMP echo A <-> B (IPv4 and IPv6) through two mcgwd, and
A <-> C, where C is a Linux VXLAN device (interop).  Facts on the wire, from
captures on the underlay router: the tunnel packets of line1 carry the
tenant's VNI, the right outer addresses and the inner hosts, decode without
malformed packets in tshark, and nothing uses line2 (active-backup).

Run as root with /usr/bin/python3; MCGW_BUILD_DIR names the build.
"""

import os
import secrets
import shutil
import sys
import tempfile
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(HERE))
import mcgwlab  # noqa: E402

BUILD = Path(os.environ.get("MCGW_BUILD_DIR", HERE.parents[1] / "build"))
passed = 0


class Fail(Exception):
    pass


def check(cond, what, detail="") -> None:
    if not cond:
        raise Fail(f"{what}{': ' + str(detail) if detail != '' else ''}")


def variant(tmp: Path, driver: str, encap: str, underlay: str) -> None:
    global passed
    o = mcgwlab.Options(driver=driver, encap=encap, underlay=underlay, static_neighbors=False)
    prefix = f"mcgwlab-{secrets.token_hex(3)}-"
    lab = mcgwlab.Lab(prefix=prefix, workdir=tmp / prefix.rstrip("-"), options=o, build_dir=BUILD)
    name = f"{driver}/{encap}/{underlay}"
    v6u = underlay == "ipv6"
    with lab.up(start_gateways=True):
        caps = {i: lab.capture("rtr", i, bpf_filter=["udp"]) for i in ("a1", "a2", "b1", "c1")}
        pings = [("hosta", "10.2.0.10"), ("hosta", "fd00:b::10"), ("hostb", "10.1.0.10"),
                 ("hostb", "fd00:a::10"), ("hosta", "10.3.0.10"), ("hostc", "fd00:a::10")]
        for node, dst in pings:
            got = lab.ping(node, dst, count=3, timeout=2)
            check(got == 3, f"{name}: {node} -> {dst}", f"{got}/3 replies")
        for c in caps.values():
            c.stop()
        port = {"vxlan": 4789, "geneve": 6081}[encap]
        vni = "vxlan.vni" if encap == "vxlan" else "geneve.vni"
        ip = "ipv6" if v6u else "ip"
        # tshark: the outer header first, then the inner one (comma-separated occurrences)
        rows = caps["b1"].fields(f"{ip}.src", f"{ip}.dst", "udp.dstport", vni,
                                 display_filter=f"udp.dstport == {port}")
        flows = {(r[0].split(",")[0], r[1].split(",")[0], r[2].split(",")[0], str(int(r[3], 0))) for r in rows}
        a, b = ("fd00:64:1::1", "fd00:64:3::1") if v6u else ("100.64.1.1", "100.64.3.1")
        check(flows == {(a, b, str(port), "1000"), (b, a, str(port), "1000")},
              f"{name}: A<->B tunnel packets on line1", flows)
        # the inner IPv4 header is the last ip.* occurrence (the only one under an IPv6 outer)
        inner = {(r[0].split(",")[-1], r[1].split(",")[-1])
                 for r in caps["b1"].fields("ip.src", "ip.dst", display_filter="icmp")}
        check(("10.1.0.10", "10.2.0.10") in inner and ("10.2.0.10", "10.1.0.10") in inner,
              f"{name}: inner host A <-> host B", inner)
        c_rows = caps["c1"].fields("vxlan.vni", "eth.dst", display_filter="udp.dstport == 4789")
        check(c_rows and all(r[0] == "1000" for r in c_rows), f"{name}: site C VXLAN VNI", c_rows)
        check(any(mcgwlab.VXLAN_C_MAC in r[1] for r in c_rows), f"{name}: inner MAC of site C", c_rows)
        for i, c in caps.items():
            bad = c.fields("frame.number", display_filter="_ws.malformed || _ws.expert.severity >= error")
            check(not bad, f"{name}: malformed packets on rtr {i}", bad)
        check(not caps["a2"].fields("frame.number"), f"{name}: line2 unused (active-backup)")
        for gw in ("gwa", "gwb"):
            st = lab.status(gw)
            lan = next(p for p in st["ports"] if p["name"] == "lan0")
            check(lan["counters"]["tx_packets"] >= 3, f"{name}: {gw} lan0 tx", lan["counters"])
    check(not [n for n in mcgwlab.list_netns() if n.startswith(prefix)], "namespaces left")
    passed += 1
    print(f"ok: {name}: A<->B (v4, v6) through mcgw, A<->C with a Linux VXLAN; tunnel packets on line1 "
          f"with VNI 1000, none on line2, none malformed", flush=True)


def main() -> int:
    if os.geteuid() != 0:
        print("lab_forwarding_test: run as root", file=sys.stderr)
        return 1
    tmp = Path(tempfile.mkdtemp(prefix="mcgwlab-fwd-"))
    failed = 0
    try:
        for args in (("af_xdp", "vxlan", "ipv4"), ("af_packet", "geneve", "ipv6")):
            try:
                variant(tmp, *args)
            except Exception as e:  # noqa: BLE001
                failed += 1
                print(f"FAIL: {'/'.join(args)}: {type(e).__name__}: {e}", file=sys.stderr)
                if not isinstance(e, (Fail, mcgwlab.LabError)):
                    traceback.print_exc()
                for log in sorted(tmp.rglob("gw*.log")):
                    print(f"--- {log}\n{mcgwlab._tail(log, 30)}", file=sys.stderr)
    finally:
        if os.environ.get("MCGWLAB_KEEP") != "1":
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
