#!/usr/bin/python3
"""Lab test: tenant bandwidth (issue 19, item 2), af_xdp, VXLAN, IPv4
underlay, static routes, on lab_policy_test's topology (imported: two
tenants, train and infer, share gwa, gwb and their one line; each tenant
on its own LAN port with a host per site).

gwa meters what it puts into the tunnel (RFC 2698 trTCM on the inner IP
packet).  Its config gives train `bandwidth.limits: [{line: site-b/line1,
rate: 50M}]` (default bursts: 80 ms at the rate); infer has no limit.  The
lab's gateways run one worker (checked in gwa's log), so no meter is
divided between workers.  Every transfer is iperf3 with the server sending
(`-R`; TCP with `-C cubic`, Linux's default, whatever the machine's is):
the receiving client reports every 0.5 s (--forceflush), each line
timestamped as it arrives.

Measured: "steady", the receiver's 0.5 s intervals after the first 2 s
(TCP: slow start and the first full bucket left out) or 1 s (UDP),
weighted by their length; the receiver's total over the run is printed
too.  Each figure twice: iperf3's goodput, and as IP bytes (what the meter
counts; TCP segments of MSS 1398 (iperf3 -V) carry 52 bytes of headers,
+3.7 %; UDP datagrams of 1400 bytes 28, +2 %).  Asserted within 5 % of the
rate: the IP figure everywhere, and iperf3's own (goodput) too for UDP and
for TCP at 50M with buckets that let TCP reach the rate (80 ms, the
default since TCP's goodput stayed 6-8 % below 50M with 10 ms).
TCP at 200M (`live`): IP only; its goodput, printed, was 3.7-6.0 % below
200M in 6 runs on a shared 2-core machine (3.6 % are the headers).  A measurement outside
its tolerance is repeated once when the machine was overloaded meanwhile
(processes outside the lab used >= 0.5 cores, or a UDP sender missed its
rate); both attempts printed, the tolerance the same.  The CPU pressure
printed (/proc/pressure/cpu) includes the lab's own tasks (70-90 %).

- limit: `show policy --json` train site-b/line1 rate_bps 50000000,
  bursts 500000 bytes (80 ms), source config; infer unmetered.  infer
  alone, TCP 4 s unpaced: > 250 Mbit/s (the line carries far more than
  the limit).  train TCP 10 s against the default bursts: red grew, the
  steady IP rate at most 5 % above 50 Mbit/s (below: printed).  Then
  reloaded with burst = peak-burst = 500k given explicitly, for 10 s at
  once: train TCP unpaced, steady goodput and IP
  within 5 % of 50 Mbit/s; infer TCP paced at 100 Mbit/s, steady within
  5 % of 100 Mbit/s (unaffected), no yellow or red for infer.
- controller: gwa serves the API over HTTPS with mutual TLS on
  100.64.1.1:8443 (certificates made with openssl here); curl in rtr's
  namespace (another host): show-policy 200; a certificate of the CA
  with another name 403; one of another CA fails the handshake; a bad
  rate 400; nothing changed; gwa's log names the refused client.
- live: (bursts 80 ms) train TCP for 22 s; at 8 s the controller POSTs
  policy-set {train, site-b/line1, rate 200M, burst 2M, peak_burst 2M}
  over HTTPS from rtr: returns in < 0.5 s (printed), `show policy --json`
  right after shows 200M, source "live by HTTPS client sdn.example.net";
  the first 0.5 s
  interval that ends 0.5-1 s after the set is above 150 Mbit/s (IP) and
  the steady IP rate from set + 1 s to the clear within 5 % of 200 Mbit/s;
  at 15 s policy-set {clear: true} over HTTPS: 50M (config), steady from
  clear + 2 s to the end within 5 % of 50 Mbit/s; before the set too;
  iperf3 completes (exit 0, no error: the connection survived).
- red: UDP at 100 Mbit/s against 50M: steady within 5 % of 50 Mbit/s,
  red_packets and drops `rate-limit` grew by the same amount, within 10 %
  of the datagrams iperf3 lost.  Reloaded with peak-rate 80M and
  yellow-dscp 10: UDP at 100 Mbit/s received within 5 % of 80 Mbit/s;
  tcpdump at trainb: DSCP 10 (yellow) and 0 (green), nothing else, the
  DSCP 10 share of the received datagrams within 0.05 of RFC 2698's 30/80;
  yellow_packets and red_packets grew.
- window: reloaded with two windows on site-b/line1, one that does not
  cover now (rate 300M, listed first) and one that does (now - 1 h to
  now + 1 h UTC, rate 100M): show policy 100M with source "window
  HH:MM-HH:MM UTC"; UDP at 150 Mbit/s received within 5 % of 100 Mbit/s.
- reload: the limit changed to 70M by a reload: show policy 70M (config),
  UDP at 100 Mbit/s within 5 % of 70 Mbit/s; a live 120M, then a reload
  with the limit at 80M: the live rate stays (120M, live by local socket),
  UDP at 150 Mbit/s within 5 % of 120 Mbit/s; cleared: 80M (config).

- priority: gwa's line gets `capacity: 100M` (outer frames), the tenants
  priorities 6 and 0 and no meters (show policy: priority, capacity,
  unmetered); both send UDP at 80 Mbit/s at once for 5 s: the higher one's
  steady goodput within 5 % of 80M, both together as outer frames (1,492
  bytes per 1,400-byte datagram) within 5 % of 100M, the lower one below a
  third of what it sent; line_full_packets grew for the lower one only and
  equal the drops `line-full`.  Swapped by a reload: the other way round.

- latency: 40 policy-set on gwa's Unix socket (raw, timed connect to
  answer) and 41 over one HTTPS connection from rtr
  (https_keepalive_client.py): all ok / 200, show policy has the last rate
  (source local socket, then the HTTPS client); the round trips printed.

A failed part is reported and the next ones still run (the config back to
the base first).  Figures printed.  About 95 s.  Run as root with
/usr/bin/python3; MCGW_BUILD_DIR names the build; MCGW_BW_PARTS=limit,live
runs only those parts.
"""

import copy
import datetime
import json
import os
import subprocess
import re
import secrets
import socket
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(HERE))
import lab_policy_test as lp  # noqa: E402
import mcgwlab  # noqa: E402
from labtest import Fail, check, ok, run_parts  # noqa: E402

BUILD = Path(os.environ.get("MCGW_BUILD_DIR", HERE.parents[1] / "build"))

