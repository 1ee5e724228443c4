#!/usr/bin/python3
"""Lab test: the capabilities mcgw.service gives mcgwd are exactly the ones
it needs (docs/packaging.md, "Capabilities").

The unit runs mcgwd as root with CapabilityBoundingSet= (and the same
AmbientCapabilities=), so mcgwd holds exactly that set.  This test starts the
built mcgwd as gateway A of the standard lab (tests/lab/mcgwlab.py: af_xdp
ports on veth pairs with mcgw's XDP program, netlink, the API socket given to
a group, the state directory) under

  setpriv --nnp --bounding-set=-all,+<set> --inh-caps=... --ambient-caps=...

with the unit's set, parsed from systemd/mcgw.service.in, and checks:

1. The unit's list is the one documented here: every capability in it is
   either PROVEN (the lab shows what breaks without it) or PCI_ONLY (needed
   for PCI ports through vfio/uio, which the lab has no device for), and
   AmbientCapabilities= equals CapabilityBoundingSet=.  A capability added to
   or removed from the unit without updating this test fails it.
2. With the unit's set gateway A becomes healthy and host A pings host B
   through both gateways (gateway B runs with the same set).
3. For each PROVEN capability: the set without it makes gateway A fail to
   start, or start but not become healthy, or not forward; the failure and
   mcgwd's message are asserted.
4. For each PCI_ONLY capability: the set without it still works here (so it
   is not silently needed by af_xdp; its reason is PCI).

The test runs with the caller's RLIMIT_MEMLOCK (8 MiB here; the unit has
no LimitMEMLOCK=, so systemd's default 8 MiB applies there too).  The BGP
part (FRR in the gateways' namespaces, its directories frr:frr as Debian's
/etc/frr) shows CAP_DAC_OVERRIDE; the af_xdp part everything else.

  lab_capabilities_test.py              the checks above
  lab_capabilities_test.py --survey     drop every capability of the unit
                                        in turn, in both labs, and print
                                        what happens (no assertions)
  lab_capabilities_test.py [af_xdp|bgp] one part only

Run as root with /usr/bin/python3; MCGW_BUILD_DIR names the build,
MCGW_SOURCE_DIR the source tree.
"""

import grp
import os
import re
import secrets
import stat
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(HERE))
import mcgwlab  # noqa: E402
from labtest import check, ok, run_parts  # noqa: E402

BUILD = Path(os.environ.get("MCGW_BUILD_DIR", HERE.parents[1] / "build"))
SOURCE = Path(os.environ.get("MCGW_SOURCE_DIR", HERE.parents[1]))
UNIT = SOURCE / "systemd" / "mcgw.service.in"
API_GROUP = "nogroup"  # a group root is not a member of: chown needs CAP_CHOWN

# Capability -> (the lab that shows the need: "af_xdp" or "bgp", a regular
# expression mcgwd's log or status must match without it).  Found with --survey;
# the messages are DPDK's af_xdp PMD's and mcgwd's own.
PROVEN = {
    # XDP attach (bpf_xdp_attach, IFLA_XDP) is CAP_NET_ADMIN.
    "CAP_NET_ADMIN": ("af_xdp", r"Failed to set prog fd \d+ on interface"),
    # socket(AF_XDP) is CAP_NET_RAW: the UMEM's socket cannot be made.
    "CAP_NET_RAW": ("af_xdp", r"xdp_umem_configure\(\): Failed to create umem"),
    # XDP_UMEM_REG charges RLIMIT_MEMLOCK (8 MiB, the unit has no
    # LimitMEMLOCK=) unless CAP_IPC_LOCK: the UMEM registration fails.
    "CAP_IPC_LOCK": ("af_xdp", r"xdp_umem_configure\(\): Failed to create umem"),
    # Without CAP_BPF in the set, loading any BPF program needs CAP_SYS_ADMIN
    # (unprivileged_bpf_disabled): the PMD cannot load mcgw's XDP program.
    # With CAP_BPF instead, BPF_PROG_GET_FD_BY_ID / BPF_MAP_GET_FD_BY_ID still
    # are CAP_SYS_ADMIN only ("opening XDP program N of lan0: Operation not
    # permitted", degraded, nothing forwarded): CAP_BPF cannot replace it.
    "CAP_SYS_ADMIN": ("af_xdp", r"Couldn't load trivial BPF program"),
    # chown() of the API socket to a group root is not in.
    "CAP_CHOWN": ("af_xdp", r"cannot give it to group 'nogroup'"),
    # FRR's config directory is frr:frr (Debian: /etc/frr 0750): root
    # without CAP_DAC_OVERRIDE cannot write frr.conf there.
    "CAP_DAC_OVERRIDE": ("bgp", r"frr\.conf\.mcgw-tmp: Permission denied"),
}
# Needed only for PCI ports (vfio no-IOMMU, uio, I/O ports): no such device here.
PCI_ONLY = {
    "CAP_SYS_RAWIO": "vfio no-IOMMU mode and uio/ioport access of PCI NICs",
}
# Taken out of the unit: not needed (the runs above have none of them).  CAP_BPF and
# CAP_PERFMON: the kernel's bpf_capable()/perfmon_capable() accept
# CAP_SYS_ADMIN, which mcgwd needs anyway; CAP_SYS_RESOURCE: nothing raises
# a limit (and this host's own bounding set lacks it: every lab test runs
# mcgwd without it).
EXTRA = ["CAP_BPF", "CAP_PERFMON", "CAP_SYS_RESOURCE"]

