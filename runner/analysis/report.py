#!/usr/bin/env python3
"""report.py: renders results/<batch>/report.html from index.json and the runs' histogram.txt.
Writes gnuplot data files into a work folder, runs runner/plots/*.gp (svg terminal), and
inlines the SVGs (ids made unique per plot) into one page that needs no network.
Invariant: every figure printed on the page is a value of index.json, wrapped in
<span class="fig" data-key="path/in/index.json">; every string from the batch is escaped.
Called by runner/report.sh (which owns the work folder); python3 stdlib only.
"""
import html
import json
import math
import os
import re
import subprocess
import sys

from . import rules, scaling, sweep

PLOTS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "plots")
SAFE = re.compile(r"[^A-Za-z0-9 ._+:,=()/-]")
# Percentile axis: x = 1/(1-p), labelled as HdrHistogram's plotter does.
X_TICKS = [(2, "50%"), (10, "90%"), (100, "99%"), (1000, "99.9%"), (10000, "99.99%"),
           (100000, "99.999%")]


def esc(value):
    """Any value as escaped HTML text (None as 'n/a')."""
    return html.escape("n/a" if value is None else str(value), quote=True)


def safe_label(text):
    """A string fit for a gnuplot title or data label: [A-Za-z0-9 ._+:,=()/-] only."""
    return SAFE.sub("_", str(text))


def get_path(doc, key):
    """The value at a '/'-separated path of index.json (list indexes as numbers), or None."""
    cur = doc
    for part in key.split("/"):
        if isinstance(cur, list):
            try:
                cur = cur[int(part)]
            except (ValueError, IndexError):
                return None
        elif isinstance(cur, dict):
            cur = cur.get(part)
        else:
            return None
        if cur is None:
            return None
    return cur


def fmt_num(value, decimals):
    """A number with thousands separators and DECIMALS decimals."""
    return f"{value:,.{decimals}f}"


