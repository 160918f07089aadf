"""summary: a batch folder's result.json files -> index.json (every run, the per-scenario
decisions and the overall verdict) and summary.md (the same in words and tables).
Re-runnable on old batches (results written before the per-phase validity rules are
re-judged by today's rules); reads only results/<batch>/ and never runs a benchmark.
Invariant: summary.md is rendered from index.json alone, so the two cannot disagree.
"""
import datetime
import glob
import json
import os

from . import rules, scaling, sweep, verdict
from .rules import is_num

SCENARIOS = ("s1", "s2", "s3", "s4")
REQUIRED = ("s1", "s2")
BRIEF = ["run", "server", "scenario", "kind", "repeat", "failure", "saturation_rps", "target_rps",
         "sustained_rps", "latency_p50_ms", "latency_p90_ms", "latency_p99_ms", "latency_p99_9_ms",
         "latency_max_ms", "server_cpu_pct", "req_per_cpu_sec", "server_rss_mb", "handler_p99_us",
         "loadgen_cpu_pct", "send_lag_p99_ms", "send_lag_own_p99_ms", "requests_waited_for_connection",
         "server_cpus_busy_pct",
         "server_cpus_other_pct", "errors_total", "validity", "flags", "problems"]
LOADGEN_MARK = "\u2020"  # dagger: latency limited by the load generator


def known(v):
    """A setting as printed: '?' when the batch does not record it (never 'None')."""
    return "?" if v is None else v


def _load(path):
    with open(path, encoding="utf-8") as fh:
        return json.load(fh, parse_constant=rules.json_null_constant)


def normalize(run):
    """RUN judged by today's rules: per-phase validity, quiet, flags and problems (a result
    written by an older runner lacks some of them)."""
    cfg = run.get("config") or {}
    n_srv = cfg.get("server_cpu_count") or 1
    n_lg = cfg.get("loadgen_cpu_count") or 1
    val = dict(run.get("validity") or {})
    probe = run.get("probe")
    if probe and "validity" not in probe:
        probe = dict(probe)
        if probe.get("errors_total") is None and isinstance(probe.get("errors"), dict):
            probe["errors_total"] = sum(v for v in probe["errors"].values() if is_num(v))
        sat = rules.saturated(probe, n_srv)
        probe["validity"] = {"saturated": sat,
                             "loadgen_bound": rules.loadgen_bound(probe, n_lg, True, sat),
                             "clean": rules.clean(probe), "quiet": rules.quiet(probe, n_srv)}
        run = dict(run, probe=probe)
    if run.get("sustained_rps") is not None and "sustain_loadgen_bound" not in val:
        val["sustain_loadgen_bound"] = rules.loadgen_bound(run, n_lg, False)
        val["probe_loadgen_bound"] = (probe or {}).get("validity", {}).get("loadgen_bound")
        val["loadgen_bound"] = bool(val["sustain_loadgen_bound"] or val["probe_loadgen_bound"])
    if "quiet" not in val:
        qs = [rules.quiet(p, n_srv) for p in (probe, run if run.get("sustained_rps") is not None else None) if p]
        val["quiet"] = None if not qs or None in qs else all(qs)
    run = dict(run, validity=val)
    if "problems" not in run:
        problems = []
        if run.get("failure"):
            problems = [{"phase": None, "flag": "failed", "reason": run["failure"]}]
        else:
            if probe:
                problems += [{"phase": "probe", "flag": f, "reason": w} for f, w in rules.probe_problems(run)]
            if run.get("sustained_rps") is not None:
                problems += [{"phase": "sustain", "flag": f, "reason": w} for f, w in rules.sustain_problems(run)]
        run["problems"] = problems
    run["flags"] = rules.run_flags(run)
    return run


def brief(run):
    if run is None:
        return None
    out = {k: run.get(k) for k in BRIEF}
    probe = run.get("probe") or {}
    out["probe"] = {k: probe.get(k) for k in ("rps", "server_cpu_pct", "loadgen_cpu_pct", "req_per_cpu_sec",
                                              "validity")} if probe else None
    out["latency_by_loadgen"] = bool((run.get("validity") or {}).get("sustain_loadgen_bound"))
    iv = run.get("latency_p99_intervals")
    out["latency_p99_intervals"] = {k: v for k, v in iv.items() if k != "p99_ms"} if isinstance(iv, dict) else None
    return out


