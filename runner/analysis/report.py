#!/usr/bin/env python3
"""report.py: renders results/<batch>/report.html from index.json and the runs' histogram.txt.
Writes gnuplot data files into a work folder, runs runner/plots/*.gp (svg terminal), and
inlines the SVGs (ids made unique per plot) into one page that needs no network.
Invariant: every figure printed on the page is a value of index.json, wrapped in
<span class="fig" data-key="path/in/index.json">; every string from the batch is escaped.
Called by runner/report.sh (which owns the work folder); python3 stdlib only.
"""
import json
import math
import os
import subprocess
import sys

from . import atomic, cost, ladder, rules, scaling, sweep, threads
from .fmt import plural
from .render import (Page, Svgs, esc, get_path, gnuplot, num_or_nan, per_interval, probe_validity_html,
                     read_histogram, safe_label, validity_html, write_dat)

BASIS_TEXT = {"saturation_rps": "saturation req/s (probe pairs)", "req_per_cpu_sec": "req/CPU-s at equal load"}
HANDLER_NOTE = ("Handler p99 is each server's own span from a parsed request to its rendered response: for "
                "actor-server it includes every mailbox hop (router, middleware and store actors), for async-server "
                "it is one function call. It says where a server spends its time; it is not comparable across the "
                "two architectures, and a server that does not export it shows n/a.")


def labels(comparisons):
    """A short plot label per comparison: its scenario, or 'scenario candidate' when a scenario
    has several comparisons."""
    count = {}
    for c in comparisons:
        count[c.get("scenario")] = count.get(c.get("scenario"), 0) + 1
    return [safe_label(c.get("scenario") if count[c.get("scenario")] == 1 else f"{c.get('scenario')} {c.get('candidate')}")
            for c in comparisons]


def _ms(v):
    return v / 1000 if rules.is_num(v) else None


