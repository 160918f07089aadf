"""calibration: the host's noise floor, measured where the truth is known (issue 35): the
baseline against itself under a second name (A/A). record() adds a calibration batch's pair
ratios to results/calibration/<host>.json and recomputes the floor per scenario and figure
(stats.floor_from_batches); floors() gives later batches of the host the floor their
intervals use (SPEC.md section 9, "The noise floor"). Reads and writes only that file.
"""
import datetime
import json
import os

from . import batch, stats, verdict

SCHEMA = 1
BASES = ("saturation_rps", "req_per_cpu_sec")


def host_name(index_or_run):
    """The hostname a batch or a run recorded ('unknown' when none)."""
    host = (index_or_run or {}).get("host") or {}
    return host.get("hostname") or "unknown"


def path_for(results_dir, host):
    """results/calibration/HOST.json, or $CALIBRATION when set (a file the user chose)."""
    return os.environ.get("CALIBRATION") or os.path.join(results_dir, "calibration", f"{host}.json")


def load(path):
    """The calibration document at PATH, or None when there is none. Raises ValueError on a
    file that is not one."""
    if not path or not os.path.exists(path):
        return None
    doc = batch.load_json(path)
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise ValueError(f"{path}: not a calibration file of schema {SCHEMA}")
    return doc


def floors(doc, scenario, mode):
    """{basis: floor} of SCENARIO from the A/A batches of MODE (smoke, quick, full: windows of
    another length have another noise) in the calibration DOC (None: {})."""
    by_mode = ((doc or {}).get("floor") or {}).get(mode or "full") or {}
    return {k: v for k, v in by_mode.get(scenario, {}).items() if v}


def _recompute(doc):
    out = {}
    for entry in doc["batches"]:
        for basis, ratios in (entry.get("pair_ratios") or {}).items():
            out.setdefault(entry.get("mode") or "full", {}).setdefault(entry["scenario"], {}) \
                .setdefault(basis, []).append(ratios)
    doc["floor"] = {mode: {sc: {basis: stats.floor_from_batches(lists) for basis, lists in by.items()}
                           for sc, by in scs.items()} for mode, scs in out.items()}
    return doc


def entries_of(batch_dir):
    """The A/A entries of a batch: per comparison {batch, scenario, candidate, baseline,
    pair_ratios {basis: [valid pair ratios]}} (every comparison of a calibration batch is a
    server against itself)."""
    b = batch.Batch(batch_dir)
    out = []
    for g in b.groups:
        sc = g["scenario"]
        for c in g["comparisons"]:
            cand, base = c["candidate"], c["baseline"]
            sat = verdict.saturation_figure(b.probes(cand, sc), b.probes(base, sc))
            eq = verdict.equal_figure(b.equal(cand, sc), b.equal(base, sc))
            out.append({"batch": b.name, "scenario": sc, "candidate": cand, "baseline": base,
                        "pair_ratios": {"saturation_rps": [r for r in sat["pair_ratios"] if r],
                                        "req_per_cpu_sec": [r for r in eq["pair_ratios"] if r]}})
    return out


def record(batch_dir, path=None):
    """Adds BATCH_DIR's A/A pair ratios to the host's calibration file (PATH, default
    path_for(the batch's parent, its host)), replacing an earlier record of the same batch,
    and recomputes the floor. Returns (path, document)."""
    index = batch.load_json(os.path.join(batch_dir, "index.json"))
    path = path or path_for(os.path.dirname(os.path.abspath(batch_dir)), host_name(index))
    doc = load(path) or {"schema": SCHEMA, "host": host_name(index), "batches": []}
    name = os.path.basename(os.path.normpath(batch_dir))
    doc["batches"] = [e for e in doc["batches"] if e.get("batch") != name]
    for e in entries_of(batch_dir):
        e.update(mode=index.get("mode"), recorded=datetime.datetime.now(datetime.timezone.utc)
                 .strftime("%Y-%m-%dT%H:%M:%SZ"), commit=(index.get("versions") or {}).get("git_commit"))
        doc["batches"].append(e)
    doc["method"] = ("A/A: the baseline against itself under a second name; per scenario and figure the "
                     "within-batch sd of the log pair ratio (pooled) and a batch centre's variance across "
                     "batches (stats.floor_from_batches)")
    _recompute(doc)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")
    os.replace(tmp, path)
    return path, doc


def summary_of(doc, path, mode):
    """index.json's noise_floor: {file, host, mode, scenarios: {sc: {basis: {pair_sd_pct,
    centre_sd_pct (a batch centre's sd across A/A batches, null with one batch), batches,
    pairs, bias_pct}}}} from the A/A batches of MODE, or {file: null, note} when the host has
    none of that mode."""
    by_mode = ((doc or {}).get("floor") or {}).get(mode or "full")
    if not by_mode:
        return {"file": None, "note": f"no A/A calibration of {mode or 'full'} batches for this host "
                f"(./run_all.sh --calibrate{'' if mode in (None, 'full') else ' --' + mode}): "
                "the intervals see only this batch's pairs"}
    out = {}
    for sc, by in by_mode.items():
        for basis, f in by.items():
            if not f:
                continue
            cv = f.get("centre_var_log")
            out.setdefault(sc, {})[basis] = {
                "pair_sd_pct": round(100 * f["sd_log"], 2), "df": f["df"],
                "centre_sd_pct": None if cv is None else round(100 * cv ** 0.5, 2),
                "batches": f["batches"], "pairs": f["pairs"], "bias_pct": round(100 * f["bias_log"], 2)}
    return {"file": path, "host": doc.get("host"), "mode": mode or "full", "scenarios": out}


def write_twin(name, dest_dir):
    """Writes DEST_DIR/NAME-b.toml, the definition of server NAME under a second name (the same
    command, build and scenarios: an A/A comparison's candidate), and returns its name. Raises
    servers.DefinitionError for an unknown NAME, OSError."""
    from . import servers as sv
    src = sv.get(sv.load_all(server_defs=os.environ.get("SERVER_DEFS")), name)
    twin = f"{name}-b"
    os.makedirs(dest_dir, exist_ok=True)
    with open(src.path, encoding="utf-8") as fh:
        text = fh.read()
    path = os.path.join(dest_dir, f"{twin}.toml")
    with open(path + ".tmp", "w", encoding="utf-8") as fh:
        fh.write(f"# {twin}: {name} under a second name, for A/A calibration (./run_all.sh --calibrate);\n"
                 f"# written from {src.path}: do not edit, it is rewritten each time.\n" + text)
    os.replace(path + ".tmp", path)
    return twin