def _ratio(a, b):
    return round(a / b, 3) if is_num(a) and is_num(b) and b > 0 else None


def build_index(batch_dir, target=None, generated=None):
    """index.json's document for BATCH_DIR."""
    matrix = {}
    if os.path.exists(os.path.join(batch_dir, "matrix.json")):
        matrix = _load(os.path.join(batch_dir, "matrix.json"))
    if target is None:
        target = matrix.get("target_ratio", 0.5)
    runs = []
    for path in sorted(glob.glob(os.path.join(batch_dir, "*", "result.json"))):
        try:
            doc = normalize(_load(path))
        except (OSError, ValueError):
            continue
        doc["path"] = os.path.relpath(path, batch_dir)
        doc["dir"] = os.path.basename(os.path.dirname(path))
        runs.append(doc)
    sat = [r for r in runs if r.get("kind") == "saturation"]
    # scaling runs (other server CPU counts) are probes too, but never part of the verdict
    probes = [r for r in runs if r.get("kind") == "probe" and not scaling.is_scaling_run(r)]
    eq = [r for r in runs if r.get("kind") == "equal-load"]
    planned = matrix.get("runs") or [{"server": r["server"], "scenario": r["scenario"]} for r in sat]

    def find(lst, server, sc):
        return next((r for r in lst if r.get("server") == server and r.get("scenario") == sc), None)

    def probes_of(server, sc):
        """The server's probes in repeat order: its saturation run (repeat 1), then probe runs."""
        own = find(sat, server, sc)
        extra = sorted((r for r in probes if r.get("server") == server and r.get("scenario") == sc),
                       key=lambda r: r.get("repeat") or 0)
        return ([own] if own is not None else [None]) + extra

    scs = [s for s in SCENARIOS if s in {p["scenario"] for p in planned} | {r.get("scenario") for r in sat}]
    scenarios = []
    for sc in scs:
        actor, asyn = verdict.pair_of(sc)
        sel = {p["server"] for p in planned if p["scenario"] == sc}
        both = actor in sel and asyn in sel
        a, b = find(sat, actor, sc), find(sat, asyn, sc)
        ea, eb = find(eq, actor, sc), find(eq, asyn, sc)
        pa, pb = probes_of(actor, sc), probes_of(asyn, sc)
        d = verdict.decide(sc, pa, pb, ea, eb, target, compared=both)
        missing = [f"{s}-{sc} has no result" for s in (actor, asyn) if s in sel and find(sat, s, sc) is None]
        if missing and d["verdict"] not in ("N/A",):
            d["verdict"] = "ERROR"
            d["errors"] = sorted(set(d["errors"] + missing))
        all_pairs = [probe_rps_pair(x, y) for x, y in zip(pa, pb)]
        all_pairs = [r for r in all_pairs if r is not None]
        entry = {"scenario": sc, "actor": actor, "async": asyn,
                 "actor_run": (a or {}).get("run"), "async_run": (b or {}).get("run")}
        entry.update(d)
        entry.update({
            "target_ratio": target, "counts_for_overall": sc in REQUIRED,
            "saturation_ratio": verdict._r3(verdict.median(all_pairs)),
            "saturation_median_rps": {
                who: verdict.median([r["saturation_rps"] for r in ps if r and not r.get("failure")
                                     and is_num(r.get("saturation_rps"))])
                for who, ps in (("actor", pa), ("async", pb))},
            "req_per_cpu_sec_ratio": _ratio((a or {}).get("req_per_cpu_sec"), (b or {}).get("req_per_cpu_sec")),
            "actor_result": brief(a), "async_result": brief(b),
            "probes": {"actor": [brief(r) for r in pa], "async": [brief(r) for r in pb]},
            "equal_load": None if ea is None and eb is None else {
                "rate_rps": (ea or {}).get("target_rps") or (eb or {}).get("target_rps"),
                "actor_run": (ea or {}).get("run"), "async_run": (eb or {}).get("run"),
                "actor": brief(ea), "async": brief(eb),
                "p99_ratio": _ratio((ea or {}).get("latency_p99_ms"), (eb or {}).get("latency_p99_ms")),
                "req_per_cpu_sec_ratio": _ratio((ea or {}).get("req_per_cpu_sec"), (eb or {}).get("req_per_cpu_sec"))},
        })
        scenarios.append(entry)
    mode = matrix.get("mode") or next((r["config"].get("mode") for r in runs if r.get("config")), None)
    v = verdict.overall(scenarios, target, REQUIRED, smoke=(mode == "smoke"))
    v.update({"target_ratio": target, "required_scenarios": list(REQUIRED),
              "per_scenario": [{k: s[k] for k in ("scenario", "verdict", "ratio", "ratio_min", "ratio_max",
                                                  "basis", "basis_source", "fragile")} for s in scenarios]})
    failures = [{"run": f"{p['server']}-{p['scenario']}", "failure": "no result.json (runner.sh did not start the run)"}
                for p in planned if find(sat, p["server"], p["scenario"]) is None]
    failures += [{"run": r.get("run"), "failure": r["failure"]} for r in runs if r.get("failure")]
    first = next((r for r in sat + runs if not r.get("failure")), runs[0] if runs else None)
    starts = [r["timestamps"]["start"] for r in runs if (r.get("timestamps") or {}).get("start")]
    ends = [r["timestamps"]["end"] for r in runs if (r.get("timestamps") or {}).get("end")]
    cfg_keys = ("mode", "server_cpus", "loadgen_cpus", "server_cpu_count", "loadgen_cpu_count", "cpus_disjoint",
                "server_threads", "actor_workers", "group_commit", "wrk_conns", "wrk_threads", "loadgen_tick_us",
                "probe_warmup_sec", "probe_sec", "warmup_sec", "measure_sec", "sat_ratio", "seed_users",
                "server_addr", "loadgen_hosts", "agent_cpus", "max_start_skew_ms")
    return {
        "schema": 2, "batch": os.path.basename(os.path.normpath(batch_dir)),
        "generated": generated or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "mode": mode, "smoke": mode == "smoke", "target_ratio": target,
        "sat_ratio": matrix.get("sat_ratio", ((first or {}).get("config") or {}).get("sat_ratio")),
        "repeats": matrix.get("repeats", 1),
        "timestamps": {"start": matrix.get("started") or (min(starts) if starts else None),
                       "end": matrix.get("ended") or (max(ends) if ends else None)},
        "host": (first or {}).get("host"), "versions": (first or {}).get("versions"),
        "loadgen_hosts": (first or {}).get("loadgen_hosts"),
        "config": None if first is None else {
            **{k: (first.get("config") or {}).get(k) for k in cfg_keys},
            # the batch's group commit: the actor server's (async-server always commits alone)
            "group_commit": max([(r.get("config") or {}).get("group_commit") or 1 for r in runs] or [1])},
        "equal_load_config": {"warmup_sec": matrix.get("equal_load_warmup_sec"),
                              "measure_sec": matrix.get("equal_load_measure_sec")},
        "thresholds": {"saturated_cpu_pct": rules.SATURATED_CPU_PCT, "loadgen_cpu_pct": rules.LOADGEN_CPU_PCT,
                       "send_lag_p99_ms": rules.SEND_LAG_P99_MS, "own_lag_share": rules.OWN_LAG_SHARE,
                       "waited_fraction": rules.WAITED_FRACTION,
                       "other_load_pct": rules.OTHER_LOAD_PCT, "rate_held_fraction": rules.RATE_HELD_FRACTION},
        "verdict": v, "scenarios": scenarios, "failures": failures,
        "runs": sat, "probe_runs": probes, "equal_load_runs": eq,
        "sweep": sweep.section(runs, scenarios),
        "scaling": scaling.section(runs, matrix),
    }


