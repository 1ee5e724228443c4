#!/usr/bin/python3
"""Lab test: SLA steering (issue 17, item 4).

The two-site lab (af_xdp, VXLAN over IPv4, static routes, active-backup
lines) with `sla: {max-loss: 1%, hold-s: 5}` on every peer:

- healthy: both gateways send site A <-> B on line 1, within their SLA;
- nft on the router drops 5 % of line 1's UDP (both directions, data and
  probes): within 15 s both gateways take line 1 out (show tunnels: sla
  "outside", the reason is its loss; the log says so) and send on line 2;
  20 pings A -> B are all answered and gateway A's line 1 carries none of
  them;
- the rule removed: line 1 is used again once its 10 s window is clean and
  has stayed so for the 5 s hold time (within 25 s), and the log says so;
- both lines lossy: each is outside its SLA, and the best is kept in use
  rather than none (pings still answered).

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

BUILD = os.environ.get("MCGW_BUILD_DIR", str(HERE.parent.parent / "build"))
NFT_TABLE = "mcgwlab_sla"
PEERS = {"gwa": "site-b", "gwb": "site-a"}


def tunnel(lab, gw: str) -> dict:
    doc = json.loads(lab.ctl(gw, "show", "tunnels", "--json", check=True).stdout)
    return next(t for t in doc["tunnels"] if t["peer"] == PEERS[gw])


def lines(lab, gw: str) -> dict:
    return {ln["name"]: ln for ln in tunnel(lab, gw)["lines"]}


def wait(lab, pred, timeout: float, what: str):
    t0 = time.monotonic()
    while True:
        state = {gw: tunnel(lab, gw) for gw in PEERS}
        if pred(state):
            return time.monotonic() - t0, state
        if time.monotonic() - t0 > timeout:
            brief = {gw: (t["active_lines"], {ln["name"]: (ln["sla"], ln["quality"]["window_10s"]["loss_ratio"])
                                              for ln in t["lines"]}) for gw, t in state.items()}
            check(False, what, brief)
        time.sleep(0.25)


def lossy(lab, ifaces: list[str], percent: int) -> None:
    rules = "".join(f"    {d}name \"{i}\" meta l4proto udp numgen random mod 100 < {percent} counter drop;\n"
                    for i in ifaces for d in ("iif", "oif"))
    lab.run("rtr", "nft", "delete", "table", "inet", NFT_TABLE, check=False)
    mcgwlab.sh("ip", "netns", "exec", lab.ns("rtr"), "nft", "-f", "-",
               input=f"table inet {NFT_TABLE} {{\n  chain forward {{ type filter hook forward priority filter; "
                     f"policy accept;\n{rules}  }}\n}}\n")


def line_tx(lab, gw: str, name: str) -> int:
    return lines(lab, gw)[name]["counters"]["tx_packets"]


def run(tmp: Path) -> None:
    prefix = f"mcgwlab-{secrets.token_hex(3)}-"
    o = mcgwlab.Options(sla={"max-loss": "1%", "hold-s": 5})
    lab = mcgwlab.Lab(prefix=prefix, workdir=tmp / prefix.rstrip("-"), options=o, build_dir=BUILD)
    t_start = time.monotonic()
    with lab.up(start_gateways=True):
        took, _ = wait(lab, lambda s: all(t["active_lines"] == ["line1"] and all(
            ln["sla"]["state"] == "within" and ln["quality"]["window_10s"]["probes"] >= 50 for ln in t["lines"])
            for t in s.values()), 30, "healthy: line 1 in use, both lines within their SLA")
        ok(f"healthy: both gateways on line 1, every line within its SLA ({took:.1f} s)")

        # Line 1 loses 5 %.
        lossy(lab, ["a1", "b1"], 5)
        took, state = wait(lab, lambda s: all(t["active_lines"] == ["line2"] for t in s.values()), 15,
                           "line 1 taken out of use by both gateways within 15 s")
        for gw, t in state.items():
            ln1 = {ln["name"]: ln for ln in t["lines"]}["line1"]
            check(ln1["sla"]["state"] == "outside" and ln1["sla"]["reason"].startswith("loss ")
                  and ln1["sla"]["changes"] >= 1, f"{gw}: line 1 outside its SLA because of its loss", ln1["sla"])
        log = Path(lab.state["gateways"]["gwa"]["log"]).read_text()
        check("line site-b/line1: outside its SLA (loss" in log, "gwa's log says why line 1 went", log[-2000:])
        text = lab.ctl("gwa", "show", "tunnels").stdout
        check("SLA outside (loss" in text and "SLA within" in text, "show tunnels says line 1 is outside", text)
        before1, before2 = line_tx(lab, "gwa", "line1"), line_tx(lab, "gwa", "line2")
        replies = lab.ping("hosta", "10.2.0.10", count=20, timeout=2)
        d1, d2 = line_tx(lab, "gwa", "line1") - before1, line_tx(lab, "gwa", "line2") - before2
        check(replies == 20, "20 pings A -> B answered while line 1 is lossy", replies)
        check(d1 == 0 and d2 >= 20, "gwa sent them on line 2 alone", f"line1 +{d1}, line2 +{d2}")
        ok(f"5 % loss on line 1: both gateways moved to line 2 after {took:.1f} s "
           f"(gwa: {lines(lab, 'gwa')['line1']['sla']['reason']}); 20/20 pings, all on line 2")

        # Repaired: back after the window is clean and the hold time has passed.
        lab.run("rtr", "nft", "delete", "table", "inet", NFT_TABLE)
        took, _ = wait(lab, lambda s: all(t["active_lines"] == ["line1"] for t in s.values()), 25,
                       "line 1 in use again within 25 s of the repair")
        check(took >= 5, "not before the 5 s hold time", f"{took:.1f} s")
        log = Path(lab.state["gateways"]["gwa"]["log"]).read_text()
        check("line site-b/line1: within its SLA for 5 s: in use again" in log, "gwa's log says line 1 is back",
              log[-2000:])
        ok(f"line 1 repaired: back in use by both gateways after {took:.1f} s (10 s window + 5 s hold)")

        # Both lines lossy: the best one is kept.
        lossy(lab, ["a1", "b1", "a2", "b2"], 5)
        took, state = wait(lab, lambda s: all(
            all(ln["sla"]["state"].startswith("outside") for ln in t["lines"]) and len(t["active_lines"]) == 1
            and sum(ln["sla"]["state"] == "outside, kept as the best" for ln in t["lines"]) == 1
            for t in s.values()), 20, "both lines outside, the best kept in use, within 20 s")
        replies = lab.ping("hosta", "10.2.0.10", count=10, timeout=2)
        lab.run("rtr", "nft", "delete", "table", "inet", NFT_TABLE)
        # ~10 % loss each way on either line: a few pings are lost, not all.
        check(replies >= 3, "pings still answered over the line kept", replies)
        ok(f"both lines lossy: both outside their SLA after {took:.1f} s, the best kept "
           f"(gwa on {state['gwa']['active_lines']}, gwb on {state['gwb']['active_lines']}); {replies}/10 pings")
    print(f"   {time.monotonic() - t_start:.1f} s", flush=True)


def main() -> int:
    return run_parts("sla", [("sla", run)], logs="gw*.log", log_lines=30)


if __name__ == "__main__":
    sys.exit(main())
