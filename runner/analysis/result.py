"""result: builds a run's result.json (SPEC.md section 7) from the raw facts runner.sh
recorded in the run folder's facts.json, the load generator's JSON of each phase and the
/metrics scrapes. This is the one definition of result.json: every field is listed in
FIELDS, present from the start and null until known, so a failed run still writes a
complete document.

facts.json (written by runner.sh, field by field as the run goes):
  server, scenario, kind ("saturation", "probe", "equal-load" or "sweep"), batch, run, repeat,
  sweep (sweep steps: {step, steps, offered_rps, base_rps, fraction_of_base, rates_given}),
  config, host, versions, timestamps{start, end}, clk_tck, failure,
  phases{probe, plateau, sustain}: each {loadgen_json, histogram, cpu: [[clock_s, ticks] x 2],
      cpustat: [[busy, total, steal] x 2], wall_s, connections, tasks{server, loadgen}
      (runner/proc.sh proc_tree_sample texts x 2: the server's process tree and the load
      generator's threads; loadgen null with load from other hosts), target_rps (sustain),
      scrapes (sustain: [before, after] file names)}; plateau is the plateau probe (twice the
      connections, SPEC.md section 8),
  stop{rss_kb, code, killed, stop_s}.
With LOADGEN_HOSTS (load from other hosts, runner/remote.sh) also: loadgen_hosts[] (each
host's facts: destination, hostname, arch, cpu_model, cores, kernel, remote_dir, agent CPUs,
threads, connections, what was copied), and in each phase start_at_unix_s, clock[]
(agent_index, destination, offset_ms, rtt_ms, start_skew_ms, bound_ms) and agents[]
(agent_index, destination, cpu_count, threads, connections, json, hist, log, exit); the
phase's loadgen_json is then the agents' merge (loadgen merge), whose agents[] gives each
agent's own CPU, send lag, completions and errors.
Clock samples are /proc/uptime seconds; ticks are utime+stime (+ cutime+cstime) summed over
the server's process tree in CLK_TCK units; cpustat sums /proc/stat over the server's CPUs.
"""
import json
import os
import statistics

from . import atomic, promtext, rules, threads
from .rules import is_num

# The result.json fields in order (SPEC.md section 7 defines each).
FIELDS = [
    "server", "scenario", "kind", "batch", "run", "repeat", "sweep",
    "saturation_rps", "target_rps", "sustained_rps",
    "latency_p50_ms", "latency_p75_ms", "latency_p90_ms", "latency_p99_ms", "latency_p99_9_ms",
    "latency_p99_99_ms", "latency_max_ms", "latency_mean_ms", "latency_p99_intervals",
    "latency_p99_answered_ms",
    "throughput_intervals", "stationarity",
    "service_time_p50_ms", "service_time_p99_ms", "service_time_max_ms",
    "send_lag_p50_ms", "send_lag_p99_ms", "send_lag_max_ms", "send_lag_own_p99_ms",
    "send_lag_own_max_ms", "requests_waited_for_connection",
    "requests_completed", "measured_window_s", "server_cpu_window_s",
    "server_cpu_pct", "server_cpu_s", "req_per_cpu_sec", "server_rss_mb",
    "server_threads", "loadgen_threads", "server_processes", "saturated_by",
    "handler_p99_us", "handler_p50_us",
    "server_cpus_busy_pct", "server_cpus_other_pct", "server_cpus_steal_pct",
    "loadgen_cpu_pct", "loadgen_cpu_s", "loadgen_agents", "loadgen_hosts",
    "errors", "errors_total", "status_counts", "unexpected_status_counts", "in_flight_at_end",
    "requests_unanswered",
    "probe", "server_metrics", "server_exit",
    "config", "host", "versions", "timestamps", "validity", "flags", "problems", "failure",
]
VALIDITY = ["saturated", "loadgen_bound", "probe_loadgen_bound", "sustain_loadgen_bound",
            "rate_held", "clean", "quiet", "stationary"]


def _load_json(path):
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh, parse_constant=rules.json_null_constant)
    except (OSError, ValueError):
        return None


