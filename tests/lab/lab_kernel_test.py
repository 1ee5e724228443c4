#!/usr/bin/python3
"""Lab test: what mcgw leaves to the kernel, and what it refuses.  One
variant per run:

  lab_kernel_test.py DRIVER ENCAP UNDERLAY      e.g. af_xdp vxlan ipv4

1. BGP (TCP 179) and SSH (TCP 22) to gateway A's WAN addresses (line1 and
   line2, IPv4 and IPv6) are answered by gateway A's kernel: a listener in
   its namespace echoes a line sent from the underlay router.  ICMP echo to
   its LAN addresses from host A and to its WAN addresses from the router is
   answered, once per request (no duplicates).  On af_xdp mcgw's XDP program
   hands these packets to the kernel before DPDK sees them (XDP `pass-local`
   verdicts; mcgwd counts no `local`/`not-overlay` drop); on af_packet mcgwd
   passes them to its TAP (the kernel-path counters grow).
2. Tunnel packets (scapy, from the router namespace) to gateway A's line1
   VTEP: from an address that is no peer VTEP -> dropped and counted as
   `unknown-vtep`, the inner packet never reaches host A; from peer B's
   VTEP with a VNI it does not carry -> `unknown-vni`; from peer B's VTEP
   with the tenant's VNI -> delivered to host A (the crafted packet is
   good, so the drop above is for its source).

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





def counters(lab, gw) -> dict:
    return json.loads(lab.ctl(gw, "show", "counters", "--json", check=True).stdout)


# Sent with scapy from the router's namespace: N VXLAN/Geneve packets whose
# inner frame is an ICMP echo request from host B to host A with ICMP id ID.
CRAFT = r"""
import sys
from scapy.all import Ether, IP, IPv6, UDP, ICMP, sendp, conf
from scapy.layers.vxlan import VXLAN
from scapy.contrib.geneve import GENEVE
conf.verb = 0
iface, dmac, src, dst, encap, vni, ident, n, imac = sys.argv[1:10]
vni, ident, n = int(vni), int(ident), int(n)
outer = (IPv6(src=src, dst=dst) if ":" in dst else IP(src=src, dst=dst))
tun = (UDP(sport=49999, dport=4789) / VXLAN(flags=0x08, vni=vni) if encap == "vxlan"
       else UDP(sport=49999, dport=6081) / GENEVE(vni=vni, proto=0x6558))
