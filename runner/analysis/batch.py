"""batch: one results/<batch>/ folder as the analysis sees it: its matrix.json (what was
planned: the groups of servers per scenario and the comparisons inside them), every run's
result.json judged by today's rules (normalize), and each server's runs by round.
Reads only the batch folder (and runner/default-pairs.toml for batches written before
matrix.json had groups); never runs anything, never writes.
Invariant: a run is found by its server, scenario, kind and round, never by parsing a name
that a server's own name could confuse.
"""
import glob
import json
import os
import re
import tomllib

from . import canary, rules
from .rules import is_num


def load_json(path):
    """The JSON document at PATH (NaN and infinities read as null). Raises OSError, ValueError."""
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
    # today's rules, even for a result that stored its own problems (issue 35 added the
    # load generator's headroom and the host-slow canary)
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


def _suffix(run):
    """What follows '<server>-<scenario>' in RUN's name ('' for the saturation run), or None
    when the name does not start so."""
    name, head = run.get("run") or run.get("dir") or "", f"{run.get('server')}-{run.get('scenario')}"
    return name[len(head):] if name.startswith(head) else None


def scaling_count(run):
    """The server CPU count N of a scaling run ('<server>-<scenario>-cpusN'), else None."""
    m = re.fullmatch(r"-cpus([0-9]+)", _suffix(run) or "")
    return int(m.group(1)) if m else None


def is_scaling_run(run):
    """A closed-loop probe at another server CPU count (never part of the main verdict)."""
    return scaling_count(run) is not None


def round_of(run):
    """The round RUN belongs to: 1 for the saturation run and '-equal', N for '-probeN' and
    '-equalN' (or the recorded repeat); None for sweep steps and scaling runs."""
    if run.get("kind") in ("sweep",) or is_scaling_run(run):
        return None
    if run.get("kind") == "saturation":
        return 1
    if is_num(run.get("repeat")):
        return int(run["repeat"])
    m = re.fullmatch(r"-(?:probe|equal)([0-9]*)", _suffix(run) or "")
    if m:
        return int(m.group(1) or 1)
    return None


def _default_pairs():
    """[(candidate, baseline, scenarios)] and decides of runner/default-pairs.toml, read
    without the definitions (old batches name servers that may no longer be defined)."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "default-pairs.toml")
    try:
        with open(path, "rb") as fh:
            doc = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError):
        return [], ["s1", "s2"]
    return ([(p.get("candidate"), p.get("baseline"), p.get("scenarios") or []) for p in doc.get("pair") or []],
            doc.get("decides") or ["s1", "s2"])


def default_decides():
    """The scenarios that decide the default batch's verdict (runner/default-pairs.toml)."""
    return list(_default_pairs()[1])


def groups_of(matrix, runs):
    """The batch's groups [{scenario, servers, comparisons: [{candidate, baseline, decides}]}]:
    matrix.json's when it has them, else (a batch written before any pair could be compared)
    the default pairs among the servers planned or run, per scenario."""
    if matrix.get("groups"):
        return matrix["groups"]
    planned = matrix.get("runs") or [{"server": r.get("server"), "scenario": r.get("scenario")}
                                     for r in runs if r.get("kind") in ("saturation", "probe", "equal-load", "sweep")]
    pairs, decides = _default_pairs()
    out = []
    for sc in ("s1", "s2", "s3", "s4"):
        names = []
        for p in planned:
            if p.get("scenario") == sc and p.get("server") not in names:
                names.append(p["server"])
        if not names:
            continue
        comps = [{"candidate": c, "baseline": b, "decides": sc in decides}
                 for c, b, scs in pairs if sc in scs and c in names and b in names]
        out.append({"scenario": sc, "servers": names, "comparisons": comps})
    return out


class Batch:
    """A batch folder: dir, name, matrix (dict, {} when absent), runs (normalized result.json
    documents with 'path' and 'dir'), groups (groups_of)."""

    def __init__(self, batch_dir):
        self.dir = batch_dir
        self.name = os.path.basename(os.path.normpath(batch_dir))
        path = os.path.join(batch_dir, "matrix.json")
        self.matrix = load_json(path) if os.path.exists(path) else {}
        self.runs = []
        for p in sorted(glob.glob(os.path.join(batch_dir, "*", "result.json"))):
            try:
                doc = normalize(load_json(p))
            except (OSError, ValueError):
                continue
            doc["path"] = os.path.relpath(p, batch_dir)
            doc["dir"] = os.path.basename(os.path.dirname(p))
            self.runs.append(doc)
        # the host-slow flag compares each run's canary with the batch's median (canary.py)
        self.canary_median_us = canary.mark(self.runs)
        if self.canary_median_us is not None:
            for doc in self.runs:
                if (doc.get("host_speed") or {}).get("slow") and "host slow" not in doc["flags"]:
                    phase = "probe" if doc.get("probe") else "sustain"
                    doc["problems"] = list(doc["problems"]) + [{"phase": phase, "flag": f, "reason": w}
                                                                for f, w in rules.host_slow(doc)]
                    doc["flags"] = doc["flags"] + ["host slow"]
        self.groups = groups_of(self.matrix, self.runs)

    def of_kind(self, kind):
        return [r for r in self.runs if r.get("kind") == kind]

    def _by_round(self, server, scenario, kinds):
        out = {}
        for r in self.runs:
            if r.get("server") != server or r.get("scenario") != scenario or r.get("kind") not in kinds:
                continue
            rnd = round_of(r)
            if rnd is not None and rnd not in out:
                out[rnd] = r
        return out

    def probes(self, server, scenario):
        """{round: run} of SERVER's closed-loop probes of SCENARIO (round 1: its saturation run)."""
        return self._by_round(server, scenario, ("saturation", "probe"))

    def equal(self, server, scenario):
        """{round: run} of SERVER's equal-load runs of SCENARIO."""
        return self._by_round(server, scenario, ("equal-load",))

    def saturation_run(self, server, scenario):
        return next((r for r in self.runs if r.get("kind") == "saturation" and r.get("server") == server
                     and r.get("scenario") == scenario), None)

    def group(self, scenario):
        return next((g for g in self.groups if g["scenario"] == scenario), None)

    def median_saturation(self, server, scenario):
        """The median saturation req/s of SERVER's probes of SCENARIO that did not fail (None
        when it has none). Raises nothing."""
        vals = sorted(r["saturation_rps"] for r in self.probes(server, scenario).values()
                      if not r.get("failure") and is_num(r.get("saturation_rps")))
        if not vals:
            return None
        mid = len(vals) // 2
        return vals[mid] if len(vals) % 2 else (vals[mid - 1] + vals[mid]) / 2