def scenario_index(batch_dir, scenario):
    """SCENARIO's entry in the index of BATCH_DIR (build_index's scenarios); raises ValueError
    when the batch has no such scenario."""
    sc = next((s for s in build_index(batch_dir)["scenarios"] if s["scenario"] == scenario), None)
    if sc is None:
        raise ValueError(f"no scenario {scenario} in {batch_dir}")
    return sc


def probe_rps_pair(a, b):
    ra, rb = verdict.probe_rps(a), verdict.probe_rps(b)
    return ra / rb if is_num(ra) and is_num(rb) and rb > 0 else None


# ---- summary.md ---------------------------------------------------------------------------

def n(v, d=0):
    if not is_num(v):
        return "n/a"
    return f"{v:,.{d}f}"


def u(v, d, unit):
    return "n/a" if not is_num(v) else f"{n(v, d)} {unit}"


def lag(r):
    """A brief's send lag p99, with the load generator's own part when it was measured."""
    text = u((r or {}).get("send_lag_p99_ms"), 3, "ms")
    own = (r or {}).get("send_lag_own_p99_ms")
    return f"{text} (own {n(own, 3)} ms)" if is_num(own) and text != "n/a" else text


def lat(r, key):
    """A latency of brief R, marked when the load generator limited it."""
    if r is None:
        return "no result"
    text = u(r.get(key), 3, "ms")
    return text + LOADGEN_MARK if r.get("latency_by_loadgen") and text != "n/a" else text


