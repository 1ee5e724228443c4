#!/usr/bin/python3
"""Lab test: line failover under a TCP transfer (af_xdp, VXLAN, IPv4 underlay).

An iperf3 transfer from host A to host B runs for 8 s (paced at 100 Mbit/s,
so the captures stay small); after 2.5 s line 1 fails: the router's ends of
it (a1 towards gateway A, b1 towards gateway B) go down, which drops the
carrier of the gateways' wan1 veths.  mcgwd polls each port's link every
100 ms; both gateways must move the tunnel to line 2 and the transfer must
complete (iperf3 exit 0, data received after the cut).

Measured and printed (asserted only against a generous bound of 3 s): the
interruption, i.e. the longest gap between consecutive A->B tunnel packets
seen by the router (captures on b1 and b2, merged) after the cut; when
each gateway showed line1 down and line2 active; the longest run of
iperf3's 100 ms intervals without data at the receiver.

Then line 1 comes back (a1, b1 up): both gateways must use it again within
10 s (active-backup prefers line1).  The time is printed: it depends on when
the kernel re-probes the next hop's managed neighbour entry, which failed
while the carrier was down (every interval_probe_time_ms, 5 s by default).

Cutting only a1 is not tested: gateway B's wan1 keeps its carrier, so only
a liveness protocol over the line (BFD, later) can tell gateway B.

Run as root with /usr/bin/python3; MCGW_BUILD_DIR names the build.
"""

import json
import os
import secrets
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(HERE))
import mcgwlab  # noqa: E402
from labtest import check, ok, run_parts  # noqa: E402

BUILD = Path(os.environ.get("MCGW_BUILD_DIR", HERE.parents[1] / "build"))
BOUND_S = 3.0





def lines(lab, gw) -> tuple[dict, list]:
    """{line: (up, link_up, resolved)} and the active lines of the gateway's peer tunnel."""
    d = json.loads(lab.ctl(gw, "show", "tunnels", "--json", check=True).stdout)
    t = next(t for t in d["tunnels"] if t["peer"] in ("site-a", "site-b"))
    return {ln["name"]: (ln["up"], ln["link_up"], ln["resolved"]) for ln in t["lines"]}, t["active_lines"]


def when(lab, pred, t0: float, timeout: float, step: float = 0.05) -> dict:
    """Poll both gateways until pred(lines, active) holds for each; the
    seconds after wall-clock time t0 at which it first held (None: never)."""
    seen: dict = {"gwa": None, "gwb": None}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and None in seen.values():
        for gw in seen:
            if seen[gw] is None and pred(*lines(lab, gw)):
                seen[gw] = time.time() - t0
        time.sleep(step)
    return seen


