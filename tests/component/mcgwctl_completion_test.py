#!/usr/bin/python3
"""Bash completion of mcgwctl (scripts/completion/mcgwctl) against a real mcgwd.

mcgwd runs on net_null vdevs (EAL --no-huge) in a network namespace of its
own (`unshare --net`: gone with the process), with two peers, their lines,
two tenants and three ports; its API socket is a file in the test's temporary
directory.  A bash (--norc) sources the completion file and calls the
function `complete -p mcgwctl` names with scripted COMP_WORDS/COMP_CWORD, as
bash does on TAB, and the test compares COMPREPLY:

- commands and options: exactly those `mcgwctl --help` and `mcgwctl PATH
  --help` list (walked as tests/tools/man_pages_check.py walks them), so the
  completion cannot drift from the CLI;
- names from the daemon: `sa rekey <TAB>` the peers, `sa rekey PEER <TAB>`
  that peer's lines, `capture <TAB>` ports, tenants and PEER/LINE,
  `show routes --tenant <TAB>` the tenants; through --socket PATH,
  --socket=PATH and MCGW_SOCKET;
- without a daemon (no socket file; a stale one after mcgwd stopped):
  nothing completed, nothing printed, status 0.

Run by ctest (component.mcgwctl_completion):
    /usr/bin/python3 mcgwctl_completion_test.py --mcgwd PATH --mcgwctl PATH --completion FILE
Needs root (a network namespace).
"""

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import man_pages_check  # noqa: E402  (the walker of CLI11's --help)

MCGWD = MCGWCTL = COMPLETION = None

PEERS = {"site-b": ["l1", "l2"], "site-c": ["m1"]}
TENANTS = ["blue", "red"]
PORTS = ["lan0", "lan1", "wan0"]


def make_config(socket_path, prefix):
    lines = {"l1": "10.77.0.2", "l2": "10.77.0.3", "m1": "10.77.0.4"}
    return {
        "node": {"name": "gw-compl", "site": "lab"},
        "eal": {"hugepages": False, "memory-mb": 512, "mbufs": 2047, "file-prefix": prefix},
        "ports": [
            {"name": "lan0", "role": "lan", "vdev": "net_null0", "tenant": "blue",
             "addresses": ["10.1.0.1/24"]},
            {"name": "lan1", "role": "lan", "vdev": "net_null1", "tenant": "red",
             "addresses": ["10.2.0.1/24"]},
            {"name": "wan0", "role": "wan", "vdev": "net_null2", "addresses": ["10.77.0.1/24"]},
        ],
        "tenants": [{"name": "blue", "vni": 100}, {"name": "red", "vni": 200}],
        "peers": [{"name": peer,
                   "lines": [{"name": l, "port": "wan0", "local-vtep": "10.77.0.1",
                              "remote-vtep": lines[l]} for l in names]}
                  for peer, names in PEERS.items()],
        "api": {"socket": socket_path},
        "logging": {"level": "info"},
    }


def complete(words, env_socket=None):
    """(COMPREPLY, stdout+stderr of anything else, status) for the command
    line `words`, the last word being the one completed."""
    script = "\n".join([
        "source %s" % shlex.quote(COMPLETION),
        # The function bash would call: what `complete -p mcgwctl` names.
        "spec=$(complete -p mcgwctl) || exit 97",
        'fn=${spec#*-F }; fn=${fn%% *}',
        "COMP_WORDS=(%s)" % " ".join(shlex.quote(w) for w in words),
        "COMP_CWORD=%d" % (len(words) - 1),
        'COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}',
        'printed=$(mktemp) || exit 98',
        # Anything the function itself prints goes to $printed.
        '"$fn" mcgwctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}" >"$printed" 2>&1',
        "rc=$?",
        'printf "%s\\n" "${COMPREPLY[@]}"',
        'printf "@@status %d\\n" $rc',
        'printf "@@printed\\n"; cat "$printed"; rm -f "$printed"',
    ])
    env = {"PATH": os.path.dirname(MCGWCTL) + ":/usr/sbin:/usr/bin:/sbin:/bin",
           "HOME": os.environ.get("HOME", "/root")}
    if env_socket:
        env["MCGW_SOCKET"] = env_socket
    r = subprocess.run(["/bin/bash", "--norc", "--noprofile", "-c", script], env=env,
                       capture_output=True, text=True, timeout=30)
    out, _, rest = r.stdout.partition("@@status ")
    status, _, printed = rest.partition("\n@@printed\n")
    reply = sorted(w for w in out.split("\n") if w)
    return reply, printed + r.stderr, int(status or -1)