def render(batch_dir, work, index=None):
    """The page of BATCH_DIR (INDEX, else its index.json); plots' files go to WORK."""
    if index is None:
        with open(os.path.join(batch_dir, "index.json"), encoding="utf-8") as fh:
            index = json.load(fh, parse_constant=rules.json_null_constant)
    page = Page(index)
    svgs = Svgs()
    comps = index.get("comparisons") or []
    target = index.get("target_ratio")
    target_num = target if isinstance(target, (int, float)) else 0.5
    plots = {}
    names = labels(comps)

    # ---- bar charts across comparisons ----------------------------------------------------
    if comps:
        rows, ratio_rows, eff_rows, lat_rows = [], [], [], []
        for i, (c, label) in enumerate(zip(comps, names), 1):
            a, b = c.get("candidate_result") or {}, c.get("baseline_result") or {}
            eq = c.get("equal_load") or {}
            ea, eb = eq.get("candidate") or {}, eq.get("baseline") or {}
            med = c.get("saturation_median_rps") or {}
            b_sat = med.get("baseline")
            mark = target_num * b_sat if isinstance(b_sat, (int, float)) else None
            rows.append((i, label, num_or_nan(med.get("candidate")), num_or_nan(b_sat), num_or_nan(mark)))
            ratio_rows.append((i, label, num_or_nan(c.get("ratio")),
                               safe_label((c.get("basis") or "none").replace("_", "-")),
                               num_or_nan(c.get("ci_low")), num_or_nan(c.get("ci_high"))))
            eff_rows.append((i, label, num_or_nan(a.get("req_per_cpu_sec")), num_or_nan(b.get("req_per_cpu_sec")),
                             num_or_nan(ea.get("req_per_cpu_sec")), num_or_nan(eb.get("req_per_cpu_sec"))))
            lat_rows.append((i, label, num_or_nan(a.get("latency_p99_ms")), num_or_nan(_ms(a.get("handler_p99_us"))),
                             num_or_nan(b.get("latency_p99_ms")), num_or_nan(_ms(b.get("handler_p99_us")))))
        n = len(comps)
        for name, data in (("throughput", rows), ("ratio", ratio_rows), ("efficiency", eff_rows), ("p99", lat_rows)):
            write_dat(os.path.join(work, f"{name}.dat"), data)
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

    # ---- latency spectra -----------------------------------------------------------------
    for i, (c, label) in enumerate(zip(comps, names)):
        key = safe_label(label.replace(" ", "-"))
        eq = c.get("equal_load") or {}
        for kind, cand_run, base_run, title, briefs in (
                ("own", c.get("candidate_run"), c.get("baseline_run"),
                 f"{label}: each at SAT_RATIO x its own saturation", (c.get("candidate_result"), c.get("baseline_result"))),
                ("equal", eq.get("candidate_run"), eq.get("baseline_run"),
                 f"{label}: equal load, {eq.get('rate_rps')} req/s" if eq else "", (eq.get("candidate"), eq.get("baseline")))):
            files, xmax, have = {}, 100.0, False
            for who, run in (("candidate", cand_run), ("baseline", base_run)):
                pts = read_histogram(os.path.join(batch_dir, run, "histogram.txt")) if run else []
                have = have or bool(pts)
                path = os.path.join(work, f"hist-{i}-{kind}-{who}.dat")
                write_dat(path, pts if pts else [(1, "NaN")])
                files[who] = path
                if pts:
                    xmax = max(xmax, max(x for x, _ in pts))
            if not have:
                continue
            xmax = 10 ** math.ceil(math.log10(xmax) - 1e-9)
            name = f"latency-{key}-{kind}"
            plots[name] = svgs.inline(gnuplot("latency.gp", {
                "candfile": files["candidate"], "basefile": files["baseline"], "xmax": float(min(xmax, 1e6)),
                "plottitle": safe_label(title), "candname": safe_label(c.get("candidate")),
                "basename": safe_label(c.get("baseline")),
                "candlg": int(bool((briefs[0] or {}).get("latency_by_loadgen"))),
                "baselg": int(bool((briefs[1] or {}).get("latency_by_loadgen")))}, work), name)

    plots.update(sweep.report_plots(index, work, svgs))
    plots.update(scaling.report_plots(index, work, svgs))
    plots.update(ladder.report_plots(index, work, svgs))
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


def _why(c):
    """The 'why' cell of a comparison: its errors, grouped reasons or left-out pairs, then the
    remedy; each grouped reason once."""
    parts = [f'<span class="bad">{esc(e)}</span>' for e in c.get("errors") or []]
    parts += [esc(r) for r in c.get("reasons") or []]
    if not parts and c.get("basis_reason"):
        parts.append(esc(c["basis_reason"]))
    sb = c.get("saturated_by") or {}
    parts += [esc(f"{plural(sb[k], 'probe')} saturated by {k} ({sb.get(k + '_reason')})") for k in ("thread", "plateau")
              if sb.get(k)]
    if c.get("remedies") and c.get("verdict") != "PASS":
        parts.append("<strong>Remedy:</strong> " + esc("; ".join(c["remedies"])))
    return "<br>".join(parts) or "all pairs valid"


def _ci(f, key, lo="ci_low", hi="ci_high"):
    return f"{f(key + '/' + lo, 3)}&ndash;{f(key + '/' + hi, 3)}"


