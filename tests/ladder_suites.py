#!/usr/bin/env python3
"""ladder_suites: the server suites (it_contract.py, it_hostile.py, it_conformance.py) against
actor-server at each rung of the runtime's ladder (issue 34), through their SERVER and
SERVER_ARGS parameters: the rungs are it_counters.py's RUNGS. Not run by tests/run.sh (it
takes many minutes: each suite per rung); run it by hand, under the CPU lock on a shared
host:

    flock /tmp/cpu.lock tests/ladder_suites.py [--rungs a,b] [--suites it_hostile,...]

Prints one line per suite and rung (exit code, TAP ok / not ok counts, seconds) and exits 1
when any failed. Logs go to $LOG_DIR (default $BUILD/ladder-logs). Python stdlib only."""
import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from it_counters import RUNGS  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
SUITES = ["it_contract", "it_hostile", "it_conformance"]
TIMEOUT_S = int(os.environ.get("LADDER_SUITE_TIMEOUT_S", "1200"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rungs", default="", help="comma-separated rung names (default: all)")
    ap.add_argument("--suites", default=",".join(SUITES), help="comma-separated suites")
    args = ap.parse_args()
    rungs = [r for r in args.rungs.split(",") if r]
    unknown = set(rungs) - {name for name, _ in RUNGS}
    if unknown:
        ap.error("unknown rung(s) %s; known: %s" % (", ".join(sorted(unknown)),
                                                    ", ".join(n for n, _ in RUNGS)))
    log_dir = os.environ.get("LOG_DIR", os.path.join(BUILD, "ladder-logs"))
    os.makedirs(log_dir, exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    failed = 0
    for name, flags in RUNGS:
        if rungs and name not in rungs:
            continue
        for suite in [s for s in args.suites.split(",") if s]:
            env = dict(os.environ, SERVER=os.path.join(BUILD, "actor-server"),
                       SERVER_ARGS=" ".join(flags))
            log = os.path.join(log_dir, "%s.%s.log" % (name, suite))
            t0 = time.monotonic()
            with open(log, "w") as out:
                try:
                    rc = subprocess.run([sys.executable, os.path.join(here, suite + ".py")],
                                        env=env, stdout=out, stderr=subprocess.STDOUT,
                                        timeout=TIMEOUT_S).returncode
                except subprocess.TimeoutExpired:
                    rc = "timeout"
            with open(log) as f:
                lines = f.read().splitlines()
            ok = sum(1 for ln in lines if ln.startswith("ok"))
            bad = sum(1 for ln in lines if ln.startswith("not ok"))
            failed += rc != 0 or bad != 0
            print("%-13s %-15s exit %-7s %4d ok %3d not ok %5.0f s  %s" %
                  (name, suite, rc, ok, bad, time.monotonic() - t0, log), flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
