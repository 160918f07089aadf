"""summary: a batch folder -> index.json (every run, each comparison's decision with its
interval, a league table when several servers meet one baseline, the overall verdict) and
summary.md (the same in words and tables).
Re-runnable on old batches (results written by an older runner are re-judged by today's
rules); reads only results/<batch>/ and never runs a benchmark.
Invariant: summary.md is rendered from index.json alone, so the two cannot disagree.
"""
import datetime
import json
import os

from . import atomic, batch, calibration, canary, cost, ladder, matrix, ran, rules, scaling, stats, sweep, threads, verdict
from .fmt import LOADGEN_MARK, STATIONARY_MARK, known, num, pct, plural, with_unit
from .rules import is_num

SCHEMA = 3
BRIEF = ["run", "server", "scenario", "kind", "repeat", "failure", "saturation_rps", "target_rps",
         "sustained_rps", "latency_p50_ms", "latency_p90_ms", "latency_p99_ms", "latency_p99_9_ms",
         "latency_max_ms", "server_cpu_pct", "req_per_cpu_sec", "server_rss_mb", "handler_p99_us",
         "loadgen_cpu_pct", "send_lag_p99_ms", "send_lag_own_p99_ms", "requests_waited_for_connection",
         "server_cpus_busy_pct", "server_cpus_other_pct", "server_cpus_steal_pct", "errors_total",
         "server_threads", "loadgen_threads", "server_processes", "saturated_by", "validity", "flags", "problems"]
HANDLER_SPAN = ("handler p99 is each server's own span from a parsed request to its rendered response: for "
                "actor-server it includes every mailbox hop (router, middleware and store actors), for "
                "async-server it is one function call; it says where a server spends its time, and is not "
                "comparable across the two architectures")


def brief(run):
    """The figures of RUN an index needs for its tables (None for no run)."""
    if run is None:
        return None
    out = {k: run.get(k) for k in BRIEF}
    probe = run.get("probe") or {}
    out["probe"] = {k: probe.get(k) for k in ("rps", "server_cpu_pct", "loadgen_cpu_pct", "req_per_cpu_sec",
                                              "server_threads", "loadgen_threads", "saturated_by",
                                              "saturation_reason", "validity")} if probe else None
    out["round"] = batch.round_of(run)
    out["latency_by_loadgen"] = bool((run.get("validity") or {}).get("sustain_loadgen_bound"))
    # the constant-rate window's episodes (rules.stationarity), in words; None when stationary or not judged
    st = rules.stationarity(run) if run.get("sustained_rps") is not None else {}
    out["latency_not_stationary"] = rules.stationarity_reason(st) if st.get("stationary") is False else None
    iv = run.get("latency_p99_intervals")
    out["latency_p99_intervals"] = {k: v for k, v in iv.items() if k != "p99_ms"} if isinstance(iv, dict) else None
    return out


def _ratio(a, b):
    return round(a / b, 3) if is_num(a) and is_num(b) and b > 0 else None


def _valid_probe_rps(runs):
    return [r["saturation_rps"] for r in runs if r and not rules.probe_problems(r) and is_num(r.get("saturation_rps"))]


