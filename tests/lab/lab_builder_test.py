#!/usr/bin/python3
"""Lab test of the lab builder (tests/lab/mcgwlab.py).

1. The generated gateway configs of every variant (encapsulation x underlay
   family x port driver) pass `mcgwctl check-config` and say what was asked.
2. An `up` that fails half-way removes everything it made.
3. The standard topology (af_xdp, VXLAN, IPv4 underlay) as a module: links,
   addresses, MTUs, routes, sysctls and site C's VXLAN device as the kernel
   reports them; the underlay router forwards over each line (kernel pings
   between the gateways' WAN addresses before mcgwd owns the interfaces,
   seen on the wire on that line only); both mcgwd instances start from the
   generated configs and answer `mcgwctl status --json`; stop, restart, and a
   teardown with mcgwd still running leaves no namespace and no process.
4. The CLI (af_packet, Geneve, IPv6 underlay): up, status --json, exec, down.

Run as root with /usr/bin/python3; MCGW_BUILD_DIR names the build.
"""

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(HERE))
import mcgwlab  # noqa: E402
from labtest import Fail, check, ok, run_parts  # noqa: E402

BUILD = Path(os.environ.get("MCGW_BUILD_DIR", HERE.parents[1] / "build"))
MCGWD = BUILD / "control/daemon/mcgwd"
MCGWCTL = BUILD / "control/cli/mcgwctl"





def prefix_namespaces(prefix: str) -> list[str]:
    return [n for n in mcgwlab.list_netns() if n.startswith(prefix)]


def new_lab(tmp: Path, **opts) -> mcgwlab.Lab:
    prefix = f"mcgwlab-{secrets.token_hex(3)}-"
    return mcgwlab.Lab(prefix=prefix, workdir=tmp / prefix.rstrip("-"), options=mcgwlab.Options(**opts),
                       mcgwd=str(MCGWD), mcgwctl=str(MCGWCTL))


# ---------------------------------------------------------------------------

def test_configs(tmp: Path) -> None:
    n = 0
    for encap in ("vxlan", "geneve"):
        for underlay in ("ipv4", "ipv6"):
            for driver in ("af_xdp", "af_packet"):
                o = mcgwlab.Options(encap=encap, underlay=underlay, driver=driver, static_neighbors=True)
                lab = mcgwlab.Lab(prefix="mcgwlab-cfg-", workdir=tmp / "cfg", options=o,
                                  mcgwd=str(MCGWD), mcgwctl=str(MCGWCTL))
                lab.topo = mcgwlab.standard_topology(o)
                for gw in ("gwa", "gwb"):
                    path = tmp / f"{gw}-{encap}-{underlay}-{driver}.yaml"
                    path.write_text(lab.render(gw, fake_macs=True))
                    r = subprocess.run([MCGWCTL, "check-config", path], capture_output=True, text=True)
                    check(r.returncode == 0, f"check-config {path.name}", r.stdout + r.stderr)
                    c = lab.gateway_config(gw, fake_macs=True)
                    vdevs = [p["vdev"] for p in c["ports"]]
                    check(all(v.startswith("net_" + driver) for v in vdevs), "vdevs", vdevs)
                    check(c["eal"]["mbufs"] >= 2048 * len(vdevs) + 4095, "mbufs for af_xdp", c["eal"])
                    peer = c["peers"][0]
                    check(peer["encapsulation"] == encap, "encapsulation", peer)
                    for line in peer["lines"]:
                        check((":" in line["remote-vtep"]) == (underlay == "ipv6"), "VTEP family", line)
                        check((":" in line["next-hop"]) == (underlay == "ipv6"), "next-hop family", line)
                    for p in c["ports"]:
                        check(p.get("neighbors"), f"static neighbours on {gw}/{p['name']}", p)
                    n += 1
                d = mcgwlab.Lab(prefix="mcgwlab-cfg-", workdir=tmp / "cfg", options=mcgwlab.Options(
                    encap=encap, underlay=underlay, driver=driver))
                d.topo = mcgwlab.standard_topology(d.options)
                for gw in ("gwa", "gwb"):
                    c = d.gateway_config(gw, fake_macs=True)
                    check(not any(p.get("neighbors") for p in c["ports"]),
                          f"{gw}: no static neighbours by default (the kernel resolves)", c["ports"])
                gwa = lab.gateway_config("gwa", fake_macs=True)
                check([p["name"] for p in gwa["peers"]] == ["site-b", "site-c"], "gwa peers", gwa["peers"])
                c_peer = gwa["peers"][1]
                check(c_peer["encapsulation"] == "vxlan" and c_peer["inner-mac"] == mcgwlab.VXLAN_C_MAC,
                      "site C is the Linux VXLAN device", c_peer)
    ok(f"{n} generated configs (vxlan|geneve x ipv4|ipv6 x af_xdp|af_packet, static neighbours) pass "
       f"check-config; by default no static neighbours")


