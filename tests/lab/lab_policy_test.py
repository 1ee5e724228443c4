#!/usr/bin/python3
"""Lab test: tenant policy rules and isolation (issue 19, item 1), af_xdp,
VXLAN, IPv4 underlay, static routes.

Its own topology (built with mcgwlab's Topology and Lab; configs with two
tenants, which the standard topology does not have)::

  traina --train0-+         +-train0-- trainb
                  gwa -wan1- rtr -wan1- gwb
  infera --infer0-+         +-infer0-- inferb

Two tenants share gwa and gwb and the one line between them: `train` (VNI
100: 10.1.0.0/24 at A, 10.2.0.0/24 at B) and `infer` (VNI 200:
10.11.0.0/24 at A, 10.12.0.0/24 at B), each on its own LAN port of each
gateway (af_xdp on veth) and with a host per site (default route via its
gateway), each tenant with a static route to the other site's subnet of
the same tenant.

- basic: ping 3/3 and 4 MiB of iperf3 train A -> train B and infer A ->
  infer B.
- isolation: traina pings inferb (10.12.0.10) and opens TCP to it: both
  fail (the connect times out), while infera reaches the same listener;
  gwa's `show policy --json` train `isolation.packets` grows by at least
  the pings sent, and `show counters --json` drops `tenant-isolation` too.
- deny: gwa reloaded with a train rule denying TCP to port 5201 from
  10.1.0.0/24 to 10.2.0.0/24, under a 100 packets/s ping infer A -> infer
  B (ping -i 0.01) that loses nothing: iperf3 traina -> trainb:5201 fails
  (connect timed out), the rule's packets > 0, drops `policy-deny` > 0,
  ping train A -> B still 3/3.  Then (counters) a reload that adds another
  rule before it and leaves it alone keeps its counter (names are the
  key), and the rule still denies; a reload without the rule (again under
  the 100/s ping, no loss): iperf3 to trainb:5201 works again.
- live-rules: `mcgwctl policy rules set train --file` (a YAML file) adds a
  rule denying TCP to trainb:5301 without a reload, under 100 packets/s
  pings train A -> B and infer A -> B that lose nothing: the set returns
  in force (the next connect to trainb:5301 times out), `show policy`
  says the rules are live by the local socket and the rule counts the
  SYNs; a policy file with a bad prefix is refused with its place
  (policy.rules[0].source[0]) and changes nothing; `policy rules clear
  train` brings the config's rules back (none) and the connect works.
- default-deny: train with `default: deny` and one rule allowing ICMP:
  ping train A -> B works (the rule counts the requests from the LAN and
  the replies out of the tunnel), TCP to trainb fails and is counted in
  `default_packets` and drops `policy-deny`.

Figures printed.  About 45 s.  Run as root with /usr/bin/python3;
MCGW_BUILD_DIR names the build.  Helpers run inside the namespaces:
`lab_policy_test.py listen PORT`, `lab_policy_test.py connect DST PORT SECONDS`.
"""

import copy
import ipaddress
import json
import os
import re
import secrets
import socket
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(HERE))
import mcgwlab  # noqa: E402
from labtest import check, ok, run_parts  # noqa: E402
from mcgwlab import Gateway, Iface, Line, Peer, Port, Route, Topology  # noqa: E402

BUILD = Path(os.environ.get("MCGW_BUILD_DIR", HERE.parents[1] / "build"))

TENANTS = {"train": 100, "infer": 200}
# Per tenant and site: (the gateway's LAN address, the host's address).
LAN = {("train", "a"): ("10.1.0.1/24", "10.1.0.10/24"), ("train", "b"): ("10.2.0.1/24", "10.2.0.10/24"),
       ("infer", "a"): ("10.11.0.1/24", "10.11.0.10/24"), ("infer", "b"): ("10.12.0.1/24", "10.12.0.10/24")}
TRAIN_B, INFER_B = "10.2.0.10", "10.12.0.10"
IPERF_PORT = 5201  # the port the deny rule names
OTHER_PORT = 5301  # a listener for the connect checks

NO_IPERF = {"name": "no-iperf", "action": "deny", "protocol": "tcp", "source": ["10.1.0.0/24"],
            "destination": ["10.2.0.0/24"], "destination-ports": str(IPERF_PORT)}


