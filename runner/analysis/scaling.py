"""scaling: runs at several server CPU counts (`./run_all.sh --scaling=1,2,4,8`, issue 16).
plan() decides which counts the host can give with the load generator's CPUs disjoint from
the server's (and says why it skips the others); table() gathers each server's saturation
(req/s) and efficiency (req/CPU-s) per scenario and server CPU count from a batch's runs;
markdown() is summary.md's section; topology() is the sentence that names each server's
topology for a run's config. Never runs a benchmark.
"""
import os

from . import batch, cpuplan
from .render import esc, gnuplot, num_or_nan, safe_label, write_dat
from .rules import is_num

SERVERS = ("actor-server", "async-server")  # the binaries; runs name actor-mem, async-sqlite, ...


def side_of(server):
    """'actor-mem' -> 'actor-server', 'async-sqlite' -> 'async-server', else None."""
    for b in SERVERS:
        if (server or "").startswith(b.split("-")[0] + "-"):
            return b
    return None


def parse_counts(text):
    """'1,2,4,8' -> [1, 2, 4, 8] (sorted, unique). ValueError with a reason on bad input."""
    counts = []
    for part in (text or "").split(","):
        part = part.strip()
        if not part.isdigit() or int(part) < 1 or int(part) > 1024:
            raise ValueError("server CPU counts are whole numbers 1..1024, comma-separated, got '%s'" % text)
        counts.append(int(part))
    return sorted(set(counts))


def plan(counts, cpus, root=None, smt=None):
    """For each requested server CPU count: ('run', n, server_cpus, loadgen_cpus) as the CPU
    planner places them on the mask CPUS with the topology under ROOT (cpuplan: never a core
    on both sides, the server in as few L3 domains and nodes as possible, the load generator
    its measured share of cores), or ('skip', n, reason) when the mask cannot give n with a
    core left for the load generator. ROOT defaults to /sys/devices/system/cpu, SMT to
    cpuplan's default policy."""
    topo = cpuplan.Topology(root or cpuplan.DEFAULT_ROOT, sorted(set(cpus)))
    out = []
    for what, n, x in cpuplan.scaling(topo, counts, smt or cpuplan.DEFAULT_SMT):
        out.append(("skip", n, x) if what == "skip" else ("run", n, x["server_cpus"], x["loadgen_cpus"]))
    return out


def topology(cfg, server):
    """The topology of SERVER's run with config CFG, in words (summary's configuration)."""
    n = cfg.get("server_threads")
    if not is_num(n):
        return "%s: ? loops" % server
    n = int(n)
    if server == "async-server":
        return "async-server: %d event loop%s, the store behind one mutex" % (n, "" if n == 1 else "s")
    w = cfg.get("actor_workers") or 0
    if w == 0:
        return ("actor-server: %d I/O loop%s running the actors, middleware actors per loop, the store "
                "actor on loop 0%s" % (n, "" if n == 1 else "s", "" if n == 1 else " (loops 1-%d hop to it)" % (n - 1)))
    return ("actor-server: %d I/O loop%s + %d worker%s, middleware actors per worker (loop i on worker "
            "i mod %d), the store actor on worker 0 (every request crosses threads)"
            % (n, "" if n == 1 else "s", w, "" if w == 1 else "s", w))


def section(runs, matrix, groups=()):
    """index.json's "scaling": None without --scaling, else the requested counts, what ran,
    what was skipped and why (from matrix.json), the table, and the comparisons it is read by
    (GROUPS' comparisons: candidate, baseline, scenario)."""
    sc = (matrix or {}).get("scaling")
    if not sc:
        return None
    comps = [{"scenario": g["scenario"], "candidate": c["candidate"], "baseline": c["baseline"]}
             for g in groups for c in g["comparisons"]]
    return {"counts": sc.get("counts") or [], "ran": sc.get("ran") or [],
            "skipped": sc.get("skipped") or [], "table": table(runs), "comparisons": comps}


