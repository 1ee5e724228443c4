#!/usr/bin/python3
"""Lab test: mcgwd's VRRPv3 against Debian's keepalived (issue 14, interop).

Four namespaces (names with a random suffix): `sw`, a bridge br0 (the LAN
switch, multicast snooping off); `gw`, mcgwd with one LAN port lan0
(net_af_xdp, 10.9.0.1/24, fd00:9::1/64, its addresses on the veth too);
`ka`, keepalived (`vrrp_version 3`, eth0 10.9.0.2/24, fd00:9::2/64, no
use_vmac: as MASTER it puts the virtual addresses on eth0 and its kernel
answers for them with eth0's MAC); `host`, 10.9.0.10/24, fd00:9::10/64,
which asks who has each virtual address (ARP requests and Neighbor
Solicitations sent on a packet socket, every answer collected).

Four groups on both sides, all at once, advertisement interval 100 ms:

    vrid 10  IPv4 multicast  10.9.0.254
    vrid 11  IPv6 multicast  fd00:9::fe
    vrid 20  IPv4 unicast    10.9.0.253  (mcgw unicast-peers / keepalived unicast_src_ip, unicast_peer)
    vrid 21  IPv6 unicast    fd00:9::fd

mcgwd has priority 100; its LAN port carries a tenant (a DPDK port's fast
path drops IP frames to a tenant-less LAN port, unicast advertisements and
Neighbor Advertisements among them).  keepalived's unicast instances have
`unicast_ttl 255`: keepalived 2.2.7 sends IPv6 unicast adverts with hop
limit 64 otherwise, which mcgwd counts as `bad_ttl` and ignores (RFC 9568
wants 255; docs/failover.md, "Interoperability").  keepalived's state per
instance comes from its notify script (state and time into a file) and its
-D log.

1. keepalived with priority 200 (mcgwd started first, so keepalived
   preempts it): keepalived MASTER for all four, mcgwd Backup with
   `active_address` = keepalived's address (its link-local for vrid 11);
   the host's ARP/ND for each virtual address is answered by keepalived's
   MAC alone; mcgwd received and accepted advertisements, no `bad_ttl`,
   `not_a_peer`, `address_mismatch`, unknown VRIDs or malformed frames;
   keepalived's log has no complaint (checksum, TTL, addresses, interval).
2. keepalived stopped (SIGTERM: it sends priority 0): mcgwd Active for all
   four by "priority 0 from the active", within 1 s (time from the signal
   to mcgwd's transition, printed; about Skew_Time = 61 ms); answers now
   from 00:00:5e:00:01:VRID / 00:00:5e:00:02:VRID alone.
3. keepalived started again with priority 50: BACKUP for all four, mcgwd
   stays Active (no transition); mcgwd's MACs answer.
4. mcgwd stopped (SIGTERM: priority 0): keepalived MASTER for all four
   within 1 s (its log: "Backup received priority 0 advertisement"; time
   printed); keepalived's MAC answers.
5. mcgwd started again: it preempts (reason "preempted lower priority 50"),
   keepalived back to BACKUP for all four (its log: higher priority 100
   from 10.9.0.1 / mcgw's addresses); counters clean; mcgwd's MACs answer.

`lab_vrrp_keepalived_test.py [af_xdp|af_packet]` (default af_xdp).  Run as
root with /usr/bin/python3; MCGW_BUILD_DIR names the build.
The probe helper: `lab_vrrp_keepalived_test.py --probe IFACE ADDRESS`.
"""

import datetime
import re
import ipaddress
import json
import os
import secrets
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(HERE))
from mcgwlab import _inet_checksum  # noqa: E402

BUILD = Path(os.environ.get("MCGW_BUILD_DIR", HERE.parents[1] / "build"))
INTERVAL_MS = 100
MCGW_PRIORITY = 100
TAKEOVER_BOUND_MS = 1000

GW4, GW6 = "10.9.0.1", "fd00:9::1"
KA4, KA6 = "10.9.0.2", "fd00:9::2"
HOST4, HOST6 = "10.9.0.10", "fd00:9::10"