def _round(v, d):
    return round(v, d) if is_num(v) else None


def cpu_window(phase, clk_tck):
    """(cpu_pct, cpu_s, window_s) of the server over PHASE's two CPU samples, or Nones."""
    cpu = phase.get("cpu") or []
    if len(cpu) != 2 or not clk_tck:
        return None, None, None
    (t0, k0), (t1, k1) = cpu
    dt = t1 - t0
    if dt <= 0:
        return None, _round((k1 - k0) / clk_tck, 2), _round(dt, 2)
    return _round(100.0 * (k1 - k0) / clk_tck / dt, 2), _round((k1 - k0) / clk_tck, 2), _round(dt, 2)


def contention(phase, n_server_cpus, own_pct):
    """{server_cpus_busy_pct, server_cpus_other_pct, server_cpus_steal_pct} over PHASE: how busy
    the server's CPUs were (whoever ran), how much of that was not the server, and steal."""
    st = phase.get("cpustat") or []
    out = {"server_cpus_busy_pct": None, "server_cpus_other_pct": None, "server_cpus_steal_pct": None}
    if len(st) != 2:
        return out
    (b0, t0, s0), (b1, t1, s1) = st
    dt = t1 - t0
    if dt <= 0:
        return out
    busy = _round(100.0 * n_server_cpus * (b1 - b0) / dt, 2)
    out["server_cpus_busy_pct"] = busy
    out["server_cpus_steal_pct"] = _round(100.0 * n_server_cpus * (s1 - s0) / dt, 2)
    if is_num(own_pct):
        out["server_cpus_other_pct"] = _round(max(busy - own_pct, 0.0), 2)
    return out


def loadgen_pct(lg):
    """The load generator's CPU over its measured window, percent of one CPU."""
    if is_num(lg.get("loadgen_cpu_pct")):
        return _round(lg["loadgen_cpu_pct"], 2)
    cpu = (lg.get("loadgen_cpu_s") or {}).get("total")
    el = lg.get("elapsed_s")
    if is_num(cpu) and is_num(el) and el > 0:
        return _round(100.0 * cpu / el, 2)
    return None


def _lag(lg, key, which="send_lag_ms"):
    lag = lg.get(which)
    return lag.get(key) if isinstance(lag, dict) and is_num(lag.get(key)) else None


def _errors_total(lg):
    errs = lg.get("errors")
    return sum(v for v in errs.values() if is_num(v)) if isinstance(errs, dict) else None


def agents_figures(run_dir, phase, lg):
    """Each load agent of PHASE ([] for a local run): the merged JSON's agents[] (its own CPU
    from getrusage, send lag, completions, errors) joined by agent_index with the runner's
    facts (ssh destination, CPUs it could use, connections, clock offset) and the agent's own
    JSON (requests that waited for a connection). Validity is added by the caller."""
    facts = {a.get("agent_index"): a for a in phase.get("agents") or []}
    if not facts:
        return []
    clock = {c.get("agent_index"): c for c in phase.get("clock") or []}
    merged = {a.get("agent_index"): a for a in lg.get("agents") or []}
    out = []
    for i in sorted(facts, key=lambda k: (k is None, k)):
        f, m, c = facts[i], merged.get(i) or {}, clock.get(i) or {}
        own = _load_json(os.path.join(run_dir, f.get("json") or "")) or {}
        out.append({
            "agent_index": i, "destination": f.get("destination"), "hostname": m.get("hostname"),
            "cpu_count": f.get("cpu_count"), "threads": m.get("threads", f.get("threads")),
            "connections": f.get("connections"),
            "loadgen_cpu_pct": _round(m["loadgen_cpu_pct"], 2) if is_num(m.get("loadgen_cpu_pct")) else None,
            "send_lag_p99_ms": m.get("send_lag_p99_ms"), "send_lag_max_ms": m.get("send_lag_max_ms"),
            "send_lag_own_p99_ms": m.get("send_lag_own_p99_ms"),
            "requests_completed": m.get("requests_completed"), "errors_total": m.get("errors_total"),
            "requests_waited_for_connection": own.get("requests_waited_for_connection"),
            "elapsed_s": m.get("elapsed_s"),
            "clock_offset_ms": c.get("offset_ms"), "clock_rtt_ms": c.get("rtt_ms"),
            "start_skew_ms": c.get("start_skew_ms"), "start_skew_bound_ms": c.get("bound_ms"),
            "exit": f.get("exit"), "loadgen_bound": None,
        })
    return out


