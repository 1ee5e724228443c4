#!/usr/bin/python3
"""Lab test: Prometheus metrics (issue 17, items 1 and 2) with a real Prometheus.

The two-site lab with BGP (FRR) and a management network (Options.monitor):
each gateway's metrics.listen is on its mgmt0 address, and Debian's
`prometheus` runs in namespace `mon`, scraping both every second with the
rules of docs/alerts/mcgw.rules.yml evaluated every second.

- A live scrape of each gateway passes `promtool check metrics`.
- Prometheus's HTTP API: both targets up; `mcgw_line_up` is 1 for every line
  of both gateways; `mcgw_bgp_session_up` 1 for the four line sessions.
- 10 MiB of iperf3 A->B: gateway A's `mcgw_line_bytes_total{direction="tx"}`
  grows by at least 10 MiB in Prometheus, within 2 % of its `show tunnels`
  counters read at the same time, and gateway B's rx by as much.
- A broken config file reloaded on gateway B: Prometheus's alert
  McgwReloadFailed fires for gateway B (and only B); the file repaired and
  reloaded, the alert is gone.

Run as root with /usr/bin/python3; MCGW_BUILD_DIR names the build.
"""

import json
import sys
import time
import urllib.parse
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent.parent
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(HERE))
import mcgwlab  # noqa: E402
from bgptest import new_lab, wait_established  # noqa: E402
from labtest import check, ok, run_parts  # noqa: E402

PROM_PORT = 9090
RULES = SOURCE / "docs" / "alerts" / "mcgw.rules.yml"
GATEWAYS = ("gwa", "gwb")


def query(lab, expr: str) -> list:
    """An instant query against the lab's Prometheus: its result vector."""
    url = f"http://127.0.0.1:{PROM_PORT}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    r = lab.run("mon", "curl", "-sS", "--max-time", "5", url, check=False)
    try:
        doc = json.loads(r.stdout)
    except json.JSONDecodeError:
        return []
    return doc.get("data", {}).get("result", []) if doc.get("status") == "success" else []


def wait_query(lab, expr: str, good, what: str, timeout: float = 20) -> list:
    deadline = time.monotonic() + timeout
    while True:
        res = query(lab, expr)
        if good(res):
            return res
        if time.monotonic() > deadline:
            check(False, what, f"{expr} -> {res}")
        time.sleep(0.5)


def by_instance(res: list) -> dict:
    return {r["metric"].get("instance"): float(r["value"][1]) for r in res}


def start_prometheus(lab, tmp: Path) -> None:
    targets = [lab.metrics_target(gw) for gw in GATEWAYS]
    conf = tmp / "prometheus.yml"
    conf.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        f"rule_files:\n  - {RULES}\n"
        "scrape_configs:\n  - job_name: mcgw\n    static_configs:\n"
        f"      - targets: {json.dumps(targets)}\n")
    data = tmp / "prometheus-data"
    data.mkdir(exist_ok=True)
    lab.start("prometheus", "mon", "prometheus", f"--config.file={conf}", f"--storage.tsdb.path={data}",
              f"--web.listen-address=127.0.0.1:{PROM_PORT}", "--log.level=warn", listen=PROM_PORT,
              timeout=30)


def line_tx_bytes(lab, gw: str, direction: str) -> int:
    """The sum of the lines' byte counters in `mcgwctl show tunnels --json`."""
    doc = json.loads(lab.ctl(gw, "show", "tunnels", "--json", check=True).stdout)
    seen, total = set(), 0
    for tu in doc["tunnels"]:
        for ln in tu["lines"]:
            if (tu["peer"], ln["name"]) not in seen:
                seen.add((tu["peer"], ln["name"]))
                total += ln["counters"][f"{direction}_bytes"]
    return total


