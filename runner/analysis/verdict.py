"""verdict: how one comparison (a candidate server against a baseline on one scenario) is
decided from its runs, and the overall verdict of a batch (SPEC.md section 9).
A pair is one run of each server in the same round; it counts only when both runs are valid
(rules.py). The ratio is candidate / baseline with a confidence interval (stats.py): PASS when
the whole interval is at or above the target, FAIL when it is below, INCONCLUSIVE otherwise.
Reasons are grouped and counted, never repeated per run. Works on result.json documents.
"""
import statistics

from . import fmt, rules, stats
from .rules import is_num

BASIS_NAME = {"saturation_rps": "saturation req/s", "req_per_cpu_sec": "req/CPU-s at equal load"}
# The fewest valid pairs that give an interval (one pair has no spread to judge).
MIN_PAIRS = 2
HEADLINE_MAX = 200


def round3(v):
    return None if not is_num(v) else round(v, 3)


def median(values):
    vals = [v for v in values if is_num(v)]
    return statistics.median(vals) if vals else None


def pairs_of(cand_runs, base_runs, problems_of, value_of, zero_ok):
    """The pairs of two {round: run} maps: (used [(round, ratio, a, b)], excluded [{round,
    reasons}]). A pair is used when neither run has a problem and both figures are numbers
    (the baseline's > 0; the candidate's >= 0 when ZERO_OK)."""
    used, excluded = [], []
    for rnd in sorted(set(cand_runs) | set(base_runs)):
        a, b = cand_runs.get(rnd), base_runs.get(rnd)
        why = []
        for run in (a, b):
            for flag, reason in problems_of(run):
                why.append({"server": (run or {}).get("server"), "flag": flag, "reason": reason})
        va, vb = value_of(a), value_of(b)
        if not why:
            for run, v, zok in ((a, va, zero_ok), (b, vb, False)):
                if not (is_num(v) and (v > 0 or (zok and v == 0))):
                    why.append({"server": (run or {}).get("server"), "flag": "no figure",
                                "reason": f"no figure ({'null' if v is None else v})"})
        if why:
            excluded.append({"round": rnd, "reasons": why})
        else:
            used.append((rnd, va / vb, va, vb))
    return used, excluded


def _figure(used, excluded, level, floor=None):
    ratios = [r for _, r, _, _ in used]
    ci = stats.calibrated_interval(ratios, floor, level)
    return {"ci_method": ci["method"], "ci_note": ci["note"], "ci_pooled": ci["pooled"], "ci_df": ci["df"],
            "pairs_total": len(used) + len(excluded), "pairs_used": len(used),
            "pair_rounds": [rnd for rnd, _, _, _ in used], "pair_ratios": [round3(r) for r in ratios],
            "ratio_exact": ci["center"], "ci_low_exact": ci["low"], "ci_high_exact": ci["high"],
            "ratio": round3(ci["center"]), "ci_low": round3(ci["low"]), "ci_high": round3(ci["high"]),
            "ratio_min": round3(min(ratios)) if ratios else None, "ratio_max": round3(max(ratios)) if ratios else None,
            "candidate_value": median([a for _, _, a, _ in used]), "baseline_value": median([b for _, _, _, b in used]),
            "excluded": excluded, "usable": len(used) >= MIN_PAIRS}


def probe_rps(run):
    return (run or {}).get("saturation_rps") if run and not run.get("failure") else None


def saturation_figure(cand_probes, base_probes, level=stats.CI_LEVEL, floor=None):
    """The saturation comparison from the two servers' probes by round ({round: run}); FLOOR:
    the host's A/A noise floor of this figure (stats.calibrated_interval), or None."""
    used, excluded = pairs_of(cand_probes, base_probes, rules.probe_problems, probe_rps, True)
    return _figure(used, excluded, level, floor)


def equal_figure(cand_equal, base_equal, level=stats.CI_LEVEL, floor=None):
    """The req/CPU-s comparison from the equal-load runs by round ({round: run}); FLOOR as for
    saturation_figure."""
    used, excluded = pairs_of(cand_equal, base_equal, rules.sustain_problems,
                            lambda r: (r or {}).get("req_per_cpu_sec"), True)
    return _figure(used, excluded, level, floor)


# ---- grouped reasons ------------------------------------------------------------------------

def _phase_of(run, flag):
    """The figures of the phase a flag was raised in: the probe's for a probe run, else the run."""
    return (run.get("probe") or {}) if run.get("kind") in ("saturation", "probe") and run.get("probe") else run


