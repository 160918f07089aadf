"""scaling: runs at several server CPU counts (`./run_all.sh --scaling=1,2,4,8`, issue 16).
plan() decides which counts the host can give with the load generator's CPUs disjoint from
the server's (and says why it skips the others); table() gathers each server's saturation
(req/s) and efficiency (req/CPU-s) per scenario and server CPU count from a batch's runs;
markdown() is summary.md's section; topology() is the sentence that names each server's
topology for a run's config. Never runs a benchmark.
"""
import os

from . import cpuplan
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


def parse_cpus(text):
    """A CPU list as taskset prints it ('0-3,6') -> [0, 1, 2, 3, 6]. ValueError on bad input."""
    cpus = []
    for part in (text or "").split(","):
        part = part.strip()
        lo, dash, hi = part.partition("-")
        if not lo.isdigit() or (dash and not hi.isdigit()):
            raise ValueError("bad CPU list '%s'" % text)
        lo, hi = int(lo), int(hi) if hi else int(lo)
        if hi < lo:
            raise ValueError("bad CPU range '%s'" % part)
        cpus.extend(range(lo, hi + 1))
    return sorted(set(cpus))


def cpu_list(cpus):
    """[0, 1, 2, 5] -> '0-2,5'."""
    out, start, prev = [], None, None
    for c in sorted(cpus):
        if start is None:
            start = prev = c
        elif c == prev + 1:
            prev = c
        else:
            out.append(str(start) if start == prev else "%d-%d" % (start, prev))
            start = prev = c
    if start is not None:
        out.append(str(start) if start == prev else "%d-%d" % (start, prev))
    return ",".join(out)


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


def is_scaling_run(run):
    """A scaling run: a closed-loop probe at another server CPU count, folder '<server>-<sc>-cpusN'.
    Never part of the main verdict."""
    return "-cpus" in (run.get("run") or run.get("dir") or "")


def section(runs, matrix):
    """index.json's "scaling": None without --scaling, else the requested counts, what ran,
    what was skipped and why (from matrix.json), and the table."""
    sc = (matrix or {}).get("scaling")
    if not sc:
        return None
    return {"counts": sc.get("counts") or [], "ran": sc.get("ran") or [],
            "skipped": sc.get("skipped") or [], "table": table(runs)}


def markdown_lines(index):
    sec = index.get("scaling")
    if not sec:
        return []
    return [""] + markdown(sec["table"], [(s["count"], s["reason"]) for s in sec["skipped"]])


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
    not loadgen-bound), run} from the batch's
    closed-loop runs (the first probe of each server, scenario and server CPU count: the
    main matrix's saturation runs and the scaling runs, kind saturation or probe with a
    '-cpusN' suffix). Sorted by scenario, server, CPU count."""
    rows = {}
    for r in runs:
        kind = r.get("kind")
        name = r.get("run") or ""
        if kind not in ("saturation", "probe"):
            continue
        if kind == "probe" and not is_scaling_run(r):
            continue  # a repeat probe of the main matrix, not a scaling run
        n = _server_cpus(r)
        side = side_of(r.get("server"))
        if n is None or side is None:
            continue
        key = (r.get("scenario"), side, n)
        probe = r.get("probe") or {}
        val = r.get("validity") or {}
        row = {"scenario": r.get("scenario"), "server": side, "server_cpus": n,
               "rps": r.get("saturation_rps"), "req_per_cpu_sec": probe.get("req_per_cpu_sec"),
               "valid": r.get("failure") is None and not val.get("probe_loadgen_bound")
               and not (probe.get("validity") or {}).get("loadgen_bound") and val.get("saturated") is not False,
               "run": name}
        if key not in rows or (kind == "saturation" and "-cpus" in rows[key]["run"]):
            rows[key] = row
    return sorted(rows.values(), key=lambda x: (x["scenario"] or "", x["server"], x["server_cpus"]))


def _fmt(v):
    return "-" if not is_num(v) else f"{v:,.0f}"


def markdown(rows, skipped):
    """summary.md's scaling section: one row per scenario and server CPU count, both servers
    side by side with the ratio actor/async, then what was skipped and why."""
    lines = ["## Scaling (server CPUs)", ""]
    if not rows:
        lines.append("No closed-loop run to tabulate.")
    else:
        lines += ["| scenario | server CPUs | actor req/s | async req/s | actor/async | actor req/CPU-s | "
                  "async req/CPU-s |", "|---|---:|---:|---:|---:|---:|---:|"]
        by = {(r["scenario"], r["server"], r["server_cpus"]): r for r in rows}
        for sc, n in sorted({(r["scenario"], r["server_cpus"]) for r in rows}):
            a, b = by.get((sc, "actor-server", n)), by.get((sc, "async-server", n))
            ratio = "-"
            if a and b and is_num(a["rps"]) and is_num(b["rps"]) and b["rps"] > 0:
                ratio = f"{a['rps'] / b['rps']:.2f}"
            flag = "" if all(x is None or x["valid"] for x in (a, b)) else " (not valid: a failure, loadgen-bound or not saturated)"
            lines.append(f"| {sc} | {n} | {_fmt(a and a['rps'])} | {_fmt(b and b['rps'])} | {ratio}{flag} | "
                         f"{_fmt(a and a['req_per_cpu_sec'])} | {_fmt(b and b['req_per_cpu_sec'])} |")
    if skipped:
        lines.append("")
    for n, reason in skipped:
        lines.append(f"- {n} server CPU{'' if n == 1 else 's'}: skipped: {reason}.")
    lines.append("")
    return lines


def report_plots(index, work, svgs):
    """{name: inline SVG}: per scenario "scaling-<sc>" (req/s and req/CPU-s against server CPUs)."""
    from .report import gnuplot, num_or_nan, safe_label, write_dat
    sec = index.get("scaling")
    plots = {}
    if not sec or not sec.get("table"):
        return plots
    rows = sec["table"]
    for sc in sorted({r["scenario"] for r in rows if r["scenario"]}):
        files, counts = {}, []
        for side in SERVERS:
            mine = [r for r in rows if r["scenario"] == sc and r["server"] == side]
            counts += [r["server_cpus"] for r in mine]
            path = os.path.join(work, f"scaling-{safe_label(sc)}-{side}.dat")
            write_dat(path, [(r["server_cpus"], num_or_nan(r["rps"]), num_or_nan(r["req_per_cpu_sec"]))
                             for r in mine] or [("NaN",) * 3])
            files[side] = path
        name = f"scaling-{safe_label(sc)}"
        plots[name] = svgs.inline(gnuplot("scaling.gp", {
            "actorfile": files["actor-server"], "asyncfile": files["async-server"],
            "plottitle": safe_label(f"{sc}: throughput and efficiency against server CPUs"),
            "actorname": "actor", "asyncname": "async", "xmax": float(max(counts or [1]))}, work), name)
    return plots


def report_html(index, page, plots):
    """report.html's scaling section (empty without --scaling): the table, the skipped counts
    and one plot per scenario. Figures go through page.fig (tagged with their index.json path)."""
    from .report import esc
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
