"""sweep: rate sweeps (SPEC.md section 14): the default rates and the sweep's base, every
step's figures, each server's knee and the knee ratio candidate / baseline (index.json's "sweep"), and
their sections in summary.md and report.html.
The knee rule lives here and nowhere else; its one threshold is KNEE_P99_MULTIPLE. Works on
result.json documents already judged by rules.py (summary.normalize); never runs a benchmark.
"""
import math
import os

from . import batch
from .fmt import LOADGEN_MARK, num, with_unit
from .render import esc, gnuplot, num_or_nan, safe_label, validity_html, write_dat
from .rules import is_num

# The default rates: these fractions of the base (the slower server's median saturation).
DEFAULT_FRACTIONS = tuple(round(0.1 * k, 1) for k in range(1, 13))
# A step keeps the knee rule while its p99 is below this multiple of the low-load p99 (the
# p99 of the lowest valid step). SPEC.md section 14 gives the reasons for 5.
KNEE_P99_MULTIPLE = 5.0
# The low-load p99 is taken only from a step at most this fraction of the base: a step above
# it may already queue, and a knee relative to a queued p99 says nothing (SPEC.md section 14).
LOW_LOAD_MAX_FRACTION = 0.3
# Flags that say a step's figures are not the server's (the load generator fell behind, other
# processes crowded the server CPUs, no CPU figure): such a step neither keeps nor breaks the
# rule. Every other flag (rate not held, errors, a failed run) breaks it.
UNKNOWN_FLAGS = ("loadgen-bound", "other load", "no CPU figure", "no sustain", "no result")
STEP_FIELDS = ("latency_p50_ms", "latency_p90_ms", "latency_p99_ms", "latency_p99_9_ms", "latency_max_ms",
               "server_cpu_pct", "req_per_cpu_sec", "handler_p99_us", "errors", "errors_total",
               "loadgen_cpu_pct", "send_lag_p99_ms", "send_lag_own_p99_ms", "requests_waited_for_connection",
               "server_cpus_other_pct")


def default_rates(base):
    """The default sweep rates for BASE req/s: DEFAULT_FRACTIONS x BASE, rounded to whole
    req/s, at least 1, ascending, without repeats. Raises ValueError unless BASE > 0."""
    if not is_num(base) or not base > 0:
        raise ValueError(f"the sweep's base must be a rate > 0 req/s, got {base!r}")
    out = []
    for frac in DEFAULT_FRACTIONS:
        rate = max(1, round(frac * base))
        if rate not in out:
            out.append(rate)
    return out


def base_rps(batch_dir, scenario):
    """The sweep's 100% for SCENARIO of BATCH_DIR: the lowest of its servers' median saturation
    over their probes (failed probes left out), rounded, at least 1 req/s. A server with no run
    is left out; raises ValueError when a server that ran has no saturation figure or no server
    ran."""
    b = batch.Batch(batch_dir)
    g = b.group(scenario)
    if g is None:
        raise ValueError(f"no scenario {scenario} in {batch_dir}")
    meds = []
    for name in g["servers"]:
        if not b.probes(name, scenario):
            continue
        med = b.median_saturation(name, scenario)
        if not is_num(med) or med <= 0:
            raise ValueError(f"{name} has no saturation figure on {scenario} (every probe failed or completed nothing)")
        meds.append(med)
    if not meds:
        raise ValueError(f"no probe of {scenario} in {batch_dir}")
    return max(1, round(min(meds)))


def step_doc(run):
    """The figures of one sweep step (a normalized result.json) for index.json."""
    sw = run.get("sweep") or {}
    val = run.get("validity") or {}
    offered = run.get("target_rps") if is_num(run.get("target_rps")) else sw.get("offered_rps")
    doc = {"step": sw.get("step"), "run": run.get("run"), "path": run.get("path"), "offered_rps": offered,
           "fraction_of_base": sw.get("fraction_of_base"), "achieved_rps": run.get("sustained_rps")}
    doc.update({k: run.get(k) for k in STEP_FIELDS})
    doc.update({"validity": val, "flags": run.get("flags") or [], "problems": run.get("problems") or [],
                "failure": run.get("failure"), "latency_by_loadgen": bool(val.get("sustain_loadgen_bound")),
                "p99_vs_base": None, "knee_rule": None})
    return doc