LINE = "site-b/line1"
TRAIN_A, TRAIN_B = "10.1.0.10", "10.2.0.10"
INFER_A, INFER_B = "10.11.0.10", "10.12.0.10"
TOL = 0.05  # the 5 %
OVERLOAD_CORES = 0.5  # CPU of processes outside the lab that makes a failed measurement worth a retry
UDP_LEN = 1400  # iperf3 -l: 1428-byte IP packets, inside the tunnel's 1450
TRAIN_LIMIT = {"line": LINE, "rate": "50M"}
YELLOW_DSCP = 10
# Buckets of 80 ms at the rate (the default is 10 ms), with which TCP's
# goodput (iperf3's own figure) gets within 5 % of the rate.
TCP_BURST = {50: "500k", 200: "2M"}
TCP_CC = os.environ.get("MCGW_BW_CC", "cubic")  # iperf3 -C


# --------------------------------------------------------------------------
# the lab


# The controller API: gwa serves HTTPS with mutual TLS on its WAN address;
# the "controller" is curl in rtr's namespace (another host on the underlay).
HTTPS_AT = "100.64.1.1:8443"
CONTROLLER = "sdn.example.net"


def openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=30)


def make_certs(d: Path) -> dict:
    """A CA, gwa's server certificate (IP SAN 100.64.1.1), the allowed
    controller's client certificate, one with another name, and one from
    another CA.  Paths by name."""
    d.mkdir(parents=True, exist_ok=True)
    p = {n: d / n for n in ("ca.pem", "ca.key", "other-ca.pem", "other-ca.key")}
    for ca in ("ca", "other-ca"):
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", str(d / f"{ca}.key"), "-out", str(d / f"{ca}.pem"), "-subj", f"/CN={ca}",
                "-days", "2")

    def leaf(name: str, ca: str, san: str) -> None:
        ext = d / f"{name}.ext"
        ext.write_text(f"subjectAltName={san}\n")
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                str(d / f"{name}.key"), "-out", str(d / f"{name}.csr"), "-subj", f"/CN={name}")
        openssl("x509", "-req", "-in", str(d / f"{name}.csr"), "-CA", str(d / f"{ca}.pem"), "-CAkey",
                str(d / f"{ca}.key"), "-CAcreateserial", "-out", str(d / f"{name}.pem"), "-days", "2",
                "-extfile", str(ext))
        os.chmod(d / f"{name}.key", 0o600)
        p[f"{name}.pem"], p[f"{name}.key"] = d / f"{name}.pem", d / f"{name}.key"

    leaf("server", "ca", "IP:100.64.1.1")
    leaf("controller", "ca", f"DNS:{CONTROLLER}")
    leaf("intruder", "ca", "DNS:intruder.example.net")
    leaf("stranger", "other-ca", f"DNS:{CONTROLLER}")
    return p


class BandwidthLab(lp.PolicyLab):
    """lab_policy_test's PolicyLab with a `bandwidth` section per tenant:
    `bandwidth[node][tenant]`, and gwa's HTTPS API."""

    bandwidth: dict = {}
    certs: dict = {}
    capacity: dict = {}  # node -> the capacity of its line (absent: not shaped)

    def gateway_config(self, node: str, fake_macs: bool = False) -> dict:
        c = super().gateway_config(node, fake_macs)
        if self.capacity.get(node):
            for peer in c["peers"]:
                for line in peer["lines"]:
                    line["capacity"] = self.capacity[node]
        for t in c["tenants"]:
            bw = self.bandwidth.get(node, {}).get(t["name"])
            if bw:
                t["bandwidth"] = copy.deepcopy(bw)
        if node == "gwa" and self.certs:
            c.setdefault("api", {})["https"] = {
                "listen": HTTPS_AT,
                "ca": str(self.certs["ca.pem"]),
                "certificate": str(self.certs["server.pem"]),
                "private-key": str(self.certs["server.key"]),
                "allowed-clients": [CONTROLLER],
            }
        return c


def new_lab(tmp: Path) -> BandwidthLab:
    prefix = f"bw-{secrets.token_hex(3)}-"
    lab = BandwidthLab(prefix=prefix, workdir=tmp / prefix.rstrip("-"), topology=lp.topology(),
                       options=mcgwlab.Options(), build_dir=BUILD)
    lab.policies = {}
    lab.bandwidth = {"gwa": {"train": {"limits": [dict(TRAIN_LIMIT)]}}}
    lab.certs = make_certs(tmp / "tls")
    return lab


def https(lab, body: dict, client: str = "controller", command: str = "policy-set") -> tuple[float, int, str]:
    """POST /api/v1/COMMAND to gwa from rtr with `client`'s certificate:
    (seconds, HTTP status or 0 when TLS failed, body or curl's error)."""
    c = lab.certs
    t0 = time.monotonic()
    r = lab.run("rtr", "curl", "-sS", "--max-time", "5", "-w", "\n%{http_code}", "--cacert", str(c["ca.pem"]),
                "--cert", str(c[f"{client}.pem"]), "--key", str(c[f"{client}.key"]), "--json", json.dumps(body),
                f"https://{HTTPS_AT}/api/v1/{command}", check=False, timeout=10)
    took = time.monotonic() - t0
    if r.returncode != 0:
        return took, 0, f"curl exit {r.returncode}: {r.stderr.strip()}"
    text, _, code = r.stdout.rpartition("\n")
    return took, int(code or 0), text


def https_set(lab, body: dict) -> tuple[float, str]:
    """policy-set through the HTTPS API as the controller; asserts HTTP 200."""
    took, code, text = https(lab, body)
    check(code == 200, f"controller -> gwa HTTPS policy-set {body}: HTTP 200", (code, text))
    return took, json.loads(text).get("result", {}).get("message", "")


def base_bandwidth() -> dict:
    return {"limits": [dict(TRAIN_LIMIT)]}


def reload(lab, gw: str, tenant: str, bw: dict | None) -> float:
    """Rewrite `gw`'s config with `tenant`'s bandwidth section `bw` and
    `mcgwctl reload`; the seconds the reload took."""
    lab.bandwidth.setdefault(gw, {})[tenant] = bw
    Path(lab.state["gateways"][gw]["config"]).write_text(lab.render(gw))
    t0 = time.monotonic()
    r = lab.ctl(gw, "reload")
    took = time.monotonic() - t0
    check(r.returncode == 0, f"{gw}: mcgwctl reload", (r.stdout + r.stderr).strip())
    return took


def meter(lab, tenant: str = "train", gw: str = "gwa") -> dict:
    """The tenant's `bandwidth` entry for site-b/line1 in `show policy --json`."""
    v = lp.policy_view(lab, gw, tenant)
    es = [e for e in v.get("bandwidth", []) if e.get("peer") == "site-b" and e.get("line") == "line1"]
    check(len(es) == 1, f"{gw}: show policy {tenant} has one bandwidth entry for {LINE}", v.get("bandwidth"))
    return es[0]