def markdown_lines(index):
    sec = index.get("scaling")
    if not sec:
        return []
    return [""] + markdown(sec["table"], [(s["count"], s["reason"]) for s in sec["skipped"]],
                           sec.get("comparisons") or [])


def _server_cpus(run):
    """The run's server CPU count (its threads for results written before it was recorded:
    the two were equal until SERVER_THREADS could oversubscribe)."""
    cfg = run.get("config") or {}
    n = cfg.get("server_cpu_count")
    if not is_num(n):
        n = cfg.get("server_threads")
    return int(n) if is_num(n) else None


def table(runs):
    """Rows {scenario, server, server_cpus, rps, req_per_cpu_sec, valid (no failure, saturated,
    not loadgen-bound), run} from the batch's closed-loop runs (the first probe of each server,
    scenario and server CPU count: the main matrix's saturation runs and the scaling runs,
    '<server>-<scenario>-cpusN'). Sorted by scenario, server, CPU count."""
    rows = {}
    for r in runs:
        kind = r.get("kind")
        if kind not in ("saturation", "probe"):
            continue
        scaling_run = batch.is_scaling_run(r)
        if kind == "probe" and not scaling_run:
            continue  # a repeat probe of the main matrix, not a scaling run
        n = _server_cpus(r)
        if n is None or not r.get("server"):
            continue
        key = (r.get("scenario"), r["server"], n)
        probe = r.get("probe") or {}
        val = r.get("validity") or {}
        row = {"scenario": r.get("scenario"), "server": r["server"], "server_cpus": n,
               "rps": r.get("saturation_rps"), "req_per_cpu_sec": probe.get("req_per_cpu_sec"),
               "valid": r.get("failure") is None and not val.get("probe_loadgen_bound")
               and not (probe.get("validity") or {}).get("loadgen_bound") and val.get("saturated") is not False,
               "run": r.get("run")}
        if key not in rows or (kind == "saturation" and batch.is_scaling_run(rows[key])):
            rows[key] = row
    return sorted(rows.values(), key=lambda x: (x["scenario"] or "", x["server"], x["server_cpus"]))


def _fmt(v):
    return "-" if not is_num(v) else f"{v:,.0f}"


def _pairs_of(rows, comparisons):
    """The comparisons to tabulate: COMPARISONS, or (a batch that records none) every two
    servers of a scenario in name order."""
    if comparisons:
        return comparisons
    out = []
    for sc in sorted({r["scenario"] for r in rows}):
        names = sorted({r["server"] for r in rows if r["scenario"] == sc})
        for base in names[1:]:
            out.append({"scenario": sc, "candidate": names[0], "baseline": base})
    return out


def markdown(rows, skipped, comparisons=()):
    """summary.md's scaling section: one row per comparison and server CPU count, both servers
    side by side with the ratio candidate / baseline, then what was skipped and why."""
    lines = ["## Scaling (server CPUs)", ""]
    if not rows:
        lines.append("No closed-loop run to tabulate.")
    else:
        lines += ["| scenario | candidate / baseline | server CPUs | candidate req/s | baseline req/s | ratio | "
                  "candidate req/CPU-s | baseline req/CPU-s |", "|---|---|---:|---:|---:|---:|---:|---:|"]
        by = {(r["scenario"], r["server"], r["server_cpus"]): r for r in rows}
        for c in _pairs_of(rows, comparisons):
            sc = c["scenario"]
            for n in sorted({r["server_cpus"] for r in rows if r["scenario"] == sc
                             and r["server"] in (c["candidate"], c["baseline"])}):
                a, b = by.get((sc, c["candidate"], n)), by.get((sc, c["baseline"], n))
                ratio = "-"
                if a and b and is_num(a["rps"]) and is_num(b["rps"]) and b["rps"] > 0:
                    ratio = f"{a['rps'] / b['rps']:.2f}"
                flag = ("" if all(x is None or x["valid"] for x in (a, b))
                        else " (not valid: a failure, loadgen-bound or not saturated)")
                lines.append(f"| {sc} | {c['candidate']} / {c['baseline']} | {n} | {_fmt(a and a['rps'])} | "
                             f"{_fmt(b and b['rps'])} | {ratio}{flag} | {_fmt(a and a['req_per_cpu_sec'])} | "
                             f"{_fmt(b and b['req_per_cpu_sec'])} |")
    if skipped:
        lines.append("")
    for n, reason in skipped:
        lines.append(f"- {n} server CPU{'' if n == 1 else 's'}: skipped: {reason}.")
    lines.append("")
    return lines


