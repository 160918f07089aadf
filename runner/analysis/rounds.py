"""rounds: the rounds of one scenario of a batch, per comparison (candidate / baseline of
matrix.json's groups): which gave a valid pair and why the others did not, for the probes and
for the equal-load runs, and the equal-load rate of a group (SPEC.md section 9). run_all.sh
reads them to decide its re-runs. Reads matrix.json and the runs' result.json; never runs
anything. A run folder names its round: <server>-<scenario> is probe round 1 (the saturation
run), -probeN probe round N, -equal equal-load round 1, -equalN equal-load round N.
"""
import glob
import json
import math
import os
import re
import statistics

from . import rules
from .rules import is_num

# The flags that say the host, not the server or the setup, spoiled a run: others used the
# server's CPUs, or the window holds an episode (a stall of the host shows as both). A round
# invalid for one of these is worth running again; one invalid only for a setup reason (the
# load generator saturated first, the server did not saturate, errors, a failure) is not:
# the same setup gives the same result.
DISTURBED = ("other load", "not stationary")

_PROBE = re.compile(r"(?:-probe([1-9][0-9]*))?")
_EQUAL = re.compile(r"-equal([1-9][0-9]*)?")


def _load(path):
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh, parse_constant=rules.json_null_constant)
    except (OSError, ValueError):
        return None


def group_of(batch_dir, scenario):
    """SCENARIO's group of BATCH_DIR/matrix.json ({scenario, servers, comparisons}); ValueError
    when the batch has no matrix.json with groups (written before any-pair batches) or no such
    scenario."""
    matrix = _load(os.path.join(batch_dir, "matrix.json"))
    if not isinstance(matrix, dict) or not isinstance(matrix.get("groups"), list):
        raise ValueError(f"{batch_dir}/matrix.json has no groups (a batch of an older run_all.sh)")
    for g in matrix["groups"]:
        if g.get("scenario") == scenario:
            return g
    raise ValueError(f"no scenario {scenario} in {batch_dir}/matrix.json")


def runs_of(batch_dir, scenario, servers):
    """{(kind, server, round): result.json document} of SERVERS on SCENARIO, kind "probe" or
    "equal" (sweep steps and scaling runs are neither)."""
    out = {}
    for path in glob.glob(os.path.join(batch_dir, "*", "result.json")):
        name = os.path.basename(os.path.dirname(path))
        for server in servers:
            stem = f"{server}-{scenario}"
            if not name.startswith(stem):
                continue
            rest = name[len(stem):]
            m = _PROBE.fullmatch(rest)
            if m:
                key = ("probe", server, int(m.group(1) or 1))
            else:
                m = _EQUAL.fullmatch(rest)
                if not m:
                    continue
                key = ("equal", server, int(m.group(1) or 1))
            doc = _load(path)
            if doc is not None and doc.get("server") not in (None, server):
                continue  # another server's folder whose name starts alike
            out[key] = doc if doc is not None else {"failure": "result.json unreadable", "server": server}
    return out


def _why(run, server, name, kind):
    """[{server, run, flag, reason}] of what makes RUN unusable for a KIND pair."""
    probs = rules.probe_problems(run) if kind == "probe" else rules.sustain_problems(run)
    out = [{"server": server, "run": name, "flag": f, "reason": r} for f, r in probs]
    if not out:
        key = "saturation_rps" if kind == "probe" else "req_per_cpu_sec"
        v = run.get(key)
        if not (is_num(v) and v > 0):
            out.append({"server": server, "run": name, "flag": "no figure", "reason": f"no {key} ({v})"})
    return out


def _run_name(server, scenario, kind, rnd):
    if kind == "probe":
        return f"{server}-{scenario}" + (f"-probe{rnd}" if rnd > 1 else "")
    return f"{server}-{scenario}-equal" + (str(rnd) if rnd > 1 else "")


def comparison_rounds(runs, scenario, candidate, baseline, kind, planned):
    """{candidate, baseline, valid_pairs, rounds: [{round, valid, disturbed, ratio, why}]} of one
    comparison over the KIND rounds in RUNS (runs_of): those where both servers ran, and the
    PLANNED ones (1..PLANNED) where either did (a planned run that left no result counts
    against its round; a re-run round of other servers of a league does not). A round is
    valid when both runs are (rules.probe_problems or sustain_problems, and a figure > 0);
    ratio is candidate / baseline of the pair's figure (saturation req/s, or req/CPU-s at
    equal load), null when invalid; disturbed when a run of it has a DISTURBED flag."""
    key = "saturation_rps" if kind == "probe" else "req_per_cpu_sec"
    ran = {s: {r for (k, s2, r) in runs if k == kind and s2 == s} for s in (candidate, baseline)}
    nums = sorted((ran[candidate] & ran[baseline]) | {r for r in ran[candidate] | ran[baseline] if r <= planned})
    rounds = []
    for rnd in nums:
        why = []
        for server in (candidate, baseline):
            name = _run_name(server, scenario, kind, rnd)
            run = runs.get((kind, server, rnd))
            if run is None:
                why.append({"server": server, "run": name, "flag": "no result", "reason": "no result.json"})
            else:
                why += _why(run, server, name, kind)
        ratio = None
        if not why:
            ratio = runs[(kind, candidate, rnd)][key] / runs[(kind, baseline, rnd)][key]
        rounds.append({"round": rnd, "valid": not why, "disturbed": any(w["flag"] in DISTURBED for w in why),
                       "ratio": ratio, "why": why})
    return {"candidate": candidate, "baseline": baseline,
            "valid_pairs": sum(1 for r in rounds if r["valid"]), "rounds": rounds}


