#!/usr/bin/env python3
"""compare.py: per run, each metric of batch B relative to batch A (ratio B/A, percent, the
direction in words with its sense: higher req/s and req/CPU-s are better, lower latency, CPU
and memory are better), flagged when the change is larger than the noise threshold.
Reads only the two index.json files; called by runner/compare.sh through `python3 -m analysis
compare` (python3 stdlib only).
"""
import json
import math
import os
import sys

from . import batch, rules, stats, verdict
from .fmt import known
from .rules import is_num

# (field, name, better, unit, decimals, noise class)
METRICS = [
    ("saturation_rps", "saturation req/s", "higher", "req/s", 0, "rps"),
    ("latency_p50_ms", "p50", "lower", "ms", 3, "latency"),
    ("latency_p99_ms", "p99", "lower", "ms", 3, "latency"),
    ("latency_p99_9_ms", "p99.9", "lower", "ms", 3, "latency"),
    ("req_per_cpu_sec", "req/CPU-s", "higher", "", 0, "cpu"),
    ("server_cpu_pct", "server CPU", "lower", "%", 1, "cpu"),
    ("handler_p99_us", "handler p99", "lower", "us", 0, "handler"),
    ("server_rss_mb", "peak RSS", "lower", "MiB", 1, "rss"),
]
# Noise thresholds (percent) per batch mode, from repeated batches of unchanged code
# (SPEC.md section 13): smoke, the 90th percentile of |B/A - 1| over three --smoke batches on
# a loaded host; quick (also used for full batches, whose longer windows are quieter), the
# largest |B/A - 1| between two --quick batches on a quiet host, rounded up.
NOISE_BY_MODE = {
    "smoke": {"rps": 100.0, "latency": 1900.0, "cpu": 100.0, "handler": 100.0, "rss": 35.0},
    "quick": {"rps": 20.0, "latency": 900.0, "cpu": 20.0, "handler": 70.0, "rss": 20.0},
}
NOISE_BY_MODE["full"] = NOISE_BY_MODE["quick"]
NOISE_DEFAULT = NOISE_BY_MODE["smoke"]
NOISE_ENV = {"rps": "NOISE_RPS_PCT", "latency": "NOISE_LATENCY_PCT", "cpu": "NOISE_CPU_PCT",
             "handler": "NOISE_HANDLER_PCT", "rss": "NOISE_RSS_PCT"}


def noise_thresholds(mode_a=None, mode_b=None):
    """The per-class thresholds for two batches' modes (the smoke ones, the widest, unless
    both batches have the same known mode), environment overrides applied. Raises
    ValueError."""
    base = NOISE_BY_MODE.get(mode_a, NOISE_DEFAULT) if mode_a == mode_b else NOISE_DEFAULT
    out = {}
    for cls, default in base.items():
        raw = os.environ.get(NOISE_ENV[cls], "")
        value = float(raw) if raw else default
        if not value >= 0:
            raise ValueError(f"{NOISE_ENV[cls]} must be a number >= 0, got '{raw}'")
        out[cls] = value
    return out


def fmt(v, decimals, unit):
    if not is_num(v):
        return "n/a"
    return f"{v:,.{decimals}f}" + (f" {unit}" if unit else "")


def direction(name, better, pct):
    """The change in words, B relative to A, with whether it is better or worse."""
    if pct == 0:
        return f"B's {name} equals A's"
    up = pct > 0
    good = up == (better == "higher")
    sense = "better" if good else "worse"
    if name == "saturation req/s":
        return f"B is {abs(pct):.1f}% {'faster' if up else 'slower'} than A ({name})"
    return f"B's {name} is {abs(pct):.1f}% {'higher' if up else 'lower'} ({sense}) than A's"


def compare_metric(a, b, metric, noise):
    """(text columns, verdict word) for one metric of one run."""
    field, name, better, unit, decimals, cls = metric
    va, vb = a.get(field), b.get(field)
    cols = [name, fmt(va, decimals, unit), fmt(vb, decimals, unit)]
    if not is_num(va) or not is_num(vb):
        return cols + ["n/a", "not compared (missing in " + ("A" if not is_num(va) else "B") + ")", ""]
    if va == 0:
        return cols + ["n/a", "not compared (A is 0)", ""]
    ratio = vb / va
    pct = (ratio - 1) * 100
    words = direction(name, better, pct)
    thr = noise[cls]
    if abs(pct) <= thr:
        flag = f"within noise (+/-{thr:g}%)"
    else:
        good = (pct > 0) == (better == "higher")
        flag = f"{'IMPROVED' if good else 'REGRESSED'} (beyond +/-{thr:g}% noise)"
    return cols + [f"{ratio:.3f}", words, flag]