def expect_meter(lab, rate_bps: int, source: str, peak_bps: int | None = None, tenant: str = "train") -> dict:
    e = meter(lab, tenant)
    check(e.get("rate_bps") == rate_bps and e.get("peak_rate_bps") == (peak_bps or rate_bps)
          and e.get("source") == source,
          f"gwa: {tenant} on {LINE}: rate {rate_bps / 1e6:g}M peak {(peak_bps or rate_bps) / 1e6:g}M, "
          f"source {source!r}", e)
    return e


def policy_set(lab, *args) -> tuple[float, str]:
    """`mcgwctl policy ARGS` on gwa: (seconds it took, its output); asserts exit 0."""
    t0 = time.monotonic()
    r = lab.ctl("gwa", "policy", *args)
    took = time.monotonic() - t0
    out = (r.stdout + r.stderr).strip()
    check(r.returncode == 0, f"gwa: mcgwctl policy {' '.join(args)}", out)
    return took, out


def drops(lab, gw: str = "gwa") -> dict:
    return lp.drops(lab, gw)


# --------------------------------------------------------------------------
# iperf3 in the background, its receiver's lines timestamped


_LINE = re.compile(r"^\[\s*(\d+|SUM)\]\s+([\d.]+)-([\d.]+)\s+sec\s+([\d.]+)\s+([KMGT]?)Bytes\s+"
                   r"([\d.]+)\s+([KMGT]?)bits/sec(.*)$")
_UNIT = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


class OtherCpu:
    """How busy the rest of the machine was from now until .cores() and
    .pressure(): the CPU that processes outside the lab's namespaces used
    (in cores), from /proc/PID/stat: what utime + stime + cutime + cstime
    (children collected) of each process grew by; a process started
    meanwhile with all of it, a process that ended meanwhile less what it
    had at the start (its parent collected all of it).  Left out: the
    lab's namespaces, kernel threads (their softirq work is the lab's
    traffic), this process (its children are the lab's commands).  An
    estimate (a process whose time nobody collects is missed).  And the
    share of the time some task waited for a CPU (/proc/pressure/cpu,
    "some"; the lab's own tasks too)."""

    def __init__(self, lab):
        self.mine = {os.stat(f"/run/netns/{n}").st_ino for n in mcgwlab.list_netns() if n.startswith(lab.prefix)}
        self.t0, self.s0, self.p0 = time.monotonic(), self._snapshot(), self._stall()

    @staticmethod
    def _stall() -> int | None:
        try:
            line = Path("/proc/pressure/cpu").read_text().splitlines()[0]
            return int(line.rsplit("total=", 1)[1])  # microseconds
        except (OSError, ValueError, IndexError):
            return None

    def pressure(self) -> float | None:
        dt, p = time.monotonic() - self.t0, self._stall()
        return (p - self.p0) / 1e6 / dt if p is not None and self.p0 is not None and dt > 0 else None

    def _snapshot(self) -> dict[str, tuple[int, int]]:
        snap, me = {}, str(os.getpid())
        for d in os.listdir("/proc"):
            if not d.isdigit() or d == me:
                continue
            try:
                if os.stat(f"/proc/{d}/ns/net").st_ino in self.mine:
                    continue
                f = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()
                if d == "2" or f[1] == "2":  # kthreadd and the kernel threads
                    continue
                snap[d] = (int(f[19]), sum(int(x) for x in f[11:15]))  # starttime; utime stime cutime cstime
            except (OSError, ValueError, IndexError):
                pass
        return snap

    def cores(self) -> float:
        dt = time.monotonic() - self.t0
        now = self._snapshot()
        ticks = 0
        for pid, (start, t) in now.items():
            before = self.s0.get(pid)
            ticks += t - before[1] if before and before[0] == start else t
        for pid, (start, t) in self.s0.items():
            if now.get(pid, (None,))[0] != start:
                ticks -= t
        return max(0, ticks) / os.sysconf("SC_CLK_TCK") / dt if dt > 0 else 0.0


