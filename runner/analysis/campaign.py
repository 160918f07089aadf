"""campaign: the many-core campaign (scripts/campaign.sh; docs/many-cores.md): on a host with 8
or more CPUs, in one command and within a time budget (9 minutes, aiming at 7), the batch that
answers the many-core question: actor-mem against async-mem on s1-s3 at the CPU plan's largest
server size (the matrix: probes, sustain, equal load, the verdict) and one closed-loop probe of
both at 1, 2 and 4 server CPUs (run_all.sh --scaling), the load generator on cores of its own;
then, where run_all.sh has them and the budget is left, more counts, the actor server's
placement rungs at the largest count (--ladder=default,spread) and the cost account (--no-cost when it does
not fit). Durations are chosen so that the planned work fits the target: the estimate is
printed first, and its model is run_all.sh's (windows + a per-run overhead) with an allowance
for plateau probes. Writes at most 8 files under OUT and prints the headline last.

Contract: plan() never runs anything; run() runs run_all.sh (one batch at a time, ended by pid
on a signal) and writes OUT/{summary.md, index.json, report.html, runs.tar.gz, campaign.log,
plan.txt[, ladder-summary.md, ladder-index.json]}. Exit (main): 0 done (any verdict), 1 a batch
failed or a file could not be written, 2 usage or a host the campaign refuses.
"""
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time

from . import cpuplan

USAGE = """usage: scripts/campaign.sh [--help] [--dry-run] [--budget=DURATION] [--target=DURATION]
                          [--counts=LIST] [--no-cost] [--no-ladder] [--smoke] [--min-cpus=N] OUT
The many-core campaign (docs/many-cores.md): prints the host's topology and the CPU plan,
then runs actor-mem against async-mem on s1-s3 at the plan's largest server size (the
verdict's matrix) and a closed-loop probe of both at 1, 2 and 4 server CPUs with the load
generator on cores of its own (run_all.sh --scaling), durations chosen to fit the budget
(the estimate is printed first); then, while the target allows, more counts (8, 16, ...
below the largest), the cost account and the ladder's placement rungs (at the largest
count: run_all.sh --ladder=default,spread on s2, a second batch), where run_all.sh has them
(read from its --help). Writes at most 8 files under OUT:
summary.md, index.json, report.html, runs.tar.gz (the run folders), campaign.log, plan.txt
(and ladder-summary.md, ladder-index.json), and prints the headline last.
  --dry-run          print the topology, the plan, the durations and the estimate; run nothing
                     (OUT optional). CPU_TOPOLOGY_ROOT and CPU_MASK plan a fixture topology
  --budget=DURATION  the hard limit, e.g. 9m, 540, 540s (default 9m): work that would pass it
                     is not started, and a batch still running 30 s before it is ended, what
                     ran summarized and packed (exit 1)
  --target=DURATION  what the planned work should take (default 7m): the durations and the
                     optional work are chosen to fit it; run_all.sh re-runs disturbed rounds
                     only up to it
  --counts=LIST      the scaling counts instead of 1,2,4 and the largest (comma-separated)
  --no-cost          no cost account even when run_all.sh has one and it fits (with one, the
                     longest tier that fits with it is taken; else it is left out, said)
  --no-ladder        no ladder rungs even when run_all.sh has them and they fit
  --smoke            smoke durations (run_all.sh --smoke: seconds per run, figures not results);
                     for tests, with --min-cpus=1 on a small host
  --min-cpus=N       refuse a host with fewer usable CPUs (default 8)
Environment: CAMPAIGN_RUN_OVERHEAD_S (per run, default 4), CAMPAIGN_COST_S (the cost
account's seconds a row; default: the cost stage's own estimate), CAMPAIGN_PLATEAU_SHARE (the share
of probes the estimate allows a plateau probe for, default 0.25), RESULTS_DIR (where the
batches run; default results/), and everything run_all.sh reads.
Exit status: 0 done (any verdict), 1 a batch failed or OUT could not be written, 2 usage or a
host below --min-cpus."""