def run(tmp: Path) -> None:
    o = mcgwlab.Options()  # af_xdp, vxlan, ipv4 underlay
    prefix = f"mcgwlab-{secrets.token_hex(3)}-"
    lab = mcgwlab.Lab(prefix=prefix, workdir=tmp / prefix.rstrip("-"), options=o, build_dir=BUILD)
    t_start = time.monotonic()
    with lab.up(start_gateways=True):
        for gw in ("gwa", "gwb"):
            st, active = lines(lab, gw)
            check(active == ["line1"] and all(v == (True, True, True) for v in st.values()),
                  f"{gw} before: both lines up, line1 active", (st, active))
        filt = ["udp", "dst", "port", "4789", "and", "(", "src", "host", "100.64.1.1", "or", "src", "host",
                "100.64.2.1", ")"]  # A -> B tunnel packets
        caps = {i: lab.capture("rtr", i, bpf_filter=filt, snaplen=64) for i in ("b1", "b2")}

        result: dict = {}

        def transfer():
            try:
                result["t"] = lab.iperf("hosta", "hostb", seconds=8, interval=0.1, bitrate="100M", timeout=30)
            except Exception as e:  # noqa: BLE001 - reported below
                result["e"] = e

        th = threading.Thread(target=transfer)
        th.start()
        time.sleep(2.5)
        t_cut = time.time()
        lab.run("rtr", "ip", "-batch", "-", input="link set a1 down\nlink set b1 down\n")
        seen = when(lab, lambda st, active: active == ["line2"] and not st["line1"][1], t_cut, 3)
        th.join(60)
        check(not th.is_alive(), "iperf3 did not end")
        for c in caps.values():
            c.stop()
        check("e" not in result, "the transfer across the failover", result.get("e"))
        t = result["t"]
        print(f"   {t}", flush=True)
        problems = []  # checks that do not stop the rest of the test
        for gw in ("gwa", "gwb"):
            st, active = lines(lab, gw)
            check(seen[gw] is not None and active == ["line2"] and st["line1"][:2] == (False, False)
                  and st["line2"] == (True, True, True),
                  f"{gw}: line1 down (link), line2 active after the cut", (st, active))
            # What an operator reads: `mcgwctl show tunnels` (docs/operations.md: STATE `down` = port link down).
            text = lab.ctl(gw, "show", "tunnels", check=True).stdout
            block = text.split("tunnel ")[1]  # the A-B tunnel comes first
            state = {f[0]: f[2] for f in (ln.split() for ln in block.splitlines()) if f and f[0].startswith("line")}
            if "active: line2" not in block or state != {"line1": "down", "line2": "up"}:
                problems.append(f"{gw}: `mcgwctl show tunnels` should show line1 down, line2 up and active: "
                                f"{state}\n{block}")

        # The interruption, on the wire.
        pkts = []
        for i, c in caps.items():
            pkts += [(float(r[0]), i) for r in c.fields("frame.time_epoch")]
        pkts.sort()
        before = [ts for ts, i in pkts if i == "b1" and ts < t_cut + 1]
        after = [ts for ts, i in pkts if i == "b2"]
        check(before and after, "A->B tunnel packets on line1 before and on line2 after the cut",
              (len(before), len(after)))
        window = [ts for ts, _ in pkts if ts >= t_cut - 0.5]
        gap = max((b - a for a, b in zip(window, window[1:])), default=0.0)
        last1, first2 = max(before) - t_cut, min(after) - t_cut
        iv = t.intervals
        empty = longest = 0.0
        for start, end, nbytes in iv:
            empty = empty + (end - start) if nbytes == 0 else 0.0
            longest = max(longest, empty)
        # iperf3 started a little after the thread, so its clock is behind: the cut is before its 2.5 s.
        after_cut = sum(b for s, e, b in iv if s >= 3.5)
        check(after_cut > 0, "data received after the cut", iv)
        print(f"   measured: cut at t0; last A->B packet on line1 t0{last1:+.3f} s, first on line2 "
              f"t0{first2:+.3f} s; longest gap in A->B tunnel packets {gap * 1000:.0f} ms; "
              f"line2 active in gwa at t0+{seen['gwa']:.2f} s, gwb at t0+{seen['gwb']:.2f} s "
              f"(polled every 50 ms); longest stretch of 100 ms iperf3 intervals without data "
              f"{longest * 1000:.0f} ms; {t.retransmits} retransmits", flush=True)
        check(gap < BOUND_S, f"interruption < {BOUND_S} s", f"{gap:.3f} s")
        ok(f"line 1 cut under an iperf3 transfer A->B: both gateways moved to line 2, the transfer completed "
           f"({t.bytes / 1048576:.0f} MiB), interruption {gap * 1000:.0f} ms (< {BOUND_S:.0f} s)")

        # Line 1 back: active-backup returns to it.
        t_up = time.time()
        lab.run("rtr", "ip", "-batch", "-", input="link set a1 up\nlink set b1 up\n")
        back = when(lab, lambda st, active: active == ["line1"], t_up, 10)
        states = {gw: lines(lab, gw) for gw in ("gwa", "gwb")}
        check(all(v is not None for v in back.values()),
              "line1 usable and active again within 10 s of its link coming back "
              "(line: (up, link_up, resolved)); kernel neighbours: "
              + "; ".join(f"{gw} {lab.run(gw, 'ip', 'neigh', 'show', 'dev', 'wan1').stdout.strip() or '(none)'}"
                          for gw in ("gwa", "gwb")), states)
        ok(f"line 1 back: active again in gwa after {back['gwa']:.1f} s, gwb after {back['gwb']:.1f} s")
        check(not problems, "after the cut", "\n".join(problems))
        ok("mcgwctl show tunnels: line1 down, line2 up and active")
    print(f"   {time.monotonic() - t_start:.1f} s", flush=True)


def main() -> int:
    return run_parts("failover", [("failover", run)], log_lines=20)


if __name__ == "__main__":
    sys.exit(main())
