#!/usr/bin/python3
"""Lab test: routes A<->B by BGP through FRR (issue 13), af_xdp, VXLAN.

Both gateways run FRR (started by the lab in their namespaces; mcgwd renders
and applies its config).  Argument: the underlay, ipv4 (default) or ipv6.

- Every line session A<->B is Established, in FRR and in `mcgwctl status
  --json` (`bgp.neighbors[].state`); two per gateway (site C has no BGP).
- The VPC routes reach the fast path: gateway A has 10.2.0.0/16 via peer
  site-b, gateway B 10.1.0.0/16 via site-a (`mcgwctl show routes --source
  frr --json`); over an IPv6 underlay fd00:b::/64 and fd00:a::/64 too.
- Neither config has a static A<->B route for what BGP carries (over an IPv4
  underlay the other gateway's IPv6 VPC stays static: IPv6 ranges ride IPv6
  sessions; over IPv6 no A<->B static route is left).
- Ping and 10 MiB iperf3 A->B and B->A (IPv4 and IPv6 inside).
- `mcgwctl audit` exits 0 on both gateways.
- A reload of gateway A's config that changes what is rendered (a new,
  unrelated neighbour on the LAN) but no A<->B session: the A<->B sessions'
  uptime keeps growing, in mcgwd's status (`uptime_s`) and in FRR's `show bgp
  summary json` (`peerUptimeMsec`), and FRR has the new neighbour.
- Gateway A's mcgwd stopped (SIGTERM): it withdraws its announcements from
  FRR before it exits (its fast path stops with it): gateway B loses
  10.1.0.0/16 while its sessions to A (the kernel answers them now) stay
  Established, and A's log says so.

Run as root with /usr/bin/python3; MCGW_BUILD_DIR names the build.
"""

import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(HERE))
import mcgwlab  # noqa: E402
from bgptest import audit, frr_routes, new_lab, route, uptimes, wait_established, wait_route  # noqa: E402
from labtest import check, ok, run_parts  # noqa: E402

UNDERLAY = sys.argv[1] if len(sys.argv) > 1 else "ipv4"
VTEPS = {"ipv4": {"gwa": ["100.64.3.1", "100.64.4.1"], "gwb": ["100.64.1.1", "100.64.2.1"]},
         "ipv6": {"gwa": ["fd00:64:3::1", "fd00:64:4::1"], "gwb": ["fd00:64:1::1", "fd00:64:2::1"]}}[UNDERLAY]


