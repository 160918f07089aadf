"""verdict: how one scenario is decided from its runs, and the overall verdict (SPEC.md
section 9). A figure counts only when every run it is made of is valid; a scenario with no
valid figure is INCONCLUSIVE, with the reason and the remedy in words.

Inputs are result.json documents: per server its probes in repeat order (the saturation
run's own probe is repeat 1, probe-only runs are repeats 2..R) and its equal-load run.
"""
import statistics

from . import rules
from .rules import is_num

BASIS_NAME = {"saturation_rps": "saturation req/s", "req_per_cpu_sec": "req/CPU-s at equal load"}


def pair_of(scenario):
    """(actor server, async server) compared on SCENARIO."""
    return ("actor-sqlite", "async-sqlite") if scenario == "s4" else ("actor-mem", "async-mem")


def _r3(v):
    return None if v is None else round(v, 3)


def median(values):
    return statistics.median(values) if values else None


def probe_rps(run):
    return (run or {}).get("saturation_rps") if not (run or {}).get("failure") else None


def saturation_figure(actor_probes, async_probes):
    """The saturation comparison from interleaved probes: pairs by repeat, a pair used only
    when both probes are valid. Returns a dict: pairs_total, pairs_used, pair_ratios (used
    pairs, repeat order), ratio (their median), ratio_min, ratio_max, actor_value and
    async_value (medians of the used probes), excluded [{repeat, reasons}], usable (more
    than half of the pairs used)."""
    n = max(len(actor_probes), len(async_probes))
    used, excluded, a_vals, b_vals = [], [], [], []
    for i in range(n):
        a = actor_probes[i] if i < len(actor_probes) else None
        b = async_probes[i] if i < len(async_probes) else None
        why = []
        for who, run in (("actor", a), ("async", b)):
            for flag, reason in rules.probe_problems(run):
                why.append({"server": (run or {}).get("server", who), "flag": flag, "reason": reason})
        ra, rb = probe_rps(a), probe_rps(b)
        if not why:  # the ratio needs an actor figure >= 0 over an async figure > 0
            for who, run, rps, zero_ok in (("actor", a, ra, True), ("async", b, rb, False)):
                if not (is_num(rps) and (rps > 0 or (zero_ok and rps == 0))):
                    why.append({"server": (run or {}).get("server", who), "flag": "no figure",
                                "reason": "no saturation figure (saturation_rps %s)" % ("null" if rps is None else rps)})
        if why:
            excluded.append({"repeat": i + 1, "reasons": why})
            continue
        used.append(ra / rb)
        a_vals.append(ra)
        b_vals.append(rb)
    return {
        "pairs_total": n, "pairs_used": len(used), "pair_ratios": [_r3(r) for r in used],
        "ratio_exact": median(used), "ratio": _r3(median(used)),
        "ratio_min": _r3(min(used)) if used else None, "ratio_max": _r3(max(used)) if used else None,
        "actor_value": median(a_vals), "async_value": median(b_vals),
        "excluded": excluded, "usable": n > 0 and len(used) * 2 > n,
    }


def equal_figure(eq_actor, eq_async):
    """The req/CPU-s comparison at equal load: usable when both runs are valid."""
    why = []
    for who, run in (("actor", eq_actor), ("async", eq_async)):
        for flag, reason in rules.sustain_problems(run):
            why.append({"server": (run or {}).get("server", who), "flag": flag, "reason": reason})
    a = (eq_actor or {}).get("req_per_cpu_sec")
    b = (eq_async or {}).get("req_per_cpu_sec")
    ok = not why and is_num(a) and is_num(b) and b > 0
    return {"usable": ok, "reasons": why, "actor_value": a if ok else None,
            "async_value": b if ok else None, "ratio_exact": a / b if ok else None,
            "ratio": _r3(a / b) if ok else None}


def _words(reasons):
    return "; ".join(f"{r['server']}: {r['reason']}" if r.get("server") else r["reason"] for r in reasons)