def p99_intervals(lg):
    """The load generator's per-interval corrected-latency p99s (--interval) summed up:
    {interval_s, intervals (those with responses), median_ms, min_ms, max_ms, p99_ms (each
    interval's, null where it had no response)}; None when the run did not record them."""
    iv = lg.get("latency_intervals")
    if not isinstance(iv, dict) or not isinstance(iv.get("p99_ms"), list) or not is_num(iv.get("interval_s")):
        return None
    p99s = [v if is_num(v) else None for v in iv["p99_ms"]]
    known = sorted(v for v in p99s if v is not None)
    return {"interval_s": iv["interval_s"], "intervals": len(known),
            "median_ms": _round(statistics.median(known), 3) if known else None,
            "min_ms": known[0] if known else None, "max_ms": known[-1] if known else None, "p99_ms": p99s}


def rps_intervals(lg):
    """The completions of each interval of the measured window (--interval) as a rate:
    {interval_s, intervals, median_rps, min_rps, max_rps, rps (each interval's completions
    over its length, the last one over what is left of elapsed_s when it is shorter)}; None
    when the run did not record them."""
    iv = lg.get("latency_intervals")
    if not isinstance(iv, dict) or not isinstance(iv.get("count"), list) or not is_num(iv.get("interval_s")):
        return None
    step, counts = iv["interval_s"], iv["count"]
    if step <= 0 or not counts or not all(is_num(c) for c in counts):
        return None
    lengths = [step] * len(counts)
    el = lg.get("elapsed_s")
    if is_num(el) and 0 < el - (len(counts) - 1) * step < step:
        lengths[-1] = el - (len(counts) - 1) * step
    rps = [_round(c / t, 1) for c, t in zip(counts, lengths)]
    return {"interval_s": step, "intervals": len(rps), "median_rps": _round(statistics.median(rps), 1),
            "min_rps": min(rps), "max_rps": max(rps), "rps": rps}


def phase_figures(run_dir, phase, clk_tck, n_srv):
    """The figures common to every phase: load generator JSON, server CPU, contention."""
    lg = _load_json(os.path.join(run_dir, phase.get("loadgen_json") or "")) or {}
    cpu_pct, cpu_s, window = cpu_window(phase, clk_tck)
    rps = lg.get("achieved_rps")
    fig = {
        "achieved_rps": rps, "requests_completed": lg.get("requests_completed"),
        "measured_window_s": lg.get("elapsed_s"),
        "server_cpu_pct": cpu_pct, "server_cpu_s": cpu_s, "server_cpu_window_s": window,
        "req_per_cpu_sec": round(rps / (cpu_pct / 100)) if is_num(rps) and is_num(cpu_pct) and cpu_pct > 0 else None,
        "loadgen_cpu_pct": loadgen_pct(lg),
        "loadgen_cpu_s": (lg.get("loadgen_cpu_s") or {}).get("total"),
        "loadgen_wall_s": phase.get("wall_s"),
        "send_lag_p50_ms": _lag(lg, "p50"), "send_lag_p99_ms": _lag(lg, "p99"),
        "send_lag_max_ms": _lag(lg, "max"),
        "send_lag_own_p99_ms": _lag(lg, "p99", "send_lag_own_ms"),
        "send_lag_own_max_ms": _lag(lg, "max", "send_lag_own_ms"),
        "requests_waited_for_connection": lg.get("requests_waited_for_connection"),
        "errors": lg.get("errors"), "errors_total": _errors_total(lg),
        "status_counts": lg.get("status_counts"),
        "unexpected_status_counts": lg.get("unexpected_status_counts"),
        "in_flight_at_end": lg.get("in_flight_at_end"),
        "connections_established": lg.get("connections_established"),
        "connections_failed": lg.get("connections_failed"),
        "latency": lg.get("latency_ms") or {}, "service": lg.get("service_time_ms") or {},
        "latency_answered": lg.get("latency_answered_ms") or {},
        "requests_unanswered": lg.get("requests_unanswered"),
        "latency_p99_intervals": p99_intervals(lg), "throughput_intervals": rps_intervals(lg),
        "have_loadgen": bool(lg), "agents": agents_figures(run_dir, phase, lg),
        "connections": phase.get("connections"),
    }
    tasks = phase.get("tasks") or {}
    fig["server_threads"], fig["server_processes"] = threads.figures(tasks.get("server"), clk_tck)
    fig["loadgen_threads"], _ = threads.figures(tasks.get("loadgen"), clk_tck)
    fig.update(contention(phase, n_srv, cpu_pct))
    return fig