def intervals(r):
    """A brief's per-interval p99s: 'median M (A-B) ms', or n/a when not recorded."""
    iv = (r or {}).get("latency_p99_intervals") or {}
    if not is_num(iv.get("median_ms")):
        return "n/a"
    return f"{n(iv['median_ms'], 3)} ({n(iv.get('min_ms'), 3)}-{n(iv.get('max_ms'), 3)}) ms"


def interval_words(index):
    """The interval length of the batch's equal-load runs, as '1 s' (the first one known)."""
    for s in index["scenarios"]:
        for r in ((s.get("equal_load") or {}).get("actor"), (s.get("equal_load") or {}).get("async")):
            iv = (r or {}).get("latency_p99_intervals") or {}
            if is_num(iv.get("interval_s")):
                return f"{iv['interval_s']:g} s"
    return "interval"


def validity(r):
    if r is None:
        return "no result"
    return "ok" if not r.get("flags") else ", ".join(r["flags"])


def _config_of(index, server):
    """The config of SERVER's first main-matrix run (its topology), else the batch's."""
    for r in index.get("runs") or []:
        if scaling.side_of(r.get("server")) == server and r.get("config"):
            return r["config"]
    return index.get("config") or {}


def render_markdown(index):
    out = []
    w = out.append
    ts, host, ver, cfg = index.get("timestamps") or {}, index.get("host") or {}, index.get("versions") or {}, \
        index.get("config") or {}
    v = index["verdict"]
    w(f"# Benchmark summary: batch {index['batch']}")
    w("")
    if index.get("smoke"):
        w("**Smoke run: checks the pipeline, too short to mean anything.** Its figures are not results.")
        w("")
    w(f"Date {ts.get('start') or '?'} to {ts.get('end') or '?'} (UTC), mode {index.get('mode') or '?'}. "
      f"Host {host.get('hostname') or '?'}: {host.get('cpu_model') or 'unknown CPU'}, {host.get('cores') or '?'} cores, "
      f"kernel {host.get('kernel') or '?'}.")
    commit = (ver.get("git_commit") or "?")[:12] + (" (dirty)" if ver.get("git_dirty") else "")
    w(f"Versions: {ver.get('compiler') or 'cc ?'}; libuv {ver.get('libuv') or '?'}, llhttp {ver.get('llhttp') or '?'}, "
      f"sqlite {ver.get('sqlite') or '?'}, ck {ver.get('ck') or '?'}, jansson {ver.get('jansson') or '?'}; commit {commit}.")
    elc = index.get("equal_load_config") or {}
    gc = cfg.get("group_commit")
    w(f"Configuration: server CPUs {cfg.get('server_cpus') or '?'} (server threads: {cfg.get('server_threads') or '?'}"
      f"{'' if cfg.get('actor_workers') is None else ', actor workers: ' + str(cfg.get('actor_workers'))}), "
      + (f"loadgen CPUs {cfg.get('loadgen_cpus') or '?'} (loadgen threads: {cfg.get('wrk_threads') or '?'}), "
         if not cfg.get("loadgen_hosts") else
         f"load from {len(cfg['loadgen_hosts'])} hosts over ssh ({', '.join(cfg['loadgen_hosts'])}; agent CPUs "
         f"{cfg.get('agent_cpus') or 'all'}; start skew <= {cfg.get('max_start_skew_ms')} ms), ")
      + f"{cfg.get('wrk_conns') or '?'} connections, probe {known(cfg.get('probe_warmup_sec'))}+"
      f"{known(cfg.get('probe_sec'))} s closed "
      f"loop x {index.get('repeats') or 1} per server (interleaved), sustain {known(cfg.get('warmup_sec'))}+"
      f"{known(cfg.get('measure_sec'))} s at SAT_RATIO {known(index.get('sat_ratio'))} x saturation, equal load "
      f"{known(elc.get('warmup_sec'))}+{known(elc.get('measure_sec'))} s, POST commits: "
      f"{'each alone (group commit off)' if gc in (None, 1) else f'up to {gc} per transaction in actor-server (group commit), each alone in async-server'}.")
    w("")
    w("Topology: " + "; ".join(scaling.topology(_config_of(index, sv), sv) for sv in scaling.SERVERS) + ".")
    w("")
    head = v["headline"][len(v["overall"]):] if v["headline"].startswith(v["overall"]) else ": " + v["headline"]
    w(f"**Verdict: {v['overall']}**{' (smoke run, not a result)' if index.get('smoke') else ''}{head}")
    w("")
    w("## How each scenario was decided")
    w("")
    for s in index["scenarios"]:
        w("- " + decision_words(s, index))
    w("")
    w("## Saturation probes (closed loop, interleaved actor, async, actor, ...)")
    w("")
    w("| scenario | actor req/s (median) | async req/s (median) | ratio (median of pairs) | range | pairs used | verdict | excluded |")
    w("| --- | ---: | ---: | ---: | --- | ---: | --- | --- |")
    for s in index["scenarios"]:
        med = [s["saturation_median_rps"]["actor"], s["saturation_median_rps"]["async"]]
        rng = f"{n(s['ratio_min'], 3)}-{n(s['ratio_max'], 3)}" if is_num(s.get("ratio_min")) else "n/a"
        excl = "; ".join(f"pair {e['repeat']}: " + ", ".join(sorted({f"{r['server']} {r['flag']}" for r in e["reasons"]}))
                         for e in s.get("excluded_pairs") or []) or "none"
        ratio = n(s["ratio"], 3) if s.get("basis") == "saturation_rps" else f"{n(s['saturation_ratio'], 3)} (not used)"
        w(f"| {s['scenario']} | {n(med[0])} | {n(med[1])} | {ratio} | {rng} | {s['pairs_used']} of {s['pairs_total']} | "
          f"{s['verdict']}{'' if s['counts_for_overall'] else ' (info)'}{', fragile' if s.get('fragile') else ''} | {excl} |")
    w("")
    w("## Each server at its own saturation")
    w("")
    w("| scenario | actor req/s | async req/s | p99 actor | p99 async | CPU actor | CPU async | req/CPU-s actor | "
      "req/CPU-s async | loadgen CPU actor | loadgen CPU async | validity |")
    w("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for s in index["scenarios"]:
        a, b = s["actor_result"], s["async_result"]
        w(f"| {s['scenario']} | {n((a or {}).get('sustained_rps'))} | {n((b or {}).get('sustained_rps'))} | "
          f"{lat(a, 'latency_p99_ms')} | {lat(b, 'latency_p99_ms')} | {u((a or {}).get('server_cpu_pct'), 1, '%')} | "
          f"{u((b or {}).get('server_cpu_pct'), 1, '%')} | {n((a or {}).get('req_per_cpu_sec'))} | "
          f"{n((b or {}).get('req_per_cpu_sec'))} | {u((a or {}).get('loadgen_cpu_pct'), 1, '%')} | "
          f"{u((b or {}).get('loadgen_cpu_pct'), 1, '%')} | actor: {validity(a)}; async: {validity(b)} |")
    w("")
    w(f"req/s is the rate sustained at SAT_RATIO x that server's own first probe; p99 is coordinated-omission "
      f"corrected latency; CPU is percent of one CPU. {LOADGEN_MARK} marks a latency limited by the load generator "
      f"(loadgen-bound: its CPU >= {rules.LOADGEN_CPU_PCT:g}% or its own send lag p99 > {rules.SEND_LAG_P99_MS:g} ms "
      f"and > {rules.OWN_LAG_SHARE:.0%} of its send lag p99): "
      "it measures the load generator's queue, not the server.")
    w("")
    w("## Equal load (both servers at SAT_RATIO x the slower one's median saturation)")
    w("")
    per = interval_words(index)
    w(f"| scenario | rate req/s | p99 actor | p99 async | p99 per {per} actor | p99 per {per} async | p99.9 actor | "
      "p99.9 async | CPU actor | CPU async | "
      "req/CPU-s actor | req/CPU-s async | handler p99 actor | handler p99 async | send lag p99 actor | "
      "send lag p99 async | validity |")
    w("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for s in index["scenarios"]:
        e = s.get("equal_load")
        if not e:
            continue
        a, b = e["actor"], e["async"]
        w(f"| {s['scenario']} | {n(e['rate_rps'])} | {lat(a, 'latency_p99_ms')} | {lat(b, 'latency_p99_ms')} | "
          f"{intervals(a)} | {intervals(b)} | {lat(a, 'latency_p99_9_ms')} | {lat(b, 'latency_p99_9_ms')} | {u((a or {}).get('server_cpu_pct'), 1, '%')} | "
          f"{u((b or {}).get('server_cpu_pct'), 1, '%')} | {n((a or {}).get('req_per_cpu_sec'))} | "
          f"{n((b or {}).get('req_per_cpu_sec'))} | {u((a or {}).get('handler_p99_us'), 0, 'us')} | "
          f"{u((b or {}).get('handler_p99_us'), 0, 'us')} | {lag(a)} | "
          f"{lag(b)} | actor: {validity(a)}; async: {validity(b)} |")
    if any(s.get("equal_load") for s in index["scenarios"]):
        w("")
        w("Send lag is the time a request was written minus the time it was due; \"own\" is the part that was the "
          "load generator's, not time every connection spent waiting for the server's response (SPEC.md section 6). "
          f"p99 per {per}: the p99 of each {per} of the window, median (min-max); a tail made in a few seconds "
          "(a pause of the server or of the host) has a low median and a high maximum, and then the window's p99 "
          "says more about those seconds than about the server.")
    out.extend(sweep.markdown_lines(index))
    out.extend(scaling.markdown_lines(index))
    if index.get("failures"):
        w("")
        w("## Failures")
        w("")
        for f in index["failures"]:
            w(f"- {f['run']}: {f['failure']}")
    w("")
    th = index.get("thresholds") or {}
    w(f"Validity (SPEC.md section 8): a probe counts when the server reached {th.get('saturated_cpu_pct')}% CPU, "
      f"the load generator did not limit it, it had no errors and others used at most {th.get('other_load_pct')}% "
      "of the server CPUs; a constant-rate run counts when it held its rate within "
      f"{n(100 * (th.get('rate_held_fraction') or 0), 0)}%, had no errors, was not crowded and the load generator "
      "kept its schedule.")
    return "\n".join(out) + "\n"


def decision_words(s, index):
    head = f"{s['scenario']} ({s['actor']} vs {s['async']})"
    info = "" if s["counts_for_overall"] else "; informational, not part of the overall verdict"
    if s["verdict"] == "N/A":
        return f"{s['scenario']}: N/A, only one of {s['actor']} and {s['async']} was run."
    if s["verdict"] == "ERROR":
        return f"{head}: ERROR: {'; '.join(s['errors']) or 'no comparable figure'}{info}."
    if s["verdict"] == "INCONCLUSIVE":
        return (f"{head}: INCONCLUSIVE: {' '.join(s['reasons'])}. Remedy: {'; '.join(s['remedies']) or 're-run'}"
                f"{info}.")
    text = f"{head}: {s['verdict']}{', fragile' if s.get('fragile') else ''}, ratio {n(s['ratio'], 3)} on "
    if s["basis"] == "saturation_rps":
        text += (f"saturation req/s, the median of {s['pairs_used']} interleaved probe pair"
                 f"{'' if s['pairs_used'] == 1 else 's'} "
                 f"({', '.join(n(r, 3) for r in s['pair_ratios'])}; range {n(s['ratio_min'], 3)}-{n(s['ratio_max'], 3)})")
        if s.get("basis_reason"):
            text += f"; {s['basis_reason']}"
        if s.get("fragile"):
            text += f"; the range crosses the target {s['target_ratio']:g}, so one repeat could have decided otherwise"
    else:
        text += (f"req/CPU-s at equal load ({n(s['actor_value'])} vs {n(s['async_value'])}), because "
                 f"{s['basis_reason']}")
    return text + info + "."


def write(batch_dir, target=None):
    """Writes BATCH_DIR/index.json and summary.md; returns the index."""
    index = build_index(batch_dir, target)
    for name, text in (("index.json", json.dumps(index, indent=1) + "\n"), ("summary.md", render_markdown(index))):
        tmp = os.path.join(batch_dir, name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, os.path.join(batch_dir, name))
    return index