def _details(flag, runs):
    """Figures that say how far the runs with FLAG were from fine, as a short parenthesis."""
    ph = [_phase_of(r, flag) for r in runs]
    if flag == "loadgen-bound":
        return (f"loadgen {fmt.span([p.get('loadgen_cpu_pct') for p in ph], 0, '%')} CPU, server "
                f"{fmt.span([p.get('server_cpu_pct') for p in ph], 0, '%')}")
    if flag == "not saturated":
        return f"server CPU {fmt.span([p.get('server_cpu_pct') for p in ph], 0, '%')}"
    if flag == "other load":
        return f"others {fmt.span([p.get('server_cpus_other_pct') for p in ph], 0, '%')} of the server CPUs"
    if flag == "errors":
        return f"{fmt.num(sum(p.get('errors_total') or 0 for p in ph))} errors"
    if flag == "rate not held":
        return "achieved " + fmt.span([100 * r["sustained_rps"] / r["target_rps"] for r in runs
                                       if is_num(r.get("sustained_rps")) and is_num(r.get("target_rps"))
                                       and r["target_rps"] > 0], 0, "%") + " of the target"
    return ""


def group_reasons(runs, what="probes", phase=None):
    """['5 of 6 probes loadgen-bound (loadgen 97-100% CPU, server 71-81%)', ...]: each flag of
    RUNS once, with how many runs had it and the span of the figures behind it. PHASE limits the
    problems read ('probe' or 'sustain'); failed runs count under 'failed'."""
    total = len(runs)
    by_flag = {}
    for r in runs:
        if r is None:
            continue
        flags = []
        for p in r.get("problems") or []:
            if p.get("flag") == "failed" or phase is None or p.get("phase") == phase:
                if p["flag"] not in flags:
                    flags.append(p["flag"])
        for fl in flags:
            by_flag.setdefault(fl, []).append(r)
    out = []
    for fl, rs in by_flag.items():
        det = _details(fl, rs)
        out.append(f"{len(rs)} of {total} {what} {fl}" + (f" ({det})" if det else ""))
    missing = sum(1 for r in runs if r is None)
    if missing:
        out.append(f"{missing} of {total} {what} missing")
    return out


def _remedies(runs):
    out = []
    for r in runs:
        for p in [{"flag": "no result"}] if r is None else r.get("problems") or []:
            rem = rules.REMEDY.get(p.get("flag"))
            if rem and rem not in out:
                out.append(rem)
    return out


def saturated_by(cand_probes, base_probes, rounds):
    """How the probes of the used ROUNDS saturated their server (SPEC.md section 8): {"cpu": n,
    "thread": n, "plateau": n} and, for the rules past one CPU, the first reason of each
    ({"thread_reason", "plateau_reason"}): a serial bottleneck or a plateau is the
    architecture's capacity, and the verdict says so."""
    out = {"cpu": 0, "thread": 0, "plateau": 0}
    for runs in (cand_probes, base_probes):
        for rnd in rounds:
            probe = (runs.get(rnd) or {}).get("probe") or {}
            by = probe.get("saturated_by") or "cpu"
            if by in out:
                out[by] += 1
                if by != "cpu" and probe.get("saturation_reason"):
                    out.setdefault(f"{by}_reason", probe["saturation_reason"])
    return out


# ---- one comparison -------------------------------------------------------------------------