def comparison(b, group, comp, target, level, floors=None):
    """index.json's entry for one comparison COMP ({candidate, baseline, decides}) of GROUP;
    FLOORS: the host's noise floors of the scenario (calibration.floors), or None."""
    sc, cand, base = group["scenario"], comp["candidate"], comp["baseline"]
    cp, bp = b.probes(cand, sc), b.probes(base, sc)
    ce, be = b.equal(cand, sc), b.equal(base, sc)
    d = verdict.decide(sc, cand, base, cp, bp, ce, be, target, level, floors)
    # the order of the counted pairs (matrix.round_order balances it; a batch with a drawn order may not be)
    used = set(d.get("pair_rounds") or []) or None
    ob = matrix.order_balance(b.matrix.get("rounds"), sc, cand, base,
                              "equal" if d.get("basis") == "req_per_cpu_sec" else "probe", used)
    d["order_balance"] = ob
    if ob["balanced"] is False:
        d["reasons"] = list(d.get("reasons") or []) + [
            f"order unbalanced: {cand} ran first in {ob['candidate_first']} of the {ob['rounds']} counted rounds "
            "(a host that drifts within a round reads as a difference between the servers)"]
    rounds = sorted(set(cp) | set(bp))
    all_pairs = [_ratio(verdict.probe_rps(cp.get(r)), verdict.probe_rps(bp.get(r))) for r in rounds]
    eq_rounds = sorted(set(ce) | set(be))
    first = eq_rounds[0] if eq_rounds else None
    ea, eb = ce.get(first), be.get(first)
    eqf = verdict.equal_figure(ce, be, level)
    sa, sb = b.saturation_run(cand, sc), b.saturation_run(base, sc)
    d.update({
        "decides": bool(comp.get("decides")), "target_ratio": target,
        "all_pairs_median_ratio": verdict.round3(verdict.median([r for r in all_pairs if r is not None])),
        "saturation_median_rps": {"candidate": b.median_saturation(cand, sc),
                                  "baseline": b.median_saturation(base, sc)},
        "noise": {"candidate": verdict.round3(stats.noise(_valid_probe_rps(cp.values()))),
                  "baseline": verdict.round3(stats.noise(_valid_probe_rps(bp.values())))},
        "candidate_run": (sa or {}).get("run"), "baseline_run": (sb or {}).get("run"),
        "candidate_result": brief(sa), "baseline_result": brief(sb),
        "rounds": rounds,
        "probes": {"candidate": [brief(cp.get(r)) for r in rounds], "baseline": [brief(bp.get(r)) for r in rounds]},
        "equal_load": None if not eq_rounds else {
            "rate_rps": (ea or {}).get("target_rps") or (eb or {}).get("target_rps"),
            "rounds": eq_rounds, "candidate_run": (ea or {}).get("run"), "baseline_run": (eb or {}).get("run"),
            "candidate": brief(ea), "baseline": brief(eb),
            "p99_ratio": _ratio((ea or {}).get("latency_p99_ms"), (eb or {}).get("latency_p99_ms")),
            "req_per_cpu_sec_ratio": eqf["ratio"], "ci_low": eqf["ci_low"], "ci_high": eqf["ci_high"],
            "ci_level": level, "pairs_used": eqf["pairs_used"], "pairs_total": eqf["pairs_total"]},
    })
    return d


def league(b, comparisons, selection):
    """The league tables (one per scenario whose group has more than two servers, or every
    scenario of a --servers/--baseline batch): each server's median saturation req/s, its
    req/CPU-s and p99 at equal load, and its ratio to the baseline with its interval."""
    out = []
    for g in b.groups:
        if not g["comparisons"] or (len(g["servers"]) <= 2 and selection != "league"):
            continue
        sc = g["scenario"]
        bases = sorted({c["baseline"] for c in g["comparisons"]})
        for base in bases:
            rows = []
            for name in [base] + [c["candidate"] for c in g["comparisons"] if c["baseline"] == base]:
                eq = b.equal(name, sc)
                e = eq.get(min(eq)) if eq else None
                c = next((x for x in comparisons if x["scenario"] == sc and x["candidate"] == name
                          and x["baseline"] == base), None)
                rows.append({"server": name, "saturation_rps": b.median_saturation(name, sc),
                             "req_per_cpu_sec": (e or {}).get("req_per_cpu_sec"),
                             "latency_p99_ms": (e or {}).get("latency_p99_ms"),
                             "equal_valid": e is not None and not rules.sustain_problems(e),
                             "ratio": 1.0 if name == base else (c or {}).get("ratio"),
                             "ci_low": None if name == base else (c or {}).get("ci_low"),
                             "ci_high": None if name == base else (c or {}).get("ci_high"),
                             "basis": None if name == base else (c or {}).get("basis"),
                             "verdict": None if name == base else (c or {}).get("verdict")})
            out.append({"scenario": sc, "baseline": base, "rows": rows})
    return out


def host_steal(runs):
    """The hypervisor's steal on the server CPUs over the batch's measured windows: mean and max
    percent of one CPU (None when no window recorded it)."""
    vals = []
    for r in runs:
        for ph in ((r.get("probe") or {}), r if r.get("sustained_rps") is not None else {}):
            if is_num(ph.get("server_cpus_steal_pct")):
                vals.append(ph["server_cpus_steal_pct"])
    if not vals:
        return None
    return {"mean_pct": round(sum(vals) / len(vals), 2), "max_pct": round(max(vals), 2), "windows": len(vals)}