def _short(reasons):
    """'actor-mem not saturated, other load; async-mem errors': the flags per server, once each."""
    by = {}
    for r in reasons:
        flags = by.setdefault(r.get("server") or "a run", [])
        if r["flag"] not in flags:
            flags.append(r["flag"])
    return "; ".join(f"{srv} {', '.join(fl)}" for srv, fl in by.items())


def _remedies(reasons):
    out = []
    for r in reasons:
        rem = rules.REMEDY.get(r["flag"])
        if rem and rem not in out:
            out.append(rem)
    return out


def decide(scenario, actor_probes, async_probes, eq_actor, eq_async, target, compared=True):
    """The decision of one scenario: a dict with basis, basis_source, basis_reason, the two
    values, ratio (and its range on saturation), verdict (PASS, FAIL, INCONCLUSIVE, ERROR, N/A),
    fragile, reasons and remedies. COMPARED is false when one server was not run."""
    out = {"basis": None, "basis_source": None, "basis_reason": None, "actor_value": None,
           "async_value": None, "ratio": None, "ratio_min": None, "ratio_max": None,
           "pair_ratios": [], "pairs_used": 0, "pairs_total": 0, "excluded_pairs": [],
           "verdict": "N/A", "fragile": False, "reasons": [], "short_reason": None, "remedies": [],
           "errors": []}
    if not compared:
        return out
    sat = saturation_figure(actor_probes, async_probes)
    eq = equal_figure(eq_actor, eq_async)
    out.update({"pairs_total": sat["pairs_total"], "pairs_used": sat["pairs_used"],
                "excluded_pairs": sat["excluded"]})
    # a failed or missing probe run makes the scenario ERROR: the batch is incomplete
    failed = [r for ex in sat["excluded"] for r in ex["reasons"] if r["flag"] in ("failed", "no result")]
    if failed:
        out["verdict"] = "ERROR"
        out["errors"] = [f"{r['server'] or 'a run'}: {r['reason']}" for r in failed]
        return out
    if sat["usable"]:
        out.update({"basis": "saturation_rps", "basis_source": "probes", "actor_value": sat["actor_value"],
                    "async_value": sat["async_value"], "ratio": sat["ratio"], "ratio_min": sat["ratio_min"],
                    "ratio_max": sat["ratio_max"], "pair_ratios": sat["pair_ratios"]})
        exact = sat["ratio_exact"]
        if sat["excluded"]:
            out["basis_reason"] = (f"{len(sat['excluded'])} of {sat['pairs_total']} probe pairs left out: "
                                   + _words([r for ex in sat["excluded"] for r in ex["reasons"]]))
    elif eq["usable"]:
        reasons = [r for ex in sat["excluded"] for r in ex["reasons"]]
        out.update({"basis": "req_per_cpu_sec", "basis_source": "equal-load runs",
                    "actor_value": eq["actor_value"], "async_value": eq["async_value"], "ratio": eq["ratio"],
                    "basis_reason": (f"only {sat['pairs_used']} of {sat['pairs_total']} probe pairs were valid: "
                                     + _words(reasons)),
                    "short_reason": f"{sat['pairs_used']} of {sat['pairs_total']} probe pairs valid: {_short(reasons)}"})
        exact = eq["ratio_exact"]
    else:
        reasons = [r for ex in sat["excluded"] for r in ex["reasons"]]
        out["verdict"] = "INCONCLUSIVE"
        out["reasons"] = ([f"saturation: only {sat['pairs_used']} of {sat['pairs_total']} probe pairs valid ("
                           + _words(reasons) + ")"]
                          + ["equal load: " + (_words(eq["reasons"]) or "no req/CPU-s figure")])
        out["remedies"] = _remedies(reasons + eq["reasons"])
        out["short_reason"] = (f"probes: {_short(reasons) or 'none valid'}; equal load: "
                               f"{_short(eq['reasons']) or 'no figure'}")
        return out
    out["verdict"] = "PASS" if exact >= target else "FAIL"
    lo, hi = out["ratio_min"], out["ratio_max"]
    out["fragile"] = bool(is_num(lo) and is_num(hi) and lo < target <= hi)
    return out