SERVERS = ("actor-mem", "async-mem")
SCENARIOS = ("s1", "s2", "s3")
FINAL_S = 10        # run_all.sh's summary and report (its FINAL_S)
PACK_S = 5          # the campaign's own end: the tarball and the copies
END_S = 30          # what a batch ended at the budget needs: summary, report and the packing
START_S = 5         # run_all.sh's checks before the first run (runner.sh --check-only per run)
# run_all.sh --ladder's servers: async-mem and the actor server at each of its 7 rungs, each
# once a round on s2; where run_all.sh takes --ladder=RUNG,... (its --help), only the placement
# rungs: async-mem, actor-mem-default and actor-mem-spread
LADDER_SERVERS = 9
PLACEMENT_RUNGS = ("default", "spread")
# Duration tiers, longest first: probe warm-up + measured, sustain warm-up + measured,
# equal-load warm-up + measured (s), rounds, equal load on. The first whose required work fits
# the target is taken (SPEC.md sections 5 and 9 describe each window).
TIERS = [
    {"name": "long", "pwarm": 2, "probe": 8, "warm": 5, "meas": 10, "eqwarm": 3, "eqmeas": 8, "repeats": 2, "equal": 1},
    {"name": "medium", "pwarm": 2, "probe": 5, "warm": 3, "meas": 6, "eqwarm": 2, "eqmeas": 5, "repeats": 2, "equal": 1},
    {"name": "short", "pwarm": 1, "probe": 4, "warm": 2, "meas": 4, "eqwarm": 1, "eqmeas": 3, "repeats": 2, "equal": 1},
    {"name": "minimal", "pwarm": 1, "probe": 3, "warm": 1, "meas": 3, "eqwarm": 1, "eqmeas": 2, "repeats": 1, "equal": 0},
]
# run_all.sh --smoke's durations (runner/lib.sh mode_durations smoke; its equal load 1+1, 2 rounds)
SMOKE = {"name": "smoke", "pwarm": 1, "probe": 2, "warm": 1, "meas": 2, "eqwarm": 1, "eqmeas": 1, "repeats": 2, "equal": 1}


class CampaignError(Exception):
    """A usage error or a host the campaign refuses (exit 2)."""


def duration_s(text):
    """'9m', '540', '540s', '1h30m' -> seconds (> 0); CampaignError otherwise."""
    m = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s?)?", text or "")
    if not text or not m:
        raise CampaignError(f"not a duration: '{text}' (e.g. 9m, 540, 540s)")
    s = int(m.group(1) or 0) * 3600 + int(m.group(2) or 0) * 60 + int(m.group(3) or 0)
    if s <= 0:
        raise CampaignError(f"a duration must be > 0, got '{text}'")
    return s


def parse_args(argv):
    opts = {"dry_run": False, "budget": 540, "target": 420, "counts": None, "cost": True,
            "ladder": True, "smoke": False, "min_cpus": 8, "out": None}
    for arg in argv:
        opt, _, val = arg.partition("=")
        if arg in ("-h", "--help"):
            opts["help"] = True
        elif arg == "--dry-run":
            opts["dry_run"] = True
        elif arg == "--smoke":
            opts["smoke"] = True
        elif arg == "--no-cost":
            opts["cost"] = False
        elif arg == "--no-ladder":
            opts["ladder"] = False
        elif opt in ("--budget", "--target") and val:
            opts[opt[2:]] = duration_s(val)
        elif opt == "--counts" and val:
            try:
                opts["counts"] = sorted({int(x) for x in val.split(",")})
            except ValueError:
                raise CampaignError(f"--counts takes whole numbers, comma-separated, got '{val}'") from None
            if not opts["counts"] or opts["counts"][0] < 1:
                raise CampaignError(f"--counts takes whole numbers >= 1, got '{val}'")
        elif opt == "--min-cpus" and val.isdigit() and int(val) >= 1:
            opts["min_cpus"] = int(val)
        elif arg.startswith("-"):
            raise CampaignError(f"unknown option or bad value '{arg}'")
        elif opts["out"] is None:
            opts["out"] = arg
        else:
            raise CampaignError(f"one OUT folder, got '{opts['out']}' and '{arg}'")
    if opts["target"] > opts["budget"]:
        opts["target"] = opts["budget"]
    if not opts["dry_run"] and not opts.get("help") and not opts["out"]:
        raise CampaignError("name the OUT folder (or --dry-run)")
    return opts