def test_bgp_configs(tmp: Path) -> None:
    """Options.bgp (and idc_router): the configs pass check-config and say
    what tests/lab/README.md says they do."""
    for underlay in ("ipv4", "ipv6"):
        o = mcgwlab.Options(underlay=underlay, bgp=True, idc_router=True)
        lab = mcgwlab.Lab(prefix="mcgwlab-bgpcfg-", workdir=tmp / "bgpcfg", options=o,
                          mcgwd=str(MCGWD), mcgwctl=str(MCGWCTL))
        lab.topo = mcgwlab.standard_topology(o)
        for gw in ("gwa", "gwb"):
            path = tmp / f"{gw}-bgp-{underlay}.yaml"
            path.write_text(lab.render(gw, fake_macs=True))
            r = subprocess.run([MCGWCTL, "check-config", path], capture_output=True, text=True)
            check(r.returncode == 0, f"check-config {path.name}", r.stdout + r.stderr)
        a, b = lab.gateway_config("gwa", fake_macs=True), lab.gateway_config("gwb", fake_macs=True)
        check((a["bgp"]["asn"], a["bgp"]["router-id"], b["bgp"]["asn"], b["bgp"]["router-id"])
              == (65001, "10.255.0.1", 65002, "10.255.0.2"), "AS numbers and router ids", (a["bgp"], b["bgp"]))
        check(a["bgp"]["bfd"] == {"enabled": True, "interval-ms": 100, "multiplier": 3}, "BFD 100 ms x 3",
              a["bgp"]["bfd"])
        check(a["bgp"]["frr"] == {"config-dir": str(tmp / "bgpcfg" / "gwa-frr"),
                                  "run-dir": str(tmp / "bgpcfg" / "gwa-frr" / "run")}, "FRR dirs", a["bgp"]["frr"])
        check(a["bgp"]["neighbors"] == [{"address": "10.1.0.254", "asn": 64512, "port": "lan0", "site": "site-a"}],
              "gwa's IDC neighbour", a["bgp"]["neighbors"])
        check([(p["name"], p.get("asn")) for p in a["peers"]] == [("site-b", 65002), ("site-c", None)]
              and [(p["name"], p.get("asn")) for p in b["peers"]] == [("site-a", 65001)],
              "peers with asn (site C without: no BGP)", a["peers"])
        check((a["node"]["site"], b["node"]["site"]) == ("site-a", "site-b"), "node.site = the peer names")
        vpcs = a["address-plan"]["clouds"][0]["regions"][0]["vpcs"]
        check([(v["name"], v["prefixes"], v["site"], v["tenant"]) for v in vpcs] == [
            ("vpc-a", ["10.1.0.0/16", "fd00:a::/64"], "site-a", "blue"),
            ("vpc-b", ["10.2.0.0/16", "fd00:b::/64"], "site-b", "blue"),
            ("vpc-c", ["10.3.0.0/16", "fd00:c::/64"], "site-c", "blue"),
            ("idc-a", ["10.100.0.0/16"], "site-a", "blue")], "the address plan", vpcs)
        statics = {gw: [(r["prefix"], r["peer"]) for r in (c["tenants"][0].get("routes") or [])]
                   for gw, c in (("gwa", a), ("gwb", b))}
        want = {"gwa": [("10.3.0.0/16", "site-c"), ("fd00:c::/64", "site-c")], "gwb": []}
        if underlay == "ipv4":
            want = {"gwa": [("fd00:b::/64", "site-b")] + want["gwa"], "gwb": [("fd00:a::/64", "site-a")]}
        check(statics == want, f"static routes over an {underlay} underlay", statics)
    ok("BGP configs (ipv4 and ipv6 underlay, IDC router) pass check-config: AS 65001/65002, BFD 100 ms x 3, "
       "peers with asn (site C without), the plan of sites A, B, C and the IDC, static routes only for "
       "site C (and, over IPv4, the IPv6 VPCs)")