def overall(scenarios, target, required=("s1", "s2"), smoke=False):
    """The overall verdict of a batch from its scenario decisions (dicts with scenario,
    verdict, basis, ratio, ratio_min, ratio_max, fragile, basis_reason, reasons, remedies):
    {overall, fragile, headline, reason, smoke}."""
    req = [s for s in scenarios if s["scenario"] in required]
    compared = [s for s in req if s["verdict"] != "N/A"]
    if len(compared) < len(required):
        word = "N/A"
        reason = "s1 and s2 were not both compared (need both servers on each)"
    elif any(s["verdict"] == "FAIL" for s in req):
        word = "FAIL"
        reason = "; ".join(f"{s['scenario']} ratio {s['ratio']:.3f} < {target:g} on {BASIS_NAME[s['basis']]}"
                           for s in req if s["verdict"] == "FAIL")
    elif any(s["verdict"] == "ERROR" for s in req):
        word = "INCOMPLETE"
        reason = "; ".join(f"{s['scenario']}: " + "; ".join(s["errors"]) for s in req if s["verdict"] == "ERROR")
    elif any(s["verdict"] == "INCONCLUSIVE" for s in req):
        word = "INCONCLUSIVE"
        bad = [s for s in req if s["verdict"] == "INCONCLUSIVE"]
        remedies = []
        for s in bad:
            remedies += [r for r in s["remedies"] if r not in remedies]
        reason = ("; ".join(f"{s['scenario']}: no valid figure ({s.get('short_reason')})" for s in bad)
                  + (". Remedy: " + "; ".join(remedies) if remedies else ""))
    else:
        word = "PASS"
        reason = "; ".join(f"{s['scenario']} ratio {s['ratio']:.3f} >= {target:g}" for s in req)
    fragile = word in ("PASS", "FAIL") and any(s["fragile"] for s in req)
    headline = word
    if word in ("PASS", "FAIL"):
        bases = {s["basis"] for s in req if s["verdict"] in ("PASS", "FAIL")}
        if fragile:
            headline += ", fragile: " + "; ".join(
                f"{s['scenario']} range {s['ratio_min']:.2f}-{s['ratio_max']:.2f} crosses {target:g}"
                for s in req if s["fragile"])
            headline += ","
        if any(s["verdict"] not in ("PASS", "FAIL") for s in req):
            headline += f" (actor/async >= {target:g} on s1 and s2): " + "; ".join(
                f"{s['scenario']} {_ratio_text(s)} on {BASIS_NAME[s['basis']]}" if s["verdict"] in ("PASS", "FAIL")
                else f"{s['scenario']} {s['verdict']}" for s in req)
        elif bases == {"saturation_rps"}:
            headline += f" on saturation req/s (actor/async >= {target:g} on s1 and s2): " + ", ".join(
                f"{s['scenario']} {_ratio_text(s)}" for s in req)
        elif bases == {"req_per_cpu_sec"}:
            headline += (f" on req/CPU-s at equal load (actor/async >= {target:g} on s1 and s2), because the "
                         "saturation probes were not usable: " + "; ".join(
                             f"{s['scenario']} {_ratio_text(s)} ({s['short_reason']})" for s in req))
        else:
            headline += f" (actor/async >= {target:g} on s1 and s2): " + "; ".join(
                f"{s['scenario']} {_ratio_text(s)} on {BASIS_NAME[s['basis']]}"
                + (f", because {s['short_reason']}" if s["basis"] == "req_per_cpu_sec" else "") for s in req)
    else:
        headline += ": " + reason
    if smoke:
        headline = ("smoke run: checks the pipeline, too short to mean anything (computed verdict, not a "
                    "result: " + headline + ")")
    return {"overall": word, "fragile": fragile, "headline": headline, "reason": reason, "smoke": smoke}


def _ratio_text(s):
    text = f"{s['ratio']:.3f}"
    if is_num(s.get("ratio_min")) and s.get("pairs_used", 0) > 1:
        text += f" (range {s['ratio_min']:.3f}-{s['ratio_max']:.3f}, {s['pairs_used']} pairs)"
    return text
