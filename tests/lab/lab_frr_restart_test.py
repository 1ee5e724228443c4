#!/usr/bin/python3
"""Lab test: FRR restarted without systemctl while traffic flows (issue 13),
af_xdp, VXLAN, IPv4 underlay.

A UDP probe stream of 1,000 datagrams/s runs from host A to host B for 20 s.
2 s in, zebra and bgpd of gateway A are killed (SIGKILL, a crash: zebra's
FPM connection to mcgwd drops); while they are down gateway A's status shows
the FRR routes stale (`bgp.routes.stale` > 0) and forwarding goes on with
them.  Then they are started again (the lab feeds them frr.conf with
`vtysh -b`, as FRR's boot does); the sessions come back Established and
`mcgwctl audit` exits 0 on both gateways.  The loss window of the stream is
printed and asserted < 1 s.

Run as root with /usr/bin/python3; MCGW_BUILD_DIR names the build.
"""

import json
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(HERE))
from bgptest import ab_ready, audit, bgp_status, new_lab, tunnel_lines, wait_established  # noqa: E402
from labtest import check, ok, run_parts  # noqa: E402

BOUND_MS = 1000
STREAM_S = 20.0


def stale(lab, gw) -> int:
    return int((bgp_status(lab, gw).get("routes") or {}).get("stale") or 0)


def run(tmp: Path) -> None:
    t_start = time.monotonic()
    lab = new_lab(tmp)
    with lab.up(start_gateways=True):
        ab_ready(lab, "the restart")

        # What the gateways' tunnels did meanwhile (printed as transitions).
        timeline: list = []
        stop = threading.Event()

        def watch():
            last = {}
            while not stop.is_set():
                for gw in ("gwa", "gwb"):
                    try:
                        lines, active = tunnel_lines(lab, gw)
                        routes = len(lab.frr_routes(gw))
                    except Exception as e:  # noqa: BLE001 - a moment without an answer is news too
                        state = f"no answer ({e})"
                    else:
                        state = (f"active {','.join(active) or '-'}; "
                                 + " ".join(f"{n} {'up' if ln.get('up') else 'down'}" for n, ln in sorted(lines.items()))
                                 + f"; {routes} FRR route(s)")
                    if last.get(gw) != state:
                        timeline.append((time.time(), gw, state))
                        last[gw] = state
                time.sleep(0.05)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        probe = lab.probe("hosta", "hostb", dst="10.2.0.10", seconds=STREAM_S)
        probe_end = time.time() + STREAM_S
        time.sleep(2)
        t_kill = time.time()
        lab.stop_frr("gwa", ["zebra", "bgpd"], kill=True)
        # While FRR is down: the routes stay, stale.
        seen_stale, deadline = 0, time.monotonic() + 5
        while time.monotonic() < deadline and not seen_stale:
            seen_stale = stale(lab, "gwa")
            time.sleep(0.1)
        st = bgp_status(lab, "gwa")
        print(f"   gwa while zebra and bgpd are down: bgp.routes {json.dumps(st.get('routes'))}, "
              f"fpm {json.dumps(st.get('fpm'))}", flush=True)
        check(seen_stale > 0, "gwa: bgp.routes.stale > 0 while zebra is down", json.dumps(st)[:1500])
        time.sleep(2)
        t_start_frr = time.time()
        lab.start_frr("gwa", ["zebra", "bgpd"])
        res = probe.wait()
        stop.set()
        watcher.join(5)
        for t, gw, state in timeline:
            print(f"     t0{t - t_kill:+.2f} s {gw}: {state}", flush=True)
        print(f"   {res}; killed at t0, started again at t0+{t_start_frr - t_kill:.1f} s, stream ends at "
              f"t0+{probe_end - t_kill:.1f} s; runs of >= 5 lost: {res.gaps_after(t_kill)}", flush=True)
        check(res.received > 0 and res.window_ms < BOUND_MS, f"loss window < {BOUND_MS} ms", res)
        ok(f"zebra and bgpd of gwa killed and started under 1,000 probes/s A->B: routes stale meanwhile "
           f"({seen_stale}), loss window {res.window_ms:.0f} ms, {res.lost} lost")

        for gw in ("gwa", "gwb"):
            wait_established(lab, gw, 2, timeout=60)
        deadline = time.monotonic() + 30
        while stale(lab, "gwa") and time.monotonic() < deadline:
            time.sleep(0.5)
        check(stale(lab, "gwa") == 0, "gwa: no stale route left once zebra sent them again",
              bgp_status(lab, "gwa").get("routes"))
        for gw in ("gwa", "gwb"):
            audit(lab, gw, timeout=30)
        check(lab.ping("hosta", "10.2.0.10", count=3, timeout=2) == 3, "ping A -> B after the restart")
        ok("after the restart: sessions Established, no stale route, mcgwctl audit exits 0 on both gateways")
    print(f"   {time.monotonic() - t_start:.1f} s", flush=True)


def main() -> int:
    return run_parts("frr-restart", [("frr_restart", run)], log_lines=20)


if __name__ == "__main__":
    sys.exit(main())