def _valid(step):
    p99 = step.get("latency_p99_ms")
    return not step.get("failure") and not step.get("flags") and is_num(p99) and p99 > 0


def _low_load(step):
    """True when STEP may give the low-load p99: at most LOW_LOAD_MAX_FRACTION of the base
    (or the base is not known)."""
    frac = step.get("fraction_of_base")
    return not is_num(frac) or frac <= LOW_LOAD_MAX_FRACTION + 1e-9


def judge(step, bound_ms):
    """(class, reason) of STEP under the knee rule with the p99 bound BOUND_MS: "ok" (valid and
    p99 < bound), "break" (the server did not keep the rule: failed run, rate not held,
    errors, p99 >= bound) or "unknown" (the step's figures are not the server's)."""
    if step.get("failure"):
        return "break", f"the run failed: {step['failure']}"
    flags = step.get("flags") or []
    why = {p.get("flag"): p.get("reason") for p in step.get("problems") or []}
    unknown = [f for f in flags if f in UNKNOWN_FLAGS]
    if unknown:
        return "unknown", "not the server's figures: " + "; ".join(why.get(f) or f for f in unknown)
    if flags:
        return "break", "; ".join(why.get(f) or f for f in flags)
    p99 = step.get("latency_p99_ms")
    if not is_num(p99) or bound_ms is None:
        return "unknown", "no p99" if not is_num(p99) else "no low-load p99 to compare with"
    if p99 >= bound_ms:
        return "break", f"p99 {p99:.3f} ms >= {bound_ms:.3f} ms ({KNEE_P99_MULTIPLE:g} x the low-load p99)"
    return "ok", f"p99 {p99:.3f} ms < {bound_ms:.3f} ms"