def build_html(index, page, plots):
    f = page.fig
    out = []
    w = out.append
    comps = index.get("comparisons") or []
    names = labels(comps)
    level = index.get("ci_level") or 0.95
    lvl = f"{100 * level:g}%"

    verdict = index.get("verdict") or {}
    overall = verdict.get("overall") or "N/A"
    batch = index.get("batch")
    w("<!DOCTYPE html>")
    w('<html lang="en"><head><meta charset="utf-8">')
    w(f"<title>Benchmark report: batch {esc(batch)}</title>")
    w(f"<style>{CSS}</style></head><body>")
    w(f"<h1>Benchmark report: batch {esc(batch)}</h1>")
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
      f'candidate / baseline against the target ratio {f("target_ratio", 2)}, with {esc(lvl)} confidence intervals.'
      f'<p class="headline">{esc(verdict.get("headline"))}</p>')
    w("<table><tr><th>scenario</th><th>candidate vs baseline</th><th>compared on</th>"
      "<th>candidate, median of the counted pairs</th><th>baseline, median of the counted pairs</th><th>ratio</th><th>{esc(lvl)} CI</th><th>valid pairs</th><th>verdict</th><th>why</th></tr>")
    for i, c in enumerate(comps):
        k = f"comparisons/{i}"
        basis = c.get("basis")
        unit = "req/s" if basis == "saturation_rps" else "req/CPU-s" if basis == "req_per_cpu_sec" else ""
        v = c.get("verdict") or "N/A"
        info = "" if c.get("decides") else ' <span class="note">(info)</span>'
        w(f'<tr><td>{esc(c.get("scenario"))}</td><td>{esc(c.get("candidate"))} vs {esc(c.get("baseline"))}</td>'
          f'<td>{esc(BASIS_TEXT.get(basis, "none"))}</td><td class="n">{f(k + "/candidate_value", 0, unit)}</td>'
          f'<td class="n">{f(k + "/baseline_value", 0, unit)}</td><td class="n">{f(k + "/ratio", 3)}</td>'
          f'<td class="n">{_ci(f, k)}</td><td class="n">{f(k + "/pairs_used")} of {f(k + "/pairs_total")}</td>'
          f'<td><span class="v-{esc(v)}">{esc(v)}</span>{info}</td><td>{_why(c)}</td></tr>')
    w("</table>")
    w(f'<p class="note">The ratio is the geometric mean of the valid pairs\' ratios, the centre of the interval '
      f'({esc(comps[0].get("ci_method") if comps else "")}). PASS when the whole interval is at or above the target, '
      'FAIL when it is below, INCONCLUSIVE when it crosses the target or fewer than '
      f'{f("thresholds/min_pairs_for_interval")} pairs were valid. "(info)": not part of the overall '
      'verdict.</p></section>')
    if index.get("failures"):
        w("<h2>Failures</h2><ul>")
        for fl in index["failures"]:
            w(f'<li>{esc(fl.get("run"))}: {esc(fl.get("failure"))}</li>')
        w("</ul>")
    if index.get("reruns"):
        w('<h2 id="reruns">Re-runs</h2><ul>')
        for r in index["reruns"]:
            w(f'<li>{esc(r.get("scenario"))} round {esc(r.get("round"))} ({esc(", ".join(r.get("servers") or []))}): '
              f'{esc(r.get("why"))}</li>')
        w("</ul>")

    # ---- throughput
    w('<h2 id="throughput">Throughput</h2>')
    w('<p class="note">Closed-loop saturation throughput of each server (the median of all its probes, valid or not; the verdict table above gives the median over the counted pairs). The dashed '
      'mark over each candidate bar is target ratio x baseline. Right: the verdict\'s ratio with its confidence '
      'interval (on the figure the verdict used: saturation req/s, or req/CPU-s at equal load when too few probe '
      'pairs were valid).</p>')
    w(f'<div class="grid">{plots.get("throughput", "")}{plots.get("ratio", "")}</div>')
    w("<table><tr><th>scenario</th><th>candidate vs baseline</th><th>candidate req/s, median of all its probes</th>"
      "<th>baseline req/s, median of all its probes</th><th>ratio of the valid pairs (the verdict's, "
      f"if on saturation)</th><th>{esc(lvl)} CI</th><th>median ratio of all pairs, valid or not</th>"
      "<th>noise candidate</th><th>noise baseline</th></tr>")
    for i, c in enumerate(comps):
        k = f"comparisons/{i}"
        sat = c.get("basis") == "saturation_rps"
        w(f'<tr><td>{esc(c.get("scenario"))}</td><td>{esc(c.get("candidate"))} vs {esc(c.get("baseline"))}</td>'
          f'<td class="n">{f(k + "/saturation_median_rps/candidate", 0, "req/s")}</td>'
          f'<td class="n">{f(k + "/saturation_median_rps/baseline", 0, "req/s")}</td>'
          f'<td class="n">{f(k + "/ratio", 3) if sat else "not on saturation"}</td>'
          f'<td class="n">{_ci(f, k) if sat else "n/a"}</td>'
          f'<td class="n">{f(k + "/all_pairs_median_ratio", 3)}</td>'
          f'<td class="n">{f(k + "/noise/candidate", 3)}</td><td class="n">{f(k + "/noise/baseline", 3)}</td></tr>')
    w("</table><p class=\"note\">Noise: (max - min) / median of a server's valid probes.</p>")

    w('<h3 id="probes">Every probe</h3><p class="note">In each round every server of the scenario runs once, on a '
      'fresh server, in a shuffled order, so drift of the host hits all alike. A pair counts only when both of its '
      'probes are valid.</p>')
    w("<table><tr><th>scenario</th><th>candidate vs baseline</th><th>round</th><th>candidate req/s</th>"
      "<th>baseline req/s</th><th>candidate server CPU</th><th>baseline server CPU</th><th>candidate loadgen CPU</th>"
      "<th>baseline loadgen CPU</th><th>validity candidate</th><th>validity baseline</th></tr>")
    for i, c in enumerate(comps):
        pr = c.get("probes") or {}
        for j, rnd in enumerate(c.get("rounds") or []):
            ka, kb = f"comparisons/{i}/probes/candidate/{j}", f"comparisons/{i}/probes/baseline/{j}"
            w(f'<tr><td>{esc(c.get("scenario"))}</td><td>{esc(c.get("candidate"))} vs {esc(c.get("baseline"))}</td>'
              f'<td class="n">{f(f"comparisons/{i}/rounds/{j}")}</td>'
              f'<td class="n">{f(ka + "/saturation_rps", 0, "req/s")}</td>'
              f'<td class="n">{f(kb + "/saturation_rps", 0, "req/s")}</td>'
              f'<td class="n">{f(ka + "/probe/server_cpu_pct", 1, "%")}</td>'
              f'<td class="n">{f(kb + "/probe/server_cpu_pct", 1, "%")}</td>'
              f'<td class="n">{f(ka + "/probe/loadgen_cpu_pct", 1, "%")}</td>'
              f'<td class="n">{f(kb + "/probe/loadgen_cpu_pct", 1, "%")}</td>'
              f'<td>{probe_validity_html((pr.get("candidate") or [None] * (j + 1))[j])}</td>'
              f'<td>{probe_validity_html((pr.get("baseline") or [None] * (j + 1))[j])}</td></tr>')
    w("</table>")

    # ---- league
    for li, lg in enumerate(index.get("league") or []):
        w(f'<h2 id="league-{li}">League: {esc(lg.get("scenario"))}, against {esc(lg.get("baseline"))}</h2>')
        w("<table><tr><th>server</th><th>saturation req/s, median of all its probes</th><th>req/CPU-s at equal load</th>"
          f"<th>p99 at equal load</th><th>ratio to the baseline</th><th>{esc(lvl)} CI</th><th>compared on</th>"
          "<th>verdict</th></tr>")
        for ri, row in enumerate(lg.get("rows") or []):
            k = f"league/{li}/rows/{ri}"
            w(f'<tr><td>{esc(row.get("server"))}</td><td class="n">{f(k + "/saturation_rps", 0, "req/s")}</td>'
              f'<td class="n">{f(k + "/req_per_cpu_sec", 0)}</td><td class="n">{f(k + "/latency_p99_ms", 3, "ms")}'
              f'{"" if row.get("equal_valid") else " (not valid)"}</td><td class="n">{f(k + "/ratio", 3)}</td>'
              f'<td class="n">{_ci(f, k)}</td><td>{esc(BASIS_TEXT.get(row.get("basis"), "baseline" if row.get("server") == lg.get("baseline") else "none"))}</td>'
              f'<td>{esc(row.get("verdict") or "-")}</td></tr>')
        w("</table>")

    # ---- latency spectra
    w('<h2 id="latency">Latency percentile spectrum</h2>')
    w(f'<p class="note">Coordinated-omission corrected latency of the measured window (histogram.txt of each run), '
      f'x = percentile on a log(1/(1-p)) axis. Left: each server at SAT_RATIO ({f("sat_ratio", 2)}) x its own '
      'saturation (different offered loads). Right: both servers at the same constant rate (equal load). A run '
      'limited by the load generator (its CPU or its send lag over the thresholds of SPEC.md section 8) is drawn '
      'dashed and pale and its rows are greyed: its latency is the load generator\'s queue, not the server\'s.</p>')
    for i, (c, label) in enumerate(zip(comps, names)):
        key = safe_label(label.replace(" ", "-"))
        w(f'<h3>{esc(c.get("scenario"))}: {esc(c.get("candidate"))} vs {esc(c.get("baseline"))}</h3>')
        w(f'<div class="grid">{plots.get(f"latency-{key}-own", "")}{plots.get(f"latency-{key}-equal", "")}</div>')
        w("<table><tr><th>run</th><th>rate</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th>"
          '<th title="the p99 of each second of the window: median (min-max)">p99 per second</th>'
          "<th>send lag p99</th><th>validity</th></tr>")
        eq = c.get("equal_load") or {}
        for bkey, label_run in ((f"comparisons/{i}/candidate_result", c.get("candidate_run")),
                                (f"comparisons/{i}/baseline_result", c.get("baseline_run")),
                                (f"comparisons/{i}/equal_load/candidate", eq.get("candidate_run")),
                                (f"comparisons/{i}/equal_load/baseline", eq.get("baseline_run"))):
            brief = get_path(index, bkey)
            if brief is None:
                continue
            lg = brief.get("latency_by_loadgen")
            cls = ' class="lg" title="limited by the load generator: its queue, not the server"' if lg else ""
            ns = brief.get("latency_not_stationary")
            ns_label = (f' <span class="flag bad" title="{esc(ns)}">not stationary: {esc(ns)}</span>' if ns else "")
            w(f'<tr{cls}><td>{esc(label_run)}{" (loadgen-limited)" if lg else ""}{ns_label}</td>'
              f'<td class="n">{f(bkey + "/sustained_rps", 0, "req/s")}</td>'
              + "".join(f'<td class="n">{f(bkey + "/" + m, 3, "ms")}</td>' for m in
                        ("latency_p50_ms", "latency_p90_ms", "latency_p99_ms", "latency_p99_9_ms", "latency_max_ms"))
              + f'<td class="n">{per_interval(page, bkey + "/latency_p99_intervals")}</td>'
              + f'<td class="n">{f(bkey + "/send_lag_p99_ms", 3, "ms")}'
              + (f' (own {f(bkey + "/send_lag_own_p99_ms", 3, "ms")})'
                 if rules.is_num(brief.get("send_lag_own_p99_ms")) else "") + "</td>"
              + f"<td>{validity_html(brief)}</td></tr>")
        if eq:
            w(f'<tr><th colspan="4">equal load at {f(f"comparisons/{i}/equal_load/rate_rps", 0, "req/s")}: p99 ratio '
              f'candidate / baseline</th><td class="n">{f(f"comparisons/{i}/equal_load/p99_ratio", 3)}</td>'
              '<td colspan="5"></td></tr>')
        w("</table>")

    w(sweep.report_html(index, page, plots))
    w(scaling.report_html(index, page, plots))
    w(threads.report_html(index, page))
    w(cost.report_html(index, page))
    w(ladder.report_html(index, page, plots))

    # ---- efficiency
    w('<h2 id="efficiency">Requests per server CPU-second</h2>')
    w('<p class="note">sustained req/s divided by the server\'s CPU (utime + stime from /proc over the measured '
      'window); higher is better. Saturation runs: each at its own offered load; equal-load runs: the same '
      'offered load (the ratio with its interval over the valid equal-load pairs).</p>')
    w(f'<div class="grid one">{plots.get("efficiency", "")}</div>')
    w("<table><tr><th>scenario</th><th>candidate vs baseline</th><th>candidate (own load)</th>"
      "<th>baseline (own load)</th><th>candidate CPU</th><th>baseline CPU</th><th>candidate (equal load)</th>"
      "<th>baseline (equal load)</th><th>candidate CPU (equal load)</th><th>baseline CPU (equal load)</th>"
      f"<th>ratio (equal load)</th><th>{esc(lvl)} CI</th><th>valid pairs</th></tr>")
    for i, c in enumerate(comps):
        k = f"comparisons/{i}"
        w(f'<tr><td>{esc(c.get("scenario"))}</td><td>{esc(c.get("candidate"))} vs {esc(c.get("baseline"))}</td>'
          + "".join(f'<td class="n">{f(k + "/" + p, *fm)}</td>' for p, *fm in (
              ("candidate_result/req_per_cpu_sec", 0), ("baseline_result/req_per_cpu_sec", 0),
              ("candidate_result/server_cpu_pct", 1, "%"), ("baseline_result/server_cpu_pct", 1, "%"),
              ("equal_load/candidate/req_per_cpu_sec", 0), ("equal_load/baseline/req_per_cpu_sec", 0),
              ("equal_load/candidate/server_cpu_pct", 1, "%"), ("equal_load/baseline/server_cpu_pct", 1, "%"),
              ("equal_load/req_per_cpu_sec_ratio", 3)))
          + f'<td class="n">{_ci(f, k + "/equal_load")}</td>'
          + f'<td class="n">{f(k + "/equal_load/pairs_used")} of {f(k + "/equal_load/pairs_total")}</td></tr>')
    w("</table><p class=\"note\">CPU is percent of one CPU.</p>")

    # ---- handler p99 vs client p99
    w('<h2 id="handler">Server-side handler p99 beside client p99</h2>')
    w('<p class="note">Client p99: the loadgen\'s corrected latency (includes queueing in the kernel, the loop and '
      f'the loadgen). {esc(HANDLER_NOTE)} Log scale; both in ms on the plot (saturation runs).</p>')
    w(f'<div class="grid one">{plots.get("p99", "")}</div>')
    w("<table><tr><th>run</th><th>client p99</th><th>handler p99</th><th>handler p50</th></tr>")
    for i, c in enumerate(comps):
        eq = c.get("equal_load") or {}
        for key, label_run in ((f"comparisons/{i}/candidate_result", c.get("candidate_run")),
                               (f"comparisons/{i}/baseline_result", c.get("baseline_run")),
                               (f"comparisons/{i}/equal_load/candidate", eq.get("candidate_run")),
                               (f"comparisons/{i}/equal_load/baseline", eq.get("baseline_run"))):
            if get_path(index, key) is None:
                continue
            w(f'<tr><td>{esc(label_run)}</td><td class="n">{f(key + "/latency_p99_ms", 3, "ms")}</td>'
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
            ("steal on the server CPUs (mean, max)", f"{f('host_steal/mean_pct', 2, '%')}, {f('host_steal/max_pct', 2, '%')}"),
            ("commit", esc(ver.get("git_commit")) + (" (dirty: tracked files modified)" if ver.get("git_dirty") else "")),
            ("compiler", esc(ver.get("compiler")))]
    rows += [(name, esc(ver.get(name))) for name in ("libuv", "llhttp", "sqlite", "ck", "jansson")]
    rows += [("mode", esc(index.get("mode"))), ("TARGET_RATIO", f("target_ratio", 2)),
             ("SAT_RATIO", f("sat_ratio", 2)), ("planned rounds per scenario", f("repeats")),
             ("confidence level", f("ci_level", 2)), ("order seed", f("seed"))]
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
        atomic.write_text(out, render(batch_dir, work))
    except (OSError, ValueError, RuntimeError, subprocess.SubprocessError) as err:
        print(f"report.py: {err}", file=sys.stderr)
        return 1
    return 0