def plateau_figures(run_dir, phase, clk, n_srv, n_lg):
    """The plateau probe's figures (SPEC.md section 8): {connections, rps, requests_completed,
    latency_p99_ms, server_cpu_pct, loadgen_cpu_pct, errors_total, server_cpus_other_pct,
    clean, quiet, loadgen_bound (its
    load generator limited it, judged as a probe), server_threads, loadgen_threads, json,
    histogram}; the caller adds gain and cpu_gain (against the probe)."""
    f = phase_figures(run_dir, phase, clk, n_srv)
    pl = {"connections": f["connections"], "rps": f["achieved_rps"], "requests_completed": f["requests_completed"],
          "latency_p99_ms": f["latency"].get("p99"), "server_cpu_pct": f["server_cpu_pct"],
          "loadgen_cpu_pct": f["loadgen_cpu_pct"], "errors": f["errors"], "errors_total": f["errors_total"],
          "unexpected_status_counts": f["unexpected_status_counts"],
          "server_threads": f["server_threads"], "loadgen_threads": f["loadgen_threads"],
          "server_cpus_other_pct": f["server_cpus_other_pct"],
          "json": phase.get("loadgen_json"), "histogram": phase.get("histogram")}
    by_ab, _ = rules.saturation(dict(pl, plateau=None), n_srv)
    pl["clean"] = rules.clean(pl) if f["have_loadgen"] else None
    pl["quiet"] = rules.quiet(pl, n_srv)
    pl["loadgen_bound"] = rules.loadgen_bound(pl, n_lg, closed_loop=True, server_saturated=by_ab is not None)
    return pl


