#!/usr/bin/python3
"""The rendered FRR config is real FRR 8.4 config (issue 13, item 1).

The golden files of tests/unit/control/frr_golden (what renderFrrConfig()
gives for the example configs, byte for byte: the unit test frr_render_test
holds them to it) are loaded into a real FRR: zebra (with dplane_fpm_nl),
bgpd, bfdd and staticd run in a network namespace of their own, with every
path under a temporary directory.  Each golden is applied with frr-reload.py
--reload, which must succeed; frr-reload.py --test afterwards must report no
difference (the rendering round-trips through `show running-config`, so a
reload that changes nothing changes nothing); `show bgp summary json` must
list exactly the sessions the golden configures, and `show bfd peers json`
the single-hop BFD sessions with the golden's timers.  One FRR also goes from
one golden to another and back, so frr-reload.py has to remove what the
rendering no longer has.

FRR reports the hostname of the system it runs on, whatever `hostname` line
it is given (FRR 8.4), so each FRR runs in a UTS namespace of its own whose
hostname is the golden's node.name.

Run by ctest (component.frr_render_frr), as root:
    /usr/bin/python3 frr_render_frr_test.py --golden-dir DIR [-v] [--keep]
--keep leaves the temporary directories (configs, daemon logs) in /tmp.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

GOLDEN_DIR = None
KEEP = False
FRR_LIB = "/usr/lib/frr"
DAEMONS = ["zebra", "bgpd", "bfdd", "staticd"]

# What each golden configures, written out here (not read from the golden):
# the node name, the BGP sessions, and for single-hop BFD sessions (LAN
# neighbours; the multihop ones of lines appear only once BGP is up) their
# (transmit interval ms, detect multiplier).
EXPECTED = {
    "bgp-bfd": {
        "hostname": "gw-a1",
        "sessions": {"203.0.113.2", "10.1.0.254"},
        "bfd": {"10.1.0.254": (100, 3)},
    },
    "plan-two-peers": {
        "hostname": "gw-a1",
        "sessions": {"203.0.113.2", "198.51.100.2", "203.0.113.3", "198.51.100.3",
                     "10.1.0.254", "10.1.0.253", "10.1.0.252"},
        "bfd": {"10.1.0.254": (100, 3), "10.1.0.253": (300, 3)},
    },
    "ipv6-lines": {
        "hostname": "gw-b1",
        "sessions": {"2001:db8:1::2", "203.0.113.10", "fd00:b::fe"},
        "bfd": {"fd00:b::fe": (100, 5)},
    },
    "no-plan": {
        "hostname": "gw-c1",
        "sessions": {"203.0.113.18", "10.5.0.254"},
        "bfd": {"10.5.0.254": (100, 3)},
    },
}
# The VRRP standing's goldens (docs/routing.md "BGP follows VRRP"): the same
# sessions, only the out route-maps differ.
for _standing in ("prepend", "withdraw"):
    EXPECTED["plan-two-peers-" + _standing] = EXPECTED["plan-two-peers"]
EXPECTED["ipv6-lines-prepend"] = EXPECTED["ipv6-lines"]


def run(cmd, check=True, **kw):
    return subprocess.run(cmd, check=check, capture_output=True, text=True, timeout=120, **kw)


class Frr:
    """zebra, bgpd, bfdd and staticd in namespace ns, their files under dir."""

    def __init__(self, name):
        self.ns = "mcgw-frrrender-%d-%s" % (os.getpid(), name)
        self.dir = tempfile.mkdtemp(prefix="mcgw-frrrender-%s-" % name)
        self.started = []

    def netns(self, *cmd):
        return ["ip", "netns", "exec", self.ns] + list(cmd)

    def start(self):
        run(["ip", "netns", "add", self.ns])
        run(self.netns("ip", "link", "set", "lo", "up"))
        shutil.chown(self.dir, "frr", "frr")
        os.chmod(self.dir, 0o755)
        # frr-reload.py checks vtysh.conf for this line, as Debian ships it.
        with open(os.path.join(self.dir, "vtysh.conf"), "w") as f:
            f.write("service integrated-vtysh-config\n")
        empty = os.path.join(self.dir, "empty.conf")
        open(empty, "w").close()
        for d in DAEMONS:
            args = [os.path.join(FRR_LIB, d), "-d", "-f", empty, "--vty_socket", self.dir,
                    "-z", os.path.join(self.dir, "zserv.api"),
                    "-i", os.path.join(self.dir, d + ".pid"),
                    "-u", "frr", "-g", "frr", "-P", "0",
                    "--log", "file:" + os.path.join(self.dir, d + ".log")]
            if d == "zebra":
                args += ["-M", "dplane_fpm_nl"]
            if d == "bfdd":
                args += ["--bfdctl", os.path.join(self.dir, "bfdd.sock")]
            run(self.netns(*args))
            self.started.append(d)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            r = run(self.vtysh("show daemons"), check=False)
            if r.returncode == 0 and all(d in r.stdout for d in DAEMONS):
                return
            time.sleep(0.2)
        raise AssertionError("FRR did not come up: %s" % self.logs())

    def vtysh(self, *commands):
        cmd = ["vtysh", "--vty_socket", self.dir, "--config_dir", self.dir]
        for c in commands:
            cmd += ["-c", c]
        return self.netns(*cmd)

    def reload_cmd(self, mode, conf):
        return self.netns(os.path.join(FRR_LIB, "frr-reload.py"), mode,
                          "--confdir", self.dir, "--rundir", self.dir,
                          "--vty_socket", self.dir, "--bindir", "/usr/bin", conf)

    def logs(self):
        out = ""
        for d in DAEMONS:
            path = os.path.join(self.dir, d + ".log")
            if os.path.exists(path):
                with open(path) as f:
                    out += "--- %s\n%s" % (d, f.read()[-2000:])
        return out

    def stop(self):
        for d in self.started:
            path = os.path.join(self.dir, d + ".pid")
            try:
                with open(path) as f:
                    pid = int(f.read().strip())
                os.kill(pid, 15)
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + 10
        for d in self.started:
            path = os.path.join(self.dir, d + ".pid")
            try:
                with open(path) as f:
                    pid = int(f.read().strip())
            except (OSError, ValueError):
                continue
            while time.monotonic() < deadline:
                try:
                    os.kill(pid, 0)
                except OSError:
                    break
                time.sleep(0.1)
        run(["ip", "netns", "del", self.ns], check=False)
        if not KEEP:
            shutil.rmtree(self.dir, ignore_errors=True)


class FrrRenderTest(unittest.TestCase):
    def frr(self, name):
        run(["hostname", EXPECTED[name]["hostname"]])
        f = Frr(name)
        self.addCleanup(f.stop)
        f.start()
        return f

    def apply(self, frr, name, sessions=None, bfd=None):
        """Loads golden name into frr and checks what FRR made of it."""
        sessions = EXPECTED[name]["sessions"] if sessions is None else sessions
        bfd_expected = EXPECTED[name]["bfd"] if bfd is None else bfd
        conf = os.path.join(frr.dir, "frr.conf")
        shutil.copyfile(os.path.join(GOLDEN_DIR, name + ".conf"), conf)
        os.chmod(conf, 0o644)
        r = run(frr.reload_cmd("--reload", conf), check=False)
        self.assertEqual(r.returncode, 0, "frr-reload.py --reload of %s failed:\n%s%s\n%s"
                         % (name, r.stdout, r.stderr, frr.logs()))
        r = run(frr.reload_cmd("--test", conf), check=False)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # No difference: frr-reload.py prints nothing under either heading.
        self.assertNotIn("Lines To Delete", r.stdout, "%s does not round-trip:\n%s"
                         % (name, r.stdout))
        self.assertNotIn("Lines To Add", r.stdout, "%s does not round-trip:\n%s"
                         % (name, r.stdout))

        summary = json.loads(run(frr.vtysh("show bgp summary json")).stdout)
        peers = set()
        for family in summary.values():
            peers |= set(family.get("peers", {}).keys())
        self.assertEqual(peers, sessions, name)

        bfd = json.loads(run(frr.vtysh("show bfd peers json")).stdout)
        single_hop = {p["peer"]: (p["transmit-interval"], p["detect-multiplier"])
                      for p in bfd if not p.get("multihop", False)}
        self.assertEqual(single_hop, bfd_expected, name)

    def test_bgp_bfd_then_plan_then_back(self):
        frr = self.frr("bgp-bfd")
        self.apply(frr, "bgp-bfd")
        # More sessions, profiles and filters, then fewer again: frr-reload.py
        # removes what the rendering no longer has.
        self.apply(frr, "plan-two-peers")
        self.apply(frr, "bgp-bfd")

    def test_pair_session_bfd_and_filters(self):
        """pair-a and pair-b, the two ends of one line, joined by a veth."""
        run(["hostname", "gw1"])  # both goldens' node.name
        a, b = Frr("pair-a"), Frr("pair-b")
        self.addCleanup(b.stop)
        self.addCleanup(a.stop)
        a.start()
        b.start()
        run(["ip", "link", "add", "vA", "netns", a.ns, "type", "veth",
             "peer", "name", "vB", "netns", b.ns])
        for f, dev, addr in ((a, "vA", "192.0.2.1/24"), (b, "vB", "192.0.2.2/24")):
            run(f.netns("ip", "addr", "add", addr, "dev", dev))
            run(f.netns("ip", "link", "set", dev, "up"))
        self.apply(a, "pair-a", {"192.0.2.2"}, {})
        self.apply(b, "pair-b", {"192.0.2.1"}, {})

        # The session comes up, and with it the line's multihop BFD session
        # from the update-source (FRR 8.4 creates it only then).
        deadline = time.monotonic() + 60
        state, bfd = None, []
        while time.monotonic() < deadline:
            summary = json.loads(run(a.vtysh("show bgp summary json")).stdout)
            state = summary["ipv4Unicast"]["peers"]["192.0.2.2"]["state"]
            bfd = json.loads(run(a.vtysh("show bfd peers json")).stdout)
            if state == "Established" and bfd and bfd[0]["status"] == "up":
                break
            time.sleep(0.5)
        self.assertEqual(state, "Established", a.logs())
        self.assertEqual(len(bfd), 1, bfd)
        self.assertEqual((bfd[0]["peer"], bfd[0]["local"], bfd[0]["multihop"], bfd[0]["status"],
                          bfd[0]["transmit-interval"], bfd[0]["detect-multiplier"]),
                         ("192.0.2.2", "192.0.2.1", True, "up", 100, 3))

        # A accepts site-b's plan range and refuses 10.22.0.0/16, which only
        # B's plan gives site-b; B gets site-a's range.
        def routes(f):
            table = json.loads(run(f.vtysh("show bgp ipv4 unicast json")).stdout)
            return set(table.get("routes", {}).keys())
        b_routes = {"10.1.0.0/16", "10.2.0.0/16", "10.22.0.0/16"}
        deadline = time.monotonic() + 20
        while routes(b) != b_routes and time.monotonic() < deadline:
            time.sleep(0.5)
        self.assertEqual(routes(b), b_routes)
        # B has had A's update, so A has had B's: A holds its own range and
        # site-b's only.
        time.sleep(1)
        self.assertEqual(routes(a), {"10.1.0.0/16", "10.2.0.0/16"})
        nexthops = json.loads(run(a.vtysh("show bgp ipv4 unicast 10.2.0.0/16 json")).stdout)
        self.assertEqual([nh["ip"] for p in nexthops["paths"] for nh in p["nexthops"]],
                         ["192.0.2.2"])

        # B's side of the line goes down: A's BFD notices it within the
        # detection time (100 ms x 3) and takes the BGP session down with it.
        run(b.netns("ip", "link", "set", "vB", "down"))
        start = time.monotonic()
        while time.monotonic() - start < 5:
            bfd = json.loads(run(a.vtysh("show bfd peers json")).stdout)
            if bfd[0]["status"] != "up":
                break
            time.sleep(0.02)
        print("\nBFD down %.0f ms after the peer's link went down (100 ms x 3)"
              % ((time.monotonic() - start) * 1000))
        self.assertEqual(bfd[0]["status"], "down")

    def test_standing_there_and_back(self):
        """Each standing round-trips, and frr-reload.py goes between them."""
        frr = self.frr("plan-two-peers")
        for name in ("plan-two-peers", "plan-two-peers-prepend", "plan-two-peers-withdraw",
                     "plan-two-peers-prepend", "plan-two-peers"):
            self.apply(frr, name)

    def test_ipv6_lines(self):
        frr = self.frr("ipv6-lines")
        self.apply(frr, "ipv6-lines")
        self.apply(frr, "ipv6-lines-prepend")

    def test_no_plan(self):
        self.apply(self.frr("no-plan"), "no-plan")


def main():
    global GOLDEN_DIR, KEEP
    parser = argparse.ArgumentParser()
    parser.add_argument("--golden-dir", required=True)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("-v", action="store_true")
    args = parser.parse_args()
    GOLDEN_DIR = os.path.abspath(args.golden_dir)
    KEEP = args.keep
    if os.geteuid() != 0:
        print("needs root (network namespaces)", file=sys.stderr)
        return 1
    if not os.path.exists(os.path.join(FRR_LIB, "frr-reload.py")):
        print("FRR is not installed (%s/frr-reload.py)" % FRR_LIB, file=sys.stderr)
        return 1
    # A UTS namespace of our own: the test sets its hostname (see above),
    # never the system's.
    if os.environ.get("MCGW_FRR_RENDER_UTS") != "1":
        env = dict(os.environ, MCGW_FRR_RENDER_UTS="1")
        return subprocess.call(["unshare", "--uts", sys.executable] + sys.argv, env=env)
    # Started by the call above (unshare execs us): our parent is that
    # first run, in the system's UTS namespace.
    if os.readlink("/proc/self/ns/uts") == os.readlink("/proc/%d/ns/uts" % os.getppid()):
        print("not in a UTS namespace of our own; refusing to set the hostname",
              file=sys.stderr)
        return 1
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(FrrRenderTest)
    result = unittest.TextTestRunner(verbosity=2 if args.v else 1).run(suite)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