def decide(scenario, candidate, baseline, cand_probes, base_probes, cand_equal, base_equal, target,
           level=stats.CI_LEVEL, floors=None):
    """The decision of one comparison: a dict with basis (saturation_rps, req_per_cpu_sec or
    None), basis_source, basis_reason, candidate_value, baseline_value, ratio (the interval's
    centre), ci_low, ci_high, ci_level, ci_method, pair_ratios, pair_rounds, ratio_min,
    ratio_max, pairs_used, pairs_total, excluded_pairs, verdict (PASS, FAIL, INCONCLUSIVE,
    ERROR), reasons (grouped), remedies, errors. The *_probes and *_equal are {round: run}.
    FLOORS: {basis: noise floor} of this scenario from the host's A/A calibration (the
    interval then accounts for what the pairs miss: SPEC.md section 9), or None."""
    floors = floors or {}
    out = {"scenario": scenario, "candidate": candidate, "baseline": baseline, "basis": None,
           "basis_source": None, "basis_reason": None, "candidate_value": None, "baseline_value": None,
           "ratio": None, "ci_low": None, "ci_high": None, "ci_level": level, "ci_method": stats.METHOD,
           "pair_ratios": [], "pair_rounds": [], "ratio_min": None, "ratio_max": None, "pairs_used": 0,
           "pairs_total": 0, "excluded_pairs": [], "verdict": "INCONCLUSIVE", "reasons": [], "remedies": [],
           "errors": []}
    sat = saturation_figure(cand_probes, base_probes, level, floors.get("saturation_rps"))
    eq = equal_figure(cand_equal, base_equal, level, floors.get("req_per_cpu_sec"))
    probes = [cand_probes.get(r) for r in sorted(cand_probes)] + [base_probes.get(r) for r in sorted(base_probes)]
    failed = [r for r in probes if r is not None and r.get("failure")]
    if failed or not cand_probes or not base_probes:
        out["verdict"] = "ERROR"
        out["errors"] = [f"{r.get('run')}: {r['failure']}" for r in failed]
        out["errors"] += [f"{name} has no probe of {scenario}" for name, runs in
                          ((candidate, cand_probes), (baseline, base_probes)) if not runs]
        return out
    probe_reasons = group_reasons(probes, "probes", "probe")
    if sat["usable"]:
        fig, basis, source = sat, "saturation_rps", "probe pairs"
        if sat["excluded"]:
            out["basis_reason"] = (f"{len(sat['excluded'])} of {sat['pairs_total']} probe pairs left out: "
                                   + "; ".join(probe_reasons))
    elif eq["usable"]:
        fig, basis, source = eq, "req_per_cpu_sec", "equal-load pairs"
        out["basis_reason"] = (f"{sat['pairs_used']} of {sat['pairs_total']} probe pairs valid, fewer than "
                               f"{MIN_PAIRS}: " + "; ".join(probe_reasons))
    else:
        eq_runs = [cand_equal.get(r) for r in sorted(cand_equal)] + [base_equal.get(r) for r in sorted(base_equal)]
        out["pairs_used"], out["pairs_total"] = sat["pairs_used"], sat["pairs_total"]
        out["excluded_pairs"] = sat["excluded"]
        out["pair_ratios"], out["pair_rounds"] = sat["pair_ratios"], sat["pair_rounds"]
        out["reasons"] = ([f"{sat['pairs_used']} of {sat['pairs_total']} probe pairs valid (an interval needs "
                           f"{MIN_PAIRS})"] + probe_reasons)
        if eq_runs:
            out["reasons"] += ([f"{eq['pairs_used']} of {eq['pairs_total']} equal-load pairs valid"]
                               + group_reasons(eq_runs, "equal-load runs", "sustain"))
        out["remedies"] = _remedies(probes + eq_runs) or ["run more pairs (--repeats, MIN_VALID_PAIRS)"]
        return out
    out.update({"basis": basis, "basis_source": source, "candidate_value": fig["candidate_value"],
                "baseline_value": fig["baseline_value"], "ratio": fig["ratio"], "ci_low": fig["ci_low"],
                "ci_high": fig["ci_high"], "pair_ratios": fig["pair_ratios"], "pair_rounds": fig["pair_rounds"],
                "ratio_min": fig["ratio_min"], "ratio_max": fig["ratio_max"], "pairs_used": fig["pairs_used"],
                "pairs_total": fig["pairs_total"], "excluded_pairs": fig["excluded"],
                "ci_method": fig["ci_method"], "ci_note": fig["ci_note"], "ci_df": fig["ci_df"],
                "ci_calibrated": fig["ci_pooled"] is not None})
    if basis == "saturation_rps":
        out["saturated_by"] = saturated_by(cand_probes, base_probes, fig["pair_rounds"])
    lo, hi = fig["ci_low_exact"], fig["ci_high_exact"]
    # the rule of section 9, in one place (stats.against_target)
    out["verdict"], _ = stats.against_target({"low": lo, "high": hi, "level": level, "n": fig["pairs_used"]},
                                             target)
    if out["verdict"] == "INCONCLUSIVE":
        out["reasons"] = [f"the interval ({stats.bound_text(lo, target)}-{stats.bound_text(hi, target)}) "
                          f"crosses the target {target:g}"]
        out["remedies"] = ["run more pairs (--repeats, MIN_VALID_PAIRS): the interval narrows with the square "
                           "root of their number"]
    return out


# ---- the batch ------------------------------------------------------------------------------

