"""What the BGP lab tests (lab_bgp_test.py, lab_bfd_failover_test.py,
lab_bird_test.py, lab_frr_restart_test.py) share: a lab with FRR in both
gateways, waits on mcgwd's view of BGP (`mcgwctl status --json`, key
`bgp`), its FRR routes (`mcgwctl show routes --source frr --json`), its
audit, and the line states of the A-B tunnel.
"""

import json
import os
import secrets
import time
from pathlib import Path

import mcgwlab
from labtest import check, ok

HERE = Path(__file__).resolve().parent
BUILD = Path(os.environ.get("MCGW_BUILD_DIR", HERE.parents[1] / "build"))
# The A-B peer of each gateway, and the line-1 VTEPs the sessions run between.
AB_PEER = {"gwa": "site-b", "gwb": "site-a"}


def new_lab(tmp: Path, **options) -> mcgwlab.Lab:
    o = mcgwlab.Options(bgp=True, **options)
    prefix = f"mcgwlab-{secrets.token_hex(3)}-"
    return mcgwlab.Lab(prefix=prefix, workdir=tmp / prefix.rstrip("-"), options=o, build_dir=BUILD)


def bgp_status(lab, gw) -> dict:
    st = lab.status(gw)
    check(st is not None, f"{gw}: mcgwctl status answers")
    check("bgp" in st, f"{gw}: mcgwctl status --json has `bgp`", sorted(st))
    return st["bgp"]


def neighbors(lab, gw) -> dict:
    """{address: neighbour entry} of mcgwd's status."""
    return {n["address"]: n for n in bgp_status(lab, gw).get("neighbors", [])}


def wait_established(lab, gw, count: int, timeout: float = 60) -> dict:
    """FRR's sessions of `gw` (count of them) Established, and mcgwd's
    status showing them so; returns mcgwd's neighbours."""
    lab.wait_bgp(gw, timeout=timeout, count=count)
    deadline = time.monotonic() + 15
    while True:
        n = neighbors(lab, gw)
        if len(n) == count and all(v.get("state") == "Established" for v in n.values()):
            return n
        if time.monotonic() > deadline:
            check(False, f"{gw}: mcgwctl status shows {count} neighbours Established",
                  {a: v.get("state") for a, v in n.items()})
        time.sleep(0.25)


def frr_routes(lab, gw) -> list[dict]:
    """mcgwd's fast-path routes that came from FRR (`show routes --source frr --json`)."""
    r = lab.ctl(gw, "show", "routes", "--source", "frr", "--json")
    check(r.returncode == 0, f"{gw}: mcgwctl show routes --source frr --json", r.stderr or r.stdout)
    doc = json.loads(r.stdout)
    return doc["routes"] if isinstance(doc, dict) else doc


def route(routes: list[dict], prefix: str) -> dict | None:
    return next((r for r in routes if r.get("prefix") == prefix), None)


def wait_route(lab, gw, prefix: str, peer: str | None = None, timeout: float = 30) -> dict:
    """Wait until `prefix` is among gw's FRR routes (via `peer` when given)."""
    deadline = time.monotonic() + timeout
    while True:
        r = route(frr_routes(lab, gw), prefix)
        if r is not None and (peer is None or r.get("peer") == peer or peer in json.dumps(r)):
            return r
        if time.monotonic() > deadline:
            check(False, f"{gw}: {prefix} via {peer} among the FRR routes within {timeout} s",
                  json.dumps(frr_routes(lab, gw))[:2000])
        time.sleep(0.25)


def audit(lab, gw, timeout: float = 20) -> str:
    """`mcgwctl audit` of gw, until it exits 0 (FRR's RIB and the FIB agree)
    or `timeout`; fails with its last output."""
    deadline = time.monotonic() + timeout
    while True:
        r = lab.ctl(gw, "audit")
        if r.returncode == 0:
            return r.stdout
        if time.monotonic() > deadline:
            check(False, f"{gw}: mcgwctl audit exits 0", f"exit {r.returncode}: {r.stdout}{r.stderr}")
        time.sleep(1)


def tunnel_lines(lab, gw) -> tuple[dict, list]:
    """{line name: line entry} and the active lines of gw's A-B tunnel (`show tunnels --json`)."""
    d = json.loads(lab.ctl(gw, "show", "tunnels", "--json", check=True).stdout)
    t = next(t for t in d["tunnels"] if t["peer"] == AB_PEER[gw])
    return {ln["name"]: ln for ln in t["lines"]}, t["active_lines"]


def bfd_state(lab, gw, line: str) -> str | None:
    """The state of the BFD session of line `line` of gw's A-B peer in
    mcgwctl status (`bgp.bfd.sessions[]`), None without one."""
    for s in bgp_status(lab, gw).get("bfd", {}).get("sessions", []):
        if s.get("peer_site") == AB_PEER[gw] and s.get("line") == line:
            return s.get("state")
    return None


def uptimes(lab, gw) -> dict:
    """{neighbour: (mcgwd's uptime_s, FRR's peerUptimeMsec / 1000)}."""
    frr = lab.vtysh(gw, "show bgp summary json") or {}
    ms = {}
    for fam in frr.values():
        if isinstance(fam, dict):
            for addr, p in fam.get("peers", {}).items():
                ms[addr] = p.get("peerUptimeMsec", 0) / 1000
    return {a: (n.get("uptime_s"), ms.get(a)) for a, n in neighbors(lab, gw).items()}


def ab_ready(lab, before: str) -> None:
    """Both gateways' line sessions Established, the A-B VPC routes in the
    fast path from FRR, and host A reaching host B (before `before`)."""
    for gw in ("gwa", "gwb"):
        wait_established(lab, gw, 2)
    wait_route(lab, "gwa", "10.2.0.0/16", "site-b")
    wait_route(lab, "gwb", "10.1.0.0/16", "site-a")
    check(lab.ping("hosta", "10.2.0.10", count=3, timeout=2) == 3, f"ping A -> B before {before}")
    ok("sessions Established, routes in, A -> B reachable")