inner = Ether(src="02:00:00:00:0b:0b", dst=imac) / IP(src="10.2.0.10", dst="10.1.0.10", ttl=64) / ICMP(id=ident, seq=1)
sendp([Ether(dst=dmac) / outer / tun / inner] * n, iface=iface)
"""


def variant(tmp: Path, driver: str, encap: str, underlay: str) -> None:
    # No FRR: the test's own listener (socat) takes TCP 179, where bgpd would listen.
    o = mcgwlab.Options(driver=driver, encap=encap, underlay=underlay, bgp=False)
    prefix = f"mcgwlab-{secrets.token_hex(3)}-"
    lab = mcgwlab.Lab(prefix=prefix, workdir=tmp / prefix.rstrip("-"), options=o, build_dir=BUILD)
    name = f"{driver}/{encap}/{underlay}"
    t0 = time.monotonic()
    with lab.up(start_gateways=True):
        # 1. The kernel's own services on the WAN addresses.
        for port in (179, 22):
            lab.start(f"listen-{port}", "gwa", "socat", f"TCP6-LISTEN:{port},ipv6only=0,reuseaddr,fork",
                      "EXEC:/bin/cat", listen=port)
        before = counters(lab, "gwa")
        wan = {"wan1": ("100.64.1.1", "fd00:64:1::1"), "wan2": ("100.64.2.1", "fd00:64:2::1")}
        exchanged = []
        for port in (179, 22):
            for iface, addrs in wan.items():
                for addr in addrs:
                    line = f"mcgwlab {port} {addr} {secrets.token_hex(4)}"
                    target = f"TCP6:[{addr}]:{port}" if ":" in addr else f"TCP4:{addr}:{port}"
                    r = lab.run("rtr", "socat", "-T", "5", "-", f"{target},connect-timeout=3",
                                check=False, timeout=15, input=line + "\n")
                    check(r.returncode == 0 and r.stdout.strip() == line,
                          f"{name}: TCP {port} to gwa {iface} {addr} from the router",
                          f"exit {r.returncode}, got {r.stdout.strip()!r}, {r.stderr.strip()}")
                    exchanged.append(f"{addr}:{port}")
        problems = []  # checks that do not stop the rest of the test
        for node, dst in (("hosta", "10.1.0.1"), ("hosta", "fd00:a::1"), ("rtr", "100.64.1.1"),
                          ("rtr", "fd00:64:1::1"), ("rtr", "100.64.2.1"), ("rtr", "fd00:64:2::1")):
            rtts, dups = lab.ping_stats(node, dst, count=3, timeout=2)
            check(len(rtts) == 3, f"{name}: ping {node} -> gwa {dst}", f"{len(rtts)}/3 replies")
            if dups:
                problems.append(f"ping {node} -> gwa {dst}: 3 requests, 3 replies and {dups} duplicate(s): "
                                f"the request reached gateway A's kernel more than once")
        after = counters(lab, "gwa")
        d_local = {k: after["drops"][k] - before["drops"][k] for k in ("local", "not-overlay")}
        d_kernel = after["kernel"]["to_kernel_packets"] - before["kernel"]["to_kernel_packets"]
        if driver == "af_xdp":
            xdp = {w: after["xdp"][w].get("pass-local", 0) - before["xdp"][w].get("pass-local", 0)
                   for w in ("wan1", "wan2")}
            xdp_all = {w: {k: v - before["xdp"][w].get(k, 0) for k, v in after["xdp"][w].items()
                           if v != before["xdp"][w].get(k, 0)} for w in after["xdp"]}
            # What reached DPDK: only tunnel packets may.  About one run in
            # four (also before issue 16) one tunnel packet arrives on wan1
            # in this window and the fast path drops it as `local` (its
            # inner destination is the gateway's, multicast or link-local);
            # which node sends it is not known: tcpdump on the router saw no
            # VXLAN at all in 15 s of an idle lab.
            to_dpdk = {f"{w}/{k}": v for w, d in xdp_all.items() for k, v in d.items()
                       if k.startswith("redirect") and not (k == "redirect-overlay" and w != "lan0")}
            overlay = sum(d.get("redirect-overlay", 0) for w, d in xdp_all.items() if w != "lan0")
            check(not to_dpdk and d_local["not-overlay"] == 0 and d_local["local"] <= overlay
                  and d_kernel == 0,
                  f"{name}: kernel traffic reached DPDK (the XDP program should pass it)",
                  f"drops {d_local}, to-kernel {d_kernel}, XDP verdicts {xdp_all}")
            check(all(v >= 4 * 4 for v in xdp.values()), f"{name}: XDP pass-local verdicts on wan1/wan2", xdp)
            d_kernel = sum(xdp.values())
        else:
            check(d_kernel >= 8 * 4, f"{name}: mcgwd's TAP path carried the kernel traffic",
                  f"to-kernel +{d_kernel}")
        ok(f"{name}: gwa's kernel answers TCP 179 and 22 on {len(exchanged)} WAN address/port pairs "
           f"(a line echoed each), ICMP echo on its LAN and WAN addresses "
           f"({f'{d_kernel} packets passed by the XDP program, none through DPDK' if driver == 'af_xdp' else f'{d_kernel} packets through the TAP'})")

        # 2. Tunnel packets from an unknown VTEP, a known one with a foreign VNI, and a good one.
        st = lab.status("gwa")
        wan1_mac = next(p["mac"] for p in st["ports"] if p["name"] == "wan1")
        v6u = underlay == "ipv6"
        vtep_a, vtep_b, stranger = (("fd00:64:1::1", "fd00:64:3::1", "fd00:64:1::2") if v6u
                                    else ("100.64.1.1", "100.64.3.1", "100.64.1.2"))
        lan_mac = next(p["mac"] for p in st["ports"] if p["name"] == "lan0")
        n = 5
        cases = [("unknown-vtep", stranger, o.vni, 0x4D01), ("unknown-vni", vtep_b, o.vni + 1, 0x4D02),
                 (None, vtep_b, o.vni, 0x4D03)]
        for reason, src, vni, ident in cases:
            cap = lab.capture("hosta", "eth0", name=f"hosta-{ident:x}", bpf_filter=["icmp"])
            c0 = counters(lab, "gwa")
            lab.run("rtr", "/usr/bin/python3", "-c", CRAFT, "a1", wan1_mac, src, vtep_a, encap, vni, ident, n,
                    lan_mac, timeout=60)
            time.sleep(0.3)
            c1 = counters(lab, "gwa")
            cap.stop()
            seen = [r for r in cap.fields("icmp.type", "icmp.ident") if r[0] == "8" and int(r[1], 0) == ident]
            delta = {k: c1["drops"][k] - c0["drops"][k] for k in c1["drops"] if c1["drops"][k] != c0["drops"][k]}
            what = f"{name}: {n} packets from {src} with VNI {vni}"
            if reason:
                check(delta == {reason: n}, f"{what}: drops", delta)
                check(not seen, f"{what}: reached host A", seen)
            else:
                check(not delta and len(seen) == n, f"{what}: delivered to host A",
                      f"drops {delta}, {len(seen)} seen on hosta")
        ok(f"{name}: tunnel packets from {stranger} (no peer VTEP) dropped as unknown-vtep, "
           f"from {vtep_b} with VNI {o.vni + 1} as unknown-vni, none reached host A; "
           f"with VNI {o.vni} delivered ({n} each)")
        check(not problems, f"{name}: kernel path", "; ".join(problems))
        ok(f"{name}: no duplicate replies from gateway A's kernel")
    check(not [x for x in mcgwlab.list_netns() if x.startswith(prefix)], "namespaces left")
    print(f"   {name}: {time.monotonic() - t0:.1f} s", flush=True)


def main() -> int:
    args = sys.argv[1:] or ["af_xdp", "vxlan", "ipv4"]
    if len(args) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    return run_parts("kernel", [("/".join(args), lambda tmp: variant(tmp, *args))])


if __name__ == "__main__":
    sys.exit(main())
