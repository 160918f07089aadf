"""python3 -m analysis COMMAND ...: the command line of the analysis package (runner/ on
PYTHONPATH). The shell scripts call it; a user rarely needs to.
Exit: 0 done, 1 a file could not be read or written, 2 usage.
"""
import json
import math
import os
import signal
import sys

USAGE = """usage: python3 -m analysis COMMAND ARGS   (with runner/ on PYTHONPATH)
  result RUN_DIR                 build RUN_DIR/result.json from RUN_DIR/facts.json
  line RUN_DIR probe|sustain     write RUN_DIR/result.json and print one progress line of
                                 that phase
  summarize BATCH_DIR [TARGET]   write BATCH_DIR/index.json and summary.md
  report BATCH_DIR WORK OUT      render report.html (runner/report.sh is the wrapper)
  compare A_DIR B_DIR            compare two batches (runner/compare.sh is the wrapper)
  equal-rate BATCH_DIR SCENARIO SAT_RATIO
                                 the equal-load rate: SAT_RATIO x the slower server's
                                 median saturation over its probes (exit 1 when a probe
                                 run failed or is missing)
  headline BATCH_DIR             the verdict word and headline of index.json, one line
  sweep-base BATCH_DIR SCENARIO  the sweep's 100%: the slower server's median saturation
                                 over its probes, req/s (exit 1 when a server has none)
  sweep-rates BASE_RPS           the default sweep rates, 10% .. 120% of BASE_RPS, req/s,
                                 comma-separated (SPEC.md section 14)
  scaling-plan COUNTS CPUS       for each server CPU count in COUNTS (e.g. 1,2,4,8) on the
                                 CPU list CPUS (e.g. 0-3): "run N SERVER_CPUS LOADGEN_CPUS"
                                 or "skip N REASON", one line each (the load generator's
                                 CPUs disjoint from the server's)
  servers                        every server definition: NAME, scenarios, file and
                                 description, tab-separated, one line each
  server NAME FIELD              one field of a definition: scenarios, ready_path,
                                 stop_signal, build, path or description
  server-plan NAME [SCENARIO]    what runner.sh needs of a definition (on SCENARIO), as
                                 JSON (servers.plan); exit 2 when SCENARIO is not one it lists
  server-command NAME KEY=VALUE...
                                 the command of a definition with its placeholders filled,
                                 each argument followed by a NUL byte (env_args from the
                                 environment)
  server-env NAME KEY=VALUE...   its extra environment, KEY=VALUE each followed by NUL
  server-run NAME KEY=VALUE...   both as JSON: {"command": [argv], "env": {name: value}}
  matrix [--pair=A,B]... [--pairs=FILE] [--servers=LIST] [--baseline=NAME]
         [--scenarios=LIST]      what a batch runs (matrix.py), as JSON
  verify URL MIX_FILE --bearer=TOKEN --seed-users=N [--json=FILE]
                                 check the server at URL against CONTRACT.md for the
                                 scenario of MIX_FILE (verify.py); exit 1 when a case fails
Definitions are read from servers/ and SERVER_DEFS; a bad definition or selection exits 2."""


def _line(run_dir, phase):
    from .result import write
    from .rules import is_num
    r = write(run_dir)
    cfg = r.get("config") or {}

    def f(v, d=0):
        return "n/a" if not is_num(v) else f"{v:,.{d}f}"
    def agents(ags):
        return ", ".join(f"agent {a.get('agent_index')} {f(a.get('loadgen_cpu_pct'), 1)}% of {a.get('cpu_count')}"
                         for a in ags)
    if phase == "probe":
        p = r.get("probe") or {}
        flags = [fl["reason"] for fl in r.get("problems") or [] if fl["phase"] == "probe"]
        lg = (f"loadgen CPU {f(p.get('loadgen_cpu_pct'), 1)}% of {cfg.get('loadgen_cpu_count')} CPU(s)"
              if not p.get("loadgen_agents") else f"loadgen CPU {agents(p['loadgen_agents'])} CPU(s)")
        return (f"{f(p.get('rps'))} req/s, server CPU {f(p.get('server_cpu_pct'), 1)}% of "
                f"{cfg.get('server_cpu_count')} CPU(s), {lg}" + ("; FLAGGED: " + "; ".join(flags) if flags else ""))
    flags = [fl["reason"] for fl in r.get("problems") or [] if fl["phase"] == "sustain"]
    lg = (f"loadgen CPU {f(r.get('loadgen_cpu_pct'), 1)}%" if not r.get("loadgen_agents")
          else f"loadgen CPU {agents(r['loadgen_agents'])} CPU(s)")
    return (f"{f(r.get('sustained_rps'))} req/s of {f(r.get('target_rps'))}, p99 {f(r.get('latency_p99_ms'), 3)} ms, "
            f"server CPU {f(r.get('server_cpu_pct'), 1)}% ({f(r.get('req_per_cpu_sec'))} req/CPU-s), handler p99 "
            f"{f(r.get('handler_p99_us'))} us, {lg}, send lag p99 "
            f"{f(r.get('send_lag_p99_ms'), 3)} ms" + ("; FLAGGED: " + "; ".join(flags) if flags else ""))