def flags_of(run):
    """The run's validity flags by today's rules (rules.py), e.g. ["loadgen-bound"]."""
    return batch.normalize(run)["flags"]


def load(batch_dir):
    with open(os.path.join(batch_dir, "index.json"), encoding="utf-8") as fh:
        index = json.load(fh, parse_constant=rules.json_null_constant)
    runs = {}
    for run in ((index.get("runs") or []) + (index.get("probe_runs") or [])
                + (index.get("equal_load_runs") or [])):
        if run.get("run"):
            runs[run["run"]] = run
    return index, runs


def describe(label, index):
    ver = index.get("versions") or {}
    host = index.get("host") or {}
    commit = (ver.get("git_commit") or "?")[:12] + (" (dirty)" if ver.get("git_dirty") else "")
    return (f"{label}: batch {known(index.get('batch'))}, mode {known(index.get('mode'))}, "
            f"{known((index.get('timestamps') or {}).get('start'))}, commit {commit}, "
            f"host {known(host.get('hostname'))} ({known(host.get('cores'))} cores)")


NOISE_WHAT = {"rps": "saturation req/s", "latency": "p50, p99, p99.9", "cpu": "req/CPU-s, server CPU",
              "handler": "handler p99", "rss": "peak RSS"}


def main(argv):
    if argv[1:] == ["--defaults"]:
        for cls, value in NOISE_DEFAULT.items():
            quick = NOISE_BY_MODE["quick"][cls]
            print(f"  {NOISE_ENV[cls]:<18} {NOISE_WHAT[cls]:<24} (default {value:g}% for smoke "
                  f"batches, {quick:g}% for quick and full)")
        return 0
    fmt_name, fail_on_verdict, dirs = "text", False, []
    for a in argv[1:]:
        if a.startswith("--format="):
            fmt_name = a.split("=", 1)[1]
        elif a == "--fail-on-verdict":
            fail_on_verdict = True
        else:
            dirs.append(a)
    if len(dirs) != 2 or fmt_name not in FORMATS:
        print(f"usage: compare.py [--format={'|'.join(FORMATS)}] [--fail-on-verdict] A_DIR B_DIR", file=sys.stderr)
        return 2
    try:
        noise_thresholds()  # bad NOISE_* values are usage errors, whatever the batches
    except ValueError as err:
        print(f"compare.sh: {err}", file=sys.stderr)
        return 2
    try:
        ia, ra = load(dirs[0])
        ib, rb = load(dirs[1])
    except (OSError, ValueError) as err:
        print(f"compare.sh: {err}", file=sys.stderr)
        return 1
    changes = ratio_changes(ia, ib)
    status = exit_status(changes, ia, ib, fail_on_verdict)
    if fmt_name == "json":
        print(json.dumps({"a": ia.get("batch"), "b": ib.get("batch"),
                          "verdicts": {"a": (ia.get("verdict") or {}).get("overall"),
                                       "b": (ib.get("verdict") or {}).get("overall")},
                          "comparisons": changes, "exit_status": status}, indent=1))
        return status
    if fmt_name == "junit":
        print(junit(changes, ia, ib, fail_on_verdict))
        return status
    noise = noise_thresholds(ia.get("mode"), ib.get("mode"))
    print(describe("A", ia))
    print(describe("B", ib))
    if ia.get("mode") != ib.get("mode"):
        print(f"warning: the modes differ (A {ia.get('mode') or 'unknown'}, B {ib.get('mode') or 'unknown'}): "
              "windows of different lengths, the noise thresholds do not apply")
    if (ia.get("host") or {}).get("hostname") != (ib.get("host") or {}).get("hostname"):
        print("warning: different hosts: the figures are not comparable")
    print("\n".join(changes_text(changes)))
    print()
    print("Run by run (B/A of each figure; the thresholds below are fixed, the comparisons above are "
          "what a CI gate should read):")
    print("Ratio is B/A. Noise thresholds: " + ", ".join(f"{c} +/-{v:g}%" for c, v in noise.items())
          + " (runner/compare.sh --help).")
    names = list(ra) + [n for n in rb if n not in ra]
    for name in names:
        a, b = ra.get(name), rb.get(name)
        print()
        if a is None or b is None:
            print(f"run {name}: only in {'B' if a is None else 'A'}, not compared")
            continue
        kind = a.get("kind") or "run"
        load_note = ""
        ta, tb = a.get("target_rps"), b.get("target_rps")
        if is_num(ta) and is_num(tb) and ta > 0 and ta != tb:
            load_note = (f"; offered load differs (A {ta:,.0f}, B {tb:,.0f} req/s, {(tb / ta - 1) * 100:+.1f}%): "
                         "latency and CPU are at different loads")
        elif is_num(ta):
            load_note = f"; offered load {ta:,.0f} req/s in both"
        print(f"run {name} ({kind}){load_note}")
        for side, run in (("A", a), ("B", b)):
            fl = flags_of(run)
            if fl:
                print(f"  note: {side}'s run is flagged ({', '.join(fl)}): its figures may not mean what they say")
        if a.get("failure") or b.get("failure"):
            print("  not compared: a run failed")
            continue
        rows = [compare_metric(a, b, m, noise) for m in METRICS]
        widths = [max(len(r[i]) for r in rows + [["metric", "A", "B", "B/A", "", ""]]) for i in range(6)]
        header = ["metric", "A", "B", "B/A", "change", ""]
        print("  " + "  ".join(h.ljust(widths[i]) if i in (0, 4) else h.rjust(widths[i])
                               for i, h in enumerate(header[:5])).rstrip())
        for r in rows:
            print("  " + "  ".join([r[0].ljust(widths[0]), r[1].rjust(widths[1]), r[2].rjust(widths[2]),
                                     r[3].rjust(widths[3]), r[4].ljust(widths[4]), r[5]]).rstrip())
    return status