def run_all_features(root):
    """What this checkout's run_all.sh offers beyond --scaling, read from its --help: 'cost'
    (a cost account stage, skipped with --no-cost), 'ladder' (--ladder) and 'ladder_rungs'
    (--ladder=RUNG,...: some rungs alone)."""
    try:
        text = subprocess.run([os.path.join(root, "run_all.sh"), "--help"], capture_output=True,
                              text=True, timeout=30, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        text = ""
    return {"cost": "--no-cost" in text, "ladder": "--ladder" in text, "ladder_rungs": "--ladder=RUNG" in text}


def ladder_batch(feats):
    """(run_all.sh's ladder option, its servers): the placement rungs alone where run_all.sh
    takes --ladder=RUNG,..., else the whole ladder (--ladder, LADDER_SERVERS)."""
    if feats.get("ladder_rungs"):
        return "--ladder=" + ",".join(PLACEMENT_RUNGS), 1 + len(PLACEMENT_RUNGS)
    return "--ladder", LADDER_SERVERS


def counts_plan(topo, smt, wanted=None):
    """(largest, required, optional, skipped): the plan's default server size on TOPO (the
    most cores that leave the load generator its share), the counts the question needs
    (1, 2, 4 and the largest; or WANTED) that the plan can give, the further powers of two
    below the largest (added when the budget allows), and [(count, reason)] that cannot run."""
    largest = len(cpuplan.parse_list(cpuplan.plan(topo, smt)["server_cpus"]))
    base = wanted or sorted({1, 2, 4, largest})
    extra = [] if wanted else [n for n in (8, 16, 32, 64, 128) if 4 < n < largest]
    runs, skipped = [], []
    for what, n, x in cpuplan.scaling(topo, sorted(set(base) | set(extra)), smt):
        if what == "run":
            runs.append(n)
        elif n in base:
            skipped.append((n, x))
    return largest, [n for n in runs if n in base], [n for n in runs if n not in base], skipped


def cost_estimate_s(env, tier):
    """The cost account's seconds for the matrix's server x scenario rows and its two
    contended rows: CAMPAIGN_COST_S (per row) when set, else the cost stage's own estimate
    (runner/analysis/cost.py estimate_s, where this checkout has it), else 25 s a row."""
    rows = len(SERVERS) * len(SCENARIOS) + 2
    if env.get("CAMPAIGN_COST_S"):
        return rows * float(env["CAMPAIGN_COST_S"])
    try:
        from . import cost as cost_stage
        return float(cost_stage.estimate_s(rows, "smoke" if tier["name"] == "smoke" else "quick"))
    except (ImportError, AttributeError, TypeError, ValueError):
        return rows * 25.0


def estimate(tier, n_scaling_counts, env, cost=False, ladder=False, ladder_servers=LADDER_SERVERS):
    """Seconds the work takes under TIER: run_all.sh's model (each run its windows and a
    per-run overhead; SPEC.md section 9) for the matrix (SERVERS x SCENARIOS: the first round's
    probe and sustain, the other rounds' probes, the equal-load runs) and N_SCALING_COUNTS x 6
    scaling probes, a share of plateau probes, the summary and report; with COST the cost
    account per server and scenario; with LADDER a second batch of LADDER_SERVERS servers on s2
    (the placement rungs: 3; the whole ladder: 9).
    Returns a dict of the parts and 'total'."""
    oh = float(env.get("CAMPAIGN_RUN_OVERHEAD_S", 4))
    plateau_share = float(env.get("CAMPAIGN_PLATEAU_SHARE", 0.25))
    cost_s = cost_estimate_s(env, tier)
    win_probe = tier["pwarm"] + tier["probe"]
    win_sat = win_probe + tier["warm"] + tier["meas"]
    win_eq = tier["eqwarm"] + tier["eqmeas"]
    n_pairs = len(SERVERS) * len(SCENARIOS)
    probes = n_pairs * tier["repeats"] + n_pairs * n_scaling_counts
    parts = {
        "matrix": n_pairs * (win_sat + oh) + n_pairs * (tier["repeats"] - 1) * (win_probe + oh)
        + (n_pairs * (win_eq + oh) if tier["equal"] else 0),
        "scaling": n_pairs * n_scaling_counts * (win_probe + oh),
        "plateau": math.ceil(plateau_share * probes) * win_probe,
        "fixed": START_S + FINAL_S + PACK_S,
        "cost": cost_s if cost else 0,
        "ladder": (START_S + FINAL_S + ladder_servers * ((win_sat + oh) + (tier["repeats"] - 1) * (win_probe + oh)
                                                        + math.ceil(plateau_share * tier["repeats"]) * win_probe))
        if ladder else 0,
    }
    parts = {k: int(math.ceil(v)) for k, v in parts.items()}
    parts["total"] = sum(parts.values())
    return parts


def glibc_check(root):
    """In a bundle (a BUNDLE file at ROOT): CampaignError when this host's glibc is older than
    the bundle's glibc_min (its binaries would not load). Outside a bundle: nothing."""
    try:
        with open(os.path.join(root, "BUNDLE"), encoding="utf-8") as fh:
            need = next((ln.split("=", 1)[1].strip() for ln in fh if ln.startswith("glibc_min=")), "")
    except OSError:
        return
    have = (os.confstr("CS_GNU_LIBC_VERSION") or "").split()[-1:] if hasattr(os, "confstr") else []
    def key(v):
        return tuple(int(x) for x in re.findall(r"\d+", v)[:2])
    if need and have and key(have[0]) < key(need):
        raise CampaignError(f"this host's glibc is {have[0]}; the bundle's programs need {need} or later")


def plan(opts, env, root):
    """The campaign's plan (runs nothing): the topology, the counts, the tier, the optional
    work taken and left, the estimate, and the run_all.sh commands. CampaignError when the
    host has fewer usable CPUs than --min-cpus."""
    glibc_check(root)
    try:
        topo, smt, _, _ = cpuplan.from_env(dict(env, SERVER_CPUS="", LOADGEN_CPUS=""))
    except cpuplan.PlanError as err:
        raise CampaignError(f"the CPU plan: {err}") from None
    if len(topo.mask) < opts["min_cpus"]:
        raise CampaignError(f"{len(topo.mask)} usable CPU(s) ({cpuplan.format_list(topo.mask)}): the campaign "
                            f"needs {opts['min_cpus']} or more (--min-cpus=N to run anyway: its figures are "
                            "then not a many-core result)")
    largest, required, optional, skipped = counts_plan(topo, smt, opts["counts"])
    feats = run_all_features(root)
    tiers = [SMOKE] if opts["smoke"] else TIERS
    n_req = len([n for n in required if n != largest])
    # the longest tier whose required work fits the target with the cost account (where
    # run_all.sh has one and it is wanted), else without it
    want_cost = feats["cost"] and opts["cost"]
    tier = next((t for t in tiers if want_cost and estimate(t, n_req, env, cost=True)["total"] <= opts["target"]), None)
    with_cost = tier is not None
    if tier is None:
        tier = next((t for t in tiers if estimate(t, n_req, env)["total"] <= opts["target"]), tiers[-1])
    # optional work, in order of use to the question, while the target holds (a count never
    # pushes out the cost account the tier was chosen with)
    counts, left = list(required), []
    for n in optional:
        if estimate(tier, len([c for c in counts + [n] if c != largest]), env,
                    cost=with_cost)["total"] <= opts["target"]:
            counts.append(n)
        else:
            left.append(f"{n} server CPUs (over the target)")
    n_sc = len([c for c in counts if c != largest])
    ladder = cost = False
    lad_opt, n_lad = ladder_batch(feats)
    if not feats["cost"]:
        left.append("the cost account: this run_all.sh has none (not measured)")
    elif not opts["cost"]:
        left.append("the cost account: --no-cost")
    elif estimate(tier, n_sc, env, cost=True)["total"] <= opts["target"]:
        cost = True
    else:
        left.append("the cost account (over the target: --no-cost passed)")
    if not feats["ladder"]:
        left.append("the ladder: this run_all.sh has no --ladder")
    elif not opts["ladder"]:
        left.append("the ladder: --no-ladder")
    elif estimate(tier, n_sc, env, cost=cost, ladder=True, ladder_servers=n_lad)["total"] <= opts["target"]:
        ladder = True
    else:
        left.append(f"the ladder ({lad_opt}: {n_lad} servers on s2 at {largest} server CPUs: over the target)")
    est = estimate(tier, n_sc, env, cost=cost, ladder=ladder, ladder_servers=n_lad)
    counts = sorted(counts)
    batch_env = {"PROBE_WARMUP_SEC": tier["pwarm"], "PROBE_SEC": tier["probe"], "WARMUP_SEC": tier["warm"],
                 "MEASURE_SEC": tier["meas"], "EQUAL_WARMUP_SEC": tier["eqwarm"], "EQUAL_MEASURE_SEC": tier["eqmeas"],
                 "EQUAL_LOAD": tier["equal"], "MIN_VALID_PAIRS": tier["repeats"]}
    batch_env = {k: str(v) for k, v in batch_env.items()}
    main_args = ["--smoke" if opts["smoke"] else "--quick", "--pair=" + ",".join(SERVERS),
                 "--scenarios=" + ",".join(SCENARIOS), f"--repeats={tier['repeats']}",
                 "--scaling=" + ",".join(str(c) for c in counts)]
    if feats["cost"] and not cost:
        main_args.append("--no-cost")
    return {"topology": topo.describe(), "topology_notes": topo.notes, "smt": smt,
            "cpus": len(topo.mask), "largest": largest, "counts": counts, "skipped": skipped,
            "tier": tier, "features": feats, "cost": cost, "ladder": ladder, "ladder_opt": lad_opt, "left": left,
            "estimate": est, "budget_s": opts["budget"], "target_s": opts["target"],
            "batch_env": batch_env, "main_args": main_args}


def plan_text(p):
    """The plan in words, as printed before anything runs (and kept as OUT/plan.txt)."""
    t, e = p["tier"], p["estimate"]
    lines = [f"campaign: host: {p['topology']}; SMT policy {p['smt']}"]
    lines += [f"campaign: topology: {n}" for n in p["topology_notes"]]
    lines.append(f"campaign: the matrix at the plan's largest server size, {p['largest']} server CPU(s): "
                 f"{' and '.join(SERVERS)} on {', '.join(SCENARIOS)}, {t['repeats']} round(s)"
                 f"{', equal load' if t['equal'] else ', no equal-load runs'}")
    lines.append(f"campaign: scaling probes at {', '.join(str(c) for c in p['counts'])} server CPUs "
                 "(the largest taken from the matrix)")
    for n, why in p["skipped"]:
        lines.append(f"campaign: {n} server CPUs skipped: {why}")
    lines.append(f"campaign: durations ({t['name']}): probe {t['pwarm']}+{t['probe']} s, sustain "
                 f"{t['warm']}+{t['meas']} s, equal load {t['eqwarm']}+{t['eqmeas']} s")
    lines.append(f"campaign: cost account: {'yes' if p['cost'] else 'no'}; the ladder ({p['ladder_opt']}) at "
                 f"{p['largest']} CPUs: {'yes' if p['ladder'] else 'no'}")
    for what in p["left"]:
        lines.append(f"campaign: left out: {what}")
    parts = ", ".join(f"{k} {v} s" for k, v in e.items() if k != "total" and v)
    lines.append(f"campaign: estimate {e['total']} s (about {math.ceil(e['total'] / 60)} min: {parts}); "
                 f"target {p['target_s']} s (re-runs of disturbed rounds only up to it), budget {p['budget_s']} s")
    lines.append("campaign: run_all.sh " + " ".join(p["main_args"]) + "  with "
                 + " ".join(f"{k}={v}" for k, v in p["batch_env"].items()))
    return lines


class Runner:
    """Runs the batches, tees their output into the log, ends the running one on a signal."""

    def __init__(self, root, log):
        self.root, self.log, self.proc, self.stopped = root, log, None, None

    def say(self, line):
        print(line, flush=True)
        self.log.write(line + "\n")
        self.log.flush()

    def run_all(self, args, env):
        """run_all.sh ARGS under ENV; its output line by line to stdout and the log. Returns
        its exit status."""
        self.say("campaign: $ run_all.sh " + " ".join(args))
        self.proc = subprocess.Popen([os.path.join(self.root, "run_all.sh")] + args, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in self.proc.stdout:
            self.say(line.rstrip("\n"))
        rc = self.proc.wait()
        self.proc = None
        return rc

    def stop(self, signum=None, _frame=None):
        """Ends the running batch (SIGTERM to run_all.sh, which ends its runner by pid); the
        campaign then summarizes and packs what ran. From a signal handler or the budget's
        timer (signum None)."""
        self.stopped = "budget" if signum is None else f"signal {signum}"
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()


def headline(index):
    """The campaign's last line: the verdict and, per scenario, actor/async req/s per count."""
    v = index.get("verdict") or {}
    rows = ((index.get("scaling") or {}).get("table")) or []
    by = {(r["scenario"], r["server"], r["server_cpus"]): r for r in rows}
    parts = []
    for sc in SCENARIOS:
        cells = []
        for n in sorted({r["server_cpus"] for r in rows if r["scenario"] == sc}):
            a, b = by.get((sc, SERVERS[0], n)), by.get((sc, SERVERS[1], n))
            if a and b and isinstance(a.get("rps"), (int, float)) and isinstance(b.get("rps"), (int, float)) and b["rps"]:
                flag = "" if a.get("valid") and b.get("valid") else "?"
                cells.append(f"{n}:{a['rps'] / b['rps']:.2f}{flag}")
        if cells:
            parts.append(f"{sc} " + " ".join(cells))
    ratios = ("; actor/async req/s by server CPUs (? = a run not valid): " + "; ".join(parts)) if parts else ""
    return f"campaign: {v.get('overall', '?')}: {v.get('headline', '(no headline)')}{ratios}"


def run(opts, env, root):
    """Runs the campaign; returns the exit status."""
    t0 = time.monotonic()
    p = plan(opts, env, root)
    out = os.path.abspath(opts["out"])
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "campaign.log"), "w", encoding="utf-8") as log:
        r = Runner(root, log)
        signal.signal(signal.SIGTERM, r.stop)
        signal.signal(signal.SIGINT, r.stop)
        topo_out = subprocess.run([os.path.join(root, "run_all.sh"), "--cpu-plan",
                                   "--scaling=" + ",".join(str(c) for c in p["counts"])],
                                  capture_output=True, text=True, env=env, check=False)
        text = plan_text(p) + ["campaign: the CPU plan (run_all.sh --cpu-plan):"] + topo_out.stdout.splitlines()
        with open(os.path.join(out, "plan.txt"), "w", encoding="utf-8") as fh:
            fh.write("\n".join(text) + "\n")
        for line in text:
            r.say(line)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        results = env.get("RESULTS_DIR") or os.path.join(root, "results")
        benv = dict(env, RESULTS_DIR=results, **p["batch_env"])
        # run_all.sh's budget: re-runs of disturbed rounds only up to the target (less the
        # ladder's share), so that the budget stays a margin, never a plan
        left = (min(opts["target"], opts["budget"]) - (time.monotonic() - t0) - PACK_S
                - (p["estimate"]["ladder"] if p["ladder"] else 0))
        main_batch = f"campaign-{stamp}"
        # the budget holds whatever the host does: near its end the running batch is ended and
        # what ran is summarized and packed (END_S for that)
        timer = threading.Timer(max(1.0, opts["budget"] - (time.monotonic() - t0) - END_S), r.stop)
        timer.daemon = True
        timer.start()
        rc = r.run_all(p["main_args"] + [f"--batch={main_batch}", f"--budget={max(1, int(left))}"], benv)
        batches = [main_batch]
        if r.stopped:
            r.say(f"campaign: stopped ({r.stopped}) after {time.monotonic() - t0:.0f} s: summarizing what ran")
            _finish_stopped(root, os.path.join(results, main_batch), benv, r)
            rc = rc or 1
        elif p["ladder"]:
            left = opts["budget"] - (time.monotonic() - t0) - PACK_S
            need = p["estimate"]["ladder"]
            if need <= left:
                srv, lg = _largest_plan(env, p["largest"])
                lenv = dict(benv, SERVER_CPUS=srv, LOADGEN_CPUS=lg)
                lrc = r.run_all(["--smoke" if opts["smoke"] else "--quick", p["ladder_opt"], "--scenarios=s2",
                                 f"--repeats={p['tier']['repeats']}", f"--batch={main_batch}-ladder",
                                 f"--budget={max(1, int(left))}"] + (["--no-cost"] if p["features"]["cost"] else []), lenv)
                batches.append(f"{main_batch}-ladder")
                rc = rc or lrc
            else:
                r.say(f"campaign: the ladder not started: {need} s planned, {int(left)} s left of the budget")
        timer.cancel()
        rc = _pack(out, results, batches, r) or rc   # packed whatever the batches did
        elapsed = time.monotonic() - t0
        r.say(f"campaign: done in {elapsed:.0f} s (estimate {p['estimate']['total']} s, budget {opts['budget']} s); "
              f"files in {out}: {', '.join(sorted(os.listdir(out)))}")
        try:
            with open(os.path.join(results, main_batch, "index.json"), encoding="utf-8") as fh:
                r.say(headline(json.load(fh)))
        except (OSError, ValueError) as err:
            r.say(f"campaign: no headline: {err}")
    return 1 if rc else 0