def _disturbed(rnd):
    """A round's disturbed mark, or for a status without it (another writer), from its flags."""
    if "disturbed" in rnd:
        return bool(rnd["disturbed"])
    return any(isinstance(w, dict) and w.get("flag") in DISTURBED for w in rnd.get("why") or [])


def next_round(status_doc, kind, min_valid, planned):
    """The next re-run round of a scenario from its STATUS_DOC (status()'s shape), or None.

    KIND "probe": a comparison with fewer than MIN_VALID valid probe pairs gets a new round
    for each of its rounds the host disturbed (invalid with a DISTURBED flag), counted
    against the rounds it already got beyond the PLANNED ones; a round invalid only for a
    setup reason earns none. KIND "equal": a comparison whose probes gave fewer than
    MIN_VALID valid pairs (the saturation figure is not usable) and whose equal-load runs
    gave fewer too gets a new equal-load round for each of its rounds that was valid (the
    interval needs more pairs) or disturbed, counted against the rounds beyond the PLANNED
    one(s); a comparison without any equal-load round (none planned) gets none.

    Returns {"kind", "round" (one more than the highest round of KIND), "servers" (every
    server of the comparisons that need it, candidates then baselines, once each),
    "comparisons": [{candidate, baseline, valid_pairs}], "answers": [{candidate, baseline,
    round, valid, why}] (per comparison the round this re-run answers)}."""
    key = "comparisons" if kind == "probe" else "equal"
    probe_valid = {(c.get("candidate"), c.get("baseline")): c.get("valid_pairs") or 0
                   for c in status_doc.get("comparisons") or []}
    comps = status_doc.get(key) or []
    chosen, answers = [], []
    for c in comps:
        if (c.get("valid_pairs") or 0) >= min_valid:
            continue
        pair = (c.get("candidate"), c.get("baseline"))
        rounds = sorted(c.get("rounds") or [], key=lambda r: r["round"])
        if kind == "equal" and (probe_valid.get(pair, 0) >= min_valid or not rounds):
            continue
        extra = [r for r in rounds if r["round"] > planned]
        earning = [r for r in rounds if (not r.get("valid") and _disturbed(r)) or (kind == "equal" and r.get("valid"))]
        if len(extra) >= len(earning):
            continue
        chosen.append(c)
        a = earning[len(extra)]
        answers.append({"candidate": pair[0], "baseline": pair[1], "round": a["round"], "valid": bool(a.get("valid")),
                        "why": a.get("why") or []})
    if not chosen:
        return None
    servers = []
    for name in [c["candidate"] for c in chosen] + [c["baseline"] for c in chosen]:
        if name not in servers:
            servers.append(name)
    top = max((r["round"] for c in comps for r in c.get("rounds") or []), default=planned)
    return {"kind": kind, "round": max(top, planned) + 1, "servers": servers,
            "comparisons": [{"candidate": c["candidate"], "baseline": c["baseline"],
                             "valid_pairs": c.get("valid_pairs") or 0} for c in chosen],
            "answers": answers}


def status(batch_dir, scenario):
    """rounds-status: {"scenario", "comparisons": [comparison_rounds of the probes], "equal":
    [comparison_rounds of the equal-load runs]} for every comparison of SCENARIO's group."""
    g = group_of(batch_dir, scenario)
    matrix = _load(os.path.join(batch_dir, "matrix.json")) or {}
    planned = matrix.get("repeats") if is_num(matrix.get("repeats")) else 1
    runs = runs_of(batch_dir, scenario, g.get("servers") or [])
    comps = g.get("comparisons") or []
    return {"scenario": scenario,
            "comparisons": [comparison_rounds(runs, scenario, c["candidate"], c["baseline"], "probe", planned)
                            for c in comps],
            "equal": [comparison_rounds(runs, scenario, c["candidate"], c["baseline"], "equal", 1) for c in comps]}


def equal_rate(batch_dir, scenario, servers, sat_ratio):
    """The equal-load rate of SERVERS on SCENARIO, req/s: SAT_RATIO x the lowest of their
    median saturations, each the median over the server's probes of every round, leaving out
    probes the host disturbed (DISTURBED flags) unless all of them were; rounded half up, at
    least 1. ValueError when a probe run failed or has no saturation figure, or a server has
    no probe."""
    if not (is_num(sat_ratio) and 0 < sat_ratio <= 1):
        raise ValueError(f"SAT_RATIO must be in (0, 1], got {sat_ratio}")
    runs = runs_of(batch_dir, scenario, servers)
    meds = []
    for server in servers:
        probes = [doc for (k, s, _), doc in sorted(runs.items(), key=lambda kv: kv[0][2])
                  if k == "probe" and s == server]
        if not probes:
            raise ValueError(f"{server} has no probe on {scenario}")
        if any(p.get("failure") for p in probes):
            raise ValueError(f"a {server} probe run failed")
        if not all(is_num(p.get("saturation_rps")) and p["saturation_rps"] > 0 for p in probes):
            raise ValueError(f"a {server} probe has no saturation figure")
        calm = [p for p in probes if not any(f in DISTURBED for f, _ in rules.probe_problems(p))]
        meds.append(statistics.median(p["saturation_rps"] for p in (calm or probes)))
    return max(1, math.floor(min(meds) * sat_ratio + 0.5))  # half up, as jq's round in runner.sh
