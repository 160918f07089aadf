"""python3 -m analysis COMMAND ...: the command line of the analysis package (runner/ on
PYTHONPATH). The shell scripts call it; a user rarely needs to.
Exit: 0 done, 1 a file could not be read or written, 2 usage.
"""
import json
import math
import os
import signal
import sys

from .fmt import num, pct
from .rules import is_num

USAGE = """usage: python3 -m analysis COMMAND ARGS   (with runner/ on PYTHONPATH)
  result RUN_DIR                 build RUN_DIR/result.json from RUN_DIR/facts.json
  line RUN_DIR probe|sustain     write RUN_DIR/result.json and print one progress line of
                                 that phase
  result-line RUN_DIR            the run's one-line result (runner.sh's last line on stdout)
  summarize BATCH_DIR [TARGET]   write BATCH_DIR/index.json and summary.md
  cost BATCH_DIR [MODE]          the cost account (cost.py): every server and scenario of the
                                 batch (and a contended row per binary) measured by callgrind,
                                 strace, /proc and /metrics; writes BATCH_DIR/cost.json
  cost-one NAME SCENARIO [THREADS [CONNECTIONS DEPTH [MODE]]]
                                 one row of the cost account, as JSON on stdout
  ladder-defs DIR [RUNGS]        write the ladder's server definitions (ladder.py: one per rung,
                                 or per rung of the comma-separated RUNGS, from
                                 servers/actor-mem.toml) and DIR/ladder.json; prints the
                                 batch's servers, comma-separated, the baseline first
  report BATCH_DIR WORK OUT      render report.html (runner/report.sh is the wrapper)
  render BATCH_DIR WORK [--out=DIR] [--html=FILE] [--rejudge]
                                 render report.html, and summary.md of a kept batch (no run
                                 folders), from index.json alone into DIR (default BATCH_DIR);
                                 --rejudge: by today's rules, index.json written too
                                 (rerender.py; runner/report.sh is the wrapper); exit 2 when
                                 BATCH_DIR has no index.json
  compare A_DIR B_DIR            compare two batches (runner/compare.sh is the wrapper)
  equal-rate BATCH_DIR SCENARIO SAT_RATIO
                                 the equal-load rate: SAT_RATIO x the slowest server's
                                 median saturation over its probes (exit 1 when a probe
                                 run failed or is missing)
  rounds-status BATCH_DIR SCENARIO
                                 per comparison of SCENARIO, its valid pairs and each
                                 round's validity (probes, and equal-load runs), as JSON
  rounds-next probe|equal MIN_VALID PLANNED
                                 reads rounds-status's JSON on stdin; prints the next
                                 re-run round as JSON (its round, servers, the comparisons
                                 that need it and the rounds it answers), or null
                                 (rounds.py: the re-run rule)
  headline BATCH_DIR             the verdict word and headline of index.json, one line
  full-note PATH                 "the file system of PATH is full: N KB free of M KB" when
                                 under 1 MiB is free there, else nothing (the cause of a
                                 failed write; atomic.py); always exit 0
  round-order SEED SCENARIO KIND ROUND NAME...
                                 the names in the round's balanced order (ABBA), one line
  canary [SERVER_CPUS [LOADGEN_CPUS]]
                                 the host's canary: a pipe round trip between a server CPU
                                 and a load generator CPU, median in us, as JSON
  calibrate-def NAME DIR         write DIR/NAME-b.toml, server NAME under a second name
  calibrate-record BATCH_DIR     add an A/A batch's pair ratios to the host's noise floor
                                 (results/calibration/<host>.json, or $CALIBRATION); prints it
  rejudge BATCH_DIR              judge a batch by today's rules (also a kept batch that has
                                 only index.json); one line per comparison, then the verdict
  sweep-base BATCH_DIR SCENARIO  the sweep's 100%: the slowest server's median saturation
                                 over its probes, req/s (exit 1 when a server has none)
  sweep-rates BASE_RPS           the default sweep rates, 10% .. 120% of BASE_RPS, req/s,
                                 comma-separated (SPEC.md section 14)
  scaling-plan COUNTS CPUS       for each server CPU count in COUNTS (e.g. 1,2,4,8) on the
                                 CPU list CPUS (e.g. 0-3): "run N SERVER_CPUS LOADGEN_CPUS"
                                 or "skip N REASON", one line each, by the CPU planner
                                 (cpu-plan; never sharing a core between the two sides)
  cpu-plan [--json] [--mask=LIST] [--count=N] [--scaling=COUNTS] [--remote]
                                 the CPU plan (SPEC.md section 4): server_cpus=, loadgen_cpus=,
                                 idle_cpus= and the reasons (--json: one JSON object); reads
                                 CPU_TOPOLOGY_ROOT, CPU_MASK, SMT, SERVER_CPUS, LOADGEN_CPUS;
                                 --scaling: also the plan of each server CPU count; --remote:
                                 the load comes from other hosts (the local side keeps one core
                                 for the runner); exit 2 on a bad value
  threads RUN_DIR                the per-thread CPU of a run (result.json), one line a thread
  plateau-needed RUN_DIR         "yes" when the run's probe needs the plateau probe (SPEC.md
                                 section 8: neither CPU rule holds, the load generator did
                                 not limit it, no errors), else "no"
  servers                        every server definition: NAME, scenarios, file and
                                 description, tab-separated, one line each
  server-plan NAME [SCENARIO]    what runner.sh needs of a definition (on SCENARIO), as
                                 JSON (servers.plan); exit 2 when SCENARIO is not one it lists
  server-run NAME KEY=VALUE...   the command of a definition with its placeholders filled
                                 and its extra environment (env_args from the environment),
                                 as JSON: {"command": [argv], "env": {name: value},
                                 "version": [argv] or null, "ours": bool, "data_files":
                                 [the access log and database paths]}
  server-build NAME ROOT BUILD   the definition's build_command with {root} and {build}
                                 filled in, as a JSON array (null when it has none)
  server-ran SERVER_RUN_JSON     what ran (ran.py): the program and script files of
                                 server-run's JSON with their sha256, and the version its
                                 version command prints, as JSON
  matrix [--pair=A,B]... [--pairs=FILE] [--servers=LIST] [--baseline=NAME]
         [--scenarios=LIST]      what a batch runs (matrix.py), as JSON
  verify URL MIX_FILE --bearer=TOKEN --seed-users=N [--json=FILE]
                                 check the server at URL against CONTRACT.md for the
                                 scenario of MIX_FILE (verify.py); exit 1 when a case fails
  campaign [OPTIONS] OUT         the many-core campaign (scripts/campaign.sh is the wrapper;
                                 campaign.py; --help for its options)
Definitions are read from servers/ and SERVER_DEFS; a bad definition or selection exits 2."""