def run(tmp: Path) -> None:
    t_start = time.monotonic()
    lab = new_lab(tmp, monitor=True)
    with lab.up(start_gateways=True):
        for gw in GATEWAYS:
            wait_established(lab, gw, 2)
        # The live exposition, linted by Prometheus's own tool.
        for gw in GATEWAYS:
            r = lab.run("mon", "curl", "-sS", "--max-time", "5", f"http://{lab.metrics_target(gw)}/metrics",
                        check=False)
            check(r.returncode == 0 and "mcgw_build_info" in r.stdout, f"{gw}: /metrics answers",
                  r.stderr[-300:])
            lint = mcgwlab.sh("promtool", "check", "metrics", input=r.stdout, check=False)
            check(lint.returncode == 0, f"{gw}: promtool check metrics passes", lint.stdout + lint.stderr)
        ok(f"both gateways' /metrics pass promtool check metrics ({len(r.stdout)} bytes from gwb)")

        start_prometheus(lab, tmp)
        names = {lab.metrics_target(gw): gw for gw in GATEWAYS}
        wait_query(lab, 'up{job="mcgw"}', lambda res: len(res) == 2 and all(v == 1 for v in by_instance(res).values()),
                   "Prometheus scrapes both gateways (up == 1)")
        lines = wait_query(lab, "mcgw_line_up", lambda res: len(res) >= 6 and all(r["value"][1] == "1" for r in res),
                           "every line of both gateways is up in Prometheus")
        per_gw = {}
        for r in lines:
            gw = names.get(r["metric"]["instance"])
            per_gw.setdefault(gw, []).append(f"{r['metric']['peer']}/{r['metric']['line']}")
        check(sorted(per_gw.get("gwa", [])) == ["site-b/line1", "site-b/line2", "site-c/line1", "site-c/line2"]
              and sorted(per_gw.get("gwb", [])) == ["site-a/line1", "site-a/line2"],
              "mcgw_line_up has gateway A's four lines and gateway B's two", per_gw)
        bgp = wait_query(lab, 'mcgw_bgp_session_up{kind="line"}',
                         lambda res: len(res) == 4 and all(r["value"][1] == "1" for r in res),
                         "the four line BGP sessions are up in Prometheus")
        ok(f"Prometheus in namespace mon: both targets up, {len(lines)} lines up ({per_gw}), "
           f"{len(bgp)} BGP sessions up")

        # Traffic shows in Prometheus as in show tunnels.
        expr = 'sum by (instance) (mcgw_line_bytes_total{direction="%s"})'
        before_tx = by_instance(query(lab, expr % "tx"))
        before_rx = by_instance(query(lab, expr % "rx"))
        a, b = lab.metrics_target("gwa"), lab.metrics_target("gwb")
        t = lab.iperf("hosta", "hostb", nbytes=10 << 20)
        time.sleep(2.5)  # two scrapes
        cli_tx = line_tx_bytes(lab, "gwa", "tx")
        after_tx = by_instance(query(lab, expr % "tx"))
        after_rx = by_instance(query(lab, expr % "rx"))
        sent = after_tx.get(a, 0) - before_tx.get(a, 0)
        got = after_rx.get(b, 0) - before_rx.get(b, 0)
        check(sent >= 10 << 20, "gateway A's lines sent the 10 MiB (Prometheus)", f"{sent:.0f} bytes; {t}")
        check(got >= 10 << 20, "gateway B's lines received them (Prometheus)", f"{got:.0f} bytes")
        check(abs(after_tx.get(a, 0) - cli_tx) <= 0.02 * cli_tx,
              "Prometheus's figure is show tunnels' (within 2 %)", f"{after_tx.get(a)} vs {cli_tx}")
        ok(f"10 MiB A->B: Prometheus saw gwa's lines send {sent / 2**20:.2f} MiB and gwb's receive "
           f"{got / 2**20:.2f} MiB (show tunnels: {cli_tx} bytes sent in all)")

        # An alert of docs/alerts fires and resolves.
        config = Path(lab.state["gateways"]["gwb"]["config"])
        good = config.read_text()
        config.write_text(good + "tenants:\n  - name: broken\n")
        r = lab.ctl("gwb", "reload")
        check(r.returncode != 0, "gwb: a broken file's reload is refused", r.stdout)
        t0 = time.monotonic()
        firing = wait_query(lab, 'ALERTS{alertname="McgwReloadFailed",alertstate="firing"}',
                            lambda res: len(res) >= 1, "McgwReloadFailed fires", timeout=15)
        took = time.monotonic() - t0
        check([names.get(x["metric"]["instance"]) for x in firing] == ["gwb"],
              "McgwReloadFailed fires for gwb alone", firing)
        config.write_text(good)
        r = lab.ctl("gwb", "reload")
        check(r.returncode == 0, "gwb: the repaired file reloads", r.stdout + r.stderr)
        wait_query(lab, 'ALERTS{alertname="McgwReloadFailed"}', lambda res: res == [],
                   "McgwReloadFailed resolves after a good reload", timeout=15)
        ok(f"McgwReloadFailed fired for gwb {took:.1f} s after the refused reload and resolved after "
           "the good one")
    print(f"   {time.monotonic() - t_start:.1f} s", flush=True)


def main() -> int:
    return run_parts("metrics", [("metrics", run)], logs="*.log", log_lines=20)


if __name__ == "__main__":
    sys.exit(main())