class Iperf:
    """iperf3 from `sender` (the server, -s -1, sending) to `receiver` (the
    client, -R) in the background; the client's text output (-f k,
    --forceflush) is read as it comes and each line stamped with
    time.monotonic() when it arrived.  `udp`: UDP at that rate (-b) with
    UDP_LEN datagrams; `pace`: TCP paced (-b)."""

    _port = 5400

    def __init__(self, lab, sender: str, receiver: str, dst: str, seconds: float, interval: float = 0.5,
                 udp: str | None = None, pace: str | None = None):
        Iperf._port += 1
        self.lab, self.port, self.seconds, self.interval, self.udp = lab, Iperf._port, seconds, interval, udp
        self.what = f"{'UDP' if udp else 'TCP'} {sender} -> {receiver}" + (f" at {udp or pace}" if udp or pace
                                                                           else "")
        self.server = f"iperf3-s-{self.port}"
        self.client = f"iperf3-c-{self.port}"
        lab.start(self.server, sender, "iperf3", "-s", "-1", "-p", self.port, "-B", dst, listen=self.port)
        argv = ["iperf3", "-c", dst, "-p", self.port, "-R", "-t", seconds, "-i", interval, "-f", "k",
                "-V", "--forceflush", "--connect-timeout", 3000]
        if udp:
            argv += ["-u", "-b", udp, "-l", UDP_LEN]
        else:
            argv += ["-C", TCP_CC] + (["-b", pace] if pace else [])
        self.log = lab.dir / f"{self.client}.log"
        self.lines: list[tuple[float, str]] = []
        self.cpu = OtherCpu(lab)
        self.t_start = time.monotonic()
        self.pid = lab.start(self.client, receiver, *argv)
        self._done = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        pos, buf = 0, ""
        while True:
            alive = self.lab._alive(self.pid)
            try:
                with open(self.log, "r", errors="replace") as f:
                    f.seek(pos)
                    chunk = f.read()
                    pos = f.tell()
            except FileNotFoundError:
                chunk = ""
            now = time.monotonic()
            buf += chunk
            *full, buf = buf.split("\n")
            self.lines += [(now, ln) for ln in full]
            if not alive:
                if buf:
                    self.lines.append((now, buf))
                break
            time.sleep(0.01)
        self._done.set()

    def wait_lines(self, pred, timeout: float):
        """Wait until a line for which pred(t, line) is true has arrived; its (t, line) or None."""
        deadline = time.monotonic() + timeout
        seen = 0
        while time.monotonic() < deadline:
            lines = self.lines
            for t, ln in lines[seen:]:
                if pred(t, ln):
                    return t, ln
            seen = len(lines)
            if self._done.is_set():
                return None
            time.sleep(0.01)
        return None

    def finish(self) -> "Result":
        deadline = time.monotonic() + self.seconds + 30
        while self.lab._alive(self.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        rc = self.lab.stop(self.client, 2)
        self.lab.stop(self.server, 2)
        self._done.wait(5)
        return Result(self, rc, self.cpu.cores(), self.cpu.pressure())


class Result:
    def __init__(self, run: Iperf, rc: int | None, others: float, pressure: float | None):
        self.what, self.rc, self.others, self.interval = run.what, rc, others, run.interval
        self.pressure = pressure
        self.seconds = run.seconds
        self.text = "\n".join(ln for _, ln in run.lines)
        self.t_start = run.t_start
        # (arrival time, start, end, bits/s, rest of the line)
        self.intervals: list[tuple[float, float, float, float, str]] = []
        self.summary: dict[str, float] = {}  # "sender"/"receiver" -> bits/s over the whole run
        self.lost = None  # UDP: (lost, total) of the receiver's summary
        for t, ln in run.lines:
            m = _LINE.match(ln.strip())
            if not m:
                continue
            start, end = float(m.group(2)), float(m.group(3))
            bps = float(m.group(6)) * _UNIT[m.group(7)]
            rest = m.group(8).strip()
            role = rest.split()[-1] if rest.split() else ""
            if role in ("sender", "receiver"):
                self.summary[role] = bps
                lm = re.search(r"(\d+)/(\d+)\s+\(", rest)
                if role == "receiver" and lm:
                    self.lost = (int(lm.group(1)), int(lm.group(2)))
            else:
                self.intervals.append((t, start, end, bps, rest))
        self.error = None
        if rc != 0 or "iperf3: error" in self.text or "receiver" not in self.summary:
            self.error = f"iperf3 exit {rc}: " + self.text[-400:]
        # What the meter counts per byte of goodput: UDP datagrams of
        # UDP_LEN bytes have 28 bytes of IP and UDP header; TCP segments of
        # MSS bytes (iperf3 -V prints it) 52 (IP, TCP, timestamps).
        m = re.search(r"Control connection MSS (\d+)", self.text)
        self.mss = int(m.group(1)) if m else None
        self.ip_factor = ((UDP_LEN + 28) / UDP_LEN if run.udp else (self.mss + 52) / self.mss if self.mss else 0)

    def mean(self, t_from: float, t_to: float | None = None) -> float:
        """Mean bits/s of the intervals within [t_from, t_to] (iperf3's time),
        weighted by their length; intervals shorter than half the reporting
        interval (the last one) are left out."""
        sel = [(s, e, b) for _, s, e, b, _ in self.intervals
               if s >= t_from - 1e-6 and (t_to is None or e <= t_to + 1e-6) and e - s >= self.interval / 2]
        dur = sum(e - s for s, e, _ in sel)
        return sum((e - s) * b for s, e, b in sel) / dur if dur else 0.0

    def ip(self, t_from: float, t_to: float | None = None) -> float:
        """mean() as IP bits/s: what the meter counts."""
        return self.mean(t_from, t_to) * self.ip_factor

    def series(self) -> str:
        return " ".join(f"{b / 1e6:.0f}" for _, _, _, b, _ in self.intervals)

    def __str__(self) -> str:
        s = (f"{self.what}: receiver {self.summary.get('receiver', 0) / 1e6:.1f} Mbit/s over the run "
             f"(sender {self.summary.get('sender', 0) / 1e6:.1f})")
        if self.lost:
            s += f", lost {self.lost[0]}/{self.lost[1]}"
        cpu = f", CPU pressure {self.pressure:.0%}" if self.pressure is not None else ""
        return s + f", other work {self.others:.2f} cores{cpu}; per {self.interval} s: {self.series()}"


def within(value: float, want: float, tol: float = TOL) -> bool:
    return abs(value - want) <= tol * want


def pct(value: float, want: float) -> str:
    return f"{(value / want - 1) * 100:+.1f} %"


def measured(label: str, attempt, judge, overloaded):
    """attempt() -> a value; judge(value) -> None when it passes, else why;
    overloaded(value) -> how the machine was too busy for it, or None.
    Retried once when it failed and the machine was overloaded (the
    tolerance stays); the value that passed, or the failure raised."""
    v = attempt()
    why = judge(v)
    if why is None:
        return v
    busy = overloaded(v)
    if busy:
        print(f"   {label}: failed ({why}) with the machine overloaded ({busy}): once more", flush=True)
        v = attempt()
        why = judge(v)
        if why is None:
            return v
    raise Fail(f"{label}: {why}")


def overloaded_by(*results: "Result", udp_rate: float | None = None) -> str | None:
    why = [f"other work took {r.others:.2f} cores" for r in results if r.others >= OVERLOAD_CORES]
    if udp_rate:
        why += [f"the UDP sender reached {r.summary.get('sender', 0) / 1e6:.1f} of {udp_rate / 1e6:g} Mbit/s"
                for r in results if r.summary.get("sender", 0) < 0.97 * udp_rate]
    return "; ".join(why) or None


def judge_rate(r: "Result", want: float, t_from: float, t_to: float | None = None, what: str = "steady",
               goodput: bool = False) -> str | None:
    """None when r's IP rate over [t_from, t_to] (and with `goodput`
    iperf3's own figure too) is within 5 % of want; else why."""
    if r.error:
        return r.error
    ip, g = r.ip(t_from, t_to), r.mean(t_from, t_to)
    if not within(ip, want) or (goodput and not within(g, want)):
        return (f"{r.what}: {what} {t_from:g}-{t_to or r.seconds:g} s goodput {g / 1e6:.2f} Mbit/s "
                f"({pct(g, want)}), IP {ip / 1e6:.2f} ({pct(ip, want)}): not within 5 % of {want / 1e6:g}")
    return None


def figures(r: "Result", want: float, t_from: float, t_to: float | None = None) -> str:
    g, ip = r.mean(t_from, t_to), r.ip(t_from, t_to)
    return (f"goodput {g / 1e6:.2f} Mbit/s ({pct(g, want)}), IP {ip / 1e6:.2f} ({pct(ip, want)}) of "
            f"{want / 1e6:g}M")


def udp_measure(lab, label: str, offered: str, want_bps: float, seconds: float = 5) -> "Result":
    """UDP train A -> B at `offered` for `seconds`: the steady rate (after
    1 s) within 5 % of want_bps, both as IP and as iperf3's goodput."""
    offered_bps = float(offered[:-1]) * _UNIT[offered[-1]]

    def attempt():
        r = Iperf(lab, "traina", "trainb", TRAIN_A, seconds, udp=offered).finish()
        print(f"   {label}: {r}", flush=True)
        return r

    r = measured(f"{label}: UDP at {offered} received within 5 % of {want_bps / 1e6:g} Mbit/s", attempt,
                 lambda r: judge_rate(r, want_bps, 1.0, goodput=True),
                 lambda r: overloaded_by(r, udp_rate=offered_bps))
    print(f"   {label}: steady {figures(r, want_bps, 1.0)}", flush=True)
    return r


def restore(lab) -> None:
    """Back to the base config (train 50M on the line) without a live rate."""
    if meter(lab).get("source", "").startswith("live"):
        policy_set(lab, "clear", "train", "--line", LINE)
    reload(lab, "gwa", "train", base_bandwidth())
    expect_meter(lab, 50_000_000, "config")


# --------------------------------------------------------------------------
# the parts


def limit(lab) -> None:
    log = Path(lab.state["gateways"]["gwa"]["log"]).read_text(errors="replace")
    m = re.search(r"fast path: (\d+) worker", log)
    check(m and m.group(1) == "1", "gwa runs one worker (the meter is not divided)", m and m.group(0))
    e = expect_meter(lab, 50_000_000, "config")
    check(e["burst_bytes"] == 500000 and e["peak_burst_bytes"] == 500000,
          "gwa: train's default bursts are 80 ms at 50M (500000 bytes)", e)
    i = lp.policy_view(lab, "gwa", "infer").get("bandwidth", [])
    check(i and all(x.get("source") == "unmetered" for x in i), "gwa: infer is unmetered", i)
    for tenant, dst in (("train", TRAIN_B), ("infer", INFER_B)):
        n = lp.wait_for(lambda: lab.ping(f"{tenant}a", dst, count=1, timeout=1), 10, step=0.5)
        check(n == 1, f"{tenant}: {tenant}a -> {dst} answers")

    def alone():
        r = Iperf(lab, "infera", "inferb", INFER_A, 4).finish()
        print(f"   infer alone: {r}", flush=True)
        return r

    r = measured("infer alone, TCP unpaced: steady > 250 Mbit/s (the line carries far more than 50M)", alone,
                 lambda r: r.error or (None if r.mean(1.0) > 250e6 else f"steady {r.mean(1.0) / 1e6:.1f} Mbit/s"),
                 lambda r: overloaded_by(r))
    infer_alone = r.mean(1.0)

    # The default bursts (10 ms): TCP stays below the rate, by how much
    # depends on the machine's load (printed; only the upper side asserted).
    y0 = meter(lab)
    r = Iperf(lab, "traina", "trainb", TRAIN_A, 10).finish()
    print(f"   train, default bursts: {r}\n   steady 2-10 s: {figures(r, 50e6, 2.0)}; receiver total "
          f"{r.summary.get('receiver', 0) / 1e6:.2f}; MSS {r.mss}", flush=True)
    check(not r.error, "train TCP under 50M with the default bursts completes", r.error)
    check(r.ip(2.0) <= 50e6 * (1 + TOL), "train TCP under 50M with the default bursts: steady IP rate at most 5 % "
          "above 50 Mbit/s", figures(r, 50e6, 2.0))
    e = meter(lab)
    check(e["red_packets"] > y0["red_packets"], "gwa: train's red packets grew (TCP pushed against the limit)",
          (y0, e))
    outside = [n for n, v in (("goodput", r.mean(2.0)), ("IP", r.ip(2.0))) if not within(v, 50e6)]
    short = f" {' and '.join(outside)} NOT within 5 % of 50M;" if outside else ""
    ok(f"limit, default bursts (500 kB = 80 ms):{short} train TCP steady 2-10 s {figures(r, 50e6, 2.0)} "
       f"(receiver total {r.summary['receiver'] / 1e6:.2f}; other work {r.others:.2f} cores); red "
       f"+{e['red_packets'] - y0['red_packets']}")

    # iperf3's own figure (goodput) within 5 % of 50 Mbit/s needs bigger
    # buckets: TCP loses less to the policer (both: with peak-rate = rate,
    # the peak bucket is the tighter one).
    tcp_friendly(lab)

    def both():
        ti = Iperf(lab, "traina", "trainb", TRAIN_A, 10)
        ii = Iperf(lab, "infera", "inferb", INFER_A, 10, pace="100M")
        tr, ir = ti.finish(), ii.finish()
        print(f"   train, bursts {TCP_BURST[50]}: {tr}\n   infer: {ir}", flush=True)
        print(f"   train steady 2-10 s: {figures(tr, 50e6, 2.0)}; receiver total "
              f"{tr.summary.get('receiver', 0) / 1e6:.2f}", flush=True)
        return tr, ir

    def judge(v):
        tr, ir = v
        why = [w for w in (judge_rate(tr, 50e6, 2.0, goodput=True), judge_rate(ir, 100e6, 2.0, goodput=True)) if w]
        return "; ".join(why) or None

    tr, ir = measured(f"train TCP under 50M with burst and peak-burst {TCP_BURST[50]} within 5 % (goodput and IP), "
                      "infer paced at 100M alongside unaffected", both, judge, lambda v: overloaded_by(*v))
    ie = lp.policy_view(lab, "gwa", "infer")["bandwidth"]
    check(all(x["yellow_packets"] == 0 and x["red_packets"] == 0 for x in ie), "gwa: infer no yellow, no red", ie)
    ok(f"limit, burst = peak-burst = {TCP_BURST[50]} (80 ms): train TCP steady 2-10 s {figures(tr, 50e6, 2.0)} "
       f"(receiver total {tr.summary['receiver'] / 1e6:.2f}); infer paced at 100M alongside steady "
       f"{ir.mean(2.0) / 1e6:.2f} Mbit/s, no yellow or red (alone unpaced {infer_alone / 1e6:.0f} Mbit/s)")
    restore(lab)


def tcp_friendly(lab) -> None:
    """train's limit 50M with burst and peak-burst of 80 ms (TCP_BURST)."""
    b = TCP_BURST[50]
    reload(lab, "gwa", "train", {"limits": [dict(TRAIN_LIMIT, burst=b, **{"peak-burst": b})]})
    e = expect_meter(lab, 50_000_000, "config")
    check(e["burst_bytes"] == 500_000 and e["peak_burst_bytes"] == 500_000, f"gwa: train's bursts {b}", e)


def live(lab) -> None:
    seconds, t_set_at, t_clear_at = 22, 8.0, 15.0
    tcp_friendly(lab)
    big = TCP_BURST[200]

    def ended(t_end):
        return lambda t, ln: (m := _LINE.match(ln.strip())) is not None and float(m.group(3)) >= t_end

    def attempt():
        run = Iperf(lab, "traina", "trainb", TRAIN_A, seconds)
        try:
            # The interval line that ends at 8.0 s arrives when iperf3 is 8 s in.
            check(run.wait_lines(ended(t_set_at), t_set_at + 10), "iperf3 reported its first 8 s", run.lines[-5:])
            took_set, out_set = https_set(lab, {"tenant": "train", "line": LINE, "rate": "200M",
                                                "burst": big, "peak_burst": big})
            t_set = time.monotonic() - took_set  # when the command started
            e_set = expect_meter(lab, 200_000_000, f"live by HTTPS client {CONTROLLER}")
            check(e_set["burst_bytes"] == 2_000_000 and e_set["peak_burst_bytes"] == 2_000_000,
                  f"gwa: the live bursts {big}", e_set)
            t_shown = time.monotonic() - t_set
            check(run.wait_lines(ended(t_clear_at), t_clear_at + 10), "iperf3 reported its first 15 s",
                  run.lines[-5:])
            took_clear, out_clear = https_set(lab, {"tenant": "train", "line": LINE, "clear": True})
            t_clear = time.monotonic() - took_clear
            e_clear = expect_meter(lab, 50_000_000, "config")
        finally:
            r = run.finish()
        print(f"   live: {r}", flush=True)
        print(f"   live: HTTPS policy-set took {took_set * 1e3:.1f} ms ({out_set!r}), shown {t_shown * 1e3:.1f} ms after "
              f"it started: {e_set['rate']} {e_set['source']}; `policy clear` took {took_clear * 1e3:.1f} ms "
              f"({out_clear!r}): {e_clear['rate']} {e_clear['source']}", flush=True)
        # iperf3's clock: an interval line arrives when its interval ends
        # (the median of arrival - end over the lines; a few ms late at most).
        offs = sorted(t - e for t, _, e, _, _ in r.intervals) or [0.0]
        off = offs[len(offs) // 2]
        return r, t_set - off, t_clear - off, took_set, took_clear

    def first_after(r, s):
        """The first interval that ends at least 0.5 s after the set: (end, bits/s)."""
        return next(((e, b) for _, _, e, b, _ in r.intervals if e >= s + 0.5), (0.0, 0.0))

    def judge(v):
        r, s, c, took_set, took_clear = v
        if r.error:
            return r.error
        why = []
        if took_set >= 0.5 or took_clear >= 0.5:
            why.append(f"policy set took {took_set:.3f} s, clear {took_clear:.3f} s (want < 0.5 s)")
        e, b = first_after(r, s)
        if e > s + 1.0 + 1e-6 or b * r.ip_factor <= 150e6:
            why.append(f"the interval ending {e - s:.2f} s after the set: {b / 1e6:.1f} Mbit/s (want > 150 as IP, "
                       f"ending within 1 s)")
        why += [w for w in (judge_rate(r, 50e6, 2.0, s, "before", goodput=True),
                            judge_rate(r, 200e6, s + 1.0, c, "raised"),
                            judge_rate(r, 50e6, c + 2.0, None, "cleared", goodput=True)) if w]
        return "; ".join(why) or None

    r, s, c, took_set, took_clear = measured("live raise to 200M and clear", attempt, judge,
                                             lambda v: overloaded_by(v[0]))
    e, b = first_after(r, s)
    ok(f"live: set at {s:.2f} s (iperf3's clock) in {took_set * 1e3:.0f} ms, shown at once; before "
       f"{figures(r, 50e6, 2.0, s)}; the interval ending {e - s:.2f} s after the set {b / 1e6:.1f} Mbit/s; "
       f"{s + 1:.1f}-{c:.1f} s {figures(r, 200e6, s + 1.0, c)}; clear at {c:.2f} s in {took_clear * 1e3:.0f} ms, "
       f"{c + 2:.1f}-{seconds} s {figures(r, 50e6, c + 2.0)}; the connection survived (iperf3 exit 0, "
       f"{r.summary['receiver'] / 1e6:.1f} Mbit/s over {seconds} s)")
    restore(lab)


def controller(lab) -> None:
    """The HTTPS API from another host: the allowed controller is served;
    a certificate of the CA with another name gets 403 and changes nothing;
    one from another CA fails in the handshake; a bad rate is a 400."""
    before = meter(lab)
    took, code, text = https(lab, {"tenant": "train"}, command="show-policy")
    check(code == 200 and json.loads(text)["result"]["schema"] == "mcgw.policy/1",
          "controller: show-policy over HTTPS answers 200", (code, text[:200]))
    took, code, text = https(lab, {"tenant": "train", "line": LINE, "rate": "1G"}, client="intruder")
    check(code == 403, "intruder.example.net (the CA's, not allowed): HTTP 403", (code, text[:200]))
    took, code2, text2 = https(lab, {"tenant": "train", "line": LINE, "rate": "1G"}, client="stranger")
    check(code2 == 0, "a certificate of another CA: the TLS handshake fails", (code2, text2[:200]))
    took, code3, text3 = https(lab, {"tenant": "train", "line": LINE, "rate": "1X"})
    check(code3 == 400 and "unknown unit" in text3, "a bad rate over HTTPS: HTTP 400 with the reason",
          (code3, text3[:200]))
    after = meter(lab)
    check(after["source"] == before["source"] == "config" and after["rate_bps"] == before["rate_bps"],
          "gwa: nothing changed by the refused requests", (before, after))
    log = Path(lab.state["gateways"]["gwa"]["log"]).read_text(errors="replace")
    check("intruder.example.net" in log and "403" in log, "gwa's log names the refused client", None)
    ok(f"controller: show-policy 200; intruder's certificate 403; another CA's: {text2[:80]!r}; "
       f"bad rate 400; nothing changed; the refusal logged")


def api_request(sock: str, command: str, args: dict) -> tuple[float, dict]:
    """One request on mcgwd's Unix socket (protocol.hpp: a JSON line each
    way), timed from connect to the answer's last byte: (ms, answer)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    t0 = time.perf_counter()
    try:
        s.connect(sock)
        s.sendall((json.dumps({"version": 1, "command": command, "args": args}) + "\n").encode())
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    return (time.perf_counter() - t0) * 1000, json.loads(data)


def latency(lab) -> None:
    """How long a live rate change takes to be in force, i.e. for its answer
    to come back (the new profile is published before the answer): 40
    policy-set requests on gwa's Unix socket (no mcgwctl process), and 40
    over one HTTPS connection with the controller's certificate from rtr
    (tests/lab/https_keepalive_client.py; the first, with the TLS handshake,
    apart).  Every answer ok / 200 and show policy has the last rate set.
    Printed, not asserted (tests never assert on speed)."""
    sock = lab.state["gateways"]["gwa"]["socket"]
    local = []
    for i in range(40):
        ms, r = api_request(sock, "policy-set", {"tenant": "train", "line": LINE, "rate": "120M" if i % 2 else "150M"})
        check(r.get("ok") is True, "gwa: policy-set over the socket answers ok", r)
        local.append(ms)
    expect_meter(lab, 120_000_000, "live by local socket")
    c = lab.certs
    r = lab.run("rtr", "/usr/bin/python3", str(HERE / "https_keepalive_client.py"), str(c["ca.pem"]),
                str(c["controller.pem"]), str(c["controller.key"]), HTTPS_AT.split(":")[0], HTTPS_AT.split(":")[1],
                "train", LINE, "41", "150M", "130M", check=False, timeout=60)
    check(r.returncode == 0, "controller: 41 policy-set over one HTTPS connection, each 200", (r.stdout + r.stderr)[-400:])
    h = json.loads(r.stdout)
    expect_meter(lab, 150_000_000, f"live by HTTPS client {CONTROLLER}")
    policy_set(lab, "clear", "train", "--line", LINE)
    expect_meter(lab, 50_000_000, "config")
    local.sort()
    hs = sorted(h["ms"])
    ok(f"latency: policy-set over the Unix socket min {local[0]:.2f} ms, median {local[len(local) // 2]:.2f}, "
       f"max {local[-1]:.2f} (40); over one HTTPS connection from rtr min {hs[0]:.2f} ms, median "
       f"{hs[len(hs) // 2]:.2f}, max {hs[-1]:.2f} (40), the first with the TLS handshake {h['first_ms']:.1f} ms")


def red(lab) -> None:
    e0, d0 = meter(lab), drops(lab)
    r = udp_measure(lab, "red", "100M", 50e6)
    e1, d1 = meter(lab), drops(lab)
    dr, dd = e1["red_packets"] - e0["red_packets"], d1["rate-limit"] - d0["rate-limit"]
    lost = r.lost[0] if r.lost else None
    check(dr > 0 and dd > 0, "gwa: red_packets and drops rate-limit grew", f"red +{dr}, rate-limit +{dd}")
    check(dd == dr, "gwa: every red packet is a rate-limit drop", f"red +{dr}, rate-limit +{dd}")
    check(lost is not None and within(dr, lost, 0.10),
          "gwa: the red packets are the datagrams iperf3 lost (within 10 %)", f"red +{dr}, iperf3 lost {lost}")
    ok(f"red: UDP at 100M against 50M: steady {figures(r, 50e6, 1.0)}; red +{dr}, drops rate-limit +{dd}, "
       f"iperf3 lost {lost} of {r.lost[1] if r.lost else '?'}")

    bw = {"yellow-dscp": YELLOW_DSCP, "limits": [dict(TRAIN_LIMIT, **{"peak-rate": "80M"})]}
    reload(lab, "gwa", "train", bw)
    expect_meter(lab, 50_000_000, "config", peak_bps=80_000_000)

    def attempt():
        e0 = meter(lab)
        cap = lab.capture("trainb", "eth0", name=f"cap-trainb-{secrets.token_hex(2)}",
                          bpf_filter=["udp", "and", "src", "host", TRAIN_A], snaplen=64)
        try:
            r = Iperf(lab, "traina", "trainb", TRAIN_A, 5, udp="100M").finish()
        finally:
            cap.stop(0.5)
        e1 = meter(lab)
        dscp = {}
        for (d,) in cap.fields("ip.dsfield.dscp"):
            dscp[int(d)] = dscp.get(int(d), 0) + 1
        dy, dr = e1["yellow_packets"] - e0["yellow_packets"], e1["red_packets"] - e0["red_packets"]
        print(f"   yellow: {r}; DSCP at trainb {dscp}; gwa yellow +{dy}, red +{dr}", flush=True)
        return r, dscp, dy, dr

    def judge(v):
        r, dscp, dy, dr = v
        why = [w for w in (judge_rate(r, 80e6, 1.0, what="steady (green + yellow)"),) if w]
        n = sum(dscp.values())
        share = dscp.get(YELLOW_DSCP, 0) / n if n else 0
        if set(dscp) != {0, YELLOW_DSCP}:
            why.append(f"DSCPs seen at trainb {sorted(dscp)}, want exactly 0 and {YELLOW_DSCP}")
        if abs(share - 30 / 80) > 0.05:
            why.append(f"DSCP {YELLOW_DSCP} share {share:.3f}, want 30/80 = 0.375 +- 0.05")
        if dy <= 0 or dr <= 0:
            why.append(f"gwa yellow +{dy}, red +{dr}: both should grow")
        return "; ".join(why) or None

    r, dscp, dy, dr = measured(f"yellow: peak-rate 80M, yellow-dscp {YELLOW_DSCP}", attempt, judge,
                               lambda v: overloaded_by(v[0], udp_rate=100e6))
    n = sum(dscp.values())
    ok(f"yellow: UDP at 100M against 50M/80M: steady {figures(r, 80e6, 1.0)}; at trainb {dscp.get(YELLOW_DSCP, 0)} "
       f"of {n} datagrams with DSCP {YELLOW_DSCP} ({dscp.get(YELLOW_DSCP, 0) / n:.3f}; RFC 2698: 30/80 = 0.375), "
       f"{dscp.get(0, 0)} with DSCP 0; gwa yellow +{dy}, red +{dr}")
    restore(lab)


def window(lab) -> None:
    now = datetime.datetime.now(datetime.timezone.utc)

    def hhmm(delta_h: float) -> str:
        return (now + datetime.timedelta(hours=delta_h)).strftime("%H:%M")

    covering = {"name": "now", "line": LINE, "start": hhmm(-1), "end": hhmm(1), "rate": "100M"}
    other = {"name": "later", "line": LINE, "start": hhmm(2), "end": hhmm(3), "rate": "300M"}
    reload(lab, "gwa", "train", {"limits": [dict(TRAIN_LIMIT)], "windows": [other, covering]})
    src = f"window {covering['start']}-{covering['end']} UTC"
    expect_meter(lab, 100_000_000, src)
    r = udp_measure(lab, "window", "150M", 100e6)
    ok(f"window: now {now:%H:%M} UTC, windows {other['start']}-{other['end']} (300M, listed first) and "
       f"{covering['start']}-{covering['end']} (100M): source {src!r}; UDP at 150M steady {figures(r, 100e6, 1.0)}")
    restore(lab)


def reloads(lab) -> None:
    took = reload(lab, "gwa", "train", {"limits": [dict(TRAIN_LIMIT, rate="70M")]})
    expect_meter(lab, 70_000_000, "config")
    r70 = udp_measure(lab, "reload 70M", "100M", 70e6)
    policy_set(lab, "set", "train", "--line", LINE, "--rate", "120M")
    expect_meter(lab, 120_000_000, "live by local socket")
    reload(lab, "gwa", "train", {"limits": [dict(TRAIN_LIMIT, rate="80M")]})
    expect_meter(lab, 120_000_000, "live by local socket")
    r120 = udp_measure(lab, "live across reload", "150M", 120e6)
    policy_set(lab, "clear", "train", "--line", LINE)
    expect_meter(lab, 80_000_000, "config")
    ok(f"reload: limit 70M by a reload ({took:.2f} s), source config: UDP at 100M steady {figures(r70, 70e6, 1.0)}; "
       f"live 120M kept across a reload to 80M (source live by local socket): UDP at 150M steady "
       f"{figures(r120, 120e6, 1.0)}; cleared: 80M config")
    restore(lab)


# Outer frame bytes on the line per UDP_LEN datagram: the inner frame
# (Ethernet 14, IP 20, UDP 8) and VXLAN over IPv4 (14 + 20 + 8 + 8).
FRAME_PER_DATAGRAM = UDP_LEN + 42 + 50
CAPACITY = 100e6


def priority(lab) -> None:
    """gwa's line gets `capacity: 100M` (outer frames); no meters.  Both
    tenants send UDP at 80 Mbit/s at once for 5 s: the one of priority 6
    gets all it sends (steady goodput within 5 % of 80M), the one of
    priority 0 the rest of the line (the two together within 5 % of 100M
    as frames on the line; the lower one below a third of what it sent),
    and only the lower one's packets are dropped (line_full_packets and
    drops line-full grew for it, not for the other).  Then the priorities
    swapped by a reload: the other way round."""
    def setup(high: str, low: str) -> None:
        lab.capacity["gwa"] = "100M"
        lab.bandwidth["gwa"] = {high: {"priority": 6}, low: {"priority": 0}}
        reload(lab, "gwa", high, {"priority": 6})
        for tenant, want in ((high, 6), (low, 0)):
            e = meter(lab, tenant)
            check(e.get("priority") == want and e.get("line_capacity_bps") == 100_000_000
                  and e.get("source") == "unmetered",
                  f"gwa: show policy {tenant}: priority {want} on a line of capacity 100M, unmetered", e)

    def attempt(high: str, low: str):
        e0 = {t: meter(lab, t) for t in (high, low)}
        d0 = drops(lab)
        runs = {t: Iperf(lab, f"{t}a", f"{t}b", {"train": TRAIN_A, "infer": INFER_A}[t], 5, udp="80M")
                for t in (high, low)}
        res = {t: r.finish() for t, r in runs.items()}
        e1 = {t: meter(lab, t) for t in (high, low)}
        d1 = drops(lab)
        full = {t: e1[t]["line_full_packets"] - e0[t]["line_full_packets"] for t in (high, low)}
        for t, r in res.items():
            print(f"   priority {high} > {low}: {t}: {r}; line-full +{full[t]}", flush=True)
        events = json.loads(lab.ctl("gwa", "show", "counters", "--json", check=True).stdout)
        print(f"   gwa shaping counters: {events.get('shaping')}", flush=True)
        return res, full, d1.get("line-full", 0) - d0.get("line-full", 0)

    def judge(high: str, low: str):
        def j(v):
            res, full, dropped = v
            why = [r.error for r in res.values() if r.error]
            if why:
                return "; ".join(why)
            hi, lo = res[high].mean(1.0, 4.5), res[low].mean(1.0, 4.5)  # the last interval drains the queue
            frames = (hi + lo) * FRAME_PER_DATAGRAM / UDP_LEN
            if not within(hi, 80e6):
                why.append(f"{high} (priority 6) steady {hi / 1e6:.2f} Mbit/s, not within 5 % of 80")
            if not within(frames, CAPACITY):
                why.append(f"both together {frames / 1e6:.2f} Mbit/s of frames on the line, not within 5 % of 100")
            if lo > 80e6 / 3:
                why.append(f"{low} (priority 0) steady {lo / 1e6:.2f} Mbit/s: not held back")
            if full[high] != 0 or full[low] <= 0 or dropped != full[low]:
                why.append(f"line-full: {high} +{full[high]}, {low} +{full[low]}, drops +{dropped}")
            return "; ".join(why) or None
        return j

    results = []
    try:
        for high, low in (("train", "infer"), ("infer", "train")):
            setup(high, low)
            res, full, _ = measured(f"priority: {high} 6, {low} 0 on a 100M line", lambda: attempt(high, low),
                                    judge(high, low),
                                    lambda v: overloaded_by(*v[0].values(), udp_rate=80e6))
            hi, lo = res[high].mean(1.0, 4.5), res[low].mean(1.0, 4.5)
            results.append(f"{high} (6) {hi / 1e6:.1f} Mbit/s, {low} (0) {lo / 1e6:.1f} Mbit/s, together "
                           f"{(hi + lo) * FRAME_PER_DATAGRAM / UDP_LEN / 1e6:.1f} Mbit/s of frames; line-full "
                           f"{low} +{full[low]}, {high} +{full[high]}")
    finally:
        lab.capacity.pop("gwa", None)
        lab.bandwidth["gwa"] = {}
        reload(lab, "gwa", "train", base_bandwidth())
    ok("priority: both tenants UDP at 80M into a 100M line: " + "; then swapped: ".join(results))


def run(tmp: Path) -> None:
    t_start = time.monotonic()
    lab = new_lab(tmp)
    with lab.up(start_gateways=True):
        print(f"   lab {lab.prefix} up in {time.monotonic() - t_start:.1f} s", flush=True)
        failed = []
        parts = (("limit", limit), ("controller", controller), ("live", live), ("red", red), ("window", window),
                 ("reload", reloads), ("priority", priority), ("latency", latency))
        only = os.environ.get("MCGW_BW_PARTS")
        for label, part in parts:
            if only and label not in only.split(","):
                continue
            t0 = time.monotonic()
            try:
                part(lab)
                print(f"   {label}: {time.monotonic() - t0:.1f} s", flush=True)
            except Exception as e:  # noqa: BLE001 - report and go on with the next part
                failed.append(label)
                print(f"FAIL: {label}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
                try:
                    restore(lab)
                except Exception as e2:  # noqa: BLE001
                    print(f"   (restoring gwa's config failed: {e2})", file=sys.stderr, flush=True)
        if failed:
            r = lab.ctl("gwa", "show", "policy")
            print(f"--- gwa show policy:\n{r.stdout}{r.stderr}", file=sys.stderr)
            raise mcgwlab.LabError(f"parts failed: {', '.join(failed)}")
    check(not [n for n in mcgwlab.list_netns() if n.startswith(lab.prefix)], "namespaces left")
    print(f"   {time.monotonic() - t_start:.1f} s", flush=True)


def main() -> int:
    return run_parts("bandwidth", [("bandwidth", run)], log_lines=20)


if __name__ == "__main__":
    sys.exit(main())
