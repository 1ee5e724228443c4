#!/usr/bin/python3
"""Lab test: both gateways follow one address plan in etcd (issue 15, item
4), with BGP through FRR, af_xdp, VXLAN, IPv4 underlay.

etcd (Debian's etcd-server) runs in the underlay router's namespace on its
line-1 addresses (100.64.1.2 for gateway A, 100.64.3.2 for gateway B); the
gateways' configs name it as their store (`address-plan.store`) with a pool
10.64.0.0/12.

- Both gateways start with store revision 0, healthy.
- `mcgwctl plan allocate` (run in gateway A's namespace, from A's config)
  gives a new VPC of site B the lowest /24 of the pool: 10.64.0.0/24.  Both
  gateways apply the revision within seconds (status), gateway B's FRR
  announces the range and gateway A has it from FRR via site-b.
- etcd stopped while a UDP stream runs from host A to host B: nothing is
  lost, both gateways keep their plan and say the store is unreachable
  (degraded); etcd back: both are healthy again with the same revision.
- A VPC written into etcd by hand that overlaps site A's 10.1.0.0/16 is
  refused by both gateways (status address_plan.store.refused, degraded),
  which keep the plan they run (A's range still announced, the new VPC
  still routed); removing it makes both healthy again.

Run as root with /usr/bin/python3; MCGW_BUILD_DIR names the build.
"""

import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(HERE))
from bgptest import new_lab, wait_established, wait_route  # noqa: E402
from labtest import check, ok, run_parts  # noqa: E402

ETCD_PORT = 2379
ENDPOINTS = [f"http://100.64.1.2:{ETCD_PORT}", f"http://100.64.3.2:{ETCD_PORT}"]
POOL = "10.64.0.0/12"
NEW_VPC = "10.64.0.0/24"


def start_etcd(lab) -> None:
    d = lab.dir / "etcd"
    urls = ",".join(ENDPOINTS)
    lab.start("etcd", "rtr", "etcd", "--name", "lab", "--data-dir", d,
              "--listen-client-urls", urls, "--advertise-client-urls", urls,
              "--listen-peer-urls", "http://127.0.0.1:2380",
              "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
              "--initial-cluster", "lab=http://127.0.0.1:2380", listen=ETCD_PORT, timeout=30)


def etcdctl(lab, *args, input=None) -> str:
    r = lab.run("rtr", "env", "ETCDCTL_API=3", "etcdctl", "--endpoints", ENDPOINTS[0], *args,
                input=input, check=False)
    check(r.returncode == 0, f"etcdctl {' '.join(map(str, args))}", r.stderr)
    return r.stdout


def store_status(lab, gw) -> dict:
    st = lab.status(gw)
    check(st is not None and "address_plan" in st, f"{gw}: status has address_plan")
    return st


def wait_store(lab, gw, what: str, pred, timeout: float = 20) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        st = store_status(lab, gw)
        if pred(st):
            return st
        if time.monotonic() > deadline:
            check(False, f"{gw}: {what} within {timeout} s",
                  json.dumps({"health": st["health"], "address_plan": st["address_plan"]}))
        time.sleep(0.25)


def store_of(st) -> dict:
    return st["address_plan"].get("store") or {}


