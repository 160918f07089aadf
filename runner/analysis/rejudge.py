"""rejudge: a batch judged by today's rules, also a kept reference batch that has only its
index.json (results/README.md): its runs (index.json holds every result.json) are written
back into a temporary batch folder with a matrix.json of its groups, and the summary's
verdict is computed there. Never changes the batch folder itself.
"""
import json
import os
import shutil
import tempfile

from . import batch, summary, verdict


def _materialize(batch_dir, dest):
    """Writes DEST/<run>/result.json and DEST/matrix.json from BATCH_DIR/index.json."""
    index = batch.load_json(os.path.join(batch_dir, "index.json"))
    for r in (index.get("runs") or []) + (index.get("probe_runs") or []) + (index.get("equal_load_runs") or []):
        name = r.get("run")
        if not name:
            continue
        os.makedirs(os.path.join(dest, name), exist_ok=True)
        with open(os.path.join(dest, name, "result.json"), "w", encoding="utf-8") as fh:
            json.dump(r, fh)
    matrix = {k: index.get(k) for k in ("groups", "mode", "seed", "repeats", "selection", "baseline",
                                        "target_ratio", "ci_level", "min_valid_pairs", "sat_ratio")}
    matrix["started"], matrix["ended"] = (index.get("timestamps") or {}).get("start"), \
        (index.get("timestamps") or {}).get("end")
    # the plan's facts that index.json keeps outside its runs (summary.build_index reads them back)
    elc = index.get("equal_load_config") or {}
    matrix.update({"reruns": index.get("reruns") or [], "calibrate": bool(index.get("calibrate")),
                   "equal_load_warmup_sec": elc.get("warmup_sec"), "equal_load_measure_sec": elc.get("measure_sec")})
    with open(os.path.join(dest, "matrix.json"), "w", encoding="utf-8") as fh:
        json.dump(matrix, fh)


def has_run_folders(batch_dir):
    """True when BATCH_DIR still has a run folder (<run>/result.json); false for a kept batch."""
    return any(os.path.exists(os.path.join(batch_dir, d, "result.json")) for d in os.listdir(batch_dir))


def index_of(batch_dir):
    """index.json's document of BATCH_DIR by today's rules (from its run folders when it has
    them, else from its kept index.json)."""
    if has_run_folders(batch_dir):
        return summary.build_index(batch_dir)
    tmp = tempfile.mkdtemp(prefix="rejudge.")
    try:
        work = os.path.join(tmp, os.path.basename(os.path.normpath(batch_dir)))
        os.makedirs(work)
        _materialize(batch_dir, work)
        # the calibration of the batch's own results folder, not the temporary one
        os.environ.setdefault("CALIBRATION", os.path.join(os.path.dirname(os.path.abspath(batch_dir)),
                                                          "calibration", "vm.json"))
        return summary.build_index(work)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def lines(batch_dir):
    """One line per comparison (scenario, pair, verdict, ratio and interval, basis, pairs used,
    what was left out) and the batch's headline."""
    index = index_of(batch_dir)
    out = []
    for c in index["comparisons"]:
        left = "; ".join(sorted({f"{x['server']} {x['flag']}" for e in c.get("excluded_pairs") or []
                                 for x in e["reasons"]}))
        out.append(f"{c['scenario']} {c['candidate']}/{c['baseline']}: {c['verdict']} "
                   f"{verdict.ratio_words(c, 3)} on {verdict.BASIS_NAME.get(c.get('basis'), 'no figure')}, "
                   f"{c.get('pairs_used')} of {c.get('pairs_total')} pairs" + (f" (left out: {left})" if left else ""))
    out.append(f"verdict: {index['verdict']['headline']}")
    return out