# --------------------------------------------------------------------------
# helpers that run inside a namespace


def listen_main(port: int) -> int:
    """Accept TCP connections on `port` and close them, until killed."""
    with socket.create_server(("0.0.0.0", port), backlog=64) as s:
        while True:
            c, _ = s.accept()
            c.close()


def connect_main(dst: str, port: int, seconds: float) -> int:
    """One TCP connect; prints "connected" or the error; exit 0 when connected."""
    t0 = time.monotonic()
    try:
        with socket.create_connection((dst, port), timeout=seconds):
            print(f"connected {time.monotonic() - t0:.3f}")
            return 0
    except socket.timeout:
        print(f"timeout {time.monotonic() - t0:.3f}")
    except OSError as e:
        print(f"error {e.strerror or e} {time.monotonic() - t0:.3f}")
    return 1


# --------------------------------------------------------------------------
# the topology and the configs


def topology() -> Topology:
    t = Topology()
    router = {"net.ipv4.ip_forward": "1", "net.ipv6.conf.all.forwarding": "1"}
    gateway = {"net.ipv4.ip_forward": "0", "net.ipv6.conf.all.forwarding": "0",
               "net.ipv6.conf.all.autoconf": "0", "net.ipv6.conf.default.autoconf": "0"}
    for gw in ("gwa", "gwb"):
        t.node(gw, "gateway", sysctls=dict(gateway))
    t.node("rtr", "router", sysctls=dict(router))

    def gw_if(node, name, addrs):
        # af_xdp: the gateway's addresses on the kernel side too (ARP, as in
        # the standard topology).
        return Iface(node, name, addrs, kernel_addrs=True, addrgenmode="eui64")

    for tenant in TENANTS:
        for site in ("a", "b"):
            host = f"{tenant}{site}"
            gw_addr, host_addr = LAN[(tenant, site)]
            t.node(host, "host")
            # TX checksum offload off on the hosts (see mcgwlab.standard_topology).
            t.link(Iface(host, "eth0", [host_addr], tx_offload=False),
                   gw_if(f"gw{site}", f"{tenant}0", [gw_addr]))
            t.nodes[host].routes.append(Route("default", gw_addr.split("/")[0]))
    for gw, rif, n in (("gwa", "a1", 1), ("gwb", "b1", 3)):
        t.link(gw_if(gw, "wan1", [f"100.64.{n}.1/30"]),
               Iface("rtr", rif, [f"100.64.{n}.2/30"], tx_offload=False))
    t.nodes["gwa"].routes.append(Route("100.64.3.0/30", "100.64.1.2", "wan1"))
    t.nodes["gwb"].routes.append(Route("100.64.1.0/30", "100.64.3.2", "wan1"))
    ports = [Port("train0", "lan", "train0"), Port("infer0", "lan", "infer0"), Port("wan1", "wan", "wan1")]
    t.gateways["gwa"] = Gateway("gwa", "gw-a", "site-a", ports, "train", TENANTS["train"], routes=[],
                                peers=[Peer("site-b", "vxlan",
                                            [Line("line1", "wan1", "100.64.1.1", "100.64.3.1", "100.64.1.2")])])
    t.gateways["gwb"] = Gateway("gwb", "gw-b", "site-b", ports, "train", TENANTS["train"], routes=[],
                                peers=[Peer("site-a", "vxlan",
                                            [Line("line1", "wan1", "100.64.3.1", "100.64.1.1", "100.64.3.2")])])
    return t


class PolicyLab(mcgwlab.Lab):
    """mcgwlab's Lab with two tenants per gateway: each LAN port named after
    its tenant, each tenant with a static route to its subnet at the other
    site.  `policies[node][tenant]`: the tenant's `policy` section."""

    policies: dict = {}

    def gateway_config(self, node: str, fake_macs: bool = False) -> dict:
        c = super().gateway_config(node, fake_macs)
        for p in c["ports"]:
            if p["role"] == "lan":
                p["tenant"] = p["name"][:-1]  # train0 -> train
        site, other, peer = ("a", "b", "site-b") if node == "gwa" else ("b", "a", "site-a")
        c["tenants"] = []
        for tenant, vni in TENANTS.items():
            net = ipaddress.ip_interface(LAN[(tenant, other)][1]).network
            entry = {"name": tenant, "vni": vni, "routes": [{"prefix": str(net), "peer": peer}]}
            pol = self.policies.get(node, {}).get(tenant)
            if pol:
                entry["policy"] = copy.deepcopy(pol)
            c["tenants"].append(entry)
        return c