def _result_line(run_dir):
    """The one line runner.sh prints on stdout at its end: 'actor-mem s3: saturation=41,200
    req/s sustained=28,840 req/s p99=1.810 ms server_cpu=65.0% req/cpu_s=46,073 valid=no
    (other load)'; 'FAILED: why' for a failed run. Reads RUN_DIR/result.json."""
    from . import batch
    with open(os.path.join(run_dir, "result.json"), encoding="utf-8") as fh:
        r = batch.normalize(json.load(fh, parse_constant=lambda _name: None))

    head = f"{r.get('server')} {r.get('scenario')}"
    if r.get("failure"):
        return f"{head}: FAILED: {r['failure']}"
    parts = []
    if is_num(r.get("saturation_rps")):
        parts.append(f"saturation={num(r['saturation_rps'])} req/s")
        if r.get("sustained_rps") is None:
            parts.append(f"server_cpu={pct((r.get('probe') or {}).get('server_cpu_pct'))}")
    if r.get("sustained_rps") is not None:
        parts += [f"sustained={num(r['sustained_rps'])} of {num(r.get('target_rps'))} req/s",
                  f"p99={num(r.get('latency_p99_ms'), 3)} ms", f"server_cpu={pct(r.get('server_cpu_pct'))}",
                  f"req/cpu_s={num(r.get('req_per_cpu_sec'))}"]
    flags = r.get("flags") or []
    parts.append("valid=yes" if not flags else f"valid=no ({', '.join(flags)})")
    return f"{head}: " + " ".join(parts)