def test_overlap_configs(tmp: Path) -> None:
    """Options.overlap: the configs pass check-config, carry both mapped
    ranges and route the other site's mapped range (statically without BGP)."""
    for bgp in (True, False):
        o = mcgwlab.Options(overlap=True, bgp=bgp)
        lab = mcgwlab.Lab(prefix="mcgwlab-ovcfg-", workdir=tmp / "ovcfg", options=o,
                          mcgwd=str(MCGWD), mcgwctl=str(MCGWCTL))
        lab.topo = mcgwlab.standard_topology(o)
        for gw in ("gwa", "gwb"):
            path = tmp / f"{gw}-overlap-{'bgp' if bgp else 'static'}.yaml"
            path.write_text(lab.render(gw, fake_macs=True))
            r = subprocess.run([MCGWCTL, "check-config", path], capture_output=True, text=True)
            check(r.returncode == 0, f"check-config {path.name}", r.stdout + r.stderr)
        a, b = lab.gateway_config("gwa", fake_macs=True), lab.gateway_config("gwb", fake_macs=True)
        for c in (a, b):
            check(c["address-plan"]["mapped-ranges"] == [
                {"name": "legacy-a", "real": "10.1.0.0/16", "mapped": "10.201.0.0/16", "site": "site-a"},
                {"name": "legacy-b", "real": "10.1.0.0/16", "mapped": "10.202.0.0/16", "site": "site-b"},
                {"name": "legacy-a6", "real": "fd00:a::/56", "mapped": "fd00:201::/56", "site": "site-a"},
                {"name": "legacy-b6", "real": "fd00:a::/56", "mapped": "fd00:202::/56", "site": "site-b"}],
                "the mapped ranges of both sites, IPv4 and IPv6, in the plan", c["address-plan"])
            vpcs = c["address-plan"]["clouds"][0]["regions"][0]["vpcs"]
            check([(v["name"], v["prefixes"]) for v in vpcs] ==
                  [("vpc-a", ["10.1.0.0/16", "fd00:a::/56"]), ("vpc-b", ["10.1.0.0/16", "fd00:a::/56"]),
                   ("vpc-c", ["10.3.0.0/16", "fd00:c::/64"])],
                  "VPCs of sites A and B hold the shared ranges (legacy overlaps)", vpcs)
        check(b["ports"][0]["addresses"] == ["10.1.0.2/24", "fd00:a::2/64"], "gwb lan0 in site A's ranges",
              b["ports"][0])
        routes = {gw: [(r["prefix"], r.get("peer") or r.get("next-hop")) for r in c["tenants"][0]["routes"]]
                  for gw, c in (("gwa", a), ("gwb", b))}
        want = {"gwa": [("fd00:202::/56", "site-b"), ("10.3.0.0/16", "site-c"), ("fd00:c::/64", "site-c")],
                "gwb": [("fd00:201::/56", "site-a"), ("10.1.1.0/24", "10.1.0.3"), ("fd00:a:0:1::/64", "fd00:a::3")]}
        if not bgp:
            want["gwa"].insert(0, ("10.202.0.0/16", "site-b"))
            want["gwb"].insert(0, ("10.201.0.0/16", "site-a"))
        check(routes == want, f"routes with overlap ({'bgp' if bgp else 'static'})", routes)
        check(lab.bgp_prefixes("gwa") == (["10.202.0.0/16"] if bgp else [])
              and lab.bgp_prefixes("gwb") == (["10.201.0.0/16"] if bgp else []),
              "BGP waits for the other site's mapped range", (lab.bgp_prefixes("gwa"), lab.bgp_prefixes("gwb")))
    ok("overlap configs (with and without BGP) pass check-config: mapped ranges legacy-a/b (IPv4) and "
       "legacy-a6/b6 (IPv6), the other site's mapped ranges routed, gwb's static routes to hostb's subnets via lanb")


def test_failed_up_cleans_up(tmp: Path) -> None:
    lab = new_lab(tmp)
    topo = mcgwlab.standard_topology(lab.options)
    topo.links[-1].mtu = 100000  # the kernel refuses: up fails after most of the lab exists
    lab.topo = topo
    try:
        lab.up()
    except mcgwlab.LabError as e:
        check("mtu" in str(e).lower() or "100000" in str(e), "the error names the failing command", e)
    else:
        lab.down()
        raise Fail("up with an impossible MTU succeeded")
    check(not prefix_namespaces(lab.prefix), "namespaces left after a failed up", prefix_namespaces(lab.prefix))
    check(not (mcgwlab.REGISTRY / lab.prefix.rstrip("-")).exists(), "registry entry left")
    ok("a failed up removes every namespace it made")