class Page:
    """The index and the figure formatter; every printed figure goes through fig()."""

    def __init__(self, index):
        self.index = index

    def fig(self, key, decimals=0, unit=""):
        """The value of index.json at KEY, formatted, tagged with its key for the tests."""
        value = get_path(self.index, key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return '<span class="na">n/a</span>'
        text = fmt_num(value, decimals)
        suffix = f"&nbsp;{esc(unit)}" if unit else ""
        return f'<span class="fig" data-key="{esc(key)}">{text}</span>{suffix}'


def per_interval(page, key):
    """A brief's per-interval p99s at KEY as 'median (min-max) ms', or n/a."""
    f = page.fig
    if not rules.is_num(get_path(page.index, key + "/median_ms")):
        return f(key + "/median_ms")
    return f'{f(key + "/median_ms", 3)} ({f(key + "/min_ms", 3)}-{f(key + "/max_ms", 3, "ms")})'


def validity_html(brief):
    """The validity of a brief result as small badges: one per problem (rules.py), or ok."""
    if brief is None:
        return '<span class="bad">no result</span>'
    if brief.get("failure"):
        return f'<span class="bad">failed: {esc(brief["failure"])}</span>'
    problems = brief.get("problems") or []
    if not problems:
        return '<span class="flag ok">valid</span>'
    return " ".join(f'<span class="flag bad" title="{esc(p.get("reason"))}">{esc(p.get("phase") or "run")}: '
                    f'{esc(p.get("flag"))}</span>' for p in problems)


def probe_validity_html(brief):
    """The probe problems of a brief as badges (only the probe phase)."""
    if brief is None:
        return '<span class="bad">no result</span>'
    if brief.get("failure"):
        return f'<span class="bad">failed: {esc(brief["failure"])}</span>'
    probs = [p for p in brief.get("problems") or [] if p.get("phase") == "probe"]
    if not probs:
        return '<span class="flag ok">valid</span>'
    return " ".join(f'<span class="flag bad" title="{esc(p.get("reason"))}">{esc(p.get("flag"))}</span>' for p in probs)


def read_histogram(path):
    """(x = 1/(1-p), latency ms) points of an HdrHistogram text file, p < 1 only."""
    points = []
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                cols = line.split()
                if len(cols) < 4 or line.lstrip().startswith("#"):
                    continue
                try:
                    value, pct = float(cols[0]), float(cols[1])
                except ValueError:
                    continue
                if 0 <= pct < 1 and math.isfinite(value):
                    points.append((1.0 / (1.0 - pct), value))
    except OSError:
        return []
    return points


def gnuplot(script, variables, work):
    """Runs runner/plots/SCRIPT with VARIABLES (name -> number or safe string); returns
    the SVG text. Raises RuntimeError with gnuplot's stderr on failure."""
    out = os.path.join(work, f"plot{len(os.listdir(work))}.svg")
    assigns = [f"out='{out}'", f"plotsdir='{PLOTS_DIR}'"]
    for name, value in variables.items():
        if isinstance(value, str):
            if "'" in value or "\\" in value:
                raise ValueError(f"unsafe gnuplot string for {name}")
            assigns.append(f"{name}='{value}'")
        else:
            assigns.append(f"{name}={value!r}")
    cmd = [os.environ.get("GNUPLOT", "gnuplot"), "-e", "; ".join(assigns), os.path.join(PLOTS_DIR, script)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    if proc.returncode != 0 or not os.path.exists(out):
        raise RuntimeError(f"gnuplot {script} failed: {proc.stderr.strip()}")
    with open(out, encoding="utf-8") as fh:
        return fh.read()


class Svgs:
    """Inlines gnuplot SVGs: drops the XML prolog and makes every id unique per plot."""

    def __init__(self):
        self.count = 0

    def inline(self, svg, name):
        self.count += 1
        prefix = f"p{self.count}-"
        svg = svg[svg.index("<svg"):]
        seen = {}

        def new_id(match):
            # gnuplot repeats a plot's group id when it redraws an opaque key: number repeats.
            name = match.group(2)
            seen[name] = seen.get(name, 0) + 1
            suffix = "" if seen[name] == 1 else f"-{seen[name]}"
            return f'id="{prefix}{name}{suffix}"'
        svg = re.sub(r"""\bid=(["'])([^"']+)\1""", new_id, svg)
        svg = re.sub(r"""href=(["'])#([^"']+)\1""", lambda m: f'href="#{prefix}{m.group(2)}"', svg)
        svg = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}{m.group(1)})", svg)
        svg = svg.replace("<svg", f'<svg data-plot="{esc(name)}" role="img" aria-label="{esc(name)}"', 1)
        return f'<figure class="plot">{svg}</figure>'


def num_or_nan(value):
    return repr(float(value)) if isinstance(value, (int, float)) and not isinstance(value, bool) else "NaN"


def write_dat(path, rows):
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(" ".join(str(c) for c in row) + "\n")


