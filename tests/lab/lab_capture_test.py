#!/usr/bin/python3
"""Lab test: `mcgwctl capture` (issue 17, item 6) on a running gateway.

The two-site lab (af_xdp, VXLAN over IPv4, static routes):

- `mcgwctl capture lan0 --filter icmp -w FILE` on gateway A during 5 pings
  hosta -> hostb holds exactly those packets: 5 echo requests received on
  lan0 and 5 replies sent on it, read by tshark without a malformed packet,
  in the direction pcapng records (inbound / outbound).
- `mcgwctl capture site-b/line1 --filter 'udp port 4789' --count 4 -w -`
  piped into tshark during pings: VXLAN packets with the line's VTEPs as
  outer addresses, VNI 1000, and the hosts' ICMP inside.
- After each capture, `show counters --json` has it ended and counted.

Run as root with /usr/bin/python3; MCGW_BUILD_DIR names the build.
"""

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(HERE))
import mcgwlab  # noqa: E402
from labtest import check, ok, run_parts  # noqa: E402

BUILD = os.environ.get("MCGW_BUILD_DIR", str(HERE.parent.parent / "build"))


def capture_view(lab, gw: str) -> dict:
    return json.loads(lab.ctl(gw, "show", "counters", "--json", check=True).stdout).get("capture", {})


def wait_capture(lab, gw: str, active: bool, timeout: float = 10) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        v = capture_view(lab, gw)
        if v.get("active") == active:
            return v
        check(time.monotonic() < deadline, f"{gw}: capture {'starts' if active else 'ends'}", v)
        time.sleep(0.1)


def tshark(path: str, *fields: str, stdin: bytes | None = None) -> list[list[str]]:
    argv = ["tshark", "-r", path, "-T", "fields", "-E", "separator=|"]
    for f in fields:
        argv += ["-e", f]
    r = subprocess.run(argv, input=stdin, capture_output=True, timeout=60)
    check(r.returncode == 0, f"tshark reads {path}", r.stderr.decode()[-400:])
    return [line.split("|") for line in r.stdout.decode().splitlines() if line]


def run(tmp: Path) -> None:
    prefix = f"mcgwlab-{secrets.token_hex(3)}-"
    lab = mcgwlab.Lab(prefix=prefix, workdir=tmp / prefix.rstrip("-"), options=mcgwlab.Options(),
                      build_dir=BUILD)
    with lab.up(start_gateways=True):
        check(lab.ping("hosta", "10.2.0.10", count=3, timeout=2) == 3, "ping A -> B before capturing")
        sock = lab.state["gateways"]["gwa"]["socket"]

        # lan0 of gateway A, icmp only, ended by Ctrl-C.
        out = tmp / "lan0.pcapng"
        p = subprocess.Popen([lab.mcgwctl, "--socket", sock, "capture", "lan0", "--filter", "icmp",
                              "-w", str(out)], stderr=subprocess.PIPE)
        wait_capture(lab, "gwa", True)
        replies = lab.ping("hosta", "10.2.0.10", count=5, timeout=2)
        time.sleep(0.3)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=10)
        check(p.returncode == 0, "mcgwctl capture ends on Ctrl-C with 0", err.decode())
        v = wait_capture(lab, "gwa", False)
        rows = tshark(str(out), "icmp.type", "ip.src", "ip.dst", "frame.interface_name",
                      "frame.packet_flags_direction", "_ws.malformed")
        requests = [r for r in rows if r[0] == "8" and r[1] == "10.1.0.10" and r[2] == "10.2.0.10"]
        answers = [r for r in rows if r[0] == "0" and r[1] == "10.2.0.10" and r[2] == "10.1.0.10"]
        check(replies == 5 and len(rows) == 10 and len(requests) == 5 and len(answers) == 5,
              "lan0's capture holds the 5 requests and 5 replies, nothing else", rows)
        check(all(not r[5] for r in rows), "no malformed packet", rows)
        check({int(r[4], 16) for r in requests} == {1} and {int(r[4], 16) for r in answers} == {2},
              "requests recorded inbound, replies outbound (pcapng EPB flags)", rows)
        ok(f"capture lan0 --filter icmp: 5 requests in, 5 replies out ({out.stat().st_size} bytes; "
           f"written {v.get('written')}, dropped {v.get('dropped')})")

        # Line 1 to site B: the outer headers, through -w - and a pipe.
        cfg = lab.gateway_config("gwa")
        line = next(ln for p_ in cfg["peers"] if p_["name"] == "site-b" for ln in p_["lines"]
                    if ln["name"] == "line1")
        pinger = subprocess.Popen(["ip", "netns", "exec", lab.ns("hosta"), "ping", "-c", "20", "-i",
                                   "0.1", "10.2.0.10"], stdout=subprocess.DEVNULL)
        r = subprocess.run([lab.mcgwctl, "--socket", sock, "capture", "site-b/line1", "--filter",
                            "udp port 4789", "--count", "4", "-w", "-"], capture_output=True, timeout=30)
        pinger.wait(timeout=10)
        check(r.returncode == 0, "capture of line site-b/line1 ends after --count 4", r.stderr.decode())
        check("line site-b/line1 (port wan1)" in r.stderr.decode(), "mcgwctl says what it captures",
              r.stderr.decode())
        rows = tshark("-", "ip.src", "ip.dst", "vxlan.vni", "icmp.type", "_ws.malformed", stdin=r.stdout)
        check(len(rows) == 4, "4 packets", rows)
        for row in rows:
            outer_src, outer_dst = row[0].split(",")[0], row[1].split(",")[0]
            check({outer_src, outer_dst} == {line["local-vtep"], line["remote-vtep"]} and row[2] == "1000"
                  and row[3] in ("0", "8") and not row[4],
                  "each is VXLAN (VNI 1000) between line 1's VTEPs with ICMP inside", rows)
        wait_capture(lab, "gwa", False)
        ok(f"capture site-b/line1: 4 VXLAN packets {line['local-vtep']} <-> {line['remote-vtep']}, VNI 1000, "
           "ICMP inside")


def main() -> int:
    return run_parts("capture", [("capture", run)], logs="gw*.log", log_lines=20)


if __name__ == "__main__":
    sys.exit(main())