def _finish_stopped(root, batch_dir, env, r):
    """summary.md, index.json and report.html of a batch that was ended early (what ran)."""
    for tool in ("summarize.sh", "report.sh"):
        try:
            proc = subprocess.run([os.path.join(root, "runner", tool), batch_dir], capture_output=True, text=True,
                                  env=env, timeout=END_S / 2, check=False)
            if proc.returncode != 0:
                r.say(f"campaign: {tool} failed: {proc.stderr.strip()[-300:]}")
        except (OSError, subprocess.TimeoutExpired) as err:
            r.say(f"campaign: {tool}: {err}")


def _largest_plan(env, n):
    topo, smt, _, _ = cpuplan.from_env(dict(env, SERVER_CPUS="", LOADGEN_CPUS=""))
    p = cpuplan.plan(topo, smt, count=n)
    return p["server_cpus"], p["loadgen_cpus"]


def _pack(out, results, batches, r):
    """OUT's files from the batches: summary.md, index.json, report.html of the first, the
    ladder's summary and index, and runs.tar.gz of every batch folder. Returns 0 or 1."""
    rc = 0
    names = [("summary.md", "summary.md"), ("index.json", "index.json"), ("report.html", "report.html")]
    for i, b in enumerate(batches):
        for src, dst in names if i == 0 else [("summary.md", "ladder-summary.md"), ("index.json", "ladder-index.json")]:
            path = os.path.join(results, b, src)
            if os.path.exists(path):
                shutil.copyfile(path, os.path.join(out, dst))
            else:
                r.say(f"campaign: {b}/{src} missing")
                rc = 1
    with tarfile.open(os.path.join(out, "runs.tar.gz"), "w:gz") as tar:
        for b in batches:
            if os.path.isdir(os.path.join(results, b)):
                tar.add(os.path.join(results, b), arcname=b)
    size = os.path.getsize(os.path.join(out, "runs.tar.gz"))
    if size > 15 * 1048576:
        r.say(f"campaign: runs.tar.gz is {size / 1048576:.1f} MiB (over 15 MiB: it may not come back from a borrowed host)")
    return rc


def main(argv, root=None):
    root = root or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        opts = parse_args(argv)
        if opts.get("help"):
            print(USAGE)
            return 0
        if opts["dry_run"]:
            p = plan(opts, os.environ, root)
            print("\n".join(plan_text(p)))
            cp = subprocess.run([os.path.join(root, "run_all.sh"), "--cpu-plan",
                                 "--scaling=" + ",".join(str(c) for c in p["counts"])],
                                capture_output=True, text=True, check=False)
            print("campaign: the CPU plan (run_all.sh --cpu-plan):")
            print(cp.stdout, end="")
            print(f"campaign: estimate_s={p['estimate']['total']}")
            return 0
        return run(opts, dict(os.environ), root)
    except CampaignError as err:
        print(f"campaign.sh: {err}", file=sys.stderr)
        print("run scripts/campaign.sh --help for usage", file=sys.stderr)
        return 2
