#!/usr/bin/python3
"""Component test (lab topology): 100,000 routes from a real zebra reach the
fast path's FIB, timed (issue 13).

The IDC router behind gateway A (BIRD 2, Options.idc_router) announces
100,000 /32 routes of a plan range of site A (VPC `bulk`, 10.128.0.0/9) to
gateway A's FRR (bgpd → zebra → dplane_fpm_nl → mcgwd), whose session to it
allows 200,000 prefixes.  Measured and printed:

- load: from `birdc configure` (the routes announced) until mcgwd holds all
  100,000 as FRR routes, installed (status `bgp.routes.installed`), and each
  is the selected candidate in the tenant's FIB (`show routes --source frr
  --prefix 10.128.0.0/14 --json`: total 100,000, sampled ones selected, via
  the IDC router on lan0);
- withdrawal: from `birdc configure` back to the IDC's own ranges until
  none is left.

`mcgwctl audit` is clean with all of them in.  Nothing asserts on speed.
Run as root with /usr/bin/python3; MCGW_BUILD_DIR names the build.
"""

import ipaddress
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(HERE))
import mcgwlab  # noqa: E402
from bgptest import BUILD, bgp_status, wait_established  # noqa: E402
from labtest import check, ok, run_parts  # noqa: E402

COUNT = 100_000
BULK = "10.128.0.0/9"
# The /32s: 10.128.0.0 .. 10.129.134.159, inside this /14 (which the plan's
# /9 itself, announced back by gateway B, is not).
HOSTS = "10.128.0.0/14"


def bulk_routes(count: int) -> str:
    first = int(ipaddress.ip_address("10.128.0.0"))
    return "".join(f"  route {ipaddress.ip_address(first + i)}/32 blackhole;\n" for i in range(count))


def installed(lab) -> int:
    return int(bgp_status(lab, "gwa")["routes"]["installed"])


def wait_installed(lab, want, timeout: float) -> float:
    """Seconds until gwa's installed FRR routes satisfy want(n)."""
    t0 = time.monotonic()
    while True:
        n = installed(lab)
        if want(n):
            return time.monotonic() - t0
        check(time.monotonic() - t0 < timeout, f"gwa: FRR routes installed within {timeout} s",
              f"{n} installed")
        time.sleep(0.2)


def bulk_listing(lab) -> dict:
    r = lab.ctl("gwa", "show", "routes", "--source", "frr", "--prefix", HOSTS, "--json")
    check(r.returncode == 0, "gwa: show routes --source frr --prefix", r.stderr)
    return json.loads(r.stdout)


def wait_listed(lab, count: int, timeout: float = 300) -> dict:
    """gwa's FRR candidates in HOSTS, once there are `count` of them."""
    t0 = time.monotonic()
    while True:
        listing = bulk_listing(lab)
        if listing["total"] == count:
            return listing
        check(time.monotonic() - t0 < timeout, f"{count} FRR candidates in {HOSTS}",
              listing["total"])
        time.sleep(0.5)


def run(tmp: Path) -> None:
    import secrets
    opts = mcgwlab.Options(bgp=True, idc_router=True)
    topo = mcgwlab.standard_topology(opts)
    topo.vpcs.append(mcgwlab.Vpc("bulk", [BULK], "site-a"))
    for n in topo.gateways["gwa"].neighbors:
        n["maximum-prefix"] = 2 * COUNT
    prefix = f"mcgwlab-{secrets.token_hex(3)}-"
    lab = mcgwlab.Lab(prefix=prefix, workdir=tmp / prefix.rstrip("-"), options=opts, topology=topo,
                      build_dir=BUILD)
    with lab.up(start_gateways=True):
        wait_established(lab, "gwa", 3)
        base = installed(lab)
        check(bulk_listing(lab)["total"] == 0, f"no FRR route in {HOSTS} before", "")
        conf = lab.bird_paths()["conf"]
        original = conf.read_text()
        marker = "protocol static idc {\n  ipv4;\n"
        check(marker in original, "the IDC router's BIRD config has its static protocol", original)
        conf.write_text(original.replace(marker, marker + bulk_routes(COUNT)))

        t0 = time.monotonic()
        lab.birdc("configure")
        wait_installed(lab, lambda n: n >= base + COUNT, 300)
        listing = wait_listed(lab, COUNT)
        load_s = time.monotonic() - t0
        check(listing["total"] == COUNT, f"{COUNT} FRR candidates in {HOSTS}", listing["total"])
        hosts = [r for r in listing["routes"] if r["prefix"].endswith("/32")]
        check(len(hosts) == COUNT, f"{COUNT} /32 routes listed", len(hosts))
        for r in hosts[:: COUNT // 50]:
            check(r["selected"] and r["source"] == "frr" and "10.1.0.254" in r["via"],
                  "a bulk route is selected, from FRR, via the IDC router", r)
        st = bgp_status(lab, "gwa")
        check(st["routes"]["refused"] == 0, "no route refused", st["refused"][:5])
        ok(f"{COUNT} routes from BIRD through FRR's zebra (FPM) in the fast path in {load_s:.1f} s "
           f"({COUNT / load_s:,.0f} routes/s end to end); FPM {st['fpm']['frames']} frames")

        t0 = time.monotonic()
        audit = lab.ctl("gwa", "audit")
        audit_s = time.monotonic() - t0
        check(audit.returncode == 0, "mcgwctl audit on gwa: no difference with 100k routes",
              audit.stdout[-2000:] + audit.stderr)
        ok(f"mcgwctl audit clean with {COUNT} routes ({audit_s:.1f} s)")

        conf.write_text(original)
        t0 = time.monotonic()
        lab.birdc("configure")
        wait_listed(lab, 0)
        withdraw_s = time.monotonic() - t0
        ok(f"{COUNT} routes withdrawn from the fast path in {withdraw_s:.1f} s")
        print(f"FIGURES load_s={load_s:.2f} withdraw_s={withdraw_s:.2f} audit_s={audit_s:.2f}")


if __name__ == "__main__":
    sys.exit(run_parts("route_load", [("100k routes from zebra", run)]))