def _line(run_dir, phase):
    from .result import write
    r = write(run_dir)
    cfg = r.get("config") or {}

    def agents(ags):
        return ", ".join(f"agent {a.get('agent_index')} {num(a.get('loadgen_cpu_pct'), 1)}% of {a.get('cpu_count')}"
                         for a in ags)
    def busiest(ts):
        from .rules import busiest as top
        t = top(ts)
        return "" if t is None or len(ts) < 2 else f", busiest thread {t.get('name')} {num(t['cpu_pct'], 1)}%"
    if phase == "plateau":
        p = r.get("probe") or {}
        pl = p.get("plateau") or {}
        return (f"{num(pl.get('rps'))} req/s with {pl.get('connections')} connections "
                f"({num(100 * pl['gain'], 1) if is_num(pl.get('gain')) else 'n/a'}% against the probe), server CPU "
                f"{num(pl.get('server_cpu_pct'), 1)}% ({num(100 * pl['cpu_gain'], 1) if is_num(pl.get('cpu_gain')) else 'n/a'}%)"
                f"{busiest(pl.get('server_threads') or [])}: "
                + (f"saturated by {p['saturated_by']}" if p.get("saturated_by") else "not saturated")
                + f" ({p.get('saturation_reason') or 'unknown'})")
    if phase == "probe":
        p = r.get("probe") or {}
        flags = [fl["reason"] for fl in r.get("problems") or [] if fl["phase"] == "probe"]
        lg = (f"loadgen CPU {num(p.get('loadgen_cpu_pct'), 1)}% of {cfg.get('loadgen_cpu_count')} CPU(s)"
              if not p.get("loadgen_agents") else f"loadgen CPU {agents(p['loadgen_agents'])} CPU(s)")
        sat = f"; saturated by {p['saturated_by']}" if p.get("saturated_by") else ""
        return (f"{num(p.get('rps'))} req/s, server CPU {num(p.get('server_cpu_pct'), 1)}% of "
                f"{cfg.get('server_cpu_count')} CPU(s){busiest(p.get('server_threads') or [])}, {lg}{sat}"
                + ("; FLAGGED: " + "; ".join(flags) if flags else ""))
    flags = [fl["reason"] for fl in r.get("problems") or [] if fl["phase"] == "sustain"]
    lg = (f"loadgen CPU {num(r.get('loadgen_cpu_pct'), 1)}%" if not r.get("loadgen_agents")
          else f"loadgen CPU {agents(r['loadgen_agents'])} CPU(s)")
    return (f"{num(r.get('sustained_rps'))} req/s of {num(r.get('target_rps'))}, p99 {num(r.get('latency_p99_ms'), 3)} ms, "
            f"server CPU {num(r.get('server_cpu_pct'), 1)}% ({num(r.get('req_per_cpu_sec'))} req/CPU-s), handler p99 "
            f"{num(r.get('handler_p99_us'))} us, {lg}, send lag p99 "
            f"{num(r.get('send_lag_p99_ms'), 3)} ms" + ("; FLAGGED: " + "; ".join(flags) if flags else ""))


def _equal_rate(batch_dir, scenario, sat_ratio):
    from . import batch
    b = batch.Batch(batch_dir)
    g = b.group(scenario)
    if g is None:
        raise ValueError(f"no scenario {scenario} in {batch_dir}")
    meds = []
    for name in g["servers"]:
        runs = b.probes(name, scenario)
        if not runs or any(r.get("failure") for r in runs.values()):
            raise ValueError(f"a {name} probe run of {scenario} failed or is missing")
        if not all(is_num(r.get("saturation_rps")) for r in runs.values()):
            raise ValueError(f"a {name} probe of {scenario} has no saturation figure")
        meds.append(b.median_saturation(name, scenario))
    if not all(m and m > 0 for m in meds):
        raise ValueError("a probe completed no requests")
    return max(1, math.floor(min(meds) * sat_ratio + 0.5))  # half up, not Python's half to even


def _rounds_status(batch_dir, scenario):
    """{"comparisons": [...], "equal": [...]}: per comparison of SCENARIO its valid pairs and
    each round's validity, and whether the host disturbed an invalid round (rounds.py; run_all.sh
    decides re-runs on it)."""
    from . import batch, rounds as rnds, rules, verdict
    b = batch.Batch(batch_dir)
    g = b.group(scenario)
    if g is None:
        raise ValueError(f"no scenario {scenario} in {batch_dir}")
    out = {"scenario": scenario, "comparisons": [], "equal": []}
    for c in g["comparisons"]:
        cand, base = c["candidate"], c["baseline"]
        for key, kind, cr, br, problems, value in (
                ("comparisons", "probe", b.probes(cand, scenario), b.probes(base, scenario), rules.probe_problems,
                 verdict.probe_rps),
                ("equal", "equal", b.equal(cand, scenario), b.equal(base, scenario), rules.sustain_problems,
                 lambda r: (r or {}).get("req_per_cpu_sec"))):
            used, excluded = verdict.pairs_of(cr, br, problems, value, True)
            rounds = [{"round": rnd, "valid": True, "disturbed": False, "why": ""} for rnd, _, _, _ in used]
            rounds += [{"round": e["round"], "valid": False,
                        "disturbed": any(rnds.disturbed_run(r, kind) for r in (cr.get(e["round"]), br.get(e["round"]))),
                        "why": "; ".join(sorted({f"{x['server']} {x['flag']}" for x in e["reasons"]}))}
                       for e in excluded]
            out[key].append({"candidate": cand, "baseline": base, "valid_pairs": len(used),
                             "rounds": sorted(rounds, key=lambda x: x["round"])})
    return out