def new_lab(tmp: Path) -> PolicyLab:
    prefix = f"policy-{secrets.token_hex(3)}-"
    lab = PolicyLab(prefix=prefix, workdir=tmp / prefix.rstrip("-"), topology=topology(),
                    options=mcgwlab.Options(), build_dir=BUILD)
    lab.policies = {}
    return lab


def wait_for(pred, timeout: float, step: float = 0.1):
    """Poll pred() until it returns something true, or `timeout` seconds; its last value."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(step)


def policy_view(lab, gw: str, tenant: str) -> dict:
    doc = json.loads(lab.ctl(gw, "show", "policy", "--tenant", tenant, "--json", check=True).stdout)
    check(doc.get("schema") == "mcgw.policy/1", f"{gw}: show policy schema mcgw.policy/1", doc.get("schema"))
    ts = [x for x in doc.get("tenants", []) if x.get("name") == tenant]
    check(len(ts) == 1, f"{gw}: show policy --tenant {tenant} lists that tenant once", doc)
    return ts[0]


def rule(view: dict, name: str) -> dict:
    rs = [r for r in view.get("rules", []) if r.get("name") == name]
    check(len(rs) == 1, f"rule {name} in show policy", view)
    return rs[0]


def drops(lab, gw: str) -> dict:
    return json.loads(lab.ctl(gw, "show", "counters", "--json", check=True).stdout)["drops"]


def set_policy(lab, gw: str, tenant: str, pol: dict | None) -> float:
    """Rewrite `gw`'s config with `tenant`'s policy `pol` (None: none) and
    `mcgwctl reload`; returns once `show policy` shows it (the rule names
    and the default).  The seconds the reload took."""
    lab.policies.setdefault(gw, {})[tenant] = pol
    path = Path(lab.state["gateways"][gw]["config"])
    path.write_text(lab.render(gw))
    t0 = time.monotonic()
    r = lab.ctl(gw, "reload")
    check(r.returncode == 0, f"{gw}: mcgwctl reload", (r.stdout + r.stderr).strip())
    want_rules = [x["name"] for x in (pol or {}).get("rules", [])]
    want_default = (pol or {}).get("default", "allow")

    def shown():
        v = policy_view(lab, gw, tenant)
        return [x["name"] for x in v.get("rules", [])] == want_rules and v.get("default") == want_default

    check(wait_for(shown, 10), f"{gw}: show policy has the reloaded rules {want_rules}, default {want_default}",
          policy_view(lab, gw, tenant))
    return time.monotonic() - t0


def connect(lab, node: str, dst: str, port: int, seconds: float = 2.0) -> tuple[bool, str]:
    r = lab.run(node, "/usr/bin/python3", Path(__file__).resolve(), "connect", dst, port, seconds,
                check=False, timeout=seconds + 20)
    return r.returncode == 0, (r.stdout + r.stderr).strip()


def iperf_client(lab, node: str, dst: str, port: int, nbytes: int = 4 << 20,
                 connect_ms: int = 3000) -> tuple[dict, int]:
    """iperf3 -c dst -p port -R in `node` (the server sends, the client
    counts what arrived): iperf3's JSON document and its exit code."""
    r = lab.run(node, "iperf3", "-c", dst, "-p", port, "-R", "-n", nbytes, "--json",
                "--connect-timeout", connect_ms, check=False, timeout=60)
    try:
        doc = json.loads(r.stdout)
    except json.JSONDecodeError:
        doc = {"error": (r.stdout + r.stderr).strip()[-300:] or f"exit {r.returncode}"}
    return doc, r.returncode


def received(doc: dict) -> int:
    return int(doc.get("end", {}).get("sum_received", {}).get("bytes", 0))


