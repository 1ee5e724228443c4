"""The small harness the lab tests share: checks that fail with a message,
a count of what passed, and a main that runs a test's parts in a scratch
directory, reports each failure with the gateways' logs, and cleans up.
"""

import os
import shutil
import sys
import tempfile
import traceback
from pathlib import Path

import mcgwlab

passed = 0


class Fail(Exception):
    pass


def check(cond, what, detail="") -> None:
    if not cond:
        raise Fail(f"{what}{': ' + str(detail) if detail != '' else ''}")


def ok(what: str) -> None:
    global passed
    passed += 1
    print(f"ok: {what}", flush=True)


def run_parts(name: str, parts, logs: str = "gw*.log", log_lines: int = 30) -> int:
    """Runs each (label, function(tmp)) in turn, going on after a failure;
    returns the process exit code.  MCGWLAB_KEEP=1 keeps the directory."""
    if os.geteuid() != 0:
        print(f"{name}: run as root", file=sys.stderr)
        return 1
    tmp = Path(tempfile.mkdtemp(prefix=f"mcgwlab-{name}-"))
    failed = 0
    try:
        for label, part in parts:
            try:
                part(tmp)
            except Exception as e:  # noqa: BLE001 - report and go on with the next part
                failed += 1
                print(f"FAIL: {label}: {type(e).__name__}: {e}", file=sys.stderr)
                if not isinstance(e, (Fail, mcgwlab.LabError)):
                    traceback.print_exc()
                for log in sorted(tmp.rglob(logs)):
                    print(f"--- {log}\n{mcgwlab._tail(log, log_lines)}", file=sys.stderr)
    finally:
        if os.environ.get("MCGWLAB_KEEP") != "1":
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0