def run(tmp: Path) -> None:
    plan_extra = {"store": {"type": "etcd", "endpoints": ENDPOINTS},
                  "pools": [{"name": "lab-pool", "prefixes": [POOL], "allocation-length": 24}]}
    lab = new_lab(tmp, plan_extra=plan_extra)
    with lab.up():
        start_etcd(lab)
        for gw in ("gwa", "gwb"):
            lab.start_gateway(gw)
        wait_established(lab, "gwa", 2)
        wait_established(lab, "gwb", 2)
        for gw in ("gwa", "gwb"):
            # Healthy also means zebra has connected over FPM, which can come a few
            # seconds after the BGP sessions (zebra retries its FPM connection).
            st = wait_store(lab, gw, "store ok at revision 0, healthy",
                            lambda s: store_of(s).get("state") == "ok"
                            and s["health"]["state"] == "healthy", timeout=30)
            check(store_of(st)["revision"] == 0, f"{gw}: revision 0", store_of(st))
        ok("etcd in rtr; both gateways follow it (revision 0), healthy")

        # An allocation from gateway A's config, for a VPC of site B.
        cfg = lab.state["gateways"]["gwa"]["config"]
        r = lab.run("gwa", lab.mcgwctl, "plan", "-c", cfg, "allocate", "--cloud", "lab",
                    "--region", "r1", "--vpc", "b-new", "--tenant", "blue", "--site", "site-b",
                    "--json", check=False)
        check(r.returncode == 0, "mcgwctl plan allocate", r.stdout + r.stderr)
        got = json.loads(r.stdout)
        check(got["prefixes"] == [NEW_VPC], f"the lowest /24 of {POOL}", got)
        revision = got["revision"]
        t0 = time.monotonic()
        for gw in ("gwa", "gwb"):
            st = wait_store(lab, gw, f"revision {revision} applied",
                            lambda s: store_of(s).get("revision") == revision)
            check(st["health"]["state"] == "healthy", f"{gw}: healthy", st["health"])
        applied = time.monotonic() - t0
        wait_route(lab, "gwa", NEW_VPC, peer="site-b", timeout=30)
        ok(f"allocated {NEW_VPC} (revision {revision}); both gateways applied it within "
           f"{applied:.1f} s; gwa routes it to site-b (FRR)")

        # etcd stops under traffic.
        probe = lab.probe("hosta", "hostb", rate=200, seconds=12)
        time.sleep(1)
        lab.stop("etcd")
        for gw in ("gwa", "gwb"):
            st = wait_store(lab, gw, "store unreachable, degraded",
                            lambda s: store_of(s).get("state") == "unreachable"
                            and s["health"]["state"] == "degraded")
            reasons = " ".join(st["health"]["reasons"])
            check("unreachable" in reasons, f"{gw}: health says the store is unreachable", reasons)
            check(store_of(st)["revision"] == revision, f"{gw}: keeps revision {revision}",
                  store_of(st))
        res = probe.wait()
        check(res.lost == 0, "no datagram lost while etcd is down", str(res))
        wait_route(lab, "gwa", NEW_VPC, peer="site-b", timeout=5)
        ok(f"etcd stopped: both gateways degraded with the plan kept, stream {res}")

        start_etcd(lab)
        for gw in ("gwa", "gwb"):
            st = wait_store(lab, gw, "store ok again, healthy",
                            lambda s: store_of(s).get("state") == "ok"
                            and s["health"]["state"] == "healthy", timeout=30)
            check(store_of(st)["revision"] == revision, f"{gw}: revision {revision}", store_of(st))
        ok("etcd back: both gateways healthy, same revision")

        # A VPC written by hand that overlaps site A's range is refused.
        bad = {"name": "bad", "cloud": "lab", "region": "r1", "prefixes": ["10.1.128.0/17"],
               "pool": "", "tenant": "blue", "site": "site-b", "source": "allocate"}
        etcdctl(lab, "put", "/mcgw/plan/vpcs/bad", json.dumps(bad))
        etcdctl(lab, "put", "/mcgw/plan/serial", "by-hand")
        for gw in ("gwa", "gwb"):
            st = wait_store(lab, gw, "the overlapping revision refused",
                            lambda s: "refused" in store_of(s))
            errors = " ".join(store_of(st)["refused"]["errors"])
            check("10.1.128.0/17" in errors and "10.1.0.0/16" in errors,
                  f"{gw}: the refusal names both ranges", errors)
            check(st["health"]["state"] == "degraded", f"{gw}: degraded", st["health"])
            check(store_of(st)["revision"] == revision, f"{gw}: runs revision {revision}",
                  store_of(st))
        wait_route(lab, "gwb", "10.1.0.0/16", peer="site-a", timeout=5)
        wait_route(lab, "gwa", NEW_VPC, peer="site-b", timeout=5)
        ok("an overlapping VPC written into etcd by hand: refused by both, plan kept")
        # A change by hand moves the serial key too: the plan's revision is
        # the newest mod_revision under its prefix (docs/address-plan.md).
        etcdctl(lab, "del", "/mcgw/plan/vpcs/bad")
        etcdctl(lab, "put", "/mcgw/plan/serial", "by-hand-again")
        for gw in ("gwa", "gwb"):
            wait_store(lab, gw, "healthy again",
                       lambda s: "refused" not in store_of(s)
                       and s["health"]["state"] == "healthy")
        ok("the VPC removed: both gateways healthy")


def main() -> int:
    return run_parts("plan", [("plan", run)], log_lines=20)


if __name__ == "__main__":
    sys.exit(main())