def knee(steps, saturation_rps=None):
    """The knee of one server's sweep (SPEC.md section 14). STEPS: step docs (annotated in place
    with p99_vs_base and knee_rule). The low-load p99 is the p99 of the lowest-rate valid step,
    when that step is at most LOW_LOAD_MAX_FRACTION of the base (otherwise there is no knee);
    walking up the offered rates, the knee is the highest step that keeps the rule (valid, p99
    below KNEE_P99_MULTIPLE x the low-load p99) before the first step that breaks it (rate not
    held, errors, failed, or p99 at or above the bound). Steps whose figures are not the
    server's (loadgen-bound, crowded) are skipped. lower_bound: no step broke the rule, so the
    knee is at least rate_rps."""
    ordered = sorted(steps, key=lambda s: s["offered_rps"] if is_num(s.get("offered_rps")) else float("inf"))
    out = {"rate_rps": None, "step": None, "run": None, "fraction_of_base": None, "fraction_of_saturation": None,
           "p99_ms": None, "base_p99_ms": None, "base_rate_rps": None, "base_step": None, "p99_bound_ms": None,
           "multiple": KNEE_P99_MULTIPLE, "lower_bound": False, "broke_at_rps": None, "broke_at_step": None,
           "broke_reason": None, "skipped_steps": [], "reason": None}
    valid = [s for s in ordered if _valid(s)]
    base = valid[0] if valid and _low_load(valid[0]) else None
    bound = KNEE_P99_MULTIPLE * base["latency_p99_ms"] if base else None
    if base:
        out.update({"base_p99_ms": base["latency_p99_ms"], "base_rate_rps": base["offered_rps"],
                    "base_step": base["step"], "p99_bound_ms": round(bound, 6)})
    top, broke = None, None
    for s in ordered:
        cls, why = judge(s, bound)
        s["knee_rule"] = {"class": cls, "reason": why}
        if base and is_num(s.get("latency_p99_ms")):
            s["p99_vs_base"] = round(s["latency_p99_ms"] / base["latency_p99_ms"], 3)
        if broke is not None:
            continue
        if cls == "break":
            broke = s
        elif cls == "ok":
            top = s
        else:
            out["skipped_steps"].append(s["step"])
    if broke is not None:
        out.update({"broke_at_rps": broke["offered_rps"], "broke_at_step": broke["step"],
                    "broke_reason": broke["knee_rule"]["reason"]})
    if top is None:
        if not valid:
            out["reason"] = "no valid step: every step was flagged or failed, so there is no low-load p99"
        elif base is None:
            out["reason"] = (f"no valid step at low load: the lowest valid one, step {valid[0]['step']} at "
                             f"{valid[0]['offered_rps']:,.0f} req/s, is above {100 * LOW_LOAD_MAX_FRACTION:g}% of the "
                             "base, where its p99 may already be queueing; every lower step was flagged or failed")
        else:
            out["reason"] = (f"step {broke['step']} at {broke['offered_rps']:,.0f} req/s broke the rule before any "
                             f"step kept it: {broke['knee_rule']['reason']}")
        return out
    out.update({"rate_rps": top["offered_rps"], "step": top["step"], "run": top["run"],
                "fraction_of_base": top.get("fraction_of_base"), "p99_ms": top["latency_p99_ms"],
                "lower_bound": broke is None})
    if is_num(saturation_rps) and saturation_rps > 0:
        out["fraction_of_saturation"] = round(top["offered_rps"] / saturation_rps, 3)
    skipped = (f"; steps {', '.join(str(k) for k in out['skipped_steps'])} skipped (not the server's figures)"
               if out["skipped_steps"] else "")
    if broke is None:
        out["reason"] = (f"no step broke the rule: the knee is at least {top['offered_rps']:,.0f} req/s (step "
                         f"{top['step']}, the highest that kept it){skipped}")
    else:
        out["reason"] = (f"step {top['step']} at {top['offered_rps']:,.0f} req/s is the highest that kept the rule; "
                         f"step {broke['step']} at {broke['offered_rps']:,.0f} req/s broke it: "
                         f"{broke['knee_rule']['reason']}{skipped}")
    return out


def knee_ratio(cand_knee, base_knee, candidate, baseline):
    """{knee_ratio, knee_ratio_kind, knee_ratio_min, knee_ratio_max, knee_ratio_reason}: the
    candidate's knee over the baseline's. kind is "exact", "at least" (only the candidate's
    knee is a lower bound) or "at most" (only the baseline's); the ratio is None when a knee is
    missing or both are lower bounds. Each true knee lies between its step and the step that
    broke the rule, so the true ratio lies in [candidate knee / baseline break, candidate break
    / baseline knee]: min and max (None where a break is missing: unbounded that way)."""
    out = {"knee_ratio": None, "knee_ratio_kind": None, "knee_ratio_min": None, "knee_ratio_max": None,
           "knee_ratio_reason": None}
    a, b = (cand_knee or {}).get("rate_rps"), (base_knee or {}).get("rate_rps")
    if not is_num(a) or not is_num(b) or b <= 0:
        missing = [f"{name}: {(k or {}).get('reason') or 'not swept'}" for name, k, v in
                   ((candidate, cand_knee, a), (baseline, base_knee, b)) if not is_num(v)]
        out["knee_ratio_reason"] = "no knee for " + "; ".join(missing)
        return out
    la, lb = cand_knee["lower_bound"], base_knee["lower_bound"]
    if la and lb:
        out["knee_ratio_reason"] = "neither server broke the rule within the sweep: both knees are lower bounds"
        return out
    kind = "at least" if la else "at most" if lb else "exact"
    a_hi, b_hi = cand_knee.get("broke_at_rps"), base_knee.get("broke_at_rps")
    out.update({
        "knee_ratio": round(a / b, 3), "knee_ratio_kind": kind,
        "knee_ratio_min": round(a / b_hi, 3) if is_num(b_hi) and b_hi > 0 else None,
        "knee_ratio_max": round(a_hi / b, 3) if is_num(a_hi) else None,
        "knee_ratio_reason": {"exact": "both knees found within the sweep",
                              "at least": f"{candidate} never broke the rule: its knee is a lower bound",
                              "at most": f"{baseline} never broke the rule: its knee is a lower bound"}[kind]})
    return out