def _servers_cmd(cmd, args):
    """The server-definition commands of USAGE; 2 on a usage or definition error."""
    from . import matrix, servers
    try:
        defs = servers.load_all()
        if cmd == "servers" and not args:
            for name in sorted(defs):
                d = defs[name]
                print(name, ",".join(d.scenarios), d.path, d.description, sep="\t")
        elif cmd == "server-plan" and len(args) in (1, 2):
            print(json.dumps(servers.plan(defs, args[0], args[1] if len(args) == 2 else None)))
        elif cmd == "server-run" and args:
            values = {}
            for kv in args[1:]:
                key, eq, val = kv.partition("=")
                if not eq:
                    raise servers.DefinitionError(f"expected KEY=VALUE, got '{kv}'")
                values[key] = val
            srv = servers.get(defs, args[0])
            argv, env = servers.expand(srv, values)
            print(json.dumps({"command": argv, "env": env, "version": servers.version_argv(srv, values),
                              "ours": bool(srv.build),
                              "data_files": [values[k] for k in ("access_log", "db") if values.get(k)]}))
        elif cmd == "server-build" and len(args) == 3:
            argv = servers.build_argv(servers.get(defs, args[0]), {"root": args[1], "build": args[2]})
            print(json.dumps(argv))
        elif cmd == "server-ran" and len(args) == 1:
            from . import ran
            with open(args[0], encoding="utf-8") as fh:
                doc = json.load(fh)
            print(json.dumps(ran.describe(doc["command"], doc.get("version"), doc.get("ours", False),
                                          skip=doc.get("data_files") or ())))
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

def _cpu_plan(args):
    """analysis cpu-plan [--json] [--mask=LIST] [--count=N] [--scaling=COUNTS]: exit 0, or 2
    with the reason on a bad value or a plan the mask cannot give."""
    from . import cpuplan, scaling
    as_json, mask, count, counts, ratio = False, None, None, None, cpuplan.LOADGEN_CORES_PER_SERVER_CORE
    try:
        for a in args:
            if a == "--json":
                as_json = True
            elif a == "--remote":
                ratio = 0  # the load comes from other hosts: the local side is the runner's

            elif a.startswith("--mask="):
                mask = a.split("=", 1)[1]
            elif a.startswith("--count="):
                count = scaling.parse_counts(a.split("=", 1)[1])
                if len(count) != 1:
                    raise ValueError("--count takes one number")
                count = count[0]
            elif a.startswith("--scaling="):
                counts = scaling.parse_counts(a.split("=", 1)[1])
            else:
                raise ValueError(f"unknown argument '{a}'")
        topo, smt, srv, lg = cpuplan.from_env(mask=mask)
        p = cpuplan.plan(topo, smt, count=count, server_cpus=srv, loadgen_cpus=lg, ratio=ratio)
    except ValueError as err:
        print(f"analysis cpu-plan: {err}", file=sys.stderr)
        return 2
    if as_json:
        print(json.dumps(p))
        return 0
    print("\n".join(cpuplan.text(p)))
    for what, n, x in cpuplan.scaling(topo, counts or [], smt, ratio):
        print(f"--scaling {n} server CPU{'' if n == 1 else 's'}: " + ("skipped: " + x if what == "skip" else "run"))
        if what == "run":
            print("\n".join(cpuplan.text(x, "  ")))
    return 0


