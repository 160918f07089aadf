"""threads: per-thread CPU of a run's phases (issue 27): turns the runner's /proc samples of
the server's process tree and of the load generator (runner/proc.sh proc_tree_sample, two
per phase) into result.json's server_threads / loadgen_threads, names what each thread runs
from its name and the server's topology, and renders summary.md's and report.html's
per-thread and CPU-plan lines from index.json alone. Reads no file but result.json (for the
`analysis threads` command); imports only rules (a leaf module).
"""
import html
import json
import os
import re

from .rules import SERIAL_THREAD_PCT, busiest, is_num

# Role of a thread from its name: I/O loops io-N, actor workers actor-N (actor-wN before the
# threads were named by role), load generator threads lg-N.
_IO = re.compile(r"^io-(\d+)$")
_ACTOR = re.compile(r"^actor-w?(\d+)$")
_LG = re.compile(r"^lg-(\d+)$")


def parse_sample(text):
    """A proc_tree_sample text -> (clock_s, ticks, processes, {tid: (pid, ticks, name)}), or
    None when the first line is not 'CLOCK TICKS PROCESSES'."""
    lines = (text or "").splitlines()
    if not lines:
        return None
    head = lines[0].split()
    try:
        clock, ticks, procs = float(head[0]), int(head[1]), int(head[2]) if len(head) > 2 else 1
    except (ValueError, IndexError):
        return None
    tasks = {}
    for line in lines[1:]:
        parts = line.split(" ", 3)
        if len(parts) < 3:
            continue
        try:
            pid, tid, t = int(parts[0]), int(parts[1]), int(parts[2])
        except ValueError:
            continue
        tasks[tid] = (pid, t, parts[3] if len(parts) > 3 else "")
    return clock, ticks, procs, tasks


def figures(samples, clk_tck):
    """([{tid, pid, name, cpu_pct}] sorted by tid, processes) over a phase's two samples
    [start, end] (texts): each thread alive at the end, its CPU over the window in percent of
    one CPU (a thread born in the window counts from 0); a thread gone by the end is left
    out (its time is lost to the sample). (None, None) when the samples are missing or bad."""
    if not isinstance(samples, list) or len(samples) != 2 or not clk_tck:
        return None, None
    a, b = parse_sample(samples[0]), parse_sample(samples[1])
    if a is None or b is None or b[0] <= a[0]:
        return None, None
    dt = b[0] - a[0]
    out = []
    for tid in sorted(b[3]):
        pid, t1, name = b[3][tid]
        t0 = a[3].get(tid, (pid, 0, name))[1]
        out.append({"tid": tid, "pid": pid, "name": name,
                    "cpu_pct": round(100.0 * max(t1 - t0, 0) / clk_tck / dt, 1)})
    return out, max(a[2], b[2])


def role(thread, cfg, server, root_pid=None):
    """What THREAD ({tid, pid, name}) runs, in words, from its name and the topology of
    SERVER ('actor-server', 'async-server' or a run's server name) with config CFG; None when
    the name says nothing."""
    name = (thread or {}).get("name") or ""
    cfg = cfg or {}
    workers = cfg.get("actor_workers") or 0
    definition = cfg.get("server_definition") or {}
    # our topology only for our binaries: a server from elsewhere may name its threads io-N too
    ours = definition.get("ours", True) is not False
    binary = cfg.get("binary") or (server if server in ("actor-server", "async-server") else "")
    if not binary and definition.get("ours") is None:
        binary = "actor-server" if (server or "").startswith("actor-") else \
            "async-server" if (server or "").startswith("async-") else ""
    actor = ours and binary == "actor-server"
    m = _IO.match(name)
    if m and ours and binary in ("actor-server", "async-server"):
        i = int(m.group(1))
        if actor and workers == 0:
            return (f"I/O loop {i}, which also runs the store actor and its own loop's actors" if i == 0 else
                    f"I/O loop {i}, which runs its connections' actors and hops to loop 0 for the store")
        if actor:
            return f"I/O loop {i}: parsing and writing; its requests' actors run on the workers"
        return f"event loop {i}: parsing, handling and writing; the store behind the one mutex"
    m = _ACTOR.match(name)
    if m and actor:
        i = int(m.group(1))
        return f"actor worker {i}" + (", which runs the store actor" if i == 0 else "")
    m = _LG.match(name)
    if m:
        return f"load generator thread {m.group(1)}"
    if root_pid is not None and thread.get("tid") == root_pid:
        return "the main thread"
    return None


def thread_words(thread, cfg, server):
    """'io-0 at 99.0% (I/O loop 0, which also runs the store actor ...)'."""
    r = role(thread, cfg, server, thread.get("pid"))
    return f"{thread.get('name')} at {thread['cpu_pct']:.1f}%" + (f" ({r})" if r else "")


def _runs(index):
    """Every run of INDEX with a result (main runs, probe repeats, equal-load, scaling), once."""
    seen, out = set(), []
    for key in ("runs", "probe_runs", "equal_load_runs", "all_runs"):
        for r in index.get(key) or []:
            name = r.get("run") or r.get("dir")
            if isinstance(r, dict) and name not in seen:
                seen.add(name)
                out.append(r)
    return out


def busiest_of(run):
    """(phase, busiest server thread, number of server threads) of RUN: the probe's when it
    has per-thread figures, else the constant-rate window's; (None, None, 0) without."""
    for phase, doc in (("probe", run.get("probe") or {}), ("sustain", run)):
        ts = doc.get("server_threads")
        if ts:
            return phase, busiest(ts), len(ts)
    return None, None, 0