def addrs_of(lab, node, dev) -> set[str]:
    out = lab.ip(node, "addr", "show", "dev", dev)
    return {f"{a['local']}/{a['prefixlen']}" for a in out[0]["addr_info"] if a.get("scope") == "global"}


def test_standard_lab(tmp: Path) -> None:
    lab = new_lab(tmp, static_neighbors=True)  # af_xdp, vxlan, ipv4 underlay
    with lab.up():
        t = lab.topo
        nss = prefix_namespaces(lab.prefix)
        check(sorted(nss) == sorted(lab.ns(n) for n in t.nodes), "namespaces", nss)
        check(all(len(i.name) <= 15 for i in t.ifaces()), "interface names <= 15")
        for lk in t.links:
            for i in (lk.a, lk.b):
                link = lab.ip(i.node, "link", "show", "dev", i.name)[0]
                check(link["mtu"] == lk.mtu_of(i), f"{i.node}/{i.name} mtu", link["mtu"])
                k = lab.run(i.node, "ethtool", "-k", i.name).stdout
                check(("tx-checksumming: off" in k) == (not i.tx_offload), f"{i.node}/{i.name} tx offload", k[:200])
                check(link["operstate"] in ("UP", "UNKNOWN") or "UP" in link["flags"], f"{i.node}/{i.name} up", link)
                check(link.get("link_type") == "ether", f"{i.node}/{i.name} is a veth", link)
                want = set(i.addrs) if i.kernel_addrs else set()
                check(addrs_of(lab, i.node, i.name) == want, f"{i.node}/{i.name} addresses",
                      addrs_of(lab, i.node, i.name))
        hosts = {lab.ip(h, "link", "show", "dev", "eth0")[0]["mtu"] for h in ("hosta", "hostb", "hostc")}
        check(hosts == {lab.options.host_mtu} == {1500}, "hosts' MTU 1500", hosts)
        off = sorted(f"{i.node}/{i.name}" for i in t.ifaces() if not i.tx_offload)
        check(off == ["hosta/eth0", "hostb/eth0", "hostc/eth0", "rtr/a1", "rtr/a2", "rtr/b1", "rtr/b2"],
              "TX checksum offload off on the hosts and the far ends of the gateway ports", off)
        ok(f"{len(nss)} namespaces, {len(t.links)} veth pairs with their MTUs (hosts 1500), addresses, "
           f"TX checksum offload off on the hosts and towards the gateways")

        def route(node, *args):
            return lab.ip(node, "route", "get", *args)[0]

        check(route("hosta", "10.2.0.10")["gateway"] == "10.1.0.1", "host A v4 default")
        check(route("hosta", "fd00:b::10")["gateway"] == "fd00:a::1", "host A v6 default")
        check(route("hostc", "10.1.0.10")["gateway"] == "10.3.0.1", "host C default")
        r = route("gwa", "100.64.4.1")
        check((r["dev"], r["gateway"]) == ("wan2", "100.64.2.2"), "gwa reaches gwb line2 over wan2", r)
        r = route("gwa", "fd00:64:3::1")
        check((r["dev"], r["gateway"]) == ("wan1", "fd00:64:1::2"), "gwa reaches gwb line1 over wan1 (v6)", r)
        r = route("sitec", "10.1.0.10")
        check((r["dev"], r["gateway"]) == ("vxlan0", "10.3.255.254"), "site C routes A over vxlan0", r)
        for node, key, want in (("rtr", "net.ipv4.ip_forward", "1"), ("rtr", "net.ipv6.conf.all.forwarding", "1"),
                                ("sitec", "net.ipv4.ip_forward", "1"), ("gwa", "net.ipv4.ip_forward", "0"),
                                ("gwb", "net.ipv6.conf.all.forwarding", "0")):
            got = lab.run(node, "sysctl", "-n", key).stdout.strip()
            check(got == want, f"{node} {key}", got)
        agm = lab.ip("gwa", "-d", "link", "show", "dev", "wan1")[0].get("inet6_addr_gen_mode")
        check(agm in ("eui64", None), "gateway addrgenmode", agm)
        ok("routes (hosts via their gateway, each line over its own WAN port, site C over vxlan0) and sysctls")

        vx = lab.ip("sitec", "-d", "link", "show", "dev", "vxlan0")[0]
        info = vx["linkinfo"]["info_data"]
        check(vx["linkinfo"]["info_kind"] == "vxlan", "vxlan0 kind", vx)
        check((info["id"], info["local"], info["remote"], info["port"]) == (1000, "100.64.5.1", "100.64.1.1", 4789),
              "vxlan0 parameters", info)
        check(vx["address"] == mcgwlab.VXLAN_C_MAC, "vxlan0 MAC", vx["address"])
        neigh = lab.ip("sitec", "neigh", "show", "dev", "vxlan0")
        check({n["dst"] for n in neigh if "PERMANENT" in n.get("state", [])} == {"10.3.255.254", "fd00:c:ff::fe"},
              "vxlan0 next-hop neighbours", neigh)
        ok("site C's Linux VXLAN device (VNI 1000, 100.64.5.1 -> 100.64.1.1:4789, fixed MAC)")

        # The underlay router forwards, line by line, before mcgwd owns the interfaces.
        caps = {i: lab.capture("rtr", i, bpf_filter=["icmp", "or", "icmp6"]) for i in ("b1", "b2")}
        pings = [("100.64.1.1", "100.64.3.1"), ("100.64.2.1", "100.64.4.1"),
                 ("fd00:64:1::1", "fd00:64:3::1"), ("fd00:64:2::1", "fd00:64:4::1")]
        for src, dst in pings:
            got = lab.ping("gwa", dst, src=src, count=2, timeout=2)
            check(got == 2, f"gwa {src} -> gwb {dst} over the router", f"{got}/2 replies")
        for i, c in caps.items():
            c.stop()
        seen = {i: {tuple(f) for f in c.fields("ip.src", "ip.dst", display_filter="icmp.type == 8")}
                for i, c in caps.items()}
        check(seen["b1"] == {("100.64.1.1", "100.64.3.1")}, "line1 echo requests on rtr b1 only", seen)
        check(seen["b2"] == {("100.64.2.1", "100.64.4.1")}, "line2 echo requests on rtr b2 only", seen)
        seen6 = {i: {tuple(f) for f in c.fields("ipv6.src", "ipv6.dst", display_filter="icmpv6.type == 128")}
                 for i, c in caps.items()}
        check(seen6["b1"] == {("fd00:64:1::1", "fd00:64:3::1")}, "line1 (v6) on rtr b1 only", seen6)
        for node, dst, src in (("sitec", "100.64.1.1", None), ("sitec", "fd00:64:2::1", None),
                               ("hosta", "10.1.0.1", None), ("hostb", "fd00:b::1", None),
                               ("hostc", "10.3.0.1", None), ("gwb", "100.64.5.1", "100.64.4.1")):
            check(lab.ping(node, dst, src=src, timeout=2) == 1, f"{node} -> {dst}")
        ok("underlay router forwards on each line (v4, v6; seen on that line's veth only), LANs answer")

        for gw in ("gwa", "gwb"):
            cfg = lab.gateway_config(gw)
            lan = cfg["ports"][0]
            host = "hosta" if gw == "gwa" else "hostb"
            check({n["mac"] for n in lan["neighbors"]} == {lab.mac(host, "eth0")}, f"{gw} lan0 neighbour MAC", lan)
            check(Path(lab.state["gateways"][gw]["config"]).read_text() == lab.render(gw), f"{gw}.yaml on disk")

        pids = {gw: lab.start_gateway(gw) for gw in ("gwa", "gwb")}
        for gw, tunnels, lines in (("gwa", 2, 4), ("gwb", 1, 2)):
            st = lab.status(gw)
            check(st is not None, f"{gw} status --json")
            check(st["health"]["state"] in ("healthy", "degraded"), f"{gw} health", st["health"])
            check(st["node"]["name"] == ("gw-a" if gw == "gwa" else "gw-b"), f"{gw} node", st["node"])
            check([(p["name"], p["driver"]) for p in st["ports"]] ==
                  [("lan0", "net_af_xdp"), ("wan1", "net_af_xdp"), ("wan2", "net_af_xdp")], f"{gw} ports", st["ports"])
            fp = st["fast_path"]
            check((fp["tunnels"], fp["lines"]) == (tunnels, lines), f"{gw} tunnels/lines", fp)
            check(st["daemon"]["pid"] == pids[gw], f"{gw} pid", st["daemon"])
            link = lab.ip(gw, "link", "show", "dev", "wan1")[0]
            check("xdp" in link, f"{gw} wan1 has mcgwd's XDP program attached", link)
            print(f"   {gw}: {st['health']['state']} {st['health']['reasons']}")
        ok("both mcgwd instances run in their namespaces on af_xdp ports and answer status --json")

        rc = lab.stop_gateway("gwb")
        check(rc == 0, "mcgwd gwb exit code", rc)
        check(lab.status("gwb") is None, "gwb still answers after stop")
        check("] stopped" in Path(lab.state["gateways"]["gwb"]["log"]).read_text(), "gwb orderly stop")
        lab.start_gateway("gwb")
        check(lab.status("gwb") is not None, "gwb after restart")
        ok("stop (exit 0, orderly) and restart of a gateway")

        running = [lab._pidfile_pid(g) for g in ("gwa", "gwb")]
    # `with` left: down() with both mcgwd still running
    check(not prefix_namespaces(lab.prefix), "namespaces left", prefix_namespaces(lab.prefix))
    check(not any(mcgwlab._pid_alive(p) for p in running), "mcgwd left running", running)
    check(not list((lab.dir / "run").glob("*.pid")), "pidfiles left")
    check("] stopped" in Path(lab.state["gateways"]["gwa"]["log"]).read_text(), "gwa orderly stop on down")
    ok("down stops running gateways and leaves no namespace (ip netns list)")