def build_index(batch_dir, target=None, generated=None):
    """index.json's document for BATCH_DIR."""
    b = batch.Batch(batch_dir)
    m = b.matrix
    if target is None:
        target = m.get("target_ratio", 0.5)
    level = m.get("ci_level") or stats.CI_LEVEL
    runs = b.runs
    first_host = next((r for r in runs if r.get("host")), {})
    cal_path = calibration.path_for(os.path.dirname(os.path.abspath(batch_dir)), calibration.host_name(first_host))
    cal = None if m.get("calibrate") else calibration.load(cal_path)
    mode = m.get("mode") or next((r["config"].get("mode") for r in runs if r.get("config")), None)
    comparisons = [comparison(b, g, c, target, level, calibration.floors(cal, g["scenario"], mode))
                   for g in b.groups for c in g["comparisons"]]
    selection = m.get("selection") or "default"
    required = batch.default_decides() if selection == "default" else ()
    v = verdict.overall(comparisons, target, smoke=(mode == "smoke"), required=required)
    v.update({"ci_level": level,
              "per_comparison": [{k: c[k] for k in ("scenario", "candidate", "baseline", "decides", "verdict",
                                                    "ratio", "ci_low", "ci_high", "basis", "basis_source")}
                                 for c in comparisons]})
    sat = b.of_kind("saturation")
    probes = [r for r in b.of_kind("probe") if not batch.is_scaling_run(r)]
    eq = b.of_kind("equal-load")
    failures = [{"run": f"{name}-{g['scenario']}", "failure": _no_result(batch_dir, f"{name}-{g['scenario']}")}
                for g in b.groups for name in g["servers"] if b.saturation_run(name, g["scenario"]) is None]
    failures += [{"run": r.get("run"), "failure": r["failure"]} for r in runs if r.get("failure")]
    first = next((r for r in sat + runs if not r.get("failure")), runs[0] if runs else None)
    starts = [r["timestamps"]["start"] for r in runs if (r.get("timestamps") or {}).get("start")]
    ends = [r["timestamps"]["end"] for r in runs if (r.get("timestamps") or {}).get("end")]
    cfg_keys = ("mode", "server_cpus", "loadgen_cpus", "server_cpu_count", "loadgen_cpu_count", "cpus_disjoint",
                "server_threads", "actor_workers", "group_commit", "wrk_conns", "wrk_threads", "loadgen_tick_us",
                "probe_warmup_sec", "probe_sec", "warmup_sec", "measure_sec", "sat_ratio", "seed_users",
                "server_addr", "loadgen_hosts", "agent_cpus", "max_start_skew_ms", "cpu_plan", "oversubscribed")
    return {
        "schema": SCHEMA, "batch": b.name,
        "generated": generated or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "mode": mode, "smoke": mode == "smoke", "target_ratio": target, "ci_level": level,
        "sat_ratio": m.get("sat_ratio", ((first or {}).get("config") or {}).get("sat_ratio")),
        "repeats": m.get("repeats", 1), "min_valid_pairs": m.get("min_valid_pairs"), "seed": m.get("seed"),
        "selection": selection, "baseline": m.get("baseline"),
        "groups": b.groups,
        "timestamps": {"start": m.get("started") or (min(starts) if starts else None),
                       "end": m.get("ended") or (max(ends) if ends else None)},
        "host": (first or {}).get("host"), "versions": (first or {}).get("versions"),
        "host_steal": host_steal(runs),
        "noise_floor": calibration.summary_of(cal, cal_path, mode),
        "calibrate": bool(m.get("calibrate")),
        "host_speed": {"canary_median_us": b.canary_median_us, "slow_share": canary.HOST_SLOW_SHARE,
                       "method": canary.METHOD,
                       "slow_runs": [r.get("run") for r in runs if (r.get("host_speed") or {}).get("slow")]},
        "loadgen_hosts": (first or {}).get("loadgen_hosts"),
        "config": None if first is None else {
            **{k: (first.get("config") or {}).get(k) for k in cfg_keys},
            # the batch's group commit: the actor server's (async-server always commits alone)
            "group_commit": max([(r.get("config") or {}).get("group_commit") or 1 for r in runs] or [1])},
        "equal_load_config": {"warmup_sec": m.get("equal_load_warmup_sec"),
                              "measure_sec": m.get("equal_load_measure_sec")},
        "thresholds": {"saturated_cpu_pct": rules.SATURATED_CPU_PCT, "loadgen_cpu_pct": rules.LOADGEN_CPU_PCT,
                       "send_lag_p99_ms": rules.SEND_LAG_P99_MS, "own_lag_share": rules.OWN_LAG_SHARE,
                       "waited_fraction": rules.WAITED_FRACTION,
                       "other_load_pct": rules.OTHER_LOAD_PCT, "rate_held_fraction": rules.RATE_HELD_FRACTION,
                       "stationary_p99_factor": rules.STATIONARY_P99_FACTOR,
                       "stationary_p99_floor_ms": rules.STATIONARY_P99_FLOOR_MS,
                       "stationary_rps_fraction": rules.STATIONARY_RPS_FRACTION,
                       "stationary_run_intervals": rules.STATIONARY_RUN,
                       "stationary_min_intervals": rules.STATIONARY_MIN_INTERVALS,
                       "min_pairs_for_interval": verdict.MIN_PAIRS,
                       "serial_thread_pct": rules.SERIAL_THREAD_PCT, "plateau_gain": rules.PLATEAU_GAIN,
                       "loadgen_thread_pct": rules.LOADGEN_THREAD_PCT},
        "verdict": v, "comparisons": comparisons,
        "league": league(b, comparisons, selection) or None,
        "reruns": m.get("reruns") or [],
        "failures": failures,
        "runs": sat, "probe_runs": probes, "equal_load_runs": eq,
        "sweep": sweep.section(b, comparisons),
        "scaling": scaling.section(runs, m, b.groups),
        "servers_ran": ran.section(runs),
        "cost": cost.section(batch_dir, comparisons),
        "ladder": ladder.section(batch_dir, comparisons, cost.load(batch_dir)),
    }