def report_plots(index, work, svgs):
    """{name: inline SVG}: per comparison "scaling-<sc>[-N]" (req/s and req/CPU-s against server
    CPUs, candidate and baseline)."""
    sec = index.get("scaling")
    plots = {}
    if not sec or not sec.get("table"):
        return plots
    rows = sec["table"]
    for i, c in enumerate(_pairs_of(rows, sec.get("comparisons") or [])):
        sc = c["scenario"]
        files, counts = {}, []
        for role in ("candidate", "baseline"):
            mine = [r for r in rows if r["scenario"] == sc and r["server"] == c[role]]
            counts += [r["server_cpus"] for r in mine]
            path = os.path.join(work, f"scaling-{i}-{role}.dat")
            write_dat(path, [(r["server_cpus"], num_or_nan(r["rps"]), num_or_nan(r["req_per_cpu_sec"]))
                             for r in mine] or [("NaN",) * 3])
            files[role] = path
        name = f"scaling-{safe_label(sc)}-{i}"
        plots[name] = svgs.inline(gnuplot("scaling.gp", {
            "candfile": files["candidate"], "basefile": files["baseline"],
            "plottitle": safe_label(f"{sc}: throughput and efficiency against server CPUs"),
            "candname": safe_label(c["candidate"]), "basename": safe_label(c["baseline"]),
            "xmax": float(max(counts or [1]))}, work), name)
    return plots


def report_html(index, page, plots):
    """report.html's scaling section (empty without --scaling): the table, the skipped counts
    and one plot per comparison. Figures go through page.fig (tagged with their index.json path)."""
    sec = index.get("scaling")
    if not sec:
        return ""
    f = page.fig
    out = ['<h2 id="scaling">Scaling: server CPUs</h2>',
           '<p class="note">One closed-loop probe of each server and scenario at each server CPU count the host '
           'could give with the load generator on other CPUs (the matrix\'s own count: its first probes). '
           'Saturation req/s and requests per server CPU-second; never part of the verdict.</p>',
           "<table><tr><th>scenario</th><th>server</th><th>server CPUs</th><th>req/s</th><th>req/CPU-s</th>"
           "<th>valid</th></tr>"]
    for i, r in enumerate(sec.get("table") or []):
        k = f"scaling/table/{i}"
        out.append(f"<tr><td>{esc(r['scenario'])}</td><td>{esc(r['server'])}</td><td>{f(k + '/server_cpus')}</td>"
                   f"<td>{f(k + '/rps')}</td><td>{f(k + '/req_per_cpu_sec')}</td>"
                   f"<td>{'yes' if r['valid'] else 'no (a failure, loadgen-bound or not saturated)'}</td></tr>")
    out.append("</table>")
    if sec.get("skipped"):
        out.append("<ul>" + "".join(f"<li>{esc(s['count'])} server CPUs: skipped: {esc(s['reason'])}</li>"
                                    for s in sec["skipped"]) + "</ul>")
    figs = [v for name, v in sorted(plots.items()) if name.startswith("scaling-")]
    if figs:
        out.append('<div class="grid">' + "".join(figs) + "</div>")
    return "\n".join(out)