class SteadyPing:
    """ping -i 0.01 (100 packets/s) in the background; .result() waits for
    it and returns (transmitted, received)."""

    def __init__(self, lab, node: str, dst: str, count: int):
        self.lab, self.name = lab, f"ping100-{node}-{secrets.token_hex(2)}"
        self.count = count
        self.pid = lab.start(self.name, node, "ping", "-n", "-q", "-i", "0.01", "-c", count, "-W", "2", dst)
        self.t0 = time.monotonic()

    def result(self) -> tuple[int, int]:
        deadline = time.monotonic() + self.count * 0.01 + 30
        while self.lab._alive(self.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.lab.stop(self.name, 2)
        text = (self.lab.dir / f"{self.name}.log").read_text()
        m = re.search(r"(\d+) packets transmitted, (\d+) received", text)
        check(m, "ping -i 0.01 printed its statistics", text)
        return int(m.group(1)), int(m.group(2))


def across_reload(lab, what: str, action, flows=(("infera", INFER_B), ("traina", TRAIN_B)),
                  count: int = 500):
    """Run action() while each (node, dst) of `flows` pings at 100
    packets/s (ping -i 0.01, started 1 s before it); assert that no echo
    went unanswered.  action's value."""
    pings = [(node, dst, SteadyPing(lab, node, dst, count)) for node, dst in flows]
    time.sleep(1.0)
    value = action()
    for node, dst, ping in pings:
        sent, got = ping.result()
        check(sent == count and got == sent,
              f"{what}: ping -i 0.01 {node} -> {dst} across the change loses nothing", f"{sent} sent, {got} received")
        print(f"   {what}: ping -i 0.01 {node} -> {dst}: {sent} sent, {got} received across the change", flush=True)
    return value


# --------------------------------------------------------------------------
# the parts


def basic(lab) -> None:
    for tenant, dst in (("train", TRAIN_B), ("infer", INFER_B)):
        src = f"{tenant}a"
        n = wait_for(lambda: lab.ping(src, dst, count=1, timeout=1), 10, step=0.5)
        check(n == 1, f"{tenant}: {src} -> {dst} answers within 10 s")
        n = lab.ping(src, dst, count=3, timeout=2)
        check(n == 3, f"{tenant}: ping {src} -> {dst} 3 of 3", n)
        t = lab.iperf(src, f"{tenant}b", nbytes=4 << 20)
        check(t.bytes >= 4 << 20, f"{tenant}: iperf3 {src} -> {tenant}b received 4 MiB", t)
        ok(f"{tenant}: ping {src} -> {dst} 3/3; TCP {t}")


def isolation(lab) -> None:
    lab.start("listen-inferb", "inferb", "/usr/bin/python3", Path(__file__).resolve(), "listen", OTHER_PORT,
              listen=OTHER_PORT)
    try:
        okc, out = connect(lab, "infera", INFER_B, OTHER_PORT)
        check(okc, f"infer: infera connects to {INFER_B}:{OTHER_PORT} (the listener works)", out)
        v0, d0 = policy_view(lab, "gwa", "train"), drops(lab, "gwa")
        check(v0["isolation"]["prefixes"] >= 2, "gwa: train isolation has infer's 2 prefixes (10.11.0.0/24, "
              "10.12.0.0/24)", v0["isolation"])
        count = 5
        n = lab.ping("traina", INFER_B, count=count, timeout=1)
        check(n == 0, f"train: ping traina -> {INFER_B} (infer's host at B) gets no reply", f"{n} replies")
        okc, out = connect(lab, "traina", INFER_B, OTHER_PORT, 2.0)
        check(not okc and out.startswith("timeout"), f"train: TCP traina -> {INFER_B}:{OTHER_PORT} times out",
              out)
        # The counters are summed from the workers: poll until the pings are in.
        want = count + 1  # the echo requests and at least the SYN

        def grown():
            v, d = policy_view(lab, "gwa", "train"), drops(lab, "gwa")
            di = v["isolation"]["packets"] - v0["isolation"]["packets"]
            dd = d["tenant-isolation"] - d0["tenant-isolation"]
            return (di, dd) if di >= want and dd >= want else None

        got = wait_for(grown, 5)
        v1, d1 = policy_view(lab, "gwa", "train"), drops(lab, "gwa")
        di = v1["isolation"]["packets"] - v0["isolation"]["packets"]
        dd = d1["tenant-isolation"] - d0["tenant-isolation"]
        check(got, f"gwa: train isolation.packets and drops tenant-isolation grew by >= {want} "
              f"({count} echo requests + SYN)", f"isolation +{di}, drops +{dd}")
        nr = d1.get("no-route", 0) - d0.get("no-route", 0)
        check(nr == 0, "gwa: none of them counted as no-route", nr)
        ok(f"isolation: traina -> {INFER_B}: ping 0/{count}, TCP {out}; gwa train isolation "
           f"{v1['isolation']['prefixes']} prefixes, packets +{di}, drops tenant-isolation +{dd}")
    finally:
        lab.stop("listen-inferb")


def deny(lab) -> None:
    lab.start("iperf3-trainb", "trainb", "iperf3", "-s", "-p", IPERF_PORT, "-B", TRAIN_B, listen=IPERF_PORT)
    lab.start("listen-trainb", "trainb", "/usr/bin/python3", Path(__file__).resolve(), "listen", OTHER_PORT,
              listen=OTHER_PORT)
    try:
        doc, rc = iperf_client(lab, "traina", TRAIN_B, IPERF_PORT)
        check(rc == 0 and not doc.get("error") and received(doc) >= 4 << 20,
              f"train: iperf3 traina -> {TRAIN_B}:{IPERF_PORT} works "
              "before the rule", doc.get("error") or received(doc))
        d0 = drops(lab, "gwa")
        took = across_reload(lab, "rule added", lambda: set_policy(
            lab, "gwa", "train", {"default": "allow", "rules": [NO_IPERF]}))
        print(f"   gwa reloaded with rule no-iperf in {took:.2f} s", flush=True)
        v = policy_view(lab, "gwa", "train")
        r = rule(v, "no-iperf")
        check(r["action"] == "deny" and r["entries"] >= 1 and "note" not in r,
              "gwa: no-iperf is a deny rule with classifier entries", r)
        t0 = time.monotonic()
        doc, rc = iperf_client(lab, "traina", TRAIN_B, IPERF_PORT, connect_ms=2000)
        waited = time.monotonic() - t0
        err = str(doc.get("error", ""))
        # (iperf3 3.12 with --json exits 0 after "unable to connect": the error is in the document)
        check(received(doc) == 0 and "unable to connect" in err and "timed out" in err,
              f"train: iperf3 traina -> {TRAIN_B}:{IPERF_PORT} fails to connect under no-iperf", f"rc {rc}: {err}")
        check(waited >= 1.5, "it timed out (no RST: the SYNs were dropped)", f"{waited:.2f} s: {err}")
        n = lab.ping("traina", TRAIN_B, count=3, timeout=2)
        check(n == 3, f"train: ping traina -> {TRAIN_B} 3 of 3 under no-iperf (an unaffected flow)", n)
        okc, other_out = connect(lab, "traina", TRAIN_B, OTHER_PORT)
        check(okc, f"train: TCP traina -> {TRAIN_B}:{OTHER_PORT} (another port) connects under no-iperf", other_out)

        def counted():
            r = rule(policy_view(lab, "gwa", "train"), "no-iperf")
            d = drops(lab, "gwa")["policy-deny"] - d0["policy-deny"]
            return (r["packets"], d) if r["packets"] > 0 and d > 0 else None

        got = wait_for(counted, 5)
        check(got, "gwa: no-iperf packets > 0 and drops policy-deny grew",
              (rule(policy_view(lab, "gwa", "train"), "no-iperf"), drops(lab, "gwa")["policy-deny"]))
        text = lab.ctl("gwa", "show", "policy", "--tenant", "train", check=True).stdout
        check(re.search(r"^\s*1\s+no-iperf\s+deny\s+\d+\s+tcp 10\.1\.0\.0/24 -> 10\.2\.0\.0/24 dport 5201$",
                        text, re.M), "gwa: show policy (text) lists no-iperf with its match", text)
        ok(f"deny: iperf3 to {TRAIN_B}:{IPERF_PORT} refused ({err!r} after {waited:.1f} s); ping 3/3 and TCP "
           f"to port {OTHER_PORT} still work; no-iperf packets {got[0]}, drops policy-deny +{got[1]}")

        # 5. Counters keep their value across a reload that leaves the rule
        # alone: a new rule before it, and the tenant recompiled.
        before = wait_for(lambda: _stable(lambda: rule(policy_view(lab, "gwa", "train"), "no-iperf")["packets"]),
                          5)
        other = {"name": "no-discard", "action": "deny", "protocol": "udp", "destination-ports": "9"}
        across_reload(lab, "rule left alone", lambda: set_policy(
            lab, "gwa", "train", {"default": "allow", "rules": [other, NO_IPERF]}))
        v = policy_view(lab, "gwa", "train")
        after, fresh = rule(v, "no-iperf")["packets"], rule(v, "no-discard")["packets"]
        check(after == before, "gwa: no-iperf's counter kept its value across a reload that added a rule "
              "before it", f"{before} before, {after} after")
        check(fresh == 0, "gwa: the new rule no-discard starts at 0", fresh)
        okc, out = connect(lab, "traina", TRAIN_B, IPERF_PORT, 2.0)
        check(not okc and out.startswith("timeout"), f"train: TCP to {TRAIN_B}:{IPERF_PORT} still denied", out)
        grew = wait_for(lambda: rule(policy_view(lab, "gwa", "train"), "no-iperf")["packets"] > after, 5)
        check(grew, "gwa: no-iperf counts on from there",
              rule(policy_view(lab, "gwa", "train"), "no-iperf"))
        ok(f"counters: no-iperf {before} packets before and {after} after a reload that added no-discard "
           f"before it; no-discard 0; it still denies and counts on")

        across_reload(lab, "rule removed", lambda: set_policy(lab, "gwa", "train", None))
        doc, rc = iperf_client(lab, "traina", TRAIN_B, IPERF_PORT)
        check(rc == 0 and not doc.get("error") and received(doc) >= 4 << 20,
              f"train: iperf3 traina -> {TRAIN_B}:{IPERF_PORT} works again without the rule",
              doc.get("error") or received(doc))
        ok(f"rule removed: iperf3 traina -> {TRAIN_B}:{IPERF_PORT} {received(doc) / 1048576:.1f} MiB received "
           f"at {doc['end']['sum_received']['bits_per_second'] / 1e6:.0f} Mbit/s")
    finally:
        lab.stop("iperf3-trainb")
        lab.stop("listen-trainb")


def _stable(read):
    """read() twice 0.3 s apart; its value when both agree (None otherwise)."""
    a = read()
    time.sleep(0.3)
    return a if read() == a else None


def live_rules(lab) -> None:
    lab.start("listen-trainb", "trainb", "/usr/bin/python3", Path(__file__).resolve(), "listen", OTHER_PORT,
              listen=OTHER_PORT)
    try:
        okc, out = connect(lab, "traina", TRAIN_B, OTHER_PORT)
        check(okc, f"train: traina connects to {TRAIN_B}:{OTHER_PORT} before the live rule", out)
        v0 = policy_view(lab, "gwa", "train")
        check(v0.get("rules_source") == "config" and v0["rules"] == [],
              "gwa: train's rules come from the config (none)", v0)
        good = lab.dir / "live-rules.yaml"
        good.write_text(f"# train: no TCP to trainb:{OTHER_PORT}\n"
                        "default: allow\n"
                        "rules:\n"
                        "  - name: no-other\n"
                        "    action: deny\n"
                        "    protocol: tcp\n"
                        "    source: [10.1.0.0/24]\n"
                        f"    destination: [{TRAIN_B}/32]\n"
                        f"    destination-ports: {OTHER_PORT}\n")
        bad = lab.dir / "live-rules-bad.yaml"
        bad.write_text("rules:\n  - {name: bad, action: deny, source: [10.1.0.1/24]}\n")

        def change():
            t0 = time.monotonic()
            r = lab.ctl("gwa", "policy", "rules", "set", "train", "--file", str(good))
            took = time.monotonic() - t0
            check(r.returncode == 0 and "tenant train: 1 live rule, default allow, in force" in r.stdout,
                  "gwa: mcgwctl policy rules set train --file live-rules.yaml", (r.stdout + r.stderr).strip())
            # In force when it answered: the first connect is refused.
            okc, out = connect(lab, "traina", TRAIN_B, OTHER_PORT, 1.0)
            check(not okc and out.startswith("timeout"),
                  f"train: TCP traina -> {TRAIN_B}:{OTHER_PORT} times out right after the set", out)
            return took, out

        pings = (("infera", INFER_B), ("traina", TRAIN_B))
        took, denied = across_reload(lab, "live rule set", change, flows=pings, count=300)
        v = policy_view(lab, "gwa", "train")
        check(v.get("rules_source", "").startswith("live by local socket since "),
              "gwa: show policy --json: train's rules_source is live by local socket", v.get("rules_source"))
        r = rule(v, "no-other")
        check(r["action"] == "deny" and r["entries"] >= 1, "gwa: no-other is a compiled deny rule", r)
        got = wait_for(lambda: rule(policy_view(lab, "gwa", "train"), "no-other")["packets"], 5)
        check(got and got >= 1, "gwa: no-other counted the denied SYNs", got)
        text = lab.ctl("gwa", "show", "policy", "--tenant", "train", check=True).stdout
        check(re.search(r"^tenant train \(VNI 100\): default allow, 1 rule live by local socket since ", text, re.M)
              and re.search(r"^\s*1\s+no-other\s+deny\s+\d+\s+tcp 10\.1\.0\.0/24 -> 10\.2\.0\.10/32 dport 5301$",
                            text, re.M), "gwa: show policy (text) says live and lists no-other", text)
        okc, out = connect(lab, "traina", TRAIN_B, IPERF_PORT + 1000, 1.0)  # nobody listens: RST
        check(not okc and "refused" in out, f"train: TCP to another port of {TRAIN_B} is not denied (RST)", out)

        r = lab.ctl("gwa", "policy", "rules", "set", "train", "--file", str(bad))
        check(r.returncode == 1 and "policy.rules[0].source[0]: expected a network prefix" in r.stderr
              and "nothing changed" in r.stderr, "gwa: a bad policy file is refused with its place",
              (r.stdout + r.stderr).strip())
        check([x["name"] for x in policy_view(lab, "gwa", "train")["rules"]] == ["no-other"],
              "gwa: the refused file changed nothing", policy_view(lab, "gwa", "train"))

        def clear():
            r = lab.ctl("gwa", "policy", "rules", "clear", "train")
            check(r.returncode == 0 and "tenant train: back to the config's rules" in r.stdout,
                  "gwa: mcgwctl policy rules clear train", (r.stdout + r.stderr).strip())
            okc, out = connect(lab, "traina", TRAIN_B, OTHER_PORT, 2.0)
            check(okc, f"train: TCP traina -> {TRAIN_B}:{OTHER_PORT} connects again after the clear", out)

        across_reload(lab, "live rule cleared", clear, flows=pings, count=200)
        v = policy_view(lab, "gwa", "train")
        check(v.get("rules_source") == "config" and v["rules"] == [], "gwa: train back to the config's rules", v)
        log = (lab.dir / "gwa.log").read_text()
        for line in ("policy rules: local socket set the live rules of tenant train: 1 rule, default allow",
                     "policy rules: local socket could not set tenant train's rules: tenant \"train\": "
                     "policy.rules[0].source[0]",
                     "policy rules: local socket cleared the live rules of tenant train"):
            check(line in log, f"gwa's log: {line}", log[-2000:])
        ok(f"live rules: set in {took * 1000:.0f} ms and in force at once (connect: {denied}); no-other counted "
           f"{got}; bad file refused; cleared: connects again; 100/s pings lost nothing")
    finally:
        lab.stop("listen-trainb")
        lab.ctl("gwa", "policy", "rules", "clear", "train")


def default_deny(lab) -> None:
    lab.start("listen-trainb", "trainb", "/usr/bin/python3", Path(__file__).resolve(), "listen", OTHER_PORT,
              listen=OTHER_PORT)
    try:
        okc, out = connect(lab, "traina", TRAIN_B, OTHER_PORT)
        check(okc, f"train: traina connects to {TRAIN_B}:{OTHER_PORT} before the policy", out)
        d0 = drops(lab, "gwa")
        allow = {"name": "icmp-only", "action": "allow", "protocol": "icmp"}
        set_policy(lab, "gwa", "train", {"default": "deny", "rules": [allow]})
        v0 = policy_view(lab, "gwa", "train")
        count = 3
        n = lab.ping("traina", TRAIN_B, count=count, timeout=2)
        check(n == count, f"train: ping traina -> {TRAIN_B} {count} of {count} under default deny + icmp-only", n)
        okc, out = connect(lab, "traina", TRAIN_B, OTHER_PORT, 2.0)
        check(not okc and out.startswith("timeout"), f"train: TCP traina -> {TRAIN_B}:{OTHER_PORT} denied", out)

        def counted():
            v = policy_view(lab, "gwa", "train")
            di = rule(v, "icmp-only")["packets"] - rule(v0, "icmp-only")["packets"]
            dd = v["default_packets"] - v0["default_packets"]
            dp = drops(lab, "gwa")["policy-deny"] - d0["policy-deny"]
            return (di, dd, dp) if di >= 2 * count and dd >= 1 and dp >= 1 else None

        got = wait_for(counted, 5)
        v = policy_view(lab, "gwa", "train")
        check(got, f"gwa: icmp-only counted >= {2 * count} (requests from the LAN, replies out of the tunnel), "
              "default_packets and drops policy-deny grew",
              f"icmp-only {rule(v, 'icmp-only')['packets']} (was {rule(v0, 'icmp-only')['packets']}), default "
              f"{v['default_packets']} (was {v0['default_packets']})")
        check(v["default"] == "deny", "gwa: train's default shows deny", v["default"])
        ok(f"default deny: ping 3/3, TCP {out}; icmp-only +{got[0]} packets, default_packets +{got[1]}, "
           f"drops policy-deny +{got[2]}")
    finally:
        lab.stop("listen-trainb")
        if lab.policies.get("gwa", {}).get("train"):
            set_policy(lab, "gwa", "train", None)


def run(tmp: Path) -> None:
    t_start = time.monotonic()
    lab = new_lab(tmp)
    with lab.up(start_gateways=True):
        print(f"   lab {lab.prefix} up in {time.monotonic() - t_start:.1f} s", flush=True)
        failed = []
        for label, part in (("basic", basic), ("isolation", isolation), ("deny", deny),
                            ("live-rules", live_rules), ("default-deny", default_deny)):
            t0 = time.monotonic()
            try:
                part(lab)
                print(f"   {label}: {time.monotonic() - t0:.1f} s", flush=True)
            except Exception as e:  # noqa: BLE001 - report and go on with the next part
                failed.append(label)
                print(f"FAIL: {label}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
                # Whatever the part left in force goes before the next one.
                try:
                    if lab.policies.get("gwa", {}).get("train"):
                        set_policy(lab, "gwa", "train", None)
                except Exception as e2:  # noqa: BLE001
                    print(f"   (restoring gwa's config failed: {e2})", file=sys.stderr, flush=True)
        if failed:
            for gw in ("gwa", "gwb"):
                r = lab.ctl(gw, "show", "policy")
                print(f"--- {gw} show policy:\n{r.stdout}{r.stderr}", file=sys.stderr)
                try:
                    print(f"--- {gw} drops: {json.dumps(drops(lab, gw))}", file=sys.stderr)
                except Exception:  # noqa: BLE001
                    pass
            raise mcgwlab.LabError(f"parts failed: {', '.join(failed)}")
    check(not [n for n in mcgwlab.list_netns() if n.startswith(lab.prefix)], "namespaces left")
    print(f"   {time.monotonic() - t_start:.1f} s", flush=True)


def main() -> int:
    if sys.argv[1:2] == ["listen"]:
        return listen_main(int(sys.argv[2]))
    if sys.argv[1:2] == ["connect"]:
        return connect_main(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    return run_parts("policy", [("policy", run)], log_lines=20)


if __name__ == "__main__":
    sys.exit(main())