class Group:
    def __init__(self, name, vrid, v6, unicast, vip):
        self.name, self.vrid, self.v6, self.unicast, self.vip = name, vrid, v6, unicast, vip

    @property
    def vmac(self) -> str:
        return f"00:00:5e:00:0{2 if self.v6 else 1}:{self.vrid:02x}"

    def __str__(self) -> str:
        return (f"vrid {self.vrid} ({'IPv6' if self.v6 else 'IPv4'} "
                f"{'unicast' if self.unicast else 'multicast'})")


GROUPS = [Group("m4", 10, False, False, "10.9.0.254"), Group("m6", 11, True, False, "fd00:9::fe"),
          Group("u4", 20, False, True, "10.9.0.253"), Group("u6", 21, True, True, "fd00:9::fd")]

# keepalived log lines that mean it did not take what mcgwd sent (bad
# checksum, TTL/hop limit, version, type, address count, interval mismatch,
# virtual addresses not in the advert...), except the one that is the
# protocol at work: a Backup ignoring a lower-priority Active to preempt it.
KA_COMPLAINTS = ["checksum", "ttl", "invalid", "mismatch", "not present", "not matching",
                 "bad ", "wrong", "discard", "unknown", "ignoring"]
KA_EXPECTED = re.compile(r"\) received lower priority \(\d+\) advert from \S+ - discarding$")


# ---------------------------------------------------------------- the probe
# Runs in the host namespace: ARP request / Neighbor Solicitation for the
# address, three times 100 ms apart; prints every distinct answer as JSON
# [[ethernet source, link-layer address in the answer], ...].

def _mac_text(b: bytes) -> str:
    return ":".join(f"{x:02x}" for x in b)


def probe_main(iface: str, address: str) -> int:
    target = ipaddress.ip_address(address)
    mac = bytes.fromhex(Path(f"/sys/class/net/{iface}/address").read_text().strip().replace(":", ""))
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    s.bind((iface, 0))
    s.settimeout(0.05)
    if target.version == 4:
        src = ipaddress.ip_address(HOST4)
        frame = (b"\xff" * 6 + mac + b"\x08\x06" + struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1)
                 + mac + src.packed + b"\0" * 6 + target.packed)
    else:
        src = ipaddress.ip_address(HOST6)
        dst = ipaddress.ip_address("ff02::1:ff00:0").packed[:13] + target.packed[13:]
        icmp = struct.pack("!BBHI", 135, 0, 0, 0) + target.packed + b"\x01\x01" + mac
        pseudo = src.packed + dst + struct.pack("!I3xB", len(icmp), 58)
        icmp = icmp[:2] + struct.pack("!H", _inet_checksum(pseudo + icmp)) + icmp[4:]
        ip6 = struct.pack("!IHBB", 0x60000000, len(icmp), 58, 255) + src.packed + dst
        frame = b"\x33\x33" + dst[12:] + mac + b"\x86\xdd" + ip6 + icmp
    answers = set()
    for _ in range(3):
        s.send(frame)
        end = time.monotonic() + 0.1
        while time.monotonic() < end:
            try:
                f = s.recv(2048)
            except socket.timeout:
                continue
            eth_src, etype = f[6:12], f[12:14]
            if eth_src == mac:
                continue
            if target.version == 4 and etype == b"\x08\x06" and len(f) >= 42:
                if f[20:22] == b"\0\x02" and f[28:32] == target.packed:
                    answers.add((_mac_text(eth_src), _mac_text(f[22:28])))
            elif target.version == 6 and etype == b"\x86\xdd" and len(f) >= 78:
                if f[20] == 58 and f[54] == 136 and f[62:78] == target.packed:
                    lladdr = ""
                    off = 78
                    while off + 8 <= len(f) and f[off + 1]:
                        if f[off] == 2:
                            lladdr = _mac_text(f[off + 2:off + 8])
                        off += f[off + 1] * 8
                    answers.add((_mac_text(eth_src), lladdr))
    print(json.dumps(sorted(answers)))
    return 0


if len(sys.argv) == 4 and sys.argv[1] == "--probe":
    sys.exit(probe_main(sys.argv[2], sys.argv[3]))

import mcgwlab  # noqa: E402
from labtest import Fail, check, ok, run_parts  # noqa: E402