CAP_NAMES = {  # linux/capability.h, the ones that matter here
    "CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_NET_ADMIN": 12, "CAP_NET_RAW": 13,
    "CAP_IPC_LOCK": 14, "CAP_SYS_RAWIO": 17, "CAP_SYS_ADMIN": 21, "CAP_SYS_RESOURCE": 24,
    "CAP_PERFMON": 38, "CAP_BPF": 39,
}


def unit_caps() -> tuple[list[str], list[str]]:
    text = UNIT.read_text()
    def line(key: str) -> list[str]:
        m = re.findall(rf"^{key}=(.*)$", text, re.M)
        check(len(m) == 1, f"{UNIT}: one {key}= line", m)
        return m[0].split()
    return line("CapabilityBoundingSet"), line("AmbientCapabilities")


def host_bounding() -> int:
    for ln in Path("/proc/self/status").read_text().splitlines():
        if ln.startswith("CapBnd:"):
            return int(ln.split()[1], 16)
    raise RuntimeError("no CapBnd in /proc/self/status")


def wrapper(tmp: Path, name: str, caps: list[str], mcgwd: str) -> str:
    """A script that runs mcgwd with exactly `caps` (as the unit does: root,
    bounding = ambient = the set, no new privileges)."""
    spec = ",".join(["-all"] + ["+" + c.removeprefix("CAP_").lower() for c in caps])
    path = tmp / f"mcgwd-{name}"
    path.write_text("#!/bin/sh\n"
                    f"exec setpriv --nnp --inh-caps={spec} --ambient-caps={spec} --bounding-set={spec} "
                    f"{mcgwd} \"$@\"\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


class Outcome:
    def __init__(self, started: bool, healthy: bool, forwards: bool, detail: str, log: str):
        self.started, self.healthy, self.forwards = started, healthy, forwards
        self.detail, self.log = detail, log
        self.sock_gid = None

    @property
    def works(self) -> bool:
        return self.started and self.healthy and self.forwards

    def __str__(self) -> str:
        return self.detail


def last_lines(log: str, n: int = 6) -> str:
    lines = [ln for ln in log.splitlines() if ln.strip()]
    return " | ".join(lines[-n:])


def run_gwa(lab: mcgwlab.Lab, tmp: Path, name: str, caps: list[str], mcgwd: str) -> Outcome:
    """Start gateway A with `caps`; healthy? (with BGP: its routes from FRR?)
    does host A reach host B?  Stops it again."""
    lab.mcgwd = wrapper(tmp, name, caps, mcgwd)
    logp = Path(lab.state["gateways"]["gwa"]["log"])
    pid = lab.start_gateway("gwa", wait=False)
    st = None
    answered = None
    deadline = time.monotonic() + 40
    try:
        while time.monotonic() < deadline and lab._alive(pid):
            st = lab.status("gwa")
            state = (st or {}).get("health", {}).get("state")
            if state == "healthy":
                break
            if st is not None:
                # Degraded may pass while lines come up; 10 s more at most.
                answered = answered or time.monotonic()
                if time.monotonic() - answered > 10:
                    break
            time.sleep(0.2)
        if not lab._alive(pid):
            code = lab._children[pid].wait() if pid in lab._children else None
            log = logp.read_text(errors="replace")
            return Outcome(False, False, False, f"exits {code}: {last_lines(log)}", log)
        health = (st or {}).get("health", {}).get("state", "no answer")
        routes = ""
        if lab.options.bgp:
            try:
                lab.wait_routes("gwa", timeout=20)
                routes = "BGP routes in, "
            except mcgwlab.LabError as e:
                routes = f"no BGP routes ({e}), "
        replies = lab.ping("hosta", "10.2.0.10", count=3, timeout=1.0)
        sock = Path(lab.state["gateways"]["gwa"]["socket"])
        gid = sock.stat().st_gid if sock.exists() else None
        log = logp.read_text(errors="replace")
        detail = f"runs, {health}, {routes}{replies}/3 pings A->B"
        if health != "healthy":
            detail += f": {(st or {}).get('health')}"
        if health != "healthy" or replies < 2:
            detail += f"; log: {last_lines(log)}"
        out = Outcome(True, health == "healthy", replies >= 2, detail, log)
        out.sock_gid = gid
        return out
    finally:
        lab.stop_gateway("gwa")
        lab._children.pop(pid, None)


def unit_set(survey: bool) -> list[str]:
    bounding, ambient = unit_caps()
    check(sorted(bounding) == sorted(ambient), "AmbientCapabilities= equals CapabilityBoundingSet=",
          f"{bounding} / {ambient}")
    documented = sorted(set(PROVEN) | set(PCI_ONLY))
    have = host_bounding()
    missing = [c for c in bounding if not have >> CAP_NAMES[c] & 1]
    if survey:  # the unit as it is, less what this host cannot give
        print(f"survey: unit {' '.join(bounding)}; not in this host's bounding set: {missing}")
        return [c for c in bounding if c not in missing]
    check(not set(EXTRA) & set(bounding), "capabilities shown unneeded stay out of the unit",
          set(EXTRA) & set(bounding))
    check(sorted(bounding) == documented, "the unit's capabilities are the documented ones",
          f"unit {sorted(bounding)}, test {documented}")
    check(not missing, "the host's bounding set has the unit's capabilities", missing)
    return bounding


def lab_part(tmp: Path, bgp: bool, survey: bool) -> None:
    bounding = unit_set(survey)
    if not bgp and not survey:
        ok(f"unit: {' '.join(bounding)} (each proven here or PCI only)")
    # The capabilities this lab shows the need of, and the ones it drops.
    proven = {c: p for c, (lab_kind, p) in PROVEN.items() if (lab_kind == "bgp") == bgp}
    pci = PCI_ONLY if not bgp else {}
    drop = bounding if survey else [*proven, *pci]

    mcgwd = str(BUILD / "control/daemon/mcgwd")
    o = mcgwlab.Options(driver="af_xdp", encap="vxlan", underlay="ipv4", bgp=bgp)
    prefix = f"mcgwcap-{secrets.token_hex(3)}-"
    lab = mcgwlab.Lab(prefix=prefix, workdir=tmp / prefix.rstrip("-"), options=o, build_dir=BUILD)
    with lab.up(start_gateways=False):
        # Gateway A's API socket goes to a group: mcgwd chowns it.
        cfg = Path(lab.state["gateways"]["gwa"]["config"])
        text = cfg.read_text()
        sock = lab.state["gateways"]["gwa"]["socket"]
        check(f"socket: {sock}" in text, "gateway A's config names its socket", text)
        cfg.write_text(text.replace(f"socket: {sock}", f"socket: {sock}\n  group: {API_GROUP}", 1))
        check(f"group: {API_GROUP}" in cfg.read_text(), "api.group written", cfg.read_text())
        lab.mcgwd = wrapper(tmp, "b", bounding, mcgwd)
        lab.start_gateway("gwb")
        kind = "af_xdp + BGP through FRR" if bgp else "af_xdp"
        t0 = time.monotonic()
        full = run_gwa(lab, tmp, "unit", bounding, mcgwd)
        check(full.works, f"{kind}: with the unit's set gateway A is healthy and forwards", full.detail)
        check(full.sock_gid == grp.getgrnam(API_GROUP).gr_gid, f"the API socket belongs to group {API_GROUP}",
              full.sock_gid)
        ok(f"{kind}, the unit's set: {full} ({time.monotonic() - t0:.1f} s)")
        results = {}
        for cap in drop:
            t0 = time.monotonic()
            r = run_gwa(lab, tmp, cap.lower(), [c for c in bounding if c != cap], mcgwd)
            results[cap] = r
            print(f"{kind}, without {cap}: {r} ({time.monotonic() - t0:.1f} s)", flush=True)
        if survey:
            return
        for cap, pattern in proven.items():
            r = results[cap]
            check(not r.works, f"{kind}: without {cap} gateway A must fail", r.detail)
            check(re.search(pattern, r.log + r.detail), f"{kind}: without {cap} the failure names the cause "
                  f"/{pattern}/", r.detail)
            ok(f"{kind}, without {cap}: fails as expected ({r})")
        for cap, why in pci.items():
            r = results[cap]
            check(r.works, f"{kind}: without {cap} (PCI only: {why}) af_xdp still works", r.detail)
            ok(f"{kind}, without {cap}: works ({r}); kept for {why}")


def main() -> int:
    survey = "--survey" in sys.argv[1:]
    only = [a for a in sys.argv[1:] if a in ("af_xdp", "bgp")]
    parts = [(k, lambda tmp, k=k: lab_part(tmp, k == "bgp", survey)) for k in ("af_xdp", "bgp")
             if not only or k in only]
    return run_parts("capabilities", parts)


if __name__ == "__main__":
    sys.exit(main())