def _server_sweep(runs, saturation_rps):
    """One server's sweep of one scenario: {server, steps, knee, steps_valid, steps_total} and
    the facts of its steps (base_rps, rates_given)."""
    steps = sorted((step_doc(r) for r in runs),
                   key=lambda s: s["offered_rps"] if is_num(s["offered_rps"]) else float("inf"))
    sw = next((r.get("sweep") for r in runs if r.get("sweep")), {}) or {}
    return ({"server": runs[0].get("server"), "steps": steps, "knee": knee(steps, saturation_rps),
             "steps_valid": sum(1 for s in steps if _valid(s)), "steps_total": len(steps)}, sw)


def section(b, comparisons=()):
    """index.json's "sweep" for the batch B (batch.Batch): per comparison of a swept scenario
    both servers' steps and knees and the knee ratio candidate / baseline, beside the
    comparison's own ratio (COMPARISONS: the index's, for that figure). None when the batch has
    no sweep step."""
    by = {}
    for run in b.runs:
        if run.get("kind") == "sweep":
            by.setdefault((run.get("scenario"), run.get("server")), []).append(run)
    if not by:
        return None
    first = next(iter(by.values()))[0]
    cfg = first.get("config") or {}
    out = {"knee_p99_multiple": KNEE_P99_MULTIPLE, "low_load_max_fraction": LOW_LOAD_MAX_FRACTION,
           "default_fractions": list(DEFAULT_FRACTIONS),
           "warmup_sec": cfg.get("warmup_sec"), "measure_sec": cfg.get("measure_sec"), "scenarios": []}
    for g in b.groups:
        sc = g["scenario"]
        for comp in g["comparisons"]:
            cand, base = comp["candidate"], comp["baseline"]
            if (sc, cand) not in by and (sc, base) not in by:
                continue
            c = next((x for x in comparisons if x["scenario"] == sc and x["candidate"] == cand
                      and x["baseline"] == base), {})
            entry = {"scenario": sc, "candidate": cand, "baseline": base, "base_rps": None, "rates_given": None,
                     "rates_rps": [], "servers": {}, "comparison_ratio": c.get("ratio"),
                     "comparison_basis": c.get("basis"),
                     "saturation_median_rps": {"candidate": b.median_saturation(cand, sc),
                                               "baseline": b.median_saturation(base, sc)}}
            for role, name in (("candidate", cand), ("baseline", base)):
                rs = by.get((sc, name))
                if not rs:
                    entry["servers"][role] = None
                    continue
                doc, sw = _server_sweep(rs, entry["saturation_median_rps"][role])
                entry["servers"][role] = doc
                entry["base_rps"] = entry["base_rps"] or sw.get("base_rps")
                if entry["rates_given"] is None:
                    entry["rates_given"] = sw.get("rates_given")
                entry["rates_rps"] = sorted(set(entry["rates_rps"]) | {s["offered_rps"] for s in doc["steps"]
                                                                       if is_num(s["offered_rps"])})
            entry.update(knee_ratio((entry["servers"].get("candidate") or {}).get("knee"),
                                    (entry["servers"].get("baseline") or {}).get("knee"), cand, base))
            out["scenarios"].append(entry)
    return out