def _render(args):
    """analysis render BATCH_DIR WORK [--out=DIR] [--html=FILE] [--rejudge]: 0 written, 1 a
    rendering failed, 2 usage or no index.json."""
    from . import rerender
    opts = {"out_dir": None, "html_path": None, "rejudged": False}
    for a in args[2:]:
        key, eq, val = a.partition("=")
        if a == "--rejudge":
            opts["rejudged"] = True
        elif eq and val and key in ("--out", "--html"):
            opts["out_dir" if key == "--out" else "html_path"] = val
        else:
            print(f"analysis render: unknown argument '{a}'", file=sys.stderr)
            return 2
    try:
        for path in rerender.write(args[0], args[1], **opts):
            print(f"wrote {path}", file=sys.stderr)
    except rerender.NotABatch as err:
        print(f"analysis render: {err}", file=sys.stderr)
        return 2
    except RuntimeError as err:
        print(f"analysis render: {err}", file=sys.stderr)
        return 1
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
        elif cmd == "line" and len(args) == 2 and args[1] in ("probe", "plateau", "sustain"):
            print(_line(args[0], args[1]))
        elif cmd == "result-line" and len(args) == 1:
            print(_result_line(args[0]))
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
        elif cmd == "ladder-defs" and len(args) in (1, 2):
            from . import ladder, servers
            try:
                print(",".join(ladder.generate(args[0], rungs=args[1] if len(args) == 2 else None)))
            except (servers.DefinitionError, ValueError) as e:
                print(f"analysis ladder-defs: {e}", file=sys.stderr)
                return 2
        elif cmd == "cost-estimate" and len(args) == 2:
            from . import cost
            print(cost.estimate_s(int(args[1]), args[0]))
        elif cmd in ("cost", "cost-one"):
            from . import cost
            return cost.main(argv[1:] if cmd == "cost-one" else args)
        elif cmd == "report" and len(args) == 3:
            from . import report
            return report.main([argv[0]] + args)
        elif cmd == "render" and len(args) >= 2:
            return _render(args)
        elif cmd == "compare":
            from . import compare
            return compare.main([argv[0]] + args)
        elif cmd == "rounds-status" and len(args) == 2:
            print(json.dumps(_rounds_status(args[0], args[1]), indent=1))
        elif cmd == "equal-rate" and len(args) == 3:
            print(_equal_rate(args[0], args[1], float(args[2])))
        elif cmd == "rounds-next" and len(args) == 3 and args[0] in ("probe", "equal"):
            from . import rounds, verdict
            print(json.dumps(rounds.next_round(json.load(sys.stdin), args[0], int(args[1]), int(args[2]),
                                               figure_min=verdict.MIN_PAIRS)))
        elif cmd == "sweep-base" and len(args) == 2:
            from . import sweep
            print(sweep.base_rps(args[0], args[1]))
        elif cmd == "sweep-rates" and len(args) == 1:
            from . import sweep
            print(",".join(str(r) for r in sweep.default_rates(float(args[0]))))
        elif cmd == "scaling-plan" and len(args) == 2:
            from . import cpuplan, scaling
            try:
                # the CPUs the runs will be planned on: CPU_MASK when set (runner.sh plans each
                # count there too), else CPUS
                topo, smt, _, _ = cpuplan.from_env(dict(os.environ, SERVER_CPUS="", LOADGEN_CPUS=""), args[1])
            except cpuplan.PlanError as err:
                print(f"analysis scaling-plan: {err}", file=sys.stderr)
                return 2
            for p in scaling.plan(scaling.parse_counts(args[0]), topo.mask, topo.root, smt):
                print(" ".join(str(x) for x in p))
        elif cmd in ("servers", "server-plan", "server-run", "server-ran", "server-build", "matrix"):
            return _servers_cmd(cmd, args)

        elif cmd == "cpu-plan":
            return _cpu_plan(args)
        elif cmd == "threads" and len(args) == 1:
            from . import threads
            for line in threads.run_lines(args[0]):
                print(line)
        elif cmd == "plateau-needed" and len(args) == 1:
            from . import rules
            with open(os.path.join(args[0], "result.json"), encoding="utf-8") as fh:
                run = json.load(fh, parse_constant=rules.json_null_constant)
            n = (run.get("config") or {}).get("server_cpu_count") or 1
            print("yes" if rules.plateau_needed(run.get("probe"), n) else "no")

        elif cmd == "verify":
            from . import verify
            return verify.main(args)
        elif cmd == "full-note" and len(args) == 1:
            from . import atomic
            note = atomic.full_note(os.path.abspath(args[0]))
            if note:
                print(note)
        elif cmd == "round-order" and len(args) >= 5:
            from . import matrix
            print(" ".join(matrix.round_order(args[0], args[1], args[2], int(args[3]), args[4:])))
        elif cmd == "canary" and len(args) <= 2:
            from . import canary
            a, b = canary.pick_cpus(*args)
            print(json.dumps({"cpus": [a, b], "us": canary.measure(a, b)}))
        elif cmd == "calibrate-def" and len(args) == 2:
            from . import calibration, servers as sv
            try:
                print(calibration.write_twin(args[0], args[1]))
            except sv.DefinitionError as err:
                print(f"analysis calibrate-def: {err}", file=sys.stderr)
                return 2
        elif cmd == "calibrate-record" and len(args) == 1:
            from . import calibration
            path, _ = calibration.record(args[0])
            print(path)
        elif cmd == "rejudge" and len(args) == 1:
            from . import rejudge
            for line in rejudge.lines(args[0]):
                print(line)
        elif cmd == "campaign":
            from . import campaign
            return campaign.main(args)
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