# ---- summary.md ---------------------------------------------------------------------------

def send_lag_cell(r):
    """A brief's send lag p99, with the load generator's own part when it was measured."""
    text = with_unit((r or {}).get("send_lag_p99_ms"), 3, "ms")
    own = (r or {}).get("send_lag_own_p99_ms")
    return f"{text} (own {num(own, 3)} ms)" if is_num(own) and text != "n/a" else text


def latency_cell(r, key):
    """A latency of brief R, marked when the load generator limited it or its window was not
    stationary."""
    if r is None:
        return "no result"
    text = with_unit(r.get(key), 3, "ms")
    if text == "n/a":
        return text
    return text + (LOADGEN_MARK if r.get("latency_by_loadgen") else "") + (
        STATIONARY_MARK if r.get("latency_not_stationary") else "")


def not_stationary_notes(rows):
    """'<mark> not stationary: RUN: EPISODE' for every brief of ROWS whose window was not, or []."""
    return [f"{STATIONARY_MARK} not stationary, not the server's steady tail: {r.get('run')}: "
            f"{r['latency_not_stationary']}." for r in rows if r and r.get("latency_not_stationary")]


def intervals(r):
    """A brief's per-interval p99s: 'median M (A-B) ms', or n/a when not recorded."""
    iv = (r or {}).get("latency_p99_intervals") or {}
    if not is_num(iv.get("median_ms")):
        return "n/a"
    return f"{num(iv['median_ms'], 3)} ({num(iv.get('min_ms'), 3)}-{num(iv.get('max_ms'), 3)}) ms"


def interval_words(index):
    """The interval length of the batch's equal-load runs, as '1 s' (the first one known)."""
    for c in index["comparisons"]:
        for r in ((c.get("equal_load") or {}).get("candidate"), (c.get("equal_load") or {}).get("baseline")):
            iv = (r or {}).get("latency_p99_intervals") or {}
            if is_num(iv.get("interval_s")):
                return f"{iv['interval_s']:g} s"
    return "interval"


def validity(r):
    if r is None:
        return "no result"
    return "ok" if not r.get("flags") else ", ".join(r["flags"])