def run(tmp: Path) -> None:
    t_start = time.monotonic()
    lab = new_lab(tmp, underlay=UNDERLAY)
    with lab.up(start_gateways=True):
        # Sessions.
        for gw in ("gwa", "gwb"):
            n = wait_established(lab, gw, 2)
            check(sorted(n) == sorted(VTEPS[gw]), f"{gw}: neighbours are the peer's line VTEPs", sorted(n))
        ok(f"both gateways: the two line sessions A<->B Established (FRR and mcgwctl status), "
           f"after {time.monotonic() - t_start:.1f} s")

        # Routes into the fast path.
        want = {"gwa": [("10.2.0.0/16", "site-b")], "gwb": [("10.1.0.0/16", "site-a")]}
        if UNDERLAY == "ipv6":
            want["gwa"].append(("fd00:b::/64", "site-b"))
            want["gwb"].append(("fd00:a::/64", "site-a"))
        for gw, routes in want.items():
            for prefix, peer in routes:
                wait_route(lab, gw, prefix, peer)
        ok("VPC routes in the fast path from FRR: " + "; ".join(
            f"{gw} {', '.join(p for p, _ in r)} via {r[0][1]}" for gw, r in want.items()))

        # No static A<->B route for what BGP carries.
        for gw, other in (("gwa", "site-b"), ("gwb", "site-a")):
            statics = [r["prefix"] for t in lab.gateway_config(gw)["tenants"] for r in t.get("routes") or []
                       if r["peer"] == other]
            allowed = [] if UNDERLAY == "ipv6" else [p for p in statics if ":" in p]
            check(statics == allowed, f"{gw}: no static route to {other} but {allowed}", statics)
        ok("no static A<->B route in the configs" + (" (IPv4 underlay: the IPv6 VPCs stay static)"
                                                   if UNDERLAY == "ipv4" else ""))

        # Traffic.
        for src, dst in (("hosta", "10.2.0.10"), ("hosta", "fd00:b::10"), ("hostb", "10.1.0.10"),
                         ("hostb", "fd00:a::10")):
            check(lab.ping(src, dst, count=3, timeout=2) == 3, f"ping {src} -> {dst}: 3 of 3 replies")
        for a, b in (("hosta", "hostb"), ("hostb", "hosta")):
            t = lab.iperf(a, b)
            check(t.bytes >= 10 << 20, f"10 MiB {a} -> {b}", t)
            print(f"   {t}", flush=True)
        ok("ping A<->B (IPv4, IPv6) and 10 MiB TCP both ways")

        for gw in ("gwa", "gwb"):
            out = audit(lab, gw)
            print(f"   {gw} audit: {out.strip().splitlines()[-1] if out.strip() else '(no output)'}")
        ok("mcgwctl audit exits 0 on both gateways")

        # A reload that does not touch the A<->B sessions.  The sessions are
        # 10 s old first, so that a reset would show against the tolerance
        # (mcgwd polls FRR every 2 s: its uptime_s may be that much behind).
        deadline = time.monotonic() + 20
        while min(f or 0 for _, f in uptimes(lab, "gwa").values()) < 10 and time.monotonic() < deadline:
            time.sleep(0.5)
        before = uptimes(lab, "gwa")
        t0 = time.monotonic()
        cfg = lab.gateway_config("gwa")
        cfg["bgp"]["neighbors"] = cfg["bgp"].get("neighbors") or []
        cfg["bgp"]["neighbors"].append({"address": "10.1.0.253", "asn": 64513, "port": "lan0", "site": "site-a"})
        path = Path(lab.state["gateways"]["gwa"]["config"])
        path.write_text(mcgwlab.to_yaml(cfg))
        r = lab.ctl("gwa", "reload")
        check(r.returncode == 0, "mcgwctl reload of gateway A with a new neighbour", r.stdout + r.stderr)
        deadline = time.monotonic() + 20
        while "10.1.0.253" not in lab.bgp_states("gwa") and time.monotonic() < deadline:
            time.sleep(0.25)
        check("10.1.0.253" in lab.bgp_states("gwa"), "FRR has the new neighbour 10.1.0.253 after the reload",
              lab.bgp_states("gwa"))
        time.sleep(5)
        after = uptimes(lab, "gwa")
        elapsed = time.monotonic() - t0
        for addr in VTEPS["gwa"]:
            (m0, f0), (m1, f1) = before[addr], after[addr]
            check(m1 is not None and m0 is not None and m1 >= m0 + elapsed - 4,
                  f"gwa: session {addr} uptime_s in mcgwd's status grew across the reload",
                  f"{m0} -> {m1} in {elapsed:.1f} s")
            check(f1 is not None and f0 is not None and f1 >= f0 + elapsed - 1.5,
                  f"gwa: session {addr} peerUptimeMsec in FRR grew across the reload",
                  f"{f0} -> {f1} s in {elapsed:.1f} s")
        check(all(s == "Established" for a, s in lab.bgp_states("gwb").items()),
              "gwb: its sessions still Established", lab.bgp_states("gwb"))
        ok("mcgwctl reload with a new neighbour: the A<->B sessions were not reset (uptimes "
           + ", ".join(f"{a} {before[a][1]:.0f} -> {after[a][1]:.0f} s" for a in VTEPS["gwa"]) + ")")

        # An orderly stop withdraws what the stopping gateway announced.
        t0 = time.monotonic()
        lab.stop_gateway("gwa")
        stopped = time.monotonic() - t0
        deadline = time.monotonic() + 15
        while (mcgwlab_route("gwb", lab, "10.1.0.0/16") is not None
               and time.monotonic() < deadline):
            time.sleep(0.25)
        gone = time.monotonic() - t0
        check(mcgwlab_route("gwb", lab, "10.1.0.0/16") is None,
              "gwb: 10.1.0.0/16 withdrawn after gwa's mcgwd stopped", gone)
        check(all(st == "Established" for st in lab.bgp_states("gwb").values()),
              "gwb: its sessions to gwa still Established (withdrawn, not torn down)",
              lab.bgp_states("gwb"))
        log = Path(lab.state["gateways"]["gwa"]["log"]).read_text()
        check("stopping: BGP announcements withdrawn from FRR" in log,
              "gwa's log: announcements withdrawn on stop", log[-2000:])
        ok(f"gwa stopped in {stopped:.1f} s: gwb lost 10.1.0.0/16 {gone:.1f} s after the stop began, "
           "sessions still Established")
    print(f"   {time.monotonic() - t_start:.1f} s", flush=True)


def mcgwlab_route(gw: str, lab, prefix: str):
    """gw's FRR route to prefix in its fast path, or None."""
    return route(frr_routes(lab, gw), prefix)


def main() -> int:
    return run_parts(f"bgp-{UNDERLAY}", [("bgp", run)], log_lines=20)


if __name__ == "__main__":
    sys.exit(main())
