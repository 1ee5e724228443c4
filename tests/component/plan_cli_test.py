#!/usr/bin/python3
"""`mcgwctl plan ...` as an operator runs it (issue 15): check, allocate,
release, show and import, on the file store and on a real etcd (Debian's
etcd-server, started on loopback by the test with a data directory of its
own).

- `plan check` of a plan with two overlapping VPCs names both, with both
  lines, and exits 1.
- `plan allocate` returns the lowest free aligned block, skipping what the
  file's VPCs use; again with the same name returns the same block; after
  `plan release` the block is the lowest free one again; `plan show --json`
  counts what is used.
- Four `mcgwctl plan allocate` processes at once, ten VPCs each, never get
  the same block: on the file store and on etcd.
- etcd unreachable: exit 2 and a message that names the endpoint.
- `plan import --from aws` reports the listing's conflict with the plan and
  exits 1; with --apply the VPCs that fit are in the store (show --json),
  and importing again adds nothing.

Run by ctest (component.plan_cli):
    /usr/bin/python3 plan_cli_test.py --mcgwctl PATH --samples DIR [-v]
"""

import argparse
import ipaddress
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
from concurrent.futures import ThreadPoolExecutor

MCGWCTL = None
SAMPLES = None

BASE = """\
node:
  name: gw-test
  site: idc-sh
eal:
  hugepages: false
ports:
  - name: lan0
    role: lan
    vdev: net_null0
  - name: wan0
    role: wan
    vdev: net_null1
tenants:
  - name: training
    vni: 1001
address-plan:
  store:
{store}
  pools:
    - name: cloud-pool
      prefixes: [10.64.0.0/10]
      allocation-length: 16
  clouds:
    - name: idc
      regions:
        - name: shanghai
          vpcs:
            - name: idc-sh
              prefixes: [10.64.0.0/16]
              tenant: training
              site: idc-sh
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ctl(*args, check_rc=None, timeout=60):
    r = subprocess.run([MCGWCTL, *map(str, args)], capture_output=True, text=True,
                       timeout=timeout)
    if check_rc is not None and r.returncode != check_rc:
        raise AssertionError(f"mcgwctl {' '.join(map(str, args))}: exit {r.returncode}, "
                             f"expected {check_rc}\nstdout: {r.stdout}\nstderr: {r.stderr}")
    return r


class Etcd:
    """etcd on 127.0.0.1 with a data directory of its own."""

    def __init__(self, tmp: str):
        self.dir = os.path.join(tmp, "etcd")
        self.client = free_port()
        self.peer = free_port()
        self.url = f"http://127.0.0.1:{self.client}"
        self.log = open(os.path.join(tmp, "etcd.log"), "wb")
        self.proc = subprocess.Popen(
            ["etcd", "--name", "t", "--data-dir", self.dir,
             "--listen-client-urls", self.url, "--advertise-client-urls", self.url,
             "--listen-peer-urls", f"http://127.0.0.1:{self.peer}",
             "--initial-advertise-peer-urls", f"http://127.0.0.1:{self.peer}",
             "--initial-cluster", f"t=http://127.0.0.1:{self.peer}"],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            r = subprocess.run(["etcdctl", "--endpoints", self.url, "endpoint", "health"],
                               capture_output=True, text=True,
                               env={**os.environ, "ETCDCTL_API": "3"})
            if r.returncode == 0:
                return
            time.sleep(0.2)
        self.stop()
        raise AssertionError("etcd did not become healthy")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class PlanCli(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mcgw-plan-cli-")
        self.etcd = None

    def tearDown(self):
        if self.etcd:
            self.etcd.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def config(self, store: str, extra: str = "") -> str:
        path = os.path.join(self.tmp, "mcgw.yaml")
        with open(path, "w") as f:
            f.write(BASE.format(store=store) + extra)
        return path

    def file_store(self) -> str:
        return self.config(f"    type: file\n    path: {self.tmp}/plan.yaml")

    def etcd_store(self) -> str:
        self.etcd = Etcd(self.tmp)
        return self.config(f"    type: etcd\n    endpoints: [{self.etcd.url}]")

    def allocate(self, cfg, vpc, *more, rc=0):
        r = ctl("plan", "-c", cfg, "allocate", "--cloud", "aws", "--region", "us-east-1",
                "--vpc", vpc, "--json", *more, check_rc=rc)
        return json.loads(r.stdout) if rc == 0 else r

    def test_check_names_both_overlapping_vpcs(self):
        cfg = self.config(f"    type: file\n    path: {self.tmp}/plan.yaml",
                          "    - name: aws\n"
                          "      regions:\n"
                          "        - name: us-east-1\n"
                          "          vpcs:\n"
                          "            - name: train-use1\n"
                          "              prefixes: [10.64.128.0/17]\n")
        r = ctl("plan", "check", cfg, check_rc=1)
        # idc-sh's prefix is on line 30, train-use1's on line 38.
        self.assertIn("idc-sh", r.stderr)
        self.assertIn("train-use1", r.stderr)
        self.assertIn(f"{cfg}:30", r.stderr)
        self.assertIn(f"{cfg}:38", r.stderr)
        self.assertIn("10.64.128.0/17", r.stderr)
        self.assertIn("10.64.0.0/16", r.stderr)

    def test_check_valid_plan(self):
        r = ctl("plan", "check", self.file_store(), check_rc=0)
        self.assertIn("plan valid", r.stdout)

    def test_allocate_release_show_file_store(self):
        cfg = self.file_store()
        a = self.allocate(cfg, "train-use1")
        self.assertEqual(a["prefixes"], ["10.65.0.0/16"])  # 10.64.0.0/16 is idc-sh's
        self.assertTrue(a["created"])
        self.assertEqual(a["pool"], "cloud-pool")
        b = self.allocate(cfg, "infer-use1", "--length", "20")
        self.assertEqual(b["prefixes"], ["10.66.0.0/20"])
        again = self.allocate(cfg, "train-use1")
        self.assertEqual(again["prefixes"], ["10.65.0.0/16"])
        self.assertFalse(again["created"])
        # A different length under the same name is refused, naming what differs.
        r = self.allocate(cfg, "train-use1", "--length", "18", rc=1)
        self.assertIn("train-use1", r.stderr)
        ctl("plan", "-c", cfg, "release", "train-use1", check_rc=0)
        c = self.allocate(cfg, "eval-use1")
        self.assertEqual(c["prefixes"], ["10.65.0.0/16"])
        show = json.loads(ctl("plan", "-c", cfg, "show", "--json", check_rc=0).stdout)
        pool = next(p for p in show["pools"] if p["pool"] == "cloud-pool")
        self.assertEqual(pool["size"], str(2 ** 22))
        self.assertEqual(pool["used"], str(2 * 2 ** 16 + 2 ** 12))
        self.assertEqual(sorted(v["name"] for v in show["stored_vpcs"]), ["eval-use1", "infer-use1"])
        # Releasing what the file holds is refused.
        r = ctl("plan", "-c", cfg, "release", "idc-sh", check_rc=1)
        self.assertIn("idc-sh", r.stderr)
        # The store is readable YAML.
        with open(os.path.join(self.tmp, "plan.yaml")) as f:
            text = f.read()
        self.assertIn("eval-use1", text)
        self.assertIn("10.65.0.0/16", text)

    def concurrent(self, cfg):
        def worker(w):
            return [self.allocate(cfg, f"w{w}-vpc{i}", "--length", "24")["prefixes"][0]
                    for i in range(10)]

        with ThreadPoolExecutor(4) as ex:
            blocks = [b for got in ex.map(worker, range(4)) for b in got]
        self.assertEqual(len(blocks), 40)
        self.assertEqual(len(set(blocks)), 40, sorted(blocks))
        nets = sorted(ipaddress.ip_network(b) for b in blocks)
        for a, b in zip(nets, nets[1:]):
            self.assertFalse(a.overlaps(b), (a, b))
        for n in nets:
            self.assertTrue(n.subnet_of(ipaddress.ip_network("10.64.0.0/10")))
            self.assertFalse(n.overlaps(ipaddress.ip_network("10.64.0.0/16")))
        show = json.loads(ctl("plan", "-c", cfg, "show", "--json", check_rc=0).stdout)
        self.assertEqual(len(show["stored_vpcs"]), 40)

    def test_concurrent_allocations_file_store(self):
        self.concurrent(self.file_store())

    def test_concurrent_allocations_etcd(self):
        self.concurrent(self.etcd_store())

    def test_etcd_unreachable(self):
        port = free_port()  # nothing listens there
        cfg = self.config(f"    type: etcd\n    endpoints: [http://127.0.0.1:{port}]")
        t0 = time.monotonic()
        r = self.allocate(cfg, "train-use1", rc=2)
        self.assertIn(f"127.0.0.1:{port}", r.stderr)
        self.assertLess(time.monotonic() - t0, 30)

    def test_import_aws(self):
        cfg = self.etcd_store()
        sample = os.path.join(SAMPLES, "aws-describe-vpcs.json")
        r = ctl("plan", "-c", cfg, "import", "--from", "aws", sample, "--region", "us-east-1",
                "--json")
        report = json.loads(r.stdout)
        verdicts = {v["name"]: v["status"] for v in report["vpcs"]}
        # The sample (tests/unit/control/plan/import/aws-describe-vpcs.json):
        # "batch" holds 10.64.16.0/20, inside idc-sh's 10.64.0.0/16.
        self.assertEqual(verdicts, {"train-use1": "fits", "data-lake-prod": "fits",
                                    "vpc-0c3d4e5f607182930": "fits", "batch": "conflicts"})
        self.assertEqual(r.returncode, 1, r.stderr)
        text = ctl("plan", "-c", cfg, "import", "--from", "aws", sample, "--region",
                   "us-east-1").stdout
        self.assertIn("10.64.16.0/20 overlaps 10.64.0.0/16 of VPC idc/shanghai/idc-sh", text)
        fits = ["data-lake-prod", "train-use1", "vpc-0c3d4e5f607182930"]
        show = json.loads(ctl("plan", "-c", cfg, "show", "--json", check_rc=0).stdout)
        self.assertEqual(show["stored_vpcs"], [], "without --apply nothing is written")
        ctl("plan", "-c", cfg, "import", "--from", "aws", sample, "--region", "us-east-1",
            "--apply")
        show = json.loads(ctl("plan", "-c", cfg, "show", "--json", check_rc=0).stdout)
        self.assertEqual(sorted(v["name"] for v in show["stored_vpcs"]), fits)
        self.assertTrue(all(v["source"] == "import:aws" for v in show["stored_vpcs"]))
        revision = show["revision"]
        r = ctl("plan", "-c", cfg, "import", "--from", "aws", sample, "--region", "us-east-1",
                "--apply", "--json")
        report = json.loads(r.stdout)
        self.assertTrue(all(v["status"] != "fits" for v in report["vpcs"]))
        show = json.loads(ctl("plan", "-c", cfg, "show", "--json", check_rc=0).stdout)
        self.assertEqual(show["revision"], revision, "a second import writes nothing")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--mcgwctl", required=True)
    ap.add_argument("--samples", required=True)
    args, rest = ap.parse_known_args()
    MCGWCTL, SAMPLES = args.mcgwctl, args.samples
    unittest.main(argv=[sys.argv[0], *rest])
