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
- Host B reaches idchost through the overlay (ping), so gateway B learned
  10.100.0.0/16 from gateway A and gateway A forwards it to the IDC router.
- BIRD's table has 10.2.0.0/16 from gateway A.
- 10.200.0.0/16 is refused at gateway A: not among its FRR routes, and
  `mcgwctl status --json` shows it (the neighbour's accepted count excludes
  it, or it is listed as refused); the test prints which.

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

        wait_route(lab, "gwa", mcgwlab.IDC_RANGE)
        wait_route(lab, "gwb", mcgwlab.IDC_RANGE, "site-a")
        deadline = time.monotonic() + 20
        while "10.2.0.0/16" not in lab.birdc("show", "route") and time.monotonic() < deadline:
            time.sleep(0.25)
        table = lab.birdc("show", "route", "all")
        check("10.2.0.0/16" in table and "[gwa " in table.split("10.2.0.0/16", 1)[1].splitlines()[0],
              "BIRD's table has 10.2.0.0/16 from gwa", table)
        ok("BIRD learned 10.2.0.0/16 from gwa; gwb has 10.100.0.0/16 via site-a")

        for src, dst in (("hostb", "10.100.0.10"), ("idchost", "10.2.0.10"), ("hosta", "10.2.0.10")):
            check(lab.ping(src, dst, count=3, timeout=2) == 3, f"ping {src} -> {dst}: 3 of 3 replies")
        ok("host B <-> idchost through the overlay and the IDC router (ping); host A still reaches host B")

        check(route(frr_routes(lab, "gwa"), mcgwlab.IDC_FOREIGN_RANGE) is None,
              f"gwa: {mcgwlab.IDC_FOREIGN_RANGE} not among the FRR routes")
        bgp = bgp_status(lab, "gwa")
        nb = neighbors(lab, "gwa")[mcgwlab.IDC_ROUTER]
        refused = json.dumps(bgp.get("refused", []))
        shown = []
        if mcgwlab.IDC_FOREIGN_RANGE in refused:
            shown.append(f"bgp.refused lists it: {refused}")
        counts = {k: v for k, v in nb.items() if "prefix" in k or k in ("received", "accepted", "refused")}
        if json.dumps(counts) and _accepted_excludes(nb):
            shown.append(f"the neighbour's counts: {counts}")
        print(f"   gwa status, neighbour {mcgwlab.IDC_ROUTER}: {json.dumps(nb)}; bgp.refused: {refused}", flush=True)
        check(shown, f"gwa: mcgwctl status shows {mcgwlab.IDC_FOREIGN_RANGE} refused", json.dumps(bgp)[:2000])
        ok(f"{mcgwlab.IDC_FOREIGN_RANGE} (in no plan) refused at gwa; status shows it: {'; '.join(shown)}")
    print(f"   {time.monotonic() - t_start:.1f} s", flush=True)


def _accepted_excludes(nb: dict) -> bool:
    """The neighbour received 2 prefixes and accepted 1 (or refused 1)."""
    pr = nb.get("prefixes", nb)
    rec, acc, ref = pr.get("received"), pr.get("accepted"), pr.get("refused")
    return (rec == 2 and acc == 1) or ref == 1


def main() -> int:
    return run_parts("bird", [("bird", run)], log_lines=20)


if __name__ == "__main__":
    sys.exit(main())