def plan_lines(index):
    """summary.md's CPU plan lines: the plan of the batch's first run (its SMT policy, the
    three lists, its warnings) and any other run whose plan warned."""
    runs = _runs(index)
    first = next((r for r in runs if (r.get("config") or {}).get("cpu_plan")), None)
    if first is None:
        return []
    cp = first["config"]["cpu_plan"]
    out = [f"CPU plan ({cp.get('source', 'plan')}, SMT policy {cp.get('smt_policy')}): server CPUs "
           f"{cp.get('server_cpus')}, loadgen CPUs {cp.get('loadgen_cpus')}, idle CPUs "
           f"{cp.get('idle_cpus') or 'none'} (SPEC.md section 4)."]
    warned = {}
    for r in runs:
        for w in ((r.get("config") or {}).get("cpu_plan") or {}).get("warnings") or []:
            warned.setdefault(w, []).append(r.get("run"))
    for w, names in warned.items():
        out.append(f"**Warning (CPU plan): {w}** ({len(names)} run{'' if len(names) == 1 else 's'}).")
    over = [r for r in runs if (r.get("config") or {}).get("oversubscribed")]
    if over:
        c = over[0]["config"]
        out.append(f"**Oversubscribed:** {len(over)} run{'' if len(over) == 1 else 's'} with "
                   f"{c.get('server_threads')} server threads on {c.get('server_cpu_count')} CPU(s) (SERVER_THREADS): "
                   "their figures include thread switching; they exercise the many-thread paths, they are not "
                   f"a {c.get('server_threads')}-CPU result.")
    return out


def thread_rows(index):
    """[(run, phase, saturated_by, busiest-thread words, threads, loadgen busiest words)] for
    every run with per-thread figures, in index order."""
    rows = []
    for r in _runs(index):
        phase, top, n = busiest_of(r)
        if top is None:
            continue
        cfg = r.get("config") or {}
        doc = r.get("probe") if phase == "probe" else r
        lg = busiest((doc or {}).get("loadgen_threads"))
        rows.append((r, phase, (r.get("probe") or {}).get("saturated_by"),
                     thread_words(top, cfg, r.get("server")), n,
                     thread_words(lg, cfg, r.get("server")) if lg else None))
    return rows


def markdown_lines(index):
    """summary.md's lines: the CPU plan (and its warnings), then, when a server ran more than
    one thread, a table of each run's busiest server thread and its CPU, what saturated its
    probe, and the load generator's busiest thread."""
    out = []
    plan = plan_lines(index)
    if plan:
        out += [""] + plan
    rows = [x for x in thread_rows(index) if x[4] > 1]
    if not rows:
        return out
    out += ["", "## Busiest threads", "",
            "| run | phase | OS threads of the server process | busiest server thread (% of one CPU) | probe saturated by | "
            "busiest loadgen thread |", "| --- | --- | ---: | --- | --- | --- |"]
    for r, phase, by, words, n, lg in rows:
        out.append(f"| {r.get('run')} | {phase} | {n} | {words} | {by or 'not saturated'} | {lg or 'n/a'} |")
    out += ["", f"A server thread at {SERIAL_THREAD_PCT:g}% of a CPU or more is a serial bottleneck: the probe "
            "counts as saturated by \"thread\" even when the total is far below its CPUs (SPEC.md section 8). "
            "Thread names: io-N an I/O loop, actor-N an actor worker, lg-N a load generator thread; a thread "
            "named after its binary is one it did not name."]
    return out


def report_html(index, page=None):
    """report.html's section (empty when no run has per-thread figures): the CPU plan and the
    busiest thread of every run whose server ran more than one thread. PAGE (the report's
    page, with fig(path) for tagged figures) is accepted for symmetry and not needed: every
    figure here is quoted as text from index.json."""
    plan = plan_lines(index)
    rows = thread_rows(index)
    if not plan and not rows:
        return ""
    esc = html.escape
    out = ['<h2 id="threads">CPU plan and busiest threads</h2>']
    out += [f"<p>{esc(re.sub(r'[*]', '', p))}</p>" for p in plan]
    multi = [x for x in rows if x[4] > 1]
    if multi:
        out.append("<table><tr><th>run</th><th>phase</th><th>OS threads of the server process</th><th>busiest server thread "
                   "(% of one CPU)</th><th>probe saturated by</th><th>busiest loadgen thread</th></tr>")
        for r, phase, by, words, n, lg in multi:
            out.append(f"<tr><td>{esc(str(r.get('run')))}</td><td>{esc(phase)}</td><td>{n}</td><td>{esc(words)}</td>"
                       f"<td>{esc(by or 'not saturated')}</td><td>{esc(lg or 'n/a')}</td></tr>")
        out.append("</table>")
        out.append(f'<p class="note">A server thread at {SERIAL_THREAD_PCT:g}% of a CPU or more is a serial '
                   "bottleneck: the probe counts as saturated by thread (SPEC.md section 8).</p>")
    return "\n".join(out)


def run_lines(run_dir):
    """`analysis threads RUN_DIR`: one line per thread and phase of RUN_DIR/result.json:
    'PHASE server|loadgen TID NAME CPU% ROLE'."""
    with open(os.path.join(run_dir, "result.json"), encoding="utf-8") as fh:
        r = json.load(fh)
    cfg = r.get("config") or {}
    out = []
    for phase, doc in (("probe", r.get("probe") or {}), ("plateau", (r.get("probe") or {}).get("plateau") or {}),
                       ("sustain", r)):
        for side in ("server", "loadgen"):
            for t in doc.get(f"{side}_threads") or []:
                pct = f"{t['cpu_pct']:.1f}%" if is_num(t.get("cpu_pct")) else "n/a"
                out.append(f"{phase} {side} {t.get('tid')} {t.get('name')} {pct} "
                           f"{role(t, cfg, r.get('server'), t.get('pid')) or ''}".rstrip())
    return out