def ci_words(c, lo="ci_low", hi="ci_high", decimals=3):
    if not is_num(c.get(lo)) or not is_num(c.get(hi)):
        return "n/a"
    return f"{num(c[lo], decimals)}-{num(c[hi], decimals)}"


def _server_rows(index):
    """(scenario, server, saturation brief, equal-load brief) once per server and scenario, in
    comparison order."""
    seen, out = set(), []
    for c in index["comparisons"]:
        e = c.get("equal_load") or {}
        for role in ("candidate", "baseline"):
            key = (c["scenario"], c[role])
            if key in seen:
                continue
            seen.add(key)
            out.append((c["scenario"], c[role], c[f"{role}_result"], e.get(role)))
    return out


def topology_line(index):
    """'Topology: actor-server: ...; async-server: ...' for the built-in binaries the batch ran."""
    parts = []
    for binary in scaling.SERVERS:
        run = next((r for r in index.get("runs") or [] if (r.get("config") or {}).get("binary") == binary
                    or scaling.side_of(r.get("server")) == binary), None)
        if run:
            parts.append(scaling.topology(run.get("config") or {}, binary))
    return "Topology: " + "; ".join(parts) + "." if parts else ""


def noise_floor_line(index):
    """The host's noise floor beside the verdict, in one line."""
    nf = index.get("noise_floor") or {}
    if index.get("calibrate"):
        return ("Calibration batch (A/A: the baseline against itself under a second name): its pair ratios "
                "are added to the host's noise floor, results/calibration/<host>.json.")
    if not nf.get("file"):
        return "Noise floor: " + (nf.get("note") or "not recorded (a batch written before issue 35)") + "."
    parts = []
    for sc, by in sorted((nf.get("scenarios") or {}).items()):
        for basis, f in by.items():
            parts.append(f"{sc} {verdict.BASIS_NAME.get(basis, basis)}: a pair +/-{num(f['pair_sd_pct'], 1)}% (sd)"
                         + (f", a batch's centre +/-{num(f['centre_sd_pct'], 1)}%" if is_num(f.get('centre_sd_pct'))
                            else "") + f" ({f['batches']} A/A batches, {f['pairs']} pairs)")
    return (f"Noise floor of this host ({nf.get('mode')} A/A batches, {nf['file']}): " + ("; ".join(parts) or "empty")
            + ". The intervals include it (SPEC.md section 9).")