# ---- the comparisons of two batches, for CI (issue 35; SPEC.md section 13) ------------------

# Exit statuses of compare.sh beyond 0, 1 and 2.
EXIT_REGRESSED = 5
EXIT_VERDICT = 6
FORMATS = ("text", "json", "junit")


def _se_log(c):
    """(standard error of the log ratio, degrees of freedom) of comparison C from its interval:
    half its log width over the t quantile of its df (pairs - 1 when the batch did not record
    it), or (None, None) without an interval."""
    lo, hi, lvl = c.get("ci_low"), c.get("ci_high"), c.get("ci_level") or stats.CI_LEVEL
    df = c.get("ci_df") or ((c.get("pairs_used") or 0) - 1)
    if not (is_num(lo) and is_num(hi) and lo > 0 and hi >= lo and is_num(df) and df > 0):
        return None, None
    return (math.log(hi) - math.log(lo)) / (2 * stats.t_quantile(0.5 + lvl / 2, df)), df


def ratio_change(ca, cb, level=stats.CI_LEVEL):
    """The change of one comparison's ratio from batch A (CA) to batch B (CB): {change (B's ratio
    / A's), low, high (its LEVEL interval: the two intervals' standard errors in log scale
    added in quadrature, Welch-Satterthwaite degrees of freedom), verdict (IMPROVED when the
    interval is above 1, REGRESSED when below, WITHIN NOISE when it holds 1, N/A when a batch
    has no interval or the two were decided on different figures), why}. A higher ratio is
    better (candidate / baseline of req/s or req/CPU-s)."""
    out = {"change": None, "low": None, "high": None, "verdict": "N/A", "why": None}
    if ca is None or cb is None:
        out["why"] = f"only in {'B' if ca is None else 'A'}"
        return out
    if ca.get("basis") != cb.get("basis"):
        out["why"] = (f"decided on different figures (A: {verdict.BASIS_NAME.get(ca.get('basis'), 'none')}, "
                      f"B: {verdict.BASIS_NAME.get(cb.get('basis'), 'none')})")
        return out
    (sa, da), (sb, db) = _se_log(ca), _se_log(cb)
    if sa is None or sb is None:
        out["why"] = f"no interval in {'A' if sa is None else 'B'} ({(ca if sa is None else cb).get('verdict')})"
        return out
    d = math.log(cb["ratio"]) - math.log(ca["ratio"])
    se = math.hypot(sa, sb)
    df = se ** 4 / (sa ** 4 / da + sb ** 4 / db) if se > 0 else da + db
    half = stats.t_quantile(0.5 + level / 2, df) * se
    out.update(change=math.exp(d), low=math.exp(d - half), high=math.exp(d + half))
    rng = f"{out['low']:.3f}-{out['high']:.3f}"
    if out["low"] > 1:
        out["verdict"], out["why"] = "IMPROVED", f"the ratio rose by {out['change'] - 1:+.1%}, interval {rng} above 1"
    elif out["high"] < 1:
        out["verdict"], out["why"] = "REGRESSED", f"the ratio fell by {out['change'] - 1:+.1%}, interval {rng} below 1"
    else:
        out["verdict"], out["why"] = "WITHIN NOISE", f"change {out['change'] - 1:+.1%}, interval {rng} holds 1"
    return out