def sh(*argv, check_rc=True, timeout=30) -> subprocess.CompletedProcess:
    p = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout)
    if check_rc and p.returncode != 0:
        raise Fail(f"{' '.join(map(str, argv))}: exit {p.returncode}: {p.stderr.strip()}")
    return p




class Interop:
    def __init__(self, driver: str):
        self.driver = driver
        self.prefix = f"mcgwka-{secrets.token_hex(3)}-"
        self.dir: Path | None = None
        self.mcgwd: subprocess.Popen | None = None
        self.ka: subprocess.Popen | None = None
        self.ka_priority = 0
        self.ka_runs = 0
        self.mcgwd_runs = 0
        self.macs: dict = {}
        self.ka_ll = ""
        self.ka_log: Path | None = None
        self.up_done = False

    def ns(self, n: str) -> str:
        return self.prefix + n

    def nsx(self, n: str, *argv, **kw) -> subprocess.CompletedProcess:
        return sh("ip", "netns", "exec", self.ns(n), *argv, **kw)

    # ---- topology

    def up(self, tmp: Path) -> None:
        if self.up_done:
            return
        self.dir = tmp
        for n in ("sw", "gw", "ka", "host"):
            sh("ip", "netns", "add", self.ns(n))
            sh("ip", "-n", self.ns(n), "link", "set", "lo", "up")
            for k in ("all", "default"):
                self.nsx(n, "sysctl", "-qw", f"net.ipv6.conf.{k}.accept_dad=0",
                         f"net.ipv6.conf.{k}.accept_ra=0", f"net.ipv6.conf.{k}.router_solicitations=0")
        sw = self.ns("sw")
        sh("ip", "-n", sw, "link", "add", "br0", "type", "bridge", "mcast_snooping", "0")
        sh("ip", "-n", sw, "link", "set", "br0", "up")
        for n, ifname, addrs in (("gw", "lan0", [f"{GW4}/24", f"{GW6}/64"]),
                                 ("ka", "eth0", [f"{KA4}/24", f"{KA6}/64"]),
                                 ("host", "eth0", [f"{HOST4}/24", f"{HOST6}/64"])):
            port = f"p-{n}"
            sh("ip", "-n", sw, "link", "add", port, "type", "veth", "peer", "name", ifname,
               "netns", self.ns(n))
            sh("ip", "-n", sw, "link", "set", port, "master", "br0", "up")
            on_veth = n != "gw" or self.driver == "af_xdp"  # af_packet: on mcgwd's TAP
            if n == "gw" and not on_veth:
                sh("ip", "-n", self.ns(n), "link", "set", ifname, "addrgenmode", "none")
            if on_veth:
                for a in addrs:
                    sh("ip", "-n", self.ns(n), "addr", "add", a, "dev", ifname)
            sh("ip", "-n", self.ns(n), "link", "set", ifname, "up")
            self.macs[n] = json.loads(sh("ip", "-j", "-n", self.ns(n), "link", "show", ifname).stdout)[0][
                "address"]
        # keepalived's IPv6 multicast source: eth0's link-local (EUI-64).
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not self.ka_ll:
            for a in json.loads(sh("ip", "-j", "-n", self.ns("ka"), "-6", "addr", "show", "eth0",
                                   "scope", "link").stdout)[0].get("addr_info", []):
                self.ka_ll = a.get("local", self.ka_ll)
            time.sleep(0.05)
        check(self.ka_ll, "keepalived's eth0 has a link-local address")
        (tmp / "ka-state").mkdir()
        notify = tmp / "ka-notify.sh"
        notify.write_text("#!/bin/sh\n# keepalived notify: TYPE NAME STATE PRIORITY\n"
                          f'echo "$3 $(date +%s.%N)" > {tmp}/ka-state/$2.new && '
                          f"mv {tmp}/ka-state/$2.new {tmp}/ka-state/$2\n")
        notify.chmod(0o755)
        self.write_mcgwd_config()
        self.up_done = True
        ok(f"namespaces {self.prefix}{{sw,gw,ka,host}}: switch br0, mcgwd lan0 ({self.driver}) "
           f"{self.macs['gw']}, keepalived eth0 {self.macs['ka']} ({self.ka_ll}), host eth0")

    def down(self) -> None:
        for p in (self.ka, self.mcgwd):
            if p and p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        for n in ("sw", "gw", "ka", "host"):
            ns = self.ns(n)
            if ns not in mcgwlab.list_netns():
                continue
            # Whatever still runs in our namespaces is ours (keepalived's children).
            for pid in sh("ip", "netns", "pids", ns, check_rc=False).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            sh("ip", "netns", "del", ns, check_rc=False)
        left = [n for n in mcgwlab.list_netns() if n.startswith(self.prefix)]
        if left:
            print(f"FAIL: namespaces left: {left}", file=sys.stderr)

    # ---- mcgwd

    def write_mcgwd_config(self) -> None:
        vdev = f"net_{self.driver}0,iface=lan0"
        groups = []
        for g in GROUPS:
            d = {"vrid": g.vrid, "port": "lan0", "priority": MCGW_PRIORITY,
                 "advert-interval-ms": INTERVAL_MS, "virtual-addresses": [g.vip], "bgp-backup": "none"}
            if g.unicast:
                d["unicast-peers"] = [KA6 if g.v6 else KA4]
            groups.append(d)
        cfg = {"node": {"name": "gw-ka", "site": "lab"},
               "eal": {"hugepages": False, "memory-mb": 512, "mbufs": 8191, "file-prefix": self.ns("gw")},
               # A LAN port carries a tenant: without one the fast path of a
               # DPDK port (af_packet, PCI) drops every IP frame to the
               # port's MAC, unicast advertisements too (no_tenant).
               "ports": [{"name": "lan0", "role": "lan", "vdev": vdev, "addresses": [f"{GW4}/24", f"{GW6}/64"],
                          "tenant": "blue"},
                         {"name": "wan0", "role": "wan", "vdev": "net_null0"}],
               "tenants": [{"name": "blue", "vni": 1000}],
               "vrrp": groups,
               "api": {"socket": str(self.dir / "mcgw.sock")},
               "logging": {"level": "info"}}
        (self.dir / "mcgw.yaml").write_text(mcgwlab.to_yaml(cfg))

    def ctl(self, *args, check_rc=True) -> subprocess.CompletedProcess:
        return sh(BUILD / "control/cli/mcgwctl", "-s", self.dir / "mcgw.sock", *args, check_rc=check_rc)

    def start_mcgwd(self) -> float:
        """Starts mcgwd; returns the wall-clock time its API answered."""
        self.mcgwd_runs += 1
        log = open(self.dir / f"mcgwd-{self.mcgwd_runs}.log", "wb")
        self.mcgwd = subprocess.Popen(["ip", "netns", "exec", self.ns("gw"), str(BUILD / "control/daemon/mcgwd"),
                                       "--config", str(self.dir / "mcgw.yaml"), "--state-dir",
                                       str(self.dir / "state")], stdin=subprocess.DEVNULL, stdout=log,
                                      stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            check(self.mcgwd.poll() is None, "mcgwd runs", f"exit {self.mcgwd.returncode}")
            if self.ctl("status", "--json", check_rc=False).returncode == 0:
                return time.time()
            time.sleep(0.1)
        raise Fail("mcgwd's API did not answer within 30 s")

    def stop_mcgwd(self) -> float:
        t = time.time()
        self.mcgwd.send_signal(signal.SIGTERM)
        check(self.mcgwd.wait(15) == 0, "mcgwd exits 0 on SIGTERM", self.mcgwd.returncode)
        return t

    def transition_time(self, vrid: int, to: str) -> float:
        """When mcgwd last logged `vrid N: X -> TO (...)` (its log has
        milliseconds, status's last_transition.at whole seconds)."""
        pat = re.compile(rf"^(\S+ \S+) \[info\] vrid {vrid}: \w+ -> {to} \(")
        found = None
        for ln in (self.dir / f"mcgwd-{self.mcgwd_runs}.log").read_text(errors="replace").splitlines():
            m = pat.match(ln)
            if m:
                found = m.group(1)
        check(found, f"mcgwd's log: vrid {vrid} -> {to}")
        return datetime.datetime.strptime(found, "%Y-%m-%d %H:%M:%S.%f").timestamp()

    def vrrp(self) -> dict:
        d = json.loads(self.ctl("show", "vrrp", "--json").stdout)
        return d.get("vrrp", d)

    def groups(self) -> dict:
        return {g["vrid"]: g for g in self.vrrp()["groups"]}

    def wait_mcgwd(self, state: str, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            gs = self.groups()
            if all(gs.get(g.vrid, {}).get("state") == state for g in GROUPS):
                return gs
            if time.monotonic() > deadline:
                raise Fail(f"mcgwd: not all groups {state} within {timeout} s: "
                           + ", ".join(f"{v}: {g['state']}" for v, g in sorted(gs.items())))
            time.sleep(0.02)

    def check_mcgwd_counters(self, received: bool) -> str:
        v = self.vrrp()
        parts = []
        for g in v["groups"]:
            c = g["counters"]
            for k in ("bad_ttl", "not_a_peer", "address_mismatch"):
                check(c[k] == 0, f"mcgwd vrid {g['vrid']}: {k} 0", c)
            if received:
                check(c["adverts_received"] > 0, f"mcgwd vrid {g['vrid']}: advertisements received", c)
            parts.append(f"vrid {g['vrid']} received {c['adverts_received']} sent {c['adverts_sent']}")
        for p in v["ports"]:
            check(p["listening"], f"mcgwd port {p['port']}: VRRP listening", p)
            check(p["malformed"] == {}, f"mcgwd port {p['port']}: no malformed frames", p["malformed"])
            check(p["unknown_vrid"] == 0, f"mcgwd port {p['port']}: no unknown VRIDs", p)
            check(p["read_errors"] == 0, f"mcgwd port {p['port']}: no read errors", p)
        return "; ".join(parts)

    # ---- keepalived

    def write_ka_config(self, priority: int) -> Path:
        out = ["global_defs {", f"  router_id ka-{self.prefix.rstrip('-')}", "  vrrp_version 3",
               "  script_user root", "  enable_script_security", "}"]
        for g in GROUPS:
            mask = 64 if g.v6 else 24
            out += [f"vrrp_instance {g.name} {{", "  state BACKUP", "  interface eth0",
                    f"  virtual_router_id {g.vrid}", f"  priority {priority}",
                    f"  advert_int {INTERVAL_MS / 1000}", "  virtual_ipaddress {", f"    {g.vip}/{mask}", "  }",
                    f"  notify {self.dir / 'ka-notify.sh'}"]
            if g.unicast:
                # unicast_ttl: keepalived 2.2.7 sends IPv6 unicast adverts with
                # the interface's hop limit (64) unless told; mcgwd accepts
                # only 255 (RFC 9568 §5.1.2.3 / §7.1; docs/failover.md).
                out += [f"  unicast_src_ip {KA6 if g.v6 else KA4}", "  unicast_ttl 255", "  unicast_peer {",
                        f"    {GW6 if g.v6 else GW4}", "  }"]
            out.append("}")
        path = self.dir / f"keepalived-{priority}.conf"
        path.write_text("\n".join(out) + "\n")
        return path

    def start_ka(self, priority: int) -> None:
        conf = self.write_ka_config(priority)
        self.nsx("ka", "keepalived", "-t", "-f", conf)
        for f in (self.dir / "ka-state").iterdir():
            f.unlink()
        self.ka_runs += 1
        self.ka_priority = priority
        self.ka_log = self.dir / f"keepalived-{self.ka_runs}.log"
        log = open(self.ka_log, "wb")
        self.ka = subprocess.Popen(["ip", "netns", "exec", self.ns("ka"), "keepalived", "-n", "-l", "-D", "-G",
                                    "-P", "-f", str(conf), "-p", str(self.dir / "ka.pid"),
                                    "-r", str(self.dir / "ka-vrrp.pid")], stdin=subprocess.DEVNULL,
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

    def stop_ka(self) -> float:
        t = time.time()
        self.ka.send_signal(signal.SIGTERM)
        self.ka.wait(15)
        return t

    def ka_states(self) -> dict:
        out = {}
        for g in GROUPS:
            f = self.dir / "ka-state" / g.name
            if f.exists():
                state, at = f.read_text().split()
                out[g.name] = (state, float(at))
        return out

    def wait_ka(self, state: str, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            s = self.ka_states()
            if all(s.get(g.name, ("",))[0] == state for g in GROUPS):
                return s
            if time.monotonic() > deadline:
                raise Fail(f"keepalived: not all instances {state} within {timeout} s: {s}")
            if self.ka.poll() is not None:
                raise Fail(f"keepalived exited ({self.ka.returncode})")
            time.sleep(0.02)

    def ka_log_text(self) -> str:
        return self.ka_log.read_text(errors="replace")

    def check_ka_log(self) -> None:
        bad = [ln for ln in self.ka_log_text().splitlines()
               if any(w in ln.lower() for w in KA_COMPLAINTS) and not KA_EXPECTED.search(ln)]
        check(not bad, "keepalived's log: no complaint about what it received", "\n".join(bad))

    # ---- the host's view

    def answers(self, g: Group) -> list:
        p = self.nsx("host", "/usr/bin/python3", Path(__file__).resolve(), "--probe", "eth0", g.vip)
        return [tuple(a) for a in json.loads(p.stdout)]

    def check_answers(self, who: str) -> str:
        seen = []
        for g in GROUPS:
            mac = g.vmac if who == "mcgwd" else self.macs["ka"]
            a = self.answers(g)
            check(a == [(mac, mac)], f"{g}: {g.vip} answered by {who} ({mac}) alone", a)
            seen.append(f"{g.vip} -> {mac}")
        return ", ".join(seen)


def expected_active(g: Group, ka_ll: str) -> str:
    if g.v6:
        return KA6 if g.unicast else ka_ll
    return KA4


def part_keepalived_active(lab: Interop, tmp: Path) -> None:
    lab.up(tmp)
    lab.start_mcgwd()
    lab.start_ka(200)
    t0 = time.monotonic()
    lab.wait_ka("MASTER", 15)
    gs = lab.wait_mcgwd("backup", 5)
    for g in GROUPS:
        m = gs[g.vrid]
        check(m["active_address"] == expected_active(g, lab.ka_ll),
              f"mcgwd {g}: active_address is keepalived's", m["active_address"])
        check(m["mode"] == ("unicast" if g.unicast else "multicast"), f"mcgwd {g}: mode", m["mode"])
    ok(f"keepalived priority 200 MASTER for all four instances ({time.monotonic() - t0:.1f} s after its start), "
       f"mcgwd Backup with active_address {KA4} / {lab.ka_ll} / {KA6}")
    for g in GROUPS:
        last = gs[g.vrid]["last_transition"]
        print(f"   mcgwd {g}: last transition {last['from']} -> {last['to']} ({last['reason']})", flush=True)
    time.sleep(0.5)  # a few more advertisements
    ok("mcgwd counters clean: " + lab.check_mcgwd_counters(received=True))
    for g in GROUPS:
        c = lab.groups()[g.vrid]["counters"]
        check(c["accepted"] > 0, f"mcgwd {g}: keepalived's advertisements accepted", c)
    lab.check_ka_log()
    ok("keepalived's log: no complaint (checksum, TTL, addresses, interval)")
    ok("host: " + lab.check_answers("keepalived"))

    before = {v: g["counters"]["priority_zero_received"] for v, g in lab.groups().items()}
    t_stop = lab.stop_ka()
    gs = lab.wait_mcgwd("active", 5)
    times = []
    for g in GROUPS:
        m = gs[g.vrid]
        last = m["last_transition"]
        check(last["reason"] == "priority 0 from the active",
              f"mcgwd {g}: Active by keepalived's priority 0", last)
        check(m["counters"]["priority_zero_received"] > before[g.vrid],
              f"mcgwd {g}: priority 0 counted", m["counters"])
        ms = (lab.transition_time(g.vrid, "Active") - t_stop) * 1000
        check(ms < TAKEOVER_BOUND_MS, f"mcgwd {g}: Active within {TAKEOVER_BOUND_MS} ms of keepalived's SIGTERM",
              f"{ms:.0f} ms")
        times.append(f"vrid {g.vrid} {ms:.0f} ms")
    ok(f"keepalived SIGTERM (priority 0): mcgwd Active ('priority 0 from the active') after {', '.join(times)} "
       f"(skew {gs[10]['timers']['skew_ms']} ms)")
    ok("host: " + lab.check_answers("mcgwd"))
    ok("mcgwd counters clean: " + lab.check_mcgwd_counters(received=True))


def part_mcgwd_active(lab: Interop, tmp: Path) -> None:
    lab.up(tmp)
    if lab.ka and lab.ka.poll() is None:
        lab.stop_ka()
    if not lab.mcgwd or lab.mcgwd.poll() is not None:
        lab.start_mcgwd()
    lab.wait_mcgwd("active", 5)
    transitions = {v: g["transitions"] for v, g in lab.groups().items()}
    lab.start_ka(50)
    lab.wait_ka("BACKUP", 10)
    time.sleep(1.0)  # keepalived would take over after 3 x 100 ms + skew if it did not hear mcgwd
    s = lab.ka_states()
    check(all(s[g.name][0] == "BACKUP" for g in GROUPS), "keepalived stays BACKUP", s)
    gs = lab.groups()
    for g in GROUPS:
        check(gs[g.vrid]["state"] == "active" and gs[g.vrid]["transitions"] == transitions[g.vrid],
              f"mcgwd {g}: stays Active while keepalived (priority 50) starts", gs[g.vrid])
    lab.check_ka_log()
    ok("keepalived priority 50: BACKUP for all four instances, mcgwd (100) stays Active; "
       "keepalived's log has no complaint")
    ok("host: " + lab.check_answers("mcgwd"))

    t_stop = lab.stop_mcgwd()
    s = lab.wait_ka("MASTER", 5)
    log = lab.ka_log_text()
    times = []
    for g in GROUPS:
        check(f"({g.name}) Backup received priority 0 advertisement" in log,
              f"keepalived {g.name}: received mcgwd's priority 0", "")
        ms = (s[g.name][1] - t_stop) * 1000
        check(ms < TAKEOVER_BOUND_MS, f"keepalived {g.name}: MASTER within {TAKEOVER_BOUND_MS} ms of mcgwd's SIGTERM",
              f"{ms:.0f} ms")
        times.append(f"{g.name} {ms:.0f} ms")
    ok(f"mcgwd SIGTERM (priority 0, exit 0): keepalived MASTER ('Backup received priority 0 advertisement') "
       f"after {', '.join(times)} (notify script's clock)")
    ok("host: " + lab.check_answers("keepalived"))

    t_up = lab.start_mcgwd()
    gs = lab.wait_mcgwd("active", 5)
    lab.wait_ka("BACKUP", 5)
    times = []
    for g in GROUPS:
        last = gs[g.vrid]["last_transition"]
        check(last["reason"] == "preempted lower priority 50", f"mcgwd {g}: Active by preemption", last)
        times.append(f"vrid {g.vrid} {(lab.transition_time(g.vrid, 'Active') - t_up) * 1000:.0f} ms")
    log = lab.ka_log_text()
    for g in GROUPS:
        src = (GW6 if g.unicast else None) if g.v6 else GW4
        want = f"({g.name}) Master received advert from "
        hits = [ln for ln in log.splitlines() if want in ln and "higher priority 100" in ln]
        check(hits and (src is None or src in hits[0]), f"keepalived {g.name}: stepped down for mcgwd's priority 100",
              hits)
    ok(f"mcgwd started again: preempts keepalived ('preempted lower priority 50') after {', '.join(times)} "
       "from its API answering; keepalived back to BACKUP for all four ('Master received advert ... "
       "higher priority 100')")
    ok("mcgwd counters clean: " + lab.check_mcgwd_counters(received=True))
    lab.check_ka_log()
    ok("keepalived's log: no complaint")
    ok("host: " + lab.check_answers("mcgwd"))
    lab.stop_ka()
    lab.stop_mcgwd()


def main() -> int:
    driver = sys.argv[1] if len(sys.argv) > 1 else "af_xdp"
    if driver not in ("af_xdp", "af_packet"):
        print("usage: lab_vrrp_keepalived_test.py [af_xdp|af_packet]", file=sys.stderr)
        return 2
    lab = Interop(driver)
    try:
        return run_parts("vrrp-keepalived", [
            ("keepalived higher priority: MASTER, then SIGTERM", lambda t: part_keepalived_active(lab, t)),
            ("mcgwd higher priority: Active, SIGTERM, back", lambda t: part_mcgwd_active(lab, t)),
        ], logs="*.log", log_lines=40)
    finally:
        lab.down()


if __name__ == "__main__":
    sys.exit(main())