# ---- summary.md -------------------------------------------------------------------------

def _knee_text(k):
    if not k or not is_num(k.get("rate_rps")):
        return "none"
    text = ("at least " if k["lower_bound"] else "") + f"{num(k['rate_rps'])} req/s"
    if is_num(k.get("fraction_of_saturation")):
        text += f" ({num(100 * k['fraction_of_saturation'])}% of its saturation)"
    return text


def _ratio_text(s):
    if not is_num(s.get("knee_ratio")):
        return "n/a"
    lo, hi = s.get("knee_ratio_min"), s.get("knee_ratio_max")
    rng = f" (range {num(lo, 3) if is_num(lo) else '0'}-{num(hi, 3) if is_num(hi) else 'unbounded'})"
    return ("" if s["knee_ratio_kind"] == "exact" else s["knee_ratio_kind"] + " ") + num(s["knee_ratio"], 3) + rng


def markdown_lines(index):
    """The lines of summary.md's "Latency under load" section, starting with a blank line
    (none when the batch has no sweep)."""
    sw = index.get("sweep")
    if not sw:
        return []
    out = []
    w = out.append
    w("")
    w("## Latency under load: rate sweeps")
    w("")
    if index.get("smoke"):
        w("**Smoke run: its sweep checks the pipeline, too short to mean anything.**")
        w("")
    w(f"The servers of a scenario at the same constant rates (by default 10%, 20%, ... 120% of the slowest server's "
      f"median saturation, the base), each step a fresh server, {sw.get('warmup_sec')} s warm-up + "
      f"{sw.get('measure_sec')} s measured. The knee (SPEC.md section 14) is the highest offered rate at which the "
      f"step was valid (rate held, no errors, not crowded, the load generator on schedule) and its p99 stayed below "
      f"{sw['knee_p99_multiple']:g} x the p99 of the lowest valid step, with no step below it breaking that rule. "
      "The knee ratio candidate / baseline is a second comparison beside the comparison's own ratio: capacity at a "
      "latency still close to the unloaded one, rather than closed-loop throughput. Each true knee lies between its "
      "step and the step that broke the rule, so the ratio's range is [candidate knee / baseline break, candidate break / baseline "
      "knee]; skipped steps (the load generator's or the host's limits) widen it.")
    w("")
    w("| scenario | candidate / baseline | base (100%) | knee candidate | knee baseline | knee ratio | "
      "comparison ratio (the verdict's figure) | why |")
    w("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for s in sw["scenarios"]:
        ka = (s["servers"].get("candidate") or {}).get("knee")
        kb = (s["servers"].get("baseline") or {}).get("knee")
        why = "; ".join(f"{s[who]}: {k['reason']}" for who, k in (("candidate", ka), ("baseline", kb)) if k)
        w(f"| {s['scenario']} | {s['candidate']} / {s['baseline']} | {with_unit(s.get('base_rps'), 0, 'req/s')} | "
          f"{_knee_text(ka)} | {_knee_text(kb)} | {_ratio_text(s)} | {num(s.get('comparison_ratio'), 3)} | "
          f"{why or s.get('knee_ratio_reason')} |")
    for s in sw["scenarios"]:
        w("")
        w(f"### {s['scenario']}: {s['candidate']} vs {s['baseline']}, every step")
        w("")
        w("| server | step | offered req/s | achieved req/s | p50 | p90 | p99 | p99.9 | max | server CPU | req/CPU-s | "
          "handler p99 | loadgen CPU | send lag p99 | waited for a connection | errors | knee rule | validity |")
        w("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")
        for who in ("candidate", "baseline"):
            srv = s["servers"].get(who)
            for st in (srv or {}).get("steps") or []:
                mark = LOADGEN_MARK if st.get("latency_by_loadgen") else ""

                def latency_cell(key, st=st, mark=mark):
                    text = with_unit(st.get(key), 3, "ms")
                    return text + mark if text != "n/a" else text
                rule = st.get("knee_rule") or {}
                knee_mark = " **knee**" if (srv["knee"] or {}).get("step") == st["step"] and st["step"] is not None else ""
                w(f"| {srv['server']} | {st.get('step')} | {num(st.get('offered_rps'))} | {num(st.get('achieved_rps'))} | "
                  f"{latency_cell('latency_p50_ms')} | {latency_cell('latency_p90_ms')} | {latency_cell('latency_p99_ms')} | "
                  f"{latency_cell('latency_p99_9_ms')} | {latency_cell('latency_max_ms')} | {with_unit(st.get('server_cpu_pct'), 1, '%')} | "
                  f"{num(st.get('req_per_cpu_sec'))} | {with_unit(st.get('handler_p99_us'), 0, 'us')} | "
                  f"{with_unit(st.get('loadgen_cpu_pct'), 1, '%')} | {with_unit(st.get('send_lag_p99_ms'), 3, 'ms')} | "
                  f"{num(st.get('requests_waited_for_connection'))} | {num(st.get('errors_total'))} | "
                  f"{rule.get('class', 'n/a')}{knee_mark} | "
                  f"{'failed: ' + st['failure'] if st.get('failure') else ', '.join(st.get('flags') or []) or 'ok'} |")
    w("")
    w(f"Latency is coordinated-omission corrected, in ms; CPU is percent of one CPU; {LOADGEN_MARK} marks a step whose "
      "latency is the load generator's queue (loadgen-bound), not the server's. Knee rule per step: ok (kept the "
      "rule), break (did not: the first one ends the search) or unknown (not the server's figures: skipped).")
    return out


# ---- report.html ------------------------------------------------------------------------

def plot_name(entries, i):
    """The plot key of sweep entry I of ENTRIES: its scenario ('s2'), then '-N' for the Nth
    later comparison of the same scenario ('s2-2')."""
    sc = entries[i]["scenario"]
    nth = sum(1 for e in entries[:i] if e["scenario"] == sc)
    return safe_label(sc) + (f"-{nth + 1}" if nth else "")


def report_plots(index, work, svgs):
    """{name: inline SVG}: per swept scenario "sweep-latency-<sc>" (p50, p99, p99.9 against the
    offered load, both servers, knees marked, loadgen-limited or crowded steps hollow) and
    "sweep-cpu-<sc>" (server and loadgen CPU against the offered load)."""
    sw = index.get("sweep")
    plots = {}
    entries = (sw or {}).get("scenarios") or []
    for i, s in enumerate(entries):
        scn = plot_name(entries, i)
        files, knees, lats, xs = {}, {}, [], []
        for who in ("candidate", "baseline"):
            srv = s["servers"].get(who) or {}
            rows = []
            for st in srv.get("steps") or []:
                hollow = int((st.get("knee_rule") or {}).get("class") == "unknown")
                rows.append((num_or_nan(st.get("offered_rps")), num_or_nan(st.get("latency_p50_ms")),
                             num_or_nan(st.get("latency_p99_ms")), num_or_nan(st.get("latency_p99_9_ms")), hollow,
                             num_or_nan(st.get("server_cpu_pct")), num_or_nan(st.get("loadgen_cpu_pct"))))
                lats += [st.get(k) for k in ("latency_p50_ms", "latency_p99_ms", "latency_p99_9_ms")]
                xs.append(st.get("offered_rps"))
            path = os.path.join(work, f"sweep-{scn}-{who}.dat")
            write_dat(path, rows or [("NaN",) * 7])
            files[who] = path
            rate = ((srv.get("knee") or {}).get("rate_rps"))
            knees[who] = float(rate) if is_num(rate) else 0.0
        lats = [v for v in lats if is_num(v) and v > 0]
        xs = [v for v in xs if is_num(v)]
        if not lats or not xs:
            continue
        ymin = 10 ** math.floor(math.log10(min(lats)))
        common = {"candfile": files["candidate"], "basefile": files["baseline"],
                  "candname": safe_label(s["candidate"]), "basename": safe_label(s["baseline"]),
                  "candknee": knees["candidate"], "baseknee": knees["baseline"], "xmax": float(max(xs) * 1.05)}
        plots[f"sweep-latency-{scn}"] = svgs.inline(gnuplot("sweep_latency.gp", dict(
            common, plottitle=safe_label(f"{s['scenario']}: latency against offered load"), ymin=float(ymin)), work),
            f"sweep-latency-{scn}")
        lg_pct = (index.get("thresholds") or {}).get("loadgen_cpu_pct")
        lg_cpus = (index.get("config") or {}).get("loadgen_cpu_count")
        lgbound = float(lg_pct * lg_cpus) if is_num(lg_pct) and is_num(lg_cpus) else 0.0
        plots[f"sweep-cpu-{scn}"] = svgs.inline(gnuplot("sweep_cpu.gp", dict(
            common, plottitle=safe_label(f"{s['scenario']}: CPU against offered load"), lgbound=lgbound), work),
            f"sweep-cpu-{scn}")
    return plots


def report_html(index, page, plots):
    """The "Latency under load" section of report.html (empty when the batch has no sweep).
    Every figure goes through page.fig (tagged with its index.json path)."""
    sw = index.get("sweep")
    if not sw:
        return ""
    f = page.fig
    out = []
    w = out.append
    w('<h2 id="sweep">Latency under load: rate sweeps</h2>')
    w(f'<p class="note">The servers of a scenario at the same constant rates (by default 10%, 20%, ... 120% of the '
      f'slowest server\'s median saturation, the base), each step a fresh server for {f("sweep/warmup_sec")} s of '
      f'warm-up and {f("sweep/measure_sec")} s measured. Left: corrected latency p50 (dotted), p99 (solid), p99.9 '
      f'(dashed), log scale; each server\'s knee is a dashed vertical line. Right: server CPU (solid) and the load '
      f'generator\'s CPU (dotted; the grey line is where a step counts as loadgen-bound), percent of one CPU. Hollow markers: steps whose figures are not the server\'s '
      f'(limited by the load generator, or other load on the server CPUs). The knee is the highest offered rate at '
      f'which the step was valid and its p99 stayed below {f("sweep/knee_p99_multiple", 0)} x the p99 of the lowest '
      f'valid step, no step below it breaking that rule (SPEC.md section 14).</p>')
    w("<table><tr><th>scenario</th><th>candidate / baseline</th><th>base (100%)</th><th>knee candidate</th>"
      "<th>knee baseline</th><th>knee ratio</th><th>comparison ratio (the verdict's figure)</th><th>why</th></tr>")
    for i, s in enumerate(sw["scenarios"]):
        k = f"sweep/scenarios/{i}"
        cells = []
        for who in ("candidate", "baseline"):
            kn = (s["servers"].get(who) or {}).get("knee") or {}
            if not is_num(kn.get("rate_rps")):
                cells.append('<span class="na">none</span>')
                continue
            frac = (f' ({f(f"{k}/servers/{who}/knee/fraction_of_saturation", 3)} of its saturation)'
                    if is_num(kn.get("fraction_of_saturation")) else "")
            cells.append(("at least " if kn.get("lower_bound") else "")
                         + f(f"{k}/servers/{who}/knee/rate_rps", 0, "req/s") + frac)
        kind = s.get("knee_ratio_kind")
        ratio = (("" if kind == "exact" else esc(kind) + " ") + f(f"{k}/knee_ratio", 3)) if kind else f(f"{k}/knee_ratio", 3)
        if kind:
            lo = f(f"{k}/knee_ratio_min", 3) if is_num(s.get("knee_ratio_min")) else "0"
            hi = f(f"{k}/knee_ratio_max", 3) if is_num(s.get("knee_ratio_max")) else "unbounded"
            ratio += f" (range {lo}&ndash;{hi})"
        why = "<br>".join(esc(f"{s[who]}: {kn['reason']}") for who in ("candidate", "baseline")
                          for kn in [(s["servers"].get(who) or {}).get("knee")] if kn)
        w(f'<tr><td>{esc(s["scenario"])}</td><td>{esc(s["candidate"])} / {esc(s["baseline"])}</td>'
          f'<td class="n">{f(k + "/base_rps", 0, "req/s")}</td>'
          f'<td class="n">{cells[0]}</td><td class="n">{cells[1]}</td><td class="n">{ratio}</td>'
          f'<td class="n">{f(k + "/comparison_ratio", 3)}</td><td>{why or esc(s.get("knee_ratio_reason"))}</td></tr>')
    w("</table>")
    metrics = (("offered_rps", 0, "req/s"), ("achieved_rps", 0, "req/s"), ("latency_p50_ms", 3, "ms"),
               ("latency_p90_ms", 3, "ms"), ("latency_p99_ms", 3, "ms"), ("latency_p99_9_ms", 3, "ms"),
               ("latency_max_ms", 3, "ms"), ("server_cpu_pct", 1, "%"), ("req_per_cpu_sec", 0, ""),
               ("handler_p99_us", 0, "us"), ("loadgen_cpu_pct", 1, "%"), ("send_lag_p99_ms", 3, "ms"),
               ("requests_waited_for_connection", 0, ""), ("errors_total", 0, ""))
    for i, s in enumerate(sw["scenarios"]):
        scn = plot_name(sw["scenarios"], i)
        w(f'<h3>{esc(s["scenario"])}: {esc(s["candidate"])} vs {esc(s["baseline"])}</h3>')
        w(f'<div class="grid">{plots.get(f"sweep-latency-{scn}", "")}{plots.get(f"sweep-cpu-{scn}", "")}</div>')
        w("<table><tr><th>server</th><th>step</th><th>offered</th><th>achieved</th><th>p50</th><th>p90</th><th>p99</th>"
          "<th>p99.9</th><th>max</th><th>server CPU</th><th>req/CPU-s</th><th>handler p99</th><th>loadgen CPU</th>"
          "<th>send lag p99</th><th>waited for a connection</th><th>errors</th><th>knee rule</th><th>validity</th></tr>")
        for who in ("candidate", "baseline"):
            srv = s["servers"].get(who)
            for j, st in enumerate((srv or {}).get("steps") or []):
                key = f"sweep/scenarios/{i}/servers/{who}/steps/{j}"
                rule = st.get("knee_rule") or {}
                lg = st.get("latency_by_loadgen")
                cls = ' class="lg" title="limited by the load generator: its queue, not the server"' if lg else ""
                is_knee = (srv.get("knee") or {}).get("step") == st.get("step") and st.get("step") is not None
                w(f'<tr{cls}><td>{esc(srv["server"])}</td><td class="n">{f(key + "/step")}</td>'
                  + "".join(f'<td class="n">{f(f"{key}/{m}", d, unit)}</td>' for m, d, unit in metrics)
                  + f'<td title="{esc(rule.get("reason"))}">{esc(rule.get("class"))}'
                  + (' <span class="flag ok">knee</span>' if is_knee else "") + "</td>"
                  + f"<td>{validity_html(st)}</td></tr>")
        w("</table>")
    w('<p class="note">Latency is coordinated-omission corrected; CPU is percent of one CPU. Greyed rows: the load '
      'generator limited the step (its latency is the load generator\'s queue). Knee rule per step: ok (kept the '
      'rule), break (did not; the first one ends the search), unknown (not the server\'s figures: skipped); hover '
      'for the reason.</p>')
    return "\n".join(out) + "\n"
