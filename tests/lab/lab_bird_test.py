#!/usr/bin/python3
"""Lab test: BIRD 2 as an IDC router behind gateway A (issue 13), af_xdp,
VXLAN, IPv4 underlay (Options.idc_router).

Namespace idc is gateway A's LAN switch (bridge br0 joining gwa's lan0 and
hosta) and the IDC router (10.1.0.254 on br0, BIRD, AS 64512) for idchost
(10.100.0.10/24 on its own link).  Gateway A's mcgwd config lists the router
in bgp.neighbors (port lan0, site site-a); the plan gives site A the VPC
idc-a 10.100.0.0/16.  BIRD announces 10.100.0.0/16 and 10.200.0.0/16 (in
no plan) and exports what it learns into its kernel.

- BIRD's session to gateway A is up, and gateway A's to BIRD Established
  (FRR and mcgwctl status).
- 10.200.0.0/16 is refused at gateway A: BIRD exports it, it is not among
  gateway A's FRR routes, and `mcgwctl status --json` shows it (the
  neighbour's `prefixes_received` 2, `prefixes_accepted` 1,
  `prefixes_refused` 1; or `bgp.refused` lists it); the test prints which.
- BIRD's table has 10.2.0.0/16 from gateway A.
- Gateway B has 10.100.0.0/16 via site-a, gateway A has it from FRR (via
  the IDC router), and host B reaches idchost through the overlay (ping),
  idchost host B, host A host B.

Run as root with /usr/bin/python3; MCGW_BUILD_DIR names the build.
"""

import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(HERE))
import mcgwlab  # noqa: E402
from bgptest import bgp_status, frr_routes, neighbors, new_lab, route, wait_established, wait_route  # noqa: E402
from labtest import check, ok, run_parts  # noqa: E402


def run(tmp: Path) -> None:
    t_start = time.monotonic()
    lab = new_lab(tmp, idc_router=True)
    with lab.up(start_gateways=True):
        n = wait_established(lab, "gwa", 3)
        check(mcgwlab.IDC_ROUTER in n, "gwa: the IDC router among its neighbours", sorted(n))
        wait_established(lab, "gwb", 2)
        deadline = time.monotonic() + 20
        while "Established" not in lab.birdc("show", "protocols", "gwa") and time.monotonic() < deadline:
            time.sleep(0.25)
        check("Established" in lab.birdc("show", "protocols", "gwa"), "BIRD: session gwa Established",
              lab.birdc("show", "protocols", "all", "gwa"))
        ok("BIRD up; gwa <-> IDC router Established (FRR, mcgwctl status, birdc)")

        # The refused range first (it needs nothing but the session).
        exported = lab.birdc("show", "route", "export", "gwa")
        check(mcgwlab.IDC_RANGE in exported and mcgwlab.IDC_FOREIGN_RANGE in exported,
              "BIRD exports both IDC ranges to gwa", exported)
        deadline = time.monotonic() + 10
        while neighbors(lab, "gwa")[mcgwlab.IDC_ROUTER].get("prefixes_accepted") != 1 \
                and time.monotonic() < deadline:
            time.sleep(0.25)
        check(route(frr_routes(lab, "gwa"), mcgwlab.IDC_FOREIGN_RANGE) is None,
              f"gwa: {mcgwlab.IDC_FOREIGN_RANGE} not among the FRR routes")
        bgp = bgp_status(lab, "gwa")
        nb = neighbors(lab, "gwa")[mcgwlab.IDC_ROUTER]
        listed = [r for r in bgp.get("refused", []) if r.get("prefix") == mcgwlab.IDC_FOREIGN_RANGE]
        print(f"   gwa status, neighbour {mcgwlab.IDC_ROUTER}: {json.dumps(nb)}; "
              f"bgp.refused lists {mcgwlab.IDC_FOREIGN_RANGE}: {listed or 'no'}", flush=True)
        counts = (nb.get("prefixes_received"), nb.get("prefixes_accepted"), nb.get("prefixes_refused"))
        check(counts == (2, 1, 1) or listed,
              f"gwa: mcgwctl status shows {mcgwlab.IDC_FOREIGN_RANGE} refused (the neighbour's prefixes "
              "received 2, accepted 1, refused 1; or bgp.refused lists it)", json.dumps(nb))
        ok(f"{mcgwlab.IDC_FOREIGN_RANGE} (in no plan) refused at gwa: not in show routes --source frr; status: "
           + (f"bgp.refused lists it ({listed[0].get('reason')})" if listed else
              f"neighbour {mcgwlab.IDC_ROUTER} prefixes_received 2, prefixes_accepted 1, prefixes_refused 1 "
              "(bgp.refused lists only what mcgwd refused from zebra)"))

        deadline = time.monotonic() + 20
        while "10.2.0.0/16" not in lab.birdc("show", "route") and time.monotonic() < deadline:
            time.sleep(0.25)
        table = lab.birdc("show", "route", "all")
        check("10.2.0.0/16" in table and "[gwa " in table.split("10.2.0.0/16", 1)[1].splitlines()[0],
              "BIRD's table has 10.2.0.0/16 from gwa", table)
        ok("BIRD learned 10.2.0.0/16 from gwa")

        wait_route(lab, "gwb", mcgwlab.IDC_RANGE, "site-a")
        wait_route(lab, "gwa", mcgwlab.IDC_RANGE)
        ok(f"gwb has {mcgwlab.IDC_RANGE} via site-a; gwa has it in its fast path from FRR (via the IDC router)")

        for src, dst in (("hostb", "10.100.0.10"), ("idchost", "10.2.0.10"), ("hosta", "10.2.0.10")):
            check(lab.ping(src, dst, count=3, timeout=2) == 3, f"ping {src} -> {dst}: 3 of 3 replies")
        ok("host B <-> idchost through the overlay and the IDC router (ping); host A still reaches host B")
    print(f"   {time.monotonic() - t_start:.1f} s", flush=True)


def main() -> int:
    return run_parts("bird", [("bird", run)], log_lines=20)


if __name__ == "__main__":
    sys.exit(main())