def ratio_words(c, decimals=2, target=None):
    """'0.98 (95% CI 0.93-1.03)' for a decided comparison C, or the ratio alone; with TARGET a
    bound that would print as the target gets one more decimal (stats.bound_text)."""
    if not is_num(c.get("ratio")):
        return "n/a"
    text = fmt.num(c["ratio"], decimals)
    if is_num(c.get("ci_low")) and is_num(c.get("ci_high")):
        text += (f" ({fmt.num(100 * (c.get('ci_level') or stats.CI_LEVEL), 0)}% CI "
                 f"{stats.bound_text(c['ci_low'], target, decimals)}-{stats.bound_text(c['ci_high'], target, decimals)})")
    return text


def _by_pair(comps):
    out = {}
    for c in comps:
        out.setdefault((c["candidate"], c["baseline"]), []).append(c)
    return out


def _headline_variants(word, comps, target):
    """Candidate headlines, longest first."""
    pairs = _by_pair(comps)
    out = []
    for detail in (3, 2, 1, 0):
        parts = []
        for (cand, base), cs in pairs.items():
            items = []
            for c in cs:
                v = c["verdict"]
                if v in ("PASS", "FAIL") or (v == "INCONCLUSIVE" and is_num(c.get("ci_low"))):
                    basis = "" if c.get("basis") != "req_per_cpu_sec" else " (req/CPU-s at equal load)"
                    txt = f"{ratio_words(c, target=target) if detail else fmt.num(c.get('ratio'), 2)} on {c['scenario']}{basis}"
                    if v == "INCONCLUSIVE":
                        txt += f" crosses {target:g}"
                elif v == "INCONCLUSIVE":
                    txt = f"too few valid pairs on {c['scenario']}"
                    if detail >= 2 and c.get("reasons"):
                        why = c["reasons"][1] if len(c["reasons"]) > 1 else c["reasons"][0]
                        txt += f" ({why if detail == 3 else why.split(' (')[0]})"
                else:
                    txt = f"{v} on {c['scenario']}"
                items.append(txt)
            parts.append(f"{cand}/{base} " + ", ".join(items))
        text = f"{word}: " + "; ".join(parts) + f"; target {target:g}"
        if word == "INCONCLUSIVE" and detail:
            text += ": run more pairs (--repeats)"
        out.append(text)
    out.append(f"{word}: {len(pairs)} pair(s) on {', '.join(sorted({c['scenario'] for c in comps}))}; "
               f"target {target:g} (see summary.md)")
    return out


def overall(comparisons, target, smoke=False, required=()):
    """The overall verdict of a batch from its comparisons (dicts from decide() with a
    'decides' key): {overall, headline (at most HEADLINE_MAX characters), reason, smoke,
    decided_by}. FAIL when a deciding comparison fails; else INCOMPLETE when one is ERROR;
    else INCONCLUSIVE when one is; PASS when all pass; N/A when none decides, or when a
    scenario of REQUIRED (the default batch's s1 and s2) has no deciding comparison."""
    dec = [c for c in comparisons if c.get("decides")]
    missing = [s for s in required if not any(c["scenario"] == s for c in dec)]
    if missing:
        dec = []
        word, reason = "N/A", (f"{' and '.join(required)} decide the default batch and "
                               f"{', '.join(missing)} was not compared (both servers of its pair must run)")
    elif not dec:
        word, reason = "N/A", "no comparison decides the verdict (a server of each deciding pair was not run)"
    elif any(c["verdict"] == "FAIL" for c in dec):
        word = "FAIL"
    elif any(c["verdict"] == "ERROR" for c in dec):
        word = "INCOMPLETE"
    elif any(c["verdict"] == "INCONCLUSIVE" for c in dec):
        word = "INCONCLUSIVE"
    else:
        word = "PASS"
    if dec:
        reason = "; ".join(
            f"{c['scenario']} {c['candidate']}/{c['baseline']}: {c['verdict']}"
            + (f" {ratio_words(c, 3)} on {BASIS_NAME[c['basis']]}" if c.get("basis") else "")
            + (" (" + "; ".join(c["reasons"] + c["errors"]) + ")" if c.get("reasons") or c.get("errors") else "")
            for c in dec)
    prefix = "smoke run, not a result: " if smoke else ""
    if not dec:
        headline = prefix + "N/A: " + reason
    else:
        variants = _headline_variants(word, dec, target)
        headline = next((prefix + v for v in variants if len(prefix + v) <= HEADLINE_MAX),
                        (prefix + variants[-1])[:HEADLINE_MAX])
    return {"overall": word, "headline": headline[:HEADLINE_MAX] if dec else headline, "reason": reason,
            "smoke": smoke, "target_ratio": target,
            "decided_by": [{"scenario": c["scenario"], "candidate": c["candidate"], "baseline": c["baseline"]}
                           for c in dec]}