def build(run_dir):
    """result.json's document for RUN_DIR (reads facts.json and the files it names)."""
    facts = _load_json(os.path.join(run_dir, "facts.json")) or {}
    res = {k: None for k in FIELDS}
    for k in ("server", "scenario", "kind", "batch", "run", "repeat", "sweep", "config", "host", "versions",
              "timestamps", "failure", "loadgen_hosts"):
        res[k] = facts.get(k)
    res["validity"] = {k: None for k in VALIDITY}
    cfg = facts.get("config") or {}
    n_srv = cfg.get("server_cpu_count") or 1
    n_lg = cfg.get("loadgen_cpu_count") or 1
    clk = facts.get("clk_tck") or 100
    phases = facts.get("phases") or {}
    val = res["validity"]
    problems = []

    probe_f = phases.get("probe")
    if probe_f:
        f = phase_figures(run_dir, probe_f, clk, n_srv)
        if f["have_loadgen"]:
            probe = {
                "rps": f["achieved_rps"], "requests_completed": f["requests_completed"],
                "latency_p50_ms": f["latency"].get("p50"), "latency_p99_ms": f["latency"].get("p99"),
                "latency_max_ms": f["latency"].get("max"),
                "server_cpu_pct": f["server_cpu_pct"], "server_cpu_s": f["server_cpu_s"],
                "req_per_cpu_sec": f["req_per_cpu_sec"],
                "loadgen_cpu_pct": f["loadgen_cpu_pct"], "loadgen_cpu_s": f["loadgen_cpu_s"],
                "loadgen_wall_s": f["loadgen_wall_s"],
                "errors": f["errors"], "errors_total": f["errors_total"],
                "unexpected_status_counts": f["unexpected_status_counts"],
                "connections_established": f["connections_established"],
                "connections_failed": f["connections_failed"],
                "server_cpus_busy_pct": f["server_cpus_busy_pct"],
                "server_cpus_other_pct": f["server_cpus_other_pct"],
                "server_cpus_steal_pct": f["server_cpus_steal_pct"],
                "connections": f["connections"], "server_processes": f["server_processes"],
                "server_threads": f["server_threads"], "loadgen_threads": f["loadgen_threads"],
                "json": probe_f.get("loadgen_json"), "histogram": probe_f.get("histogram"),
                "latency_p99_intervals": f["latency_p99_intervals"],
                "throughput_intervals": f["throughput_intervals"],
                "saturated_by": None, "saturation_reason": None, "plateau": None,
            }

            probe["stationarity"] = rules.stationarity(probe)
            def role(t):
                return threads.role(t, cfg, res["server"], t.get("pid"))
            by, why = rules.saturation(probe, n_srv, role)
            sat = None if by is None and why is None else by is not None
            plateau_f = phases.get("plateau")
            if plateau_f and sat is False:
                probe["plateau"] = plateau_figures(run_dir, plateau_f, clk, n_srv, n_lg)
                gain, cpu_gain = rules.plateau_figures(probe)
                probe["plateau"]["gain"], probe["plateau"]["cpu_gain"] = _round(gain, 4), _round(cpu_gain, 4)
                by, why = rules.saturation(probe, n_srv, role)
                sat = by is not None
            probe["saturated_by"], probe["saturation_reason"] = by, why
            res["saturated_by"] = by
            if f["agents"]:
                probe["loadgen_agents"] = rules.judge_agents(f["agents"], closed_loop=True, server_saturated=sat)
                bound = rules.agents_loadgen_bound(probe["loadgen_agents"])
            else:
                bound = rules.loadgen_bound(probe, n_lg, closed_loop=True, server_saturated=sat)
            probe["validity"] = {
                "saturated": sat, "loadgen_bound": bound,
                "clean": rules.clean(probe), "quiet": rules.quiet(probe, n_srv),
                "stationary": probe["stationarity"]["stationary"]}
            res["probe"] = probe
            res["saturation_rps"] = f["achieved_rps"]
            val["saturated"] = sat
            val["probe_loadgen_bound"] = probe["validity"]["loadgen_bound"]

    sus_f = phases.get("sustain")
    if sus_f:
        res["target_rps"] = sus_f.get("target_rps")
        f = phase_figures(run_dir, sus_f, clk, n_srv)
        if f["have_loadgen"]:
            lat, svc = f["latency"], f["service"]
            res.update({
                "sustained_rps": f["achieved_rps"], "requests_completed": f["requests_completed"],
                "measured_window_s": f["measured_window_s"], "server_cpu_window_s": f["server_cpu_window_s"],
                "latency_p50_ms": lat.get("p50"), "latency_p75_ms": lat.get("p75"),
                "latency_p90_ms": lat.get("p90"), "latency_p99_ms": lat.get("p99"),
                "latency_p99_9_ms": lat.get("p99_9"), "latency_p99_99_ms": lat.get("p99_99"),
                "latency_max_ms": lat.get("max"), "latency_mean_ms": lat.get("mean"),
                "latency_p99_intervals": f["latency_p99_intervals"],
                "latency_p99_answered_ms": f["latency_answered"].get("p99"),
                "throughput_intervals": f["throughput_intervals"],
                "service_time_p50_ms": svc.get("p50"), "service_time_p99_ms": svc.get("p99"),
                "service_time_max_ms": svc.get("max"),
                "server_cpu_pct": f["server_cpu_pct"], "server_cpu_s": f["server_cpu_s"],
                "req_per_cpu_sec": f["req_per_cpu_sec"],
                "loadgen_cpu_pct": f["loadgen_cpu_pct"], "loadgen_cpu_s": f["loadgen_cpu_s"],
                "errors": f["errors"], "errors_total": f["errors_total"],
                "status_counts": f["status_counts"], "unexpected_status_counts": f["unexpected_status_counts"],
                "in_flight_at_end": f["in_flight_at_end"],
                "server_threads": f["server_threads"], "loadgen_threads": f["loadgen_threads"],
                "server_processes": f["server_processes"],

                "requests_unanswered": f["requests_unanswered"],
            })
            for k in ("send_lag_p50_ms", "send_lag_p99_ms", "send_lag_max_ms", "send_lag_own_p99_ms",
                      "send_lag_own_max_ms", "requests_waited_for_connection",
                      "server_cpus_busy_pct", "server_cpus_other_pct", "server_cpus_steal_pct"):
                res[k] = f[k]
            val["rate_held"] = rules.rate_held(res["sustained_rps"], res["target_rps"])
            res["stationarity"] = rules.stationarity(res)
            if f["agents"]:
                res["loadgen_agents"] = rules.judge_agents(f["agents"], closed_loop=False)
                val["sustain_loadgen_bound"] = rules.agents_loadgen_bound(res["loadgen_agents"])
            else:
                val["sustain_loadgen_bound"] = rules.loadgen_bound(res, n_lg, closed_loop=False)
        scrapes = sus_f.get("scrapes") or []
        if len(scrapes) == 2 and all(os.path.exists(os.path.join(run_dir, s)) for s in scrapes):
            before, after = (promtext.read(os.path.join(run_dir, s)) for s in scrapes)
            res["handler_p99_us"] = promtext.handler_quantile_us(before, after, 0.99)
            res["handler_p50_us"] = promtext.handler_quantile_us(before, after, 0.5)
            res["server_metrics"] = {
                "window_requests_by_route": promtext.routes(before, after),
                "window_handled": promtext.handler_count(before, after),
                "window_overload_rejections": round(promtext.delta(before, after, "http_overload_rejections_total")),
                "store_users_after": round(promtext.total(after, "store_users")),
                "open_connections_after": round(promtext.total(after, "http_open_connections")),
                "scrapes": scrapes}

    # clean and quiet cover every measured phase; loadgen_bound is any phase's
    phase_docs = [p for p in (res["probe"], res if res["sustained_rps"] is not None else None) if p]
    cleans = [rules.clean(p) for p in phase_docs]
    quiets = [rules.quiet(p, n_srv) for p in phase_docs]
    val["clean"] = None if not cleans or None in cleans else all(cleans)
    val["quiet"] = None if not quiets or None in quiets else all(quiets)
    # stationary: false when any measured window was not, true when every one was judged so
    stations = [(p.get("stationarity") or {}).get("stationary") for p in phase_docs]
    val["stationary"] = False if False in stations else (True if stations and None not in stations else None)
    bounds = [val["probe_loadgen_bound"], val["sustain_loadgen_bound"]]
    val["loadgen_bound"] = None if all(b is None for b in bounds) else any(b is True for b in bounds)

    stop = facts.get("stop") or {}
    if is_num(stop.get("rss_kb")):
        res["server_rss_mb"] = round(stop["rss_kb"] / 1024, 1)
    if "code" in stop:
        res["server_exit"] = {"code": stop.get("code"), "killed": stop.get("killed", False),
                              "stop_s": stop.get("stop_s")}

    if res["probe"]:
        problems += [{"phase": "probe", "flag": fl, "reason": why} for fl, why in rules.probe_problems(res)]
    if res["sustained_rps"] is not None:
        problems += [{"phase": "sustain", "flag": fl, "reason": why} for fl, why in rules.sustain_problems(res)]
    if res["failure"]:
        problems = [{"phase": None, "flag": "failed", "reason": res["failure"]}]
    res["problems"] = problems
    res["flags"] = rules.run_flags(res)
    return res


def write(run_dir):
    """Builds and writes RUN_DIR/result.json whole (atomic.write_text: when it cannot be
    written, no result.json is left, not the one of an earlier phase); returns the document."""
    res = build(run_dir)
    atomic.write_text(os.path.join(run_dir, "result.json"), json.dumps(res, indent=1) + "\n")
    return res