def ratio_changes(ia, ib):
    """Per comparison of either batch (scenario, candidate, baseline) its ratio_change, in A's
    order then B's new ones: [{scenario, candidate, baseline, basis, a {ratio, ci_low, ci_high,
    verdict}, b {...}, change, low, high, verdict, why}]."""
    def key(c):
        return c.get("scenario"), c.get("candidate"), c.get("baseline")
    ca = {key(c): c for c in ia.get("comparisons") or []}
    cb = {key(c): c for c in ib.get("comparisons") or []}
    out = []
    for k in list(ca) + [k for k in cb if k not in ca]:
        a, b = ca.get(k), cb.get(k)
        side = {n: None if c is None else {f: c.get(f) for f in ("ratio", "ci_low", "ci_high", "verdict", "basis")}
                for n, c in (("a", a), ("b", b))}
        out.append({"scenario": k[0], "candidate": k[1], "baseline": k[2],
                    "basis": (b or a or {}).get("basis"), **side, **ratio_change(a, b)})
    return out


def _xml(text):
    return (str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;"))


def junit(changes, ia, ib, fail_on_verdict=False):
    """JUnit XML: one testsuite, one testcase per comparison (classname the scenario, name the
    pair and figure); REGRESSED is a failure, N/A skipped (a failure with FAIL_ON_VERDICT)."""
    fails = sum(1 for c in changes if c["verdict"] == "REGRESSED" or (fail_on_verdict and c["verdict"] == "N/A"))
    skips = sum(1 for c in changes if c["verdict"] == "N/A" and not fail_on_verdict)
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             f'<testsuites name="compare" tests="{len(changes)}" failures="{fails}">',
             f'  <testsuite name="{_xml(ia.get("batch"))} to {_xml(ib.get("batch"))}" tests="{len(changes)}" '
             f'failures="{fails}" skipped="{skips}">']
    for c in changes:
        name = f"{c['candidate']}/{c['baseline']} {verdict.BASIS_NAME.get(c['basis'], 'ratio')}"
        lines.append(f'    <testcase classname="{_xml(c["scenario"])}" name="{_xml(name)}">')
        msg = _xml(f"{c['verdict']}: {c['why']}")
        if c["verdict"] == "REGRESSED" or (fail_on_verdict and c["verdict"] == "N/A"):
            lines.append(f'      <failure type="{c["verdict"]}" message="{msg}"/>')
        elif c["verdict"] == "N/A":
            lines.append(f'      <skipped message="{msg}"/>')
        else:
            lines.append(f"      <system-out>{msg}</system-out>")
        lines.append("    </testcase>")
    lines += ["  </testsuite>", "</testsuites>"]
    return "\n".join(lines)


def exit_status(changes, ia, ib, fail_on_verdict=False):
    """EXIT_REGRESSED when a comparison REGRESSED; else, with FAIL_ON_VERDICT, EXIT_VERDICT when
    a comparison is N/A or either batch's verdict is not PASS (FAIL, INCONCLUSIVE, INCOMPLETE,
    N/A); else 0."""
    if any(c["verdict"] == "REGRESSED" for c in changes):
        return EXIT_REGRESSED
    if fail_on_verdict:
        words = [(i.get("verdict") or {}).get("overall") for i in (ia, ib)]
        if any(c["verdict"] == "N/A" for c in changes) or any(w != "PASS" for w in words):
            return EXIT_VERDICT
    return 0


def changes_text(changes):
    """The comparisons' lines for the text format."""
    out = ["Comparisons (ratio candidate/baseline in A and in B, its change B/A with a 95% interval "
           "from both batches):"]
    if not changes:
        out.append("  none in either batch (an index.json written before comparisons were recorded)")
    for c in changes:
        def side(s):
            return "n/a" if not s or not is_num(s.get("ratio")) else (
                f"{s['ratio']:.3f}" + (f" ({s['ci_low']:.3f}-{s['ci_high']:.3f})" if is_num(s.get("ci_low")) else ""))
        out.append(f"  {c['scenario']} {c['candidate']}/{c['baseline']} on "
                   f"{verdict.BASIS_NAME.get(c['basis'], 'no figure')}: A {side(c['a'])}, B {side(c['b'])}: "
                   f"{c['verdict']} ({c['why']})")
    return out