def _equal_rate(batch_dir, scenario, sat_ratio):
    from . import summary, verdict
    from .rules import is_num
    sc = summary.scenario_index(batch_dir, scenario)
    meds = []
    for who in ("actor", "async"):
        runs = sc["probes"][who]
        if any(r is None or r.get("failure") for r in runs):
            raise ValueError(f"a {sc[who]} probe run failed or is missing")
        if not all(is_num(r.get("saturation_rps")) for r in runs):
            raise ValueError(f"a {sc[who]} probe has no saturation figure")
        meds.append(verdict.median([r["saturation_rps"] for r in runs]))
    if not all(m and m > 0 for m in meds):
        raise ValueError("a probe completed no requests")
    return max(1, math.floor(min(meds) * sat_ratio + 0.5))  # half up, not Python's half to even


def _servers_cmd(cmd, args):
    """The server-definition commands of USAGE; 2 on a usage or definition error."""
    from . import matrix, servers
    try:
        defs = servers.load_all()
        if cmd == "servers" and not args:
            for name in sorted(defs):
                d = defs[name]
                print(name, ",".join(d.scenarios), d.path, d.description, sep="\t")
        elif cmd == "server" and len(args) == 2:
            d = servers.get(defs, args[0])
            value = {"scenarios": ",".join(d.scenarios), "ready_path": d.ready_path,
                     "stop_signal": d.stop_signal, "build": " ".join(d.build), "path": d.path,
                     "description": d.description}.get(args[1])
            if value is None:
                raise servers.DefinitionError(f"no field '{args[1]}'")
            print(value)
        elif cmd == "server-plan" and len(args) in (1, 2):
            print(json.dumps(servers.plan(defs, args[0], args[1] if len(args) == 2 else None)))
        elif cmd in ("server-command", "server-env", "server-run") and args:
            values = {}
            for kv in args[1:]:
                key, eq, val = kv.partition("=")
                if not eq:
                    raise servers.DefinitionError(f"expected KEY=VALUE, got '{kv}'")
                values[key] = val
            argv, env = servers.expand(servers.get(defs, args[0]), values)
            if cmd == "server-run":
                print(json.dumps({"command": argv, "env": env}))
                return 0
            items = argv if cmd == "server-command" else [f"{k}={v}" for k, v in env.items()]
            sys.stdout.write("".join(x + "\0" for x in items))
        elif cmd == "matrix":
            opts = {"pairs": []}
            for a in args:
                key, eq, val = a.partition("=")
                if not eq or key not in ("--pair", "--pairs", "--servers", "--baseline", "--scenarios"):
                    raise servers.DefinitionError(f"matrix: unknown argument '{a}'")
                if key == "--pair":
                    opts["pairs"].append(val)
                else:
                    opts[{"--pairs": "pairs_file"}.get(key, key[2:])] = val
            m = matrix.build(defs, pairs=opts["pairs"] or None, pairs_file=opts.get("pairs_file"),
                             servers=opts.get("servers"), baseline=opts.get("baseline"),
                             scenarios=opts.get("scenarios"))
            print(json.dumps(m, indent=1))
        else:
            print(USAGE, file=sys.stderr)
            return 2
    except servers.DefinitionError as err:
        print(f"analysis {cmd}: {err}", file=sys.stderr)
        return 2
    return 0


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(USAGE)
        return 0 if len(argv) >= 2 else 2
    cmd, args = argv[1], argv[2:]
    try:
        if cmd == "result" and len(args) == 1:
            from . import result
            result.write(args[0])
        elif cmd == "line" and len(args) == 2 and args[1] in ("probe", "sustain"):
            print(_line(args[0], args[1]))
        elif cmd == "summarize" and len(args) in (1, 2):
            from . import summary
            target = None
            if len(args) == 2:
                try:
                    target = float(args[1])
                except ValueError:
                    target = math.nan
                if not (math.isfinite(target) and target > 0):
                    print(f"analysis summarize: TARGET_RATIO must be a number > 0, got '{args[1]}'",
                          file=sys.stderr)
                    return 2
            summary.write(args[0], target)
        elif cmd == "report" and len(args) == 3:
            from . import report
            return report.main([argv[0]] + args)
        elif cmd == "compare":
            from . import compare
            return compare.main([argv[0]] + args)
        elif cmd == "equal-rate" and len(args) == 3:
            print(_equal_rate(args[0], args[1], float(args[2])))
        elif cmd == "sweep-base" and len(args) == 2:
            from . import sweep
            print(sweep.base_rps(args[0], args[1]))
        elif cmd == "sweep-rates" and len(args) == 1:
            from . import sweep
            print(",".join(str(r) for r in sweep.default_rates(float(args[0]))))
        elif cmd == "scaling-plan" and len(args) == 2:
            from . import scaling
            for p in scaling.plan(scaling.parse_counts(args[0]), scaling.parse_cpus(args[1])):
                print(" ".join(str(x) for x in p))
        elif cmd in ("servers", "server", "server-plan", "server-command", "server-env", "server-run", "matrix"):
            return _servers_cmd(cmd, args)
        elif cmd == "verify":
            from . import verify
            return verify.main(args)
        elif cmd == "headline" and len(args) == 1:
            with open(os.path.join(args[0], "index.json"), encoding="utf-8") as fh:
                v = json.load(fh)["verdict"]
            print(v["overall"], v["headline"], sep="\t")
        else:
            print(USAGE, file=sys.stderr)
            return 2
    except (OSError, ValueError, KeyError) as err:
        print(f"analysis {cmd}: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main(sys.argv))