def test_cli(tmp: Path) -> None:
    prefix = f"mcgwlab-{secrets.token_hex(3)}-"
    d = tmp / "cli"
    env = {**os.environ, "MCGW_BUILD_DIR": str(BUILD)}
    cli = ["/usr/bin/python3", str(HERE / "mcgwlab.py"), "--prefix", prefix, "--dir", str(d)]

    def run(*args, rc=0):
        r = subprocess.run([*cli, *args], capture_output=True, text=True, env=env, timeout=180)
        check(rc is None or r.returncode == rc, f"mcgwlab.py {' '.join(args)} exit {r.returncode}",
              r.stdout[-2000:] + r.stderr[-2000:])
        return r

    try:
        # --no-bgp: BGP needs the gateways' kernel addresses (af_xdp); lab.bgp.* test it.
        run("up", "--driver", "af_packet", "--encap", "geneve", "--underlay", "ipv6", "--no-bgp")
        st = json.loads(run("status", "--json", rc=None).stdout)
        check(sorted(st["namespaces"]) == sorted(prefix + n for n in
                                                 ("hosta", "gwa", "rtr", "gwb", "hostb", "sitec", "hostc")),
              "namespaces", st["namespaces"])
        for gw in ("gwa", "gwb"):
            s = st["gateways"][gw]["status"]
            check(s is not None, f"{gw} answers", st["gateways"][gw])
            check({p["driver"] for p in s["ports"]} == {"net_af_packet"}, f"{gw} drivers", s["ports"])
        cfg = (d / "gwa.yaml").read_text()
        check("encapsulation: geneve" in cfg and 'remote-vtep: "fd00:64:3::1"' in cfg, "gwa.yaml", cfg)
        # af_packet: the gateway addresses live in mcgwd only, not on the kernel interfaces
        out = run("exec", "gwa", "--", "ip", "-j", "addr", "show", "dev", "wan1").stdout
        check(not [a for a in json.loads(out)[0]["addr_info"] if a.get("scope") == "global"],
              "af_packet gateway interface without kernel addresses", out)
        check(json.loads(run("exec", "sitec", "--", "ip", "-j", "-d", "link", "show", "vxlan0").stdout)[0]
              ["linkinfo"]["info_data"].get("remote6") == "fd00:64:1::1", "site C VXLAN over IPv6")
        run("exec", "hosta", "--", "false", rc=1)
        run("ping", "rtr", "fd00:64:5::1", "-c", "1")
        ok("CLI: up (af_packet, geneve, IPv6 underlay), status --json, exec, ping")
    finally:
        r = subprocess.run([*cli, "down"], capture_output=True, text=True, env=env, timeout=120)
    check(r.returncode == 0, "mcgwlab.py down", r.stdout + r.stderr)
    check(not prefix_namespaces(prefix), "namespaces left after CLI down", prefix_namespaces(prefix))
    ok("CLI: down leaves nothing")


def main() -> int:
    for b in (MCGWD, MCGWCTL):
        if not b.exists():
            print(f"lab_builder_test: {b} missing (build the mcgwd and mcgwctl targets)", file=sys.stderr)
            return 1
    parts = (test_configs, test_bgp_configs, test_overlap_configs, test_failed_up_cleans_up, test_standard_lab, test_cli)
    return run_parts("builder", [(p.__name__, p) for p in parts], logs="*.log")


if __name__ == "__main__":
    sys.exit(main())