class Completion(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="mcgw-compl-")
        cls.addClassCleanup(shutil.rmtree, cls.dir, True)
        cls.socket = os.path.join(cls.dir, "mcgw.sock")
        prefix = "mcgwcompl%d" % os.getpid()
        cls.addClassCleanup(shutil.rmtree, os.path.join("/var/run/dpdk", prefix), True)
        cfg = os.path.join(cls.dir, "mcgw.yaml")
        with open(cfg, "w") as f:
            json.dump(make_config(cls.socket, prefix), f, indent=2)  # JSON is YAML
        cls.commands, cls.root_options = man_pages_check.cli_commands(MCGWCTL)
        # Before any daemon: nothing to complete, nothing printed.
        cls.before = complete(["mcgwctl", "--socket", cls.socket, "sa", "rekey", ""])
        cls.log_path = os.path.join(cls.dir, "mcgwd.log")
        log = open(cls.log_path, "wb")
        # A network namespace of its own, gone with the process (exec keeps
        # the pid: the one killed below).
        cls.proc = subprocess.Popen(
            ["unshare", "--net", "--", "/bin/sh", "-c",
             'ip link set lo up && exec "$0" "$@"', MCGWD, "--config", cfg,
             "--state-dir", os.path.join(cls.dir, "state")],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        cls.addClassCleanup(cls.stop)
        deadline = time.monotonic() + 60
        while True:
            if cls.proc.poll() is not None:
                raise AssertionError("mcgwd exited with %d:\n%s" % (cls.proc.returncode,
                                                                    cls.log()))
            if os.path.exists(cls.socket):
                r = subprocess.run([MCGWCTL, "--socket", cls.socket, "status", "--json"],
                                   capture_output=True, text=True, timeout=30)
                if r.returncode in (0, 1) and r.stdout.strip():
                    break
            if time.monotonic() > deadline:
                raise AssertionError("mcgwd not ready within 60 s:\n%s" % cls.log())
            time.sleep(0.1)

    @classmethod
    def stop(cls):
        if cls.proc.poll() is None:
            cls.proc.kill()  # by its pid: the mcgwd this test started
            cls.proc.wait(timeout=30)

    @classmethod
    def log(cls):
        try:
            with open(cls.log_path, "rb") as f:
                return f.read()[-4000:].decode(errors="replace")
        except OSError:
            return ""

    def assertCompletes(self, words, expected, env_socket=None):
        reply, printed, status = complete(words, env_socket)
        self.assertEqual(printed, "", "the completion printed something for %s" % words)
        self.assertEqual(status, 0)
        self.assertEqual(reply, sorted(expected), "completing %s\nmcgwd log:\n%s"
                         % (words, self.log() if not reply else ""))

    # --- commands and options: as mcgwctl --help lists them ---------------------

    def subcommands_of(self, path):
        return man_pages_check.help_of(MCGWCTL, path.split() if path else [])[1]

    def test_top_level_commands_are_the_clis(self):
        expected = self.subcommands_of("")
        self.assertIn("check-config", expected)
        self.assertCompletes(["mcgwctl", ""], expected)
        self.assertCompletes(["mcgwctl", "--socket", self.socket, ""], expected)

    def test_groups_complete_their_subcommands(self):
        for group in ("show", "sa", "plan"):
            with self.subTest(group=group):
                expected = self.subcommands_of(group)
                self.assertTrue(expected)
                self.assertCompletes(["mcgwctl", group, ""], expected)
        self.assertCompletes(["mcgwctl", "show", "t"], ["tunnels"])
        self.assertCompletes(["mcgwctl", "-s", self.socket, "show", "t"], ["tunnels"])
        self.assertCompletes(["mcgwctl", "s"], ["sa", "show", "status"])

    def test_options_of_every_command_are_the_clis(self):
        # A command's options, its group's, -h/--help, and mcgwctl's own
        # (--socket may follow the command).
        for path, options in self.commands.items():
            with self.subTest(command=path):
                self.assertCompletes(["mcgwctl"] + path.split() + ["-"],
                                     options | {"-h", "--help"} | self.root_options)
        self.assertCompletes(["mcgwctl", "-"], self.root_options)

    def test_option_values(self):
        self.assertCompletes(["mcgwctl", "show", "routes", "--source", ""],
                             ["local", "connected", "static", "frr", "plan"])
        self.assertCompletes(["mcgwctl", "plan", "allocate", "--family", "i"], ["ipv4", "ipv6"])
        self.assertCompletes(["mcgwctl", "plan", "import", "--from", "a"], ["aws", "aliyun"])
        self.assertCompletes(["mcgwctl", "line", "site-b", "l1", ""], ["up", "down"])

    # --- names from the running daemon -------------------------------------------

    def test_sa_rekey_completes_peers_then_their_lines(self):
        self.assertCompletes(["mcgwctl", "--socket", self.socket, "sa", "rekey", ""], PEERS)
        self.assertCompletes(["mcgwctl", "sa", "rekey", "--socket", self.socket, "site-"], PEERS)
        for peer, lines in PEERS.items():
            with self.subTest(peer=peer):
                self.assertCompletes(
                    ["mcgwctl", "--socket", self.socket, "sa", "rekey", peer, ""], lines)
        self.assertCompletes(["mcgwctl", "--socket", self.socket, "sa", "rekey", "nosuch", ""],
                             [])
        self.assertCompletes(
            ["mcgwctl", "--socket", self.socket, "sa", "rekey", "site-b", "l1", ""], [])

    def test_line_completes_peers_lines_and_state(self):
        self.assertCompletes(["mcgwctl", "-s", self.socket, "line", ""], PEERS)
        self.assertCompletes(["mcgwctl", "-s", self.socket, "line", "site-b", ""], ["l1", "l2"])

    def test_socket_from_option_with_equals_and_from_environment(self):
        # COMP_WORDBREAKS splits --socket=PATH into three words.
        self.assertCompletes(["mcgwctl", "--socket", "=", self.socket, "sa", "rekey", ""], PEERS)
        self.assertCompletes(["mcgwctl", "sa", "rekey", ""], PEERS, env_socket=self.socket)

    def test_capture_target_and_route_tenant(self):
        targets = PORTS + TENANTS + ["%s/%s" % (p, l) for p, ls in PEERS.items() for l in ls]
        self.assertCompletes(["mcgwctl", "--socket", self.socket, "capture", ""], targets)
        self.assertCompletes(["mcgwctl", "--socket", self.socket, "capture", "site-b/"],
                             ["site-b/l1", "site-b/l2"])
        self.assertCompletes(["mcgwctl", "show", "routes", "--tenant", ""], TENANTS,
                             env_socket=self.socket)

    def test_a_tab_takes_little_time(self):
        start = time.monotonic()
        self.assertCompletes(["mcgwctl", "--socket", self.socket, "sa", "rekey", ""], PEERS)
        took = time.monotonic() - start
        print("\n  sa rekey <TAB>: %.0f ms (bash, mcgwctl show counters --json, awk)"
              % (took * 1000))
        self.assertLess(took, 2.0)

    # --- no daemon ----------------------------------------------------------------

    def test_zz_without_a_daemon_nothing_and_silent(self):
        # Before mcgwd started (no socket file).
        self.assertEqual(self.before, ([], "", 0))
        # A socket path nobody listens on, and the daemon's own after it stopped.
        missing = os.path.join(self.dir, "nosuch.sock")
        self.assertCompletes(["mcgwctl", "--socket", missing, "sa", "rekey", ""], [])
        self.stop()
        for words in (["mcgwctl", "--socket", self.socket, "sa", "rekey", ""],
                      ["mcgwctl", "--socket", self.socket, "sa", "rekey", "site-b", ""],
                      ["mcgwctl", "--socket", self.socket, "capture", ""],
                      ["mcgwctl", "show", "routes", "--tenant", ""]):
            with self.subTest(words=words):
                self.assertCompletes(words, [], env_socket=self.socket)
        # Commands still complete.
        self.assertCompletes(["mcgwctl", "show", "t"], ["tunnels"])


def main():
    global MCGWD, MCGWCTL, COMPLETION
    ap = argparse.ArgumentParser()
    ap.add_argument("--mcgwd", required=True)
    ap.add_argument("--mcgwctl", required=True)
    ap.add_argument("--completion", required=True)
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    MCGWD, MCGWCTL = os.path.abspath(a.mcgwd), os.path.abspath(a.mcgwctl)
    COMPLETION = os.path.abspath(a.completion)
    if os.geteuid() != 0:
        print("needs root (a network namespace)")
        return 1
    # The helper's name must be mcgwctl: the completion is for that command.
    if os.path.basename(MCGWCTL) != "mcgwctl":
        print("--mcgwctl must name a file called mcgwctl")
        return 1
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(Completion)
    r = unittest.TextTestRunner(verbosity=2 if a.v else 1).run(suite)
    return 0 if r.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