def render_markdown(index):
    out = []
    w = out.append
    ts, host, ver, cfg = index.get("timestamps") or {}, index.get("host") or {}, index.get("versions") or {}, \
        index.get("config") or {}
    v = index["verdict"]
    level = index.get("ci_level") or stats.CI_LEVEL
    lvl = f"{100 * level:g}%"
    w(f"# Benchmark summary: batch {index['batch']}")
    w("")
    if index.get("smoke"):
        w("**Smoke run: checks the pipeline, too short to mean anything.** Its figures are not results.")
        w("")
    w(f"**{v['headline']}**")
    w("")
    w(noise_floor_line(index))
    w("")
    w(f"How to read it: each ratio is candidate / baseline with its {lvl} confidence interval over the valid "
      "interleaved pairs; PASS when the whole interval is at or above the target, FAIL when it is below, "
      "INCONCLUSIVE when it crosses the target or too few pairs were valid (results/README.md).")
    w("")
    w(f"Date {ts.get('start') or '?'} to {ts.get('end') or '?'} (UTC), mode {index.get('mode') or '?'}. "
      f"Host {host.get('hostname') or '?'}: {host.get('cpu_model') or 'unknown CPU'}, {host.get('cores') or '?'} cores, "
      f"kernel {host.get('kernel') or '?'}"
      + (f"; steal on the server CPUs {num(index['host_steal']['mean_pct'], 2)}% mean, "
         f"{num(index['host_steal']['max_pct'], 2)}% max over {index['host_steal']['windows']} windows"
         if index.get("host_steal") else "") + ".")
    commit = (ver.get("git_commit") or "?")[:12] + (" (dirty)" if ver.get("git_dirty") else "")
    w(f"Versions: {ver.get('compiler') or 'cc ?'}; libuv {ver.get('libuv') or '?'}, llhttp {ver.get('llhttp') or '?'}, "
      f"sqlite {ver.get('sqlite') or '?'}, ck {ver.get('ck') or '?'}, jansson {ver.get('jansson') or '?'}; commit {commit}.")
    elc = index.get("equal_load_config") or {}
    gc = cfg.get("group_commit")
    w(f"Configuration: server CPUs {cfg.get('server_cpus') or '?'} (server threads, the {{threads}} each server is given: {cfg.get('server_threads') or '?'}"
      f"{'' if cfg.get('actor_workers') is None else ', actor workers: ' + str(cfg.get('actor_workers'))}), "
      + (f"loadgen CPUs {cfg.get('loadgen_cpus') or '?'} (loadgen threads: {cfg.get('wrk_threads') or '?'}), "
         if not cfg.get("loadgen_hosts") else
         f"load from {len(cfg['loadgen_hosts'])} hosts over ssh ({', '.join(cfg['loadgen_hosts'])}; agent CPUs "
         f"{cfg.get('agent_cpus') or 'all'}; start skew <= {cfg.get('max_start_skew_ms')} ms), ")
      + f"{cfg.get('wrk_conns') or '?'} connections, probe {known(cfg.get('probe_warmup_sec'))}+"
      f"{known(cfg.get('probe_sec'))} s closed loop x {index.get('repeats') or 1} rounds (each round every server "
      f"once, interleaved{', order balanced (ABBA) from seed ' + str(index['seed']) if index.get('seed') is not None else ''}), "
      f"sustain {known(cfg.get('warmup_sec'))}+{known(cfg.get('measure_sec'))} s at SAT_RATIO "
      f"{known(index.get('sat_ratio'))} x saturation, equal load {known(elc.get('warmup_sec'))}+"
      f"{known(elc.get('measure_sec'))} s, POST commits: "
      f"{'each alone (group commit off)' if gc in (None, 1) else f'up to {gc} per transaction in actor-server (group commit), each alone in async-server'}.")
    topo = topology_line(index)
    if topo:
        w("")
        w(topo)
    w("")
    w("## Verdict by comparison")
    w("")
    w(f"| scenario | candidate / baseline | compared on | candidate, median of the counted pairs | baseline, median of "
      f"the counted pairs | ratio | {lvl} CI | valid pairs | verdict | why |")
    w("| --- | --- | --- | ---: | ---: | ---: | --- | ---: | --- | --- |")
    for c in index["comparisons"]:
        why = "; ".join(c.get("errors") or c.get("reasons") or ([c["basis_reason"]] if c.get("basis_reason") else [])) \
            or "all pairs valid"
        sb = c.get("saturated_by") or {}
        past_one = [f"{plural(sb[k], 'probe')} saturated by {k} ({sb.get(k + '_reason')})" for k in ("thread", "plateau")
                    if sb.get(k)]
        if past_one:
            why += "; " + "; ".join(past_one)
        if c.get("remedies") and c["verdict"] != "PASS":
            why += ". Remedy: " + "; ".join(c["remedies"])
        w(f"| {c['scenario']} | {c['candidate']} / {c['baseline']} | "
          f"{verdict.BASIS_NAME.get(c.get('basis'), 'none')} | {num(c.get('candidate_value'))} | "
          f"{num(c.get('baseline_value'))} | {num(c.get('ratio'), 3)} | {ci_words(c)} | "
          f"{c['pairs_used']} of {c['pairs_total']} | {c['verdict']}{'' if c['decides'] else ' (info)'} | {why} |")
    w("")
    w(f"\"(info)\": reported, not part of the overall verdict. The ratio is the geometric mean of the valid pairs' "
      f"ratios, the centre of the interval ({(index['comparisons'][0].get('ci_method') if index['comparisons'] else None) or stats.METHOD}); an interval needs at least "
      f"{verdict.MIN_PAIRS} valid pairs.")
    w("")
    w("## Saturation probes (closed loop, every server once per round, interleaved)")
    w("")
    w(f"| scenario | candidate / baseline | candidate req/s, median of all its probes | baseline req/s, median of all "
      f"its probes | ratio of valid "
      f"pairs (verdict's) | {lvl} CI | valid pair ratios | median ratio of all pairs, valid or not | noise "
      "candidate | noise baseline | pairs left out |")
    w("| --- | --- | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: | --- |")
    for c in index["comparisons"]:
        med = c["saturation_median_rps"]
        used = c.get("basis") == "saturation_rps"
        excl = "; ".join(f"round {e['round']}: " + ", ".join(sorted({f"{r['server']} {r['flag']}" for r in e["reasons"]}))
                         for e in c.get("excluded_pairs") or []) or "none"
        w(f"| {c['scenario']} | {c['candidate']} / {c['baseline']} | {num(med['candidate'])} | {num(med['baseline'])} | "
          f"{num(c['ratio'], 3) if used else 'not used'} | {ci_words(c) if used else 'n/a'} | "
          f"{', '.join(num(r, 3) for r in c.get('pair_ratios') or []) or 'none'} | {num(c.get('all_pairs_median_ratio'), 3)} | "
          f"{pct(100 * c['noise']['candidate']) if is_num(c['noise']['candidate']) else 'n/a'} | "
          f"{pct(100 * c['noise']['baseline']) if is_num(c['noise']['baseline']) else 'n/a'} | {excl} |")
    w("")
    w("Noise: (max - min) / median of a server's valid probes. A pair counts only when both of its probes are valid "
      "(SPEC.md section 8).")
    if index.get("reruns"):
        w("")
        w(f"Re-runs ({len(index['reruns'])}): "
          + "; ".join(f"{r.get('scenario')} round {r.get('round')} ({', '.join(r.get('servers') or [])}): "
                      f"{r.get('why') or 'invalid run'}" for r in index["reruns"]) + ".")
    w("")
    w(f"## Each server at SAT_RATIO ({known(index.get('sat_ratio'))}) x its own saturation")
    w("")
    w("| scenario | server | offered req/s | sustained req/s | p99 | server CPU | req/CPU-s | loadgen CPU | validity |")
    w("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for sc, name, r, _e in _server_rows(index):
        w(f"| {sc} | {name} | {num((r or {}).get('target_rps'))} | {num((r or {}).get('sustained_rps'))} | "
          f"{latency_cell(r, 'latency_p99_ms')} | {with_unit((r or {}).get('server_cpu_pct'), 1, '%')} | "
          f"{num((r or {}).get('req_per_cpu_sec'))} | {with_unit((r or {}).get('loadgen_cpu_pct'), 1, '%')} | {validity(r)} |")
    w("")
    w(f"Each server is offered SAT_RATIO x its own first probe, so the rows are at different loads; compare latency "
      f"at equal load (next table). p99 is coordinated-omission corrected; CPU is percent of one CPU. "
      f"{LOADGEN_MARK} marks a latency limited by the load generator (its CPU >= {rules.LOADGEN_CPU_PCT:g}% or its "
      f"own send lag p99 > {rules.SEND_LAG_P99_MS:g} ms and > {rules.OWN_LAG_SHARE:.0%} of its send lag p99): it "
      "measures the load generator's queue, not the server.")
    for note in not_stationary_notes([r for _, _, r, _ in _server_rows(index)]):
        w("")
        w(note)
    if any(c.get("equal_load") for c in index["comparisons"]):
        per = interval_words(index)
        w("")
        w("## Equal load (every server at SAT_RATIO x the slowest one's median saturation)")
        w("")
        w(f"| scenario | server | rate req/s | p99 | p99 per {per}: median (min-max) | p99.9 | server CPU | req/CPU-s | "
          "handler p99 | send lag p99 | validity |")
        w("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
        for sc, name, _r, e in _server_rows(index):
            if e is None:
                continue
            w(f"| {sc} | {name} | {num(e.get('target_rps'))} | {latency_cell(e, 'latency_p99_ms')} | {intervals(e)} | "
              f"{latency_cell(e, 'latency_p99_9_ms')} | {with_unit(e.get('server_cpu_pct'), 1, '%')} | "
              f"{num(e.get('req_per_cpu_sec'))} | {with_unit(e.get('handler_p99_us'), 0, 'us')} | {send_lag_cell(e)} | "
              f"{validity(e)} |")
        w("")
        w(f"| scenario | candidate / baseline | p99 ratio | req/CPU-s ratio (valid pairs) | {lvl} CI | valid pairs |")
        w("| --- | --- | ---: | ---: | --- | ---: |")
        for c in index["comparisons"]:
            e = c.get("equal_load")
            if not e:
                continue
            w(f"| {c['scenario']} | {c['candidate']} / {c['baseline']} | {num(e.get('p99_ratio'), 3)} | "
              f"{num(e.get('req_per_cpu_sec_ratio'), 3)} | {ci_words(e)} | {e.get('pairs_used')} of {e.get('pairs_total')} |")
        w("")
        w("Send lag is the time a request was written minus the time it was due; \"own\" is the part that was the "
          "load generator's, not time every connection spent waiting for the server's response (SPEC.md section 6). "
          f"p99 per {per}: the p99 of each {per} of the window, median (min-max); a tail made in a few seconds "
          "(a pause of the server or of the host) has a low median and a high maximum. The p99 ratio is of the first "
          f"equal-load pair. The {HANDLER_SPAN}.")
        for note in not_stationary_notes([e for _, _, _, e in _server_rows(index)]):
            w("")
            w(note)
    if index.get("league"):
        for lg in index["league"]:
            w("")
            w(f"## League: {lg['scenario']}, against {lg['baseline']}")
            w("")
            w(f"| server | saturation req/s, median of all its probes | req/CPU-s at equal load | p99 at equal load | ratio to "
              f"{lg['baseline']} | {lvl} CI | compared on | verdict |")
            w("| --- | ---: | ---: | ---: | ---: | --- | --- | --- |")
            for row in lg["rows"]:
                w(f"| {row['server']} | {num(row['saturation_rps'])} | {num(row['req_per_cpu_sec'])} | "
                  f"{with_unit(row['latency_p99_ms'], 3, 'ms')}{'' if row['equal_valid'] else ' (not valid)'} | "
                  f"{num(row['ratio'], 3)} | {ci_words(row)} | "
                  f"{verdict.BASIS_NAME.get(row['basis'], 'baseline' if row['server'] == lg['baseline'] else 'none')} | "
                  f"{row['verdict'] or '-'} |")
    out.extend(sweep.markdown_lines(index))
    out.extend(scaling.markdown_lines(index))
    out.extend(threads.markdown_lines(index))
    out.extend(ran.markdown_lines(index))
    out.extend(cost.markdown_lines(index))
    out.extend(ladder.markdown_lines(index))
    if index.get("failures"):
        w("")
        w("## Failures")
        w("")
        for f in index["failures"]:
            w(f"- {f['run']}: {f['failure']}")
    w("")
    th = index.get("thresholds") or {}
    w(f"Validity (SPEC.md section 8): a probe counts when it saturated the server (its CPU at "
      f"{th.get('saturated_cpu_pct')}% of its CPUs, one thread at {th.get('serial_thread_pct')}% of a CPU, or a "
      "plateau: twice the connections gained nothing), the load generator did not limit it, it had no errors, "
      f"others used at most {th.get('other_load_pct')}% of the server CPUs and its window was stationary; a "
      "constant-rate run counts when it held its rate within "
      f"{num(100 * (th.get('rate_held_fraction') or 0), 0)}%, had no errors, was not crowded, was stationary, had a "
      "server CPU figure and the load generator kept its schedule.")
    if v.get("reason"):
        w("")
        w(f"Verdict in full: {v['overall']}: {v['reason']}.")
    return "\n".join(out) + "\n"


def _no_result(batch_dir, run):
    """The failure of a planned RUN without a result.json: never started, or started and
    unable to write it (a full disk: its runner.log or run_all.log says why)."""
    if os.path.isdir(os.path.join(batch_dir, run)):
        return "no result.json (the run started but did not write it: see its runner.log)"
    return "no result.json (runner.sh did not start the run)"


def write(batch_dir, target=None):
    """Writes BATCH_DIR/index.json and summary.md, both whole or neither (atomic.write_all:
    on an error neither file is left, not even an older one); returns the index."""
    index = build_index(batch_dir, target)
    atomic.write_all([(os.path.join(batch_dir, "index.json"), json.dumps(index, indent=1) + "\n"),
                      (os.path.join(batch_dir, "summary.md"), render_markdown(index))])
    return index