def render(batch_dir, work):
    with open(os.path.join(batch_dir, "index.json"), encoding="utf-8") as fh:
        index = json.load(fh, parse_constant=rules.json_null_constant)
    page = Page(index)
    svgs = Svgs()
    scenarios = index.get("scenarios") or []
    target = index.get("target_ratio")
    target_num = target if isinstance(target, (int, float)) else 0.5
    plots = {}

    # ---- bar charts across scenarios -------------------------------------------------
    if scenarios:
        rows, ratio_rows, eff_rows, lat_rows = [], [], [], []
        for i, sc in enumerate(scenarios, 1):
            label = safe_label(sc.get("scenario"))
            a, b = sc.get("actor_result") or {}, sc.get("async_result") or {}
            eq = sc.get("equal_load") or {}
            ea, eb = eq.get("actor") or {}, eq.get("async") or {}
            med = sc.get("saturation_median_rps") or {}
            b_sat = med.get("async")
            mark = target_num * b_sat if isinstance(b_sat, (int, float)) else None
            rows.append((i, label, num_or_nan(med.get("actor")), num_or_nan(b_sat), num_or_nan(mark)))
            ratio_rows.append((i, label, num_or_nan(sc.get("ratio")),
                               safe_label((sc.get("basis") or "none").replace("_", "-"))))
            eff_rows.append((i, label, num_or_nan(a.get("req_per_cpu_sec")), num_or_nan(b.get("req_per_cpu_sec")),
                             num_or_nan(ea.get("req_per_cpu_sec")), num_or_nan(eb.get("req_per_cpu_sec"))))
            hp = [r.get("handler_p99_us") for r in (a, b)]
            lat_rows.append((i, label, num_or_nan(a.get("latency_p99_ms")),
                             num_or_nan(hp[0] / 1000 if isinstance(hp[0], (int, float)) else None),
                             num_or_nan(b.get("latency_p99_ms")),
                             num_or_nan(hp[1] / 1000 if isinstance(hp[1], (int, float)) else None)))
        n = len(scenarios)
        write_dat(os.path.join(work, "throughput.dat"), rows)
        write_dat(os.path.join(work, "ratio.dat"), ratio_rows)
        write_dat(os.path.join(work, "efficiency.dat"), eff_rows)
        write_dat(os.path.join(work, "p99.dat"), lat_rows)
        plots["throughput"] = svgs.inline(gnuplot("throughput.gp", {
            "datafile": os.path.join(work, "throughput.dat"), "n": n, "target": float(target_num)}, work),
            "throughput")
        plots["ratio"] = svgs.inline(gnuplot("ratio.gp", {
            "datafile": os.path.join(work, "ratio.dat"), "n": n, "target": float(target_num)}, work), "ratio")
        # (a batch without sustained windows, e.g. a sweep batch without equal load, has neither plot)
        if any(c != "NaN" for r in eff_rows for c in r[2:]):
            plots["efficiency"] = svgs.inline(gnuplot("efficiency.gp", {
                "datafile": os.path.join(work, "efficiency.dat"), "n": n}, work), "efficiency")
        positive = [float(c) for r in lat_rows for c in r[2:] if c != "NaN" and float(c) > 0]
        if positive:
            ymin = 10 ** (math.floor(math.log10(min(positive))) - 1)
            plots["p99"] = svgs.inline(gnuplot("p99.gp", {
                "datafile": os.path.join(work, "p99.dat"), "n": n, "ymin": float(ymin)}, work),
                "handler-vs-client-p99")

    # ---- latency spectra -------------------------------------------------------------
    for sc in scenarios:
        scn = safe_label(sc.get("scenario"))
        eq = sc.get("equal_load") or {}
        for kind, actor_run, async_run, title, briefs in (
                ("own", sc.get("actor_run"), sc.get("async_run"), f"{scn}: each at SAT_RATIO x its own saturation",
                 (sc.get("actor_result"), sc.get("async_result"))),
                ("equal", eq.get("actor_run"), eq.get("async_run"),
                 f"{scn}: equal load, {eq.get('rate_rps')} req/s" if eq else "", (eq.get("actor"), eq.get("async")))):
            files, xmax, have = {}, 100.0, False
            for who, run in (("actor", actor_run), ("async", async_run)):
                pts = read_histogram(os.path.join(batch_dir, run, "histogram.txt")) if run else []
                have = have or bool(pts)
                path = os.path.join(work, f"hist-{scn}-{kind}-{who}.dat")
                write_dat(path, pts if pts else [(1, "NaN")])
                files[who] = path
                if pts:
                    xmax = max(xmax, max(x for x, _ in pts))
            if not have:
                continue
            xmax = 10 ** math.ceil(math.log10(xmax) - 1e-9)
            name = f"latency-{scn}-{kind}"
            plots[name] = svgs.inline(gnuplot("latency.gp", {
                "actorfile": files["actor"], "asyncfile": files["async"], "xmax": float(min(xmax, 1e6)),
                "plottitle": safe_label(title), "actorname": safe_label(sc.get("actor")),
                "asyncname": safe_label(sc.get("async")),
                "actorlg": int(bool((briefs[0] or {}).get("latency_by_loadgen"))),
                "asynclg": int(bool((briefs[1] or {}).get("latency_by_loadgen")))}, work), name)

    plots.update(sweep.report_plots(index, work, svgs))
    plots.update(scaling.report_plots(index, work, svgs))
    return build_html(index, page, plots)


CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:24px auto;max-width:1320px;
color:#1d2330;padding:0 16px;line-height:1.4}
h1{font-size:1.6em;margin-bottom:4px} h2{border-bottom:2px solid #dde3ea;padding-bottom:4px;margin-top:36px}
.banner{border-radius:8px;padding:14px 18px;margin:16px 0;border:2px solid}
.banner.PASS{background:#e7f6ea;border-color:#2f9e44} .banner.FAIL{background:#fdecec;border-color:#d9480f}
.banner.other,.banner.INCONCLUSIVE{background:#fff7e0;border-color:#e0a800}
.headline{font-size:1.05em;margin:6px 0} tr.lg td{color:#8a8f98;background:repeating-linear-gradient(45deg,#fafafa,#fafafa 6px,#f0f0f0 6px,#f0f0f0 12px)}
.banner .verdict{font-size:1.8em;font-weight:700;margin-right:12px}
.warn{background:#fff3cd;border:1px solid #e0a800;padding:8px 12px;border-radius:6px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:.92em}
th,td{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f3f5f8} td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.flag{display:inline-block;border-radius:4px;padding:0 5px;margin:1px;font-size:.85em}
.ok{background:#e7f6ea;color:#1b5e20} .bad{background:#fdecec;color:#9b1c1c} .na{color:#6b7280}
.flag.na{background:#eef0f3}
.v-PASS{color:#1b7f35;font-weight:700} .v-FAIL{color:#c0392b;font-weight:700}
.v-ERROR,.v-INCOMPLETE,.v-INCONCLUSIVE{color:#b7791f;font-weight:700}
.grid{display:flex;flex-wrap:wrap;gap:12px} figure.plot{margin:0}
figure.plot svg{width:640px;height:auto;max-width:100%;border:1px solid #e5e9ef;border-radius:6px}
.grid.one figure.plot svg{width:900px}
.note{color:#4b5563;font-size:.9em} pre{background:#f6f8fa;padding:8px;overflow:auto;font-size:.85em}
"""


def build_html(index, page, plots):
    f = page.fig
    out = []
    w = out.append
    scenarios = index.get("scenarios") or []

    def scenario_rows(*cells):
        """One table row per scenario: its name, then one number cell per (PATH, DECIMALS[,
        UNIT]): the figure at scenarios/<i>/PATH."""
        for i, sc in enumerate(scenarios):
            tds = "".join(f'<td class="n">{f(f"scenarios/{i}/{path}", *fmt)}</td>' for path, *fmt in cells)
            w(f'<tr><td>{esc(sc.get("scenario"))}</td>{tds}</tr>')

    verdict = index.get("verdict") or {}
    overall = verdict.get("overall") or "N/A"
    batch = index.get("batch")
    w("<!DOCTYPE html>")
    w('<html lang="en"><head><meta charset="utf-8">')
    w(f"<title>Benchmark report: batch {esc(batch)}</title>")
    w(f"<style>{CSS}</style></head><body>")
    w(f"<h1>Actor vs async: batch {esc(batch)}</h1>")
    ts = index.get("timestamps") or {}
    host = index.get("host") or {}
    w(f'<p class="note">Mode {esc(index.get("mode"))}, {esc(ts.get("start"))} to {esc(ts.get("end"))} (UTC), '
      f'host {esc(host.get("hostname"))} ({f("host/cores")} cores). Rendered from index.json '
      f'(generated {esc(index.get("generated"))}) by runner/report.sh.</p>')
    if index.get("smoke"):
        w('<p class="warn"><strong>Smoke run: checks the pipeline, too short to mean anything.</strong> '
          'Its figures and its verdict are not results.</p>')

    # ---- verdict banner
    cls = overall if overall in ("PASS", "FAIL", "INCONCLUSIVE") else "other"
    if index.get("smoke"):
        cls = "other"
    w(f'<section class="banner {esc(cls)}" id="verdict"><span class="verdict">{esc(overall)}</span>'
      f'{"<strong>(smoke run, not a result)</strong> " if index.get("smoke") else ""}'
      f'actor / async &ge; target ratio {f("target_ratio", 2)} on s1 and s2.'
      f'<p class="headline">{esc(verdict.get("headline"))}</p>')
    w("<table><tr><th>scenario</th><th>servers</th><th>compared on</th><th>actor</th><th>async</th>"
      "<th>ratio actor/async</th><th>range (probe pairs)</th><th>verdict</th><th>why</th></tr>")
    for i, sc in enumerate(scenarios):
        k = f"scenarios/{i}"
        basis = sc.get("basis")
        unit = "req/s" if basis == "saturation_rps" else "req/CPU-s" if basis == "req_per_cpu_sec" else ""
        basis_txt = {"saturation_rps": "saturation req/s, median of the probe pairs",
                     "req_per_cpu_sec": "req/CPU-s at equal load"}.get(basis, "n/a")
        v = sc.get("verdict") or "N/A"
        info = "" if sc.get("counts_for_overall") else ' <span class="note">(info)</span>'
        frag = ' <span class="flag bad">fragile</span>' if sc.get("fragile") else ""
        why = [esc(sc.get("basis_reason"))] if sc.get("basis_reason") else []
        why += [esc(r) for r in sc.get("reasons") or []]
        why += [f'<span class="bad">{esc(e)}</span>' for e in sc.get("errors") or []]
        if sc.get("remedies"):
            why.append("<strong>Remedy:</strong> " + esc("; ".join(sc["remedies"])))
        rng = (f'{f(k + "/ratio_min", 3)}&ndash;{f(k + "/ratio_max", 3)} ({f(k + "/pairs_used")} of '
               f'{f(k + "/pairs_total")} pairs)' if basis == "saturation_rps" else "n/a")
        w(f'<tr><td>{esc(sc.get("scenario"))}</td><td>{esc(sc.get("actor"))} vs {esc(sc.get("async"))}</td>'
          f'<td>{basis_txt}</td><td class="n">{f(k + "/actor_value", 0, unit)}</td>'
          f'<td class="n">{f(k + "/async_value", 0, unit)}</td><td class="n">{f(k + "/ratio", 3)}</td>'
          f'<td class="n">{rng}</td><td><span class="v-{esc(v)}">{esc(v)}</span>{frag}{info}</td>'
          f'<td>{"<br>".join(why) or "all runs valid"}</td></tr>')
    w("</table></section>")
    if index.get("failures"):
        w("<h2>Failures</h2><ul>")
        for fl in index["failures"]:
            w(f'<li>{esc(fl.get("run"))}: {esc(fl.get("failure"))}</li>')
        w("</ul>")

    # ---- throughput
    w('<h2 id="throughput">Throughput</h2>')
    w('<p class="note">Closed-loop saturation throughput of each server (the median of its probes). The dashed '
      'mark over each actor bar is target ratio x async: the actor passes on this figure when its bar reaches the '
      'mark. When too few probe pairs are valid, the verdict uses requests per server CPU-second at equal load '
      'instead (right, and the efficiency section), or none (INCONCLUSIVE).</p>')
    w(f'<div class="grid">{plots.get("throughput", "")}{plots.get("ratio", "")}</div>')
    w("<table><tr><th>scenario</th><th>actor saturation (median of probes)</th>"
      "<th>async saturation (median of probes)</th><th>ratio (median of pairs)</th>"
      "<th>actor sustained</th><th>async sustained</th><th>actor target</th><th>async target</th></tr>")
    scenario_rows(("saturation_median_rps/actor", 0, "req/s"), ("saturation_median_rps/async", 0, "req/s"),
                  ("saturation_ratio", 3),
                  ("actor_result/sustained_rps", 0, "req/s"), ("async_result/sustained_rps", 0, "req/s"),
                  ("actor_result/target_rps", 0, "req/s"), ("async_result/target_rps", 0, "req/s"))
    w("</table>")

    w('<h3 id="probes">Every probe</h3><p class="note">Closed-loop probes run interleaved (actor, async, actor, '
      'async, ...), each on a fresh server, so drift hits both servers alike. A pair counts only when both probes '
      'are valid; the ratio is the median of the valid pairs.</p>')
    w("<table><tr><th>scenario</th><th>pair</th><th>actor req/s</th><th>async req/s</th><th>actor server CPU</th>"
      "<th>async server CPU</th><th>actor loadgen CPU</th><th>async loadgen CPU</th><th>validity actor</th>"
      "<th>validity async</th></tr>")
    for i, sc in enumerate(scenarios):
        pr = sc.get("probes") or {}
        for j in range(max(len(pr.get("actor") or []), len(pr.get("async") or []))):
            ka, kb = f"scenarios/{i}/probes/actor/{j}", f"scenarios/{i}/probes/async/{j}"
            w(f'<tr><td>{esc(sc.get("scenario"))}</td><td class="n">{j + 1}</td>'
              f'<td class="n">{f(ka + "/saturation_rps", 0, "req/s")}</td>'
              f'<td class="n">{f(kb + "/saturation_rps", 0, "req/s")}</td>'
              f'<td class="n">{f(ka + "/probe/server_cpu_pct", 1, "%")}</td>'
              f'<td class="n">{f(kb + "/probe/server_cpu_pct", 1, "%")}</td>'
              f'<td class="n">{f(ka + "/probe/loadgen_cpu_pct", 1, "%")}</td>'
              f'<td class="n">{f(kb + "/probe/loadgen_cpu_pct", 1, "%")}</td>'
              f'<td>{probe_validity_html(get_path(index, ka))}</td>'
              f'<td>{probe_validity_html(get_path(index, kb))}</td></tr>')
    w("</table>")

    # ---- latency spectra
    w('<h2 id="latency">Latency percentile spectrum</h2>')
    w('<p class="note">Coordinated-omission corrected latency of the measured window (histogram.txt of each run), '
      'x = percentile on a log(1/(1-p)) axis. Left: each server at SAT_RATIO x its own saturation (different '
      'offered loads). Right: both servers at the same constant rate (equal load). A run limited by the load '
      'generator (its CPU or its send lag over the thresholds of SPEC.md section 8) is drawn dashed and pale and its '
      'rows are greyed: its latency is the load generator\'s queue, not the server\'s.</p>')
    for i, sc in enumerate(scenarios):
        scn = safe_label(sc.get("scenario"))
        w(f'<h3>{esc(sc.get("scenario"))}: {esc(sc.get("actor"))} vs {esc(sc.get("async"))}</h3>')
        w(f'<div class="grid">{plots.get(f"latency-{scn}-own", "")}{plots.get(f"latency-{scn}-equal", "")}</div>')
        w("<table><tr><th>run</th><th>rate</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th>"
          '<th title="the p99 of each second of the window: median (min-max)">p99 per second</th>'
          "<th>send lag p99</th><th>validity</th></tr>")
        for key, label in ((f"scenarios/{i}/actor_result", sc.get("actor_run")),
                           (f"scenarios/{i}/async_result", sc.get("async_run")),
                           (f"scenarios/{i}/equal_load/actor", (sc.get("equal_load") or {}).get("actor_run")),
                           (f"scenarios/{i}/equal_load/async", (sc.get("equal_load") or {}).get("async_run"))):
            brief = get_path(index, key)
            if brief is None:
                continue
            lg = brief.get("latency_by_loadgen")
            cls = ' class="lg" title="limited by the load generator: its queue, not the server"' if lg else ""
            w(f'<tr{cls}><td>{esc(label)}{" (loadgen-limited)" if lg else ""}</td>'
              f'<td class="n">{f(key + "/sustained_rps", 0, "req/s")}</td>'
              + "".join(f'<td class="n">{f(key + "/" + m, 3, "ms")}</td>' for m in
                        ("latency_p50_ms", "latency_p90_ms", "latency_p99_ms", "latency_p99_9_ms", "latency_max_ms"))
              + f'<td class="n">{per_interval(page, key + "/latency_p99_intervals")}</td>'
              + f'<td class="n">{f(key + "/send_lag_p99_ms", 3, "ms")}'
              + (f' (own {f(key + "/send_lag_own_p99_ms", 3, "ms")})'
                 if rules.is_num(brief.get("send_lag_own_p99_ms")) else "") + "</td>"
              + f"<td>{validity_html(brief)}</td></tr>")
        w("</table>")
        if sc.get("equal_load"):
            w(f'<p class="note">Equal load at {f(f"scenarios/{i}/equal_load/rate_rps", 0, "req/s")}: '
              f'p99 ratio actor/async {f(f"scenarios/{i}/equal_load/p99_ratio", 3)}.</p>')

    w(sweep.report_html(index, page, plots))
    w(scaling.report_html(index, page, plots))

    # ---- efficiency
    w('<h2 id="efficiency">Requests per server CPU-second</h2>')
    w('<p class="note">sustained req/s divided by the server\'s CPU (utime + stime from /proc over the measured '
      'window); higher is better. Saturation runs: each at its own offered load; equal-load runs: the same '
      'offered load.</p>')
    w(f'<div class="grid one">{plots.get("efficiency", "")}</div>')
    w("<table><tr><th>scenario</th><th>actor (own load)</th><th>async (own load)</th><th>ratio</th>"
      "<th>actor CPU</th><th>async CPU</th><th>actor (equal load)</th><th>async (equal load)</th><th>ratio</th>"
      "<th>actor CPU</th><th>async CPU</th></tr>")
    scenario_rows(("actor_result/req_per_cpu_sec", 0), ("async_result/req_per_cpu_sec", 0),
                  ("req_per_cpu_sec_ratio", 3),
                  ("actor_result/server_cpu_pct", 1, "%"), ("async_result/server_cpu_pct", 1, "%"),
                  ("equal_load/actor/req_per_cpu_sec", 0), ("equal_load/async/req_per_cpu_sec", 0),
                  ("equal_load/req_per_cpu_sec_ratio", 3),
                  ("equal_load/actor/server_cpu_pct", 1, "%"), ("equal_load/async/server_cpu_pct", 1, "%"))
    w("</table><p class=\"note\">CPU is percent of one CPU.</p>")

    # ---- handler p99 vs client p99
    w('<h2 id="handler">Server-side handler p99 beside client p99</h2>')
    w('<p class="note">Client p99: the loadgen\'s corrected latency (includes queueing in the kernel, the '
      'loop and the loadgen). Handler p99: the server\'s own parsed-to-socket time from /metrics over the '
      'same window. Log scale; both in ms on the plot (saturation runs).</p>')
    w(f'<div class="grid one">{plots.get("p99", "")}</div>')
    w("<table><tr><th>run</th><th>client p99</th><th>handler p99</th><th>handler p50</th></tr>")
    for i, sc in enumerate(scenarios):
        for key, label in ((f"scenarios/{i}/actor_result", sc.get("actor_run")),
                           (f"scenarios/{i}/async_result", sc.get("async_run")),
                           (f"scenarios/{i}/equal_load/actor", (sc.get("equal_load") or {}).get("actor_run")),
                           (f"scenarios/{i}/equal_load/async", (sc.get("equal_load") or {}).get("async_run"))):
            if get_path(index, key) is None:
                continue
            w(f'<tr><td>{esc(label)}</td><td class="n">{f(key + "/latency_p99_ms", 3, "ms")}</td>'
              f'<td class="n">{f(key + "/handler_p99_us", 0, "us")}</td>'
              f'<td class="n">{handler_p50(page, index, key)}</td></tr>')
    w("</table>")

    # ---- environment
    ver = index.get("versions") or {}
    cfg = index.get("config") or {}
    w('<h2 id="environment">Host, versions and configuration</h2><table>')
    rows = [("batch", esc(batch)), ("date (UTC)", f"{esc(ts.get('start'))} to {esc(ts.get('end'))}"),
            ("host", esc(host.get("hostname"))), ("CPU", esc(host.get("cpu_model"))),
            ("cores", f"{f('host/cores')} ({f('host/cores_usable')} usable)"), ("kernel", esc(host.get("kernel"))),
            ("commit", esc(ver.get("git_commit")) + (" (dirty: tracked files modified)" if ver.get("git_dirty") else "")),
            ("compiler", esc(ver.get("compiler")))]
    rows += [(name, esc(ver.get(name))) for name in ("libuv", "llhttp", "sqlite", "ck", "jansson")]
    rows += [("mode", esc(index.get("mode"))), ("TARGET_RATIO", f("target_ratio", 2)),
             ("SAT_RATIO", f("sat_ratio", 2)), ("probe repeats per server", f("repeats"))]
    rows += [(f"validity threshold {name}", f(f"thresholds/{name}", 2))
             for name in sorted(index.get("thresholds") or {})]
    rows += [(f"config.{name}", esc(json.dumps(value) if not isinstance(value, str) else value))
             for name, value in cfg.items()]
    elc = index.get("equal_load_config") or {}
    rows += [(f"equal_load_config.{name}", esc(json.dumps(value))) for name, value in elc.items()]
    for name, value in rows:
        w(f"<tr><th>{esc(name)}</th><td>{value}</td></tr>")
    w("</table>")
    w("<details><summary>Configuration of every run (result.json <code>config</code>)</summary>")
    for run in (index.get("runs") or []) + (index.get("equal_load_runs") or []):
        w(f'<h4>{esc(run.get("run"))}</h4><pre>{esc(json.dumps(run.get("config"), indent=1, sort_keys=True))}</pre>')
    w("</details>")
    w("</body></html>")
    return "\n".join(out) + "\n"


def handler_p50(page, index, key):
    """The handler p50 of the brief at KEY from the full run (briefs carry only the p99)."""
    run_name = get_path(index, key + "/run")
    for list_name in ("runs", "equal_load_runs"):
        for j, run in enumerate(index.get(list_name) or []):
            if run.get("run") == run_name:
                return page.fig(f"{list_name}/{j}/handler_p50_us", 0, "us")
    return '<span class="na">n/a</span>'


def main(argv):
    if len(argv) != 4:
        print("usage: report.py BATCH_DIR WORK_DIR OUT_HTML", file=sys.stderr)
        return 2
    batch_dir, work, out = argv[1:]
    try:
        text = render(batch_dir, work)
    except (OSError, ValueError, RuntimeError, subprocess.SubprocessError) as err:
        print(f"report.py: {err}", file=sys.stderr)
        return 1
    tmp = out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, out)
    return 0


