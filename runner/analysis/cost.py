"""cost: the batch's cost account (SPEC.md section 16): for every server and scenario of a
batch, what one request costs the server in counts the host's noise cannot move:
  instructions   user-space instructions of the whole server process, callgrind, the 2N-N
                 difference of two fresh servers (burst mode: every round one wake-up that
                 finds one request on every connection; the method of bench/instr-per-req.sh)
  system calls   one server under strace -f -ttt: the calls (by kind) between the client's
                 marks, an idle window (w0), N requests (w1), 2N (w2): (w1 + w2 - 2 w0) / 3N
  context switches  voluntary and involuntary, summed over the server's threads
                 (/proc/PID/task/*/status), and the servers' own counters on /metrics
                 (messages = hops, cross-thread hops, wake-ups, store-lock waits): one plain
                 server, snapshots twice with no request between (d0: a scrape's own cost),
                 after N (d1) and after 2N more requests (d2): (d1 + d2 - 2 d0) / 3N
plus a contended row per server binary: four server threads under a pipelined load, where
the async server's mutex is contended and the actor server's messages cross threads.
A tool that is missing (no valgrind, no strace) or a count a server does not expose gives
null with the reason in the row's `unmeasured`.
Starts servers (their definitions, servers.py) on 127.0.0.1 with the batch's build; ends only
the processes it started. Writes BATCH_DIR/cost.json; summary.py puts it in index.json.
"""
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from . import reqclient, servers

ROOT = servers.ROOT
FIELDS = ("instructions_per_request", "syscalls_per_request", "syscalls_by_kind_per_request",
          "context_switches_per_request", "voluntary_context_switches_per_request",
          "involuntary_context_switches_per_request", "hops_per_request", "cross_thread_hops_per_request",
          "wakeups_per_request", "lock_waits_per_request", "lock_acquisitions_per_request")
# row field -> the agreed /metrics counter
COUNTERS = {"hops_per_request": "actor_messages_total",
            "cross_thread_hops_per_request": "actor_cross_thread_hops_total",
            "wakeups_per_request": "actor_wakeups_total",
            "lock_waits_per_request": "store_lock_waits_total",
            "lock_acquisitions_per_request": "store_lock_acquisitions_total"}
SYSCALL_KINDS = (("read", ("read", "readv", "recvfrom", "recvmsg", "recvmmsg", "pread64")),
                 ("write", ("write", "writev", "sendto", "sendmsg", "sendmmsg", "pwrite64")),
                 ("epoll_wait", ("epoll_wait", "epoll_pwait", "epoll_pwait2")),
                 ("futex", ("futex",)))
# requests per measurement (N; the 2N-N methods also run 2N): (callgrind, strace, plain)
SIZES = {"full": (2000, 2000, 10000), "quick": (2000, 2000, 10000), "smoke": (300, 300, 1000)}
CONNECTIONS = 8
# Four I/O loops on the 2-CPU host (two a CPU): at two the async server's store mutex (held
# for a hash lookup) was found held 0 times in 9,000 requests; at four once in 800 to 33,000
# requests, as busy as the host was (bench/NOTES.md, 2026-12-04).
CONTENDED = {"threads": 4, "connections": 16, "depth": 4, "scenario": "s2"}
READY_S = 60
METHOD = {"instructions": "callgrind 2N-N (two fresh servers, burst rounds of one request a connection)",
          "syscalls": "strace -f -ttt, one server, N then 2N requests less an idle window's, closed loop",
          "context_switches": "/proc/PID/task/*/status, one server, N then 2N requests less two scrapes' own",
          "counters": "/metrics deltas, one server, N then 2N requests less two scrapes' own"}


class Unmeasured(Exception):
    """A count that could not be taken; the message is the reason."""


def _say(msg):
    print(f"cost: {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port):
    """True when a socket listens on PORT (/proc/net/tcp or tcp6, state 0A)."""
    for f in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(f, encoding="ascii") as fh:
                next(fh)
                for line in fh:
                    parts = line.split()
                    if parts[3] == "0A" and int(parts[1].rsplit(":", 1)[1], 16) == port:
                        return True
        except (OSError, StopIteration, IndexError, ValueError):
            continue
    return False


class Setup:
    """One row to measure: SERVER (servers.Server) on SCENARIO with THREADS server threads,
    VARIABLES the runner variables its env_args read, the closed loop's CONNECTIONS and DEPTH,
    SIZES (callgrind, strace, plain N), CONTENDED for the contended row."""

    def __init__(self, server, scenario, threads=1, variables=None, connections=CONNECTIONS, depth=1,
                 sizes=SIZES["quick"], contended=False, build=None):
        self.server, self.scenario, self.threads = server, scenario, threads
        self.variables = dict(os.environ if variables is None else variables)
        self.connections, self.depth, self.sizes, self.contended = connections, depth, sizes, contended
        self.build = build or os.path.join(ROOT, os.environ.get("BUILD", "build"))
        self.mix = os.path.join(ROOT, "loadgen-scripts", servers.MIXES[scenario])
        self.bearer = self.variables.get("BEARER") or "test-token-aaaaaaaaaaaaaaaaaaaa"


class Server:
    """A started server process (under WRAPPER, a list of words, or none) in its own
    temporary folder; stop() ends it and waits."""

    def __init__(self, setup, wrapper=()):
        self.setup = setup
        # strace killed by a signal writes no summary: the signal goes to its child, the server
        self.traced = bool(wrapper) and os.path.basename(wrapper[0]) == "strace"
        self.dir = tempfile.mkdtemp(prefix="cost.")
        self.port = free_port()
        values = {"root": ROOT, "build": setup.build, "host": "127.0.0.1", "port": self.port,
                  "threads": setup.threads, "db": os.path.join(self.dir, "server.db"),
                  "bearer": setup.bearer, "seed_users": setup.variables.get("SEED_USERS", "10000"),
                  "access_log": "/dev/null", "run_dir": self.dir}
        argv, env = servers.expand(setup.server, values, setup.variables)
        self.log = os.path.join(self.dir, "server.log")
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(list(wrapper) + argv, stdout=log, stderr=subprocess.STDOUT,
                                         env=dict(os.environ, **env), cwd=self.dir, start_new_session=True)
        self._wait_ready()

    def tail(self):
        try:
            with open(self.log, encoding="utf-8", errors="replace") as fh:
                return " | ".join(fh.read().strip().splitlines()[-3:])
        except OSError:
            return ""

    def _wait_ready(self):
        """Waits until the port listens (read from /proc/net/tcp: no connection, so no cost
        the server must count), then one GET of the ready path (the same cost in every run,
        cancelled by the differences)."""
        path = self.setup.server.ready_path
        end = time.monotonic() + READY_S
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise Unmeasured(f"the server exited ({self.proc.returncode}) at start: {self.tail()}")
            if listening(self.port):
                try:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=30) as s:
                        s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
                        if s.recv(16).startswith(b"HTTP/1."):
                            return
                except OSError:
                    pass
            time.sleep(0.05)
        self.stop()
        raise Unmeasured(f"the server was not ready after {READY_S} s")

    conns = None

    def send(self, n, mode="closed"):
        """N requests of the setup's mix; in closed mode over connections opened once and kept
        (so that no window counts a connection's set-up)."""
        s = self.setup
        try:
            if mode == "closed" and self.conns is None:
                self.conns = [reqclient.Conn(self.port) for _ in range(s.connections)]
            out = reqclient.send(self.port, s.mix, n, s.connections, mode, self.proc.pid if mode == "burst" else None,
                                 1, s.bearer, s.depth if mode == "closed" else 1,
                                 self.conns if mode == "closed" else None)
        except (OSError, ValueError) as e:
            raise Unmeasured(f"the client failed: {e}; server: {self.tail()}") from e
        if out["unexpected_status"]:
            raise Unmeasured(f"unexpected statuses {out['unexpected_status']}")

    def _child(self):
        """The first child of the process started (the server under strace), or None."""
        try:
            with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children", encoding="ascii") as fh:
                kids = fh.read().split()
            return int(kids[0]) if kids else None
        except (OSError, ValueError):
            return None

    def stop(self):
        if self.proc.poll() is None:
            sig = getattr(signal, "SIG" + self.setup.server.stop_signal, signal.SIGTERM)
            child = self._child() if self.traced else None
            if child is not None:
                os.kill(child, sig)
            else:
                self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def close(self):
        for c in self.conns or []:
            c.sock.close()
        self.conns = None
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def callgrind_total(path):
    """The Ir total of a callgrind output file ("summary:" or "totals:"), or None."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            m = re.match(r"^(summary|totals):\s*(\d+)", line)
            if m:
                return int(m.group(2))
    return None


def instructions(setup):
    """User-space instructions per request (callgrind, 2N-N)."""
    if not shutil.which("valgrind"):
        raise Unmeasured("valgrind is not installed")
    if not setup.server.build:
        raise Unmeasured("not one of this project's servers: callgrind of a foreign runtime "
                         "is outside the stage's time")
    n = setup.sizes[0]
    totals = []
    for k in (n, 2 * n):
        tmp = tempfile.mkdtemp(prefix="cost-cg.")
        try:
            out = os.path.join(tmp, "cg.out")
            srv = Server(setup, ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"])
            try:
                srv.send(k, "burst")
            finally:
                srv.close()
            ir = callgrind_total(out) if os.path.exists(out) else None
            if ir is None:
                raise Unmeasured("callgrind wrote no total")
            totals.append(ir)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return (totals[1] - totals[0]) / n


def by_kind(counts):
    kinds = {k: 0 for k, _ in SYSCALL_KINDS}
    kinds["other"] = 0
    for name, calls in counts.items():
        kind = next((k for k, names in SYSCALL_KINDS if name in names), "other")
        kinds[kind] += calls
    return kinds


STRACE_LINE = re.compile(r"^\d+\s+(\d+\.\d+)\s+([a-z_0-9]+)\(")


def trace_counts(path, bounds):
    """Per window between consecutive BOUNDS (epoch seconds), {syscall: calls} of an
    `strace -f -ttt` output (each call once: at its entry line; "<... resumed>" skipped)."""
    wins = [dict() for _ in range(len(bounds) - 1)]
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            m = STRACE_LINE.match(line)
            if not m:
                continue
            t = float(m.group(1))
            for k in range(len(wins)):
                if bounds[k] <= t < bounds[k + 1]:
                    wins[k][m.group(2)] = wins[k].get(m.group(2), 0) + 1
                    break
    return wins


def syscalls(setup):
    """(system calls per request, {kind: per request}): one server under strace -f -ttt, the
    calls between the client's marks: none (w0), N requests (w1), 2N (w2), closed loop;
    (w1 + w2 - 2 w0) / 3N."""
    if not shutil.which("strace"):
        raise Unmeasured("strace is not installed")
    n = setup.sizes[1]
    tmp = tempfile.mkdtemp(prefix="cost-st.")
    try:
        out = os.path.join(tmp, "strace.out")
        srv = Server(setup, ["strace", "-f", "-ttt", "-o", out, "--"])
        try:
            srv.send(max(n // 10, setup.connections), "closed")   # warm-up
            marks = [time.time()]
            time.sleep(0.2)
            marks.append(time.time())
            for k in (n, 2 * n):
                srv.send(k, "closed")
                marks.append(time.time())
        finally:
            srv.close()
        if not os.path.exists(out):
            raise Unmeasured("strace wrote no trace")
        wins = [by_kind(w) for w in trace_counts(out, marks)]
        if not any(sum(w.values()) for w in wins[1:]):
            raise Unmeasured("strace's trace holds no call (ptrace not permitted?)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    per = {k: (wins[1][k] + wins[2][k] - 2 * wins[0][k]) / (3 * n) for k in wins[0]}
    return sum(per.values()), per


def task_switches(pid):
    """(voluntary, involuntary) context switches summed over the threads of PID."""
    vol = inv = 0
    for st in glob.glob(f"/proc/{pid}/task/*/status"):
        try:
            with open(st, encoding="ascii") as fh:
                for line in fh:
                    if line.startswith("voluntary_ctxt_switches:"):
                        vol += int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches:"):
                        inv += int(line.split()[1])
        except OSError:
            continue
    return vol, inv


def scrape(port):
    """The /metrics samples (promtext), or None when the server has no /metrics."""
    from . import promtext
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            return promtext.parse(r.read().decode("utf-8", "replace"))
    except (OSError, ValueError):
        return None


def plain(setup):
    """Context switches, the /metrics counters, the server's threads and its runtime flags:
    (fields dict, unmeasured dict)."""
    n = setup.sizes[2]
    srv = Server(setup)
    fields, why = {}, {}
    try:
        pid = srv.proc.pid
        srv.send(max(n // 10, setup.connections), "closed")   # warm-up: connections, caches
        snaps = []
        for k in (0, 0, n, 2 * n):
            if k:
                srv.send(k, "closed")
            snaps.append((task_switches(pid), scrape(srv.port)))
        threads = len(os.listdir(f"/proc/{pid}/task"))
    finally:
        srv.close()

    def per_request(vals):
        """(d1 + d2 - 2 d0) / 3N: the 3N requests' share, a scrape's own cost (d0, between two
        scrapes with no request) taken out of each of the two windows."""
        d0, d1, d2 = vals[1] - vals[0], vals[2] - vals[1], vals[3] - vals[2]
        return (d1 + d2 - 2 * d0) / (3 * n)

    vol = per_request([v for (v, _), _ in snaps])
    inv = per_request([i for (_, i), _ in snaps])
    m0, m2 = snaps[0][1], snaps[3][1]
    fields.update(voluntary_context_switches_per_request=vol, involuntary_context_switches_per_request=inv,
                  context_switches_per_request=vol + inv, process_threads=threads)
    fields["flags"] = {}
    if m0 is None or m2 is None:
        for f in COUNTERS:
            fields[f] = None
            why[f] = "the server has no /metrics"
        return fields, why
    from . import promtext
    names = {n for n, _, _ in m2}
    for f, name in COUNTERS.items():
        if name not in names:
            fields[f] = None
            why[f] = f"{name} is absent from the server's /metrics (a server without the counter)"
            continue
        fields[f] = per_request([promtext.total(m, name) for _, m in snaps])
    info = [lab for nm, lab, _ in m2 if nm == "actor_runtime_info"]
    fields["flags"] = dict(info[0]) if info else {}
    return fields, why


def measure(setup):
    """One cost row for SETUP (every key of FIELDS, null with a reason when unmeasured)."""
    row = {"server": setup.server.name, "scenario": setup.scenario, "contended": setup.contended,
           "server_threads": setup.threads, "process_threads": None, "flags": {},
           "connections": setup.connections, "depth": setup.depth,
           "requests": {"instructions": setup.sizes[0], "syscalls": setup.sizes[1], "plain": setup.sizes[2]},
           "method": METHOD, "unmeasured": {}}
    for f in FIELDS:
        row[f] = None
    t0 = time.monotonic()
    try:
        fields, why = plain(setup)
        row.update(fields)
        row["unmeasured"].update(why)
    except Unmeasured as e:
        for f in ("context_switches_per_request", "voluntary_context_switches_per_request",
                  "involuntary_context_switches_per_request", *COUNTERS):
            row["unmeasured"][f] = str(e)
    try:
        total, kinds = syscalls(setup)
        row["syscalls_per_request"], row["syscalls_by_kind_per_request"] = total, kinds
    except Unmeasured as e:
        row["unmeasured"]["syscalls_per_request"] = row["unmeasured"]["syscalls_by_kind_per_request"] = str(e)
    try:
        row["instructions_per_request"] = instructions(setup)
    except Unmeasured as e:
        row["unmeasured"]["instructions_per_request"] = str(e)
    row["seconds"] = round(time.monotonic() - t0, 1)
    return row


def plan(batch_dir, mode, variables=None):
    """The Setups of BATCH_DIR: every (server, scenario) of matrix.json's groups, one thread
    (SERVER_THREADS when set), then a contended row (two threads, pipelined) for the first
    server of each of this project's binaries that serves s2."""
    with open(os.path.join(batch_dir, "matrix.json"), encoding="utf-8") as fh:
        m = json.load(fh)
    variables = dict(os.environ if variables is None else variables)
    defs = servers.load_all()
    sizes = SIZES.get(mode, SIZES["quick"])
    threads = int(variables.get("SERVER_THREADS") or 1)
    out, seen = [], set()
    for g in m.get("groups", []):
        for name in g["servers"]:
            out.append(Setup(defs[name], g["scenario"], threads, variables, sizes=sizes))
    for g in m.get("groups", []):
        for name in g["servers"]:
            srv = defs[name]
            key = tuple(srv.build)
            if not srv.build or key in seen or not srv.serves(CONTENDED["scenario"]):
                continue
            seen.add(key)
            out.append(Setup(srv, CONTENDED["scenario"], CONTENDED["threads"], variables,
                             CONTENDED["connections"], CONTENDED["depth"], sizes, contended=True))
    return out


def missing_tools():
    """{tool: reason} of the tools this host lacks."""
    return {t: f"{t} is not installed" for t in ("valgrind", "strace") if not shutil.which(t)}


def run(batch_dir, mode="quick"):
    """Measures every row of plan(BATCH_DIR) and writes BATCH_DIR/cost.json. Returns 0."""
    setups = plan(batch_dir, mode)
    for t, why in missing_tools().items():
        _say(f"{why}: its counts are null in every row")
    rows = []
    for i, s in enumerate(setups, 1):
        what = f" (contended: {s.threads} threads, pipelined)" if s.contended else ""
        _say(f"[{i}/{len(setups)}] {s.server.name} {s.scenario}{what} ...")
        try:
            row = measure(s)
        except Exception as e:  # noqa: BLE001  a broken row must not lose the others
            row = {"server": s.server.name, "scenario": s.scenario, "contended": s.contended,
                   "server_threads": s.threads, "flags": {}, "requests": None, "method": METHOD,
                   **{f: None for f in FIELDS}, "seconds": None,
                   "unmeasured": {f: f"the stage failed: {type(e).__name__}: {e}" for f in FIELDS}}
        rows.append(row)
        _say(f"[{i}/{len(setups)}] {s.server.name} {s.scenario}: {line(row)} ({row['seconds']} s)")
    doc = {"mode": mode, "method": METHOD, "contended_setup": CONTENDED, "rows": rows}
    tmp = os.path.join(batch_dir, "cost.json.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)
    os.replace(tmp, os.path.join(batch_dir, "cost.json"))
    return 0


def _f(v, d=1):
    return "-" if v is None else f"{v:,.{d}f}"


def line(row):
    """One line of a row's counts."""
    return (f"{_f(row['instructions_per_request'], 0)} instr, {_f(row['syscalls_per_request'], 2)} syscalls, "
            f"{_f(row['context_switches_per_request'], 3)} ctx sw, {_f(row['hops_per_request'], 2)} hops, "
            f"{_f(row['cross_thread_hops_per_request'], 2)} cross, {_f(row['wakeups_per_request'], 3)} wake-ups, "
            f"{_f(row['lock_waits_per_request'], 4)} lock waits a request")


def estimate_s(n_rows, mode):
    """A rough time of the stage for N_ROWS rows on 2 CPUs, in seconds."""
    return n_rows * (4 if mode == "smoke" else 10)


def load(batch_dir):
    """The rows of BATCH_DIR/cost.json, or None when the stage did not run."""
    path = os.path.join(batch_dir, "cost.json")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as fh:
        return json.load(fh).get("rows", [])


def main(argv):
    """analysis cost BATCH_DIR [MODE] | cost-one NAME SCENARIO [THREADS [CONNECTIONS DEPTH]] [MODE]"""
    if argv and argv[0] == "cost-one":
        a = argv[1:]
        if len(a) < 2:
            raise SystemExit("usage: cost-one NAME SCENARIO [THREADS [CONNECTIONS DEPTH [MODE]]]")
        defs = servers.load_all()
        threads = int(a[2]) if len(a) > 2 else 1
        conns = int(a[3]) if len(a) > 3 else CONNECTIONS
        depth = int(a[4]) if len(a) > 4 else 1
        mode = a[5] if len(a) > 5 else "quick"
        row = measure(Setup(servers.get(defs, a[0]), a[1], threads, None, conns, depth, SIZES[mode],
                            contended=threads > 1))
        print(json.dumps(row, indent=1))
        return 0
    if not argv or len(argv) > 2:
        raise SystemExit("usage: cost BATCH_DIR [full|quick|smoke]")
    return run(argv[0], argv[1] if len(argv) > 1 else "quick")


# ---- index.json and summary.md ---------------------------------------------------------------

def extra(cand, base):
    """The candidate's extra cost over the baseline (two cost rows): a dict of differences per
    request and, where the candidate counts hops, per hop; None when a row is missing."""
    if not cand or not base:
        return None
    out = {}
    for k in ("instructions_per_request", "syscalls_per_request", "context_switches_per_request"):
        a, b = cand.get(k), base.get(k)
        out[k] = None if a is None or b is None else a - b
    hops = cand.get("hops_per_request")
    out["hops_per_request"] = hops
    ins = out["instructions_per_request"]
    out["instructions_per_hop"] = ins / hops if ins is not None and hops else None
    return out


def extra_words(e):
    """"+345 instructions a request over 6 hops: 57 a hop" (and the system calls, switches)."""
    if e is None or e["instructions_per_request"] is None:
        return "instructions not counted"
    words = f"{e['instructions_per_request']:+,.0f} instructions a request"
    if e["hops_per_request"]:
        words += f" over {e['hops_per_request']:.3g} hops: {e['instructions_per_hop']:,.0f} a hop"
    if e["syscalls_per_request"] is not None:
        words += f"; {e['syscalls_per_request']:+.2f} system calls"
    if e["context_switches_per_request"] is not None:
        words += f"; {e['context_switches_per_request']:+.3f} context switches"
    return words


def section(batch_dir, comparisons):
    """index.json's `cost` list: the rows of cost.json, each non-contended candidate row with
    `extra_over_baseline` (the comparison's baseline on the same scenario); None when the
    stage did not run (--no-cost, or a batch before it)."""
    rows = load(batch_dir)
    if rows is None:
        return None
    for r in rows:
        r.setdefault("unmeasured", {})
        base = next((c["baseline"] for c in comparisons
                     if c["candidate"] == r["server"] and c["scenario"] == r["scenario"]), None)
        b = next((x for x in rows if x["server"] == base and x["scenario"] == r["scenario"]
                  and x.get("contended") == r.get("contended")), None) if base else None
        r["baseline"] = base
        r["extra_over_baseline"] = extra(r, b) if b else None
    return rows


def _n(v, d):
    return "-" if v is None else f"{v:,.{d}f}"


def _table(rows, w):
    w("| scenario | server | threads | instructions | system calls (read, write, epoll_wait, futex, other) | "
      "context switches (voluntary + involuntary) | hops | cross-thread hops | wake-ups | lock waits |")
    w("| --- | --- | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: |")
    for r in rows:
        k = r.get("syscalls_by_kind_per_request") or {}
        kinds = ", ".join(_n(k.get(x), 2) for x in ("read", "write", "epoll_wait", "futex", "other")) if k else ""
        flags = " ".join(f"{a}={b}" for a, b in sorted((r.get("flags") or {}).items())
                         if a in ("placement", "message", "mailbox"))
        w(f"| {r['scenario']} | {r['server']}{f' ({flags})' if flags else ''} | {_n(r.get('server_threads'), 0)} | "
          f"{_n(r['instructions_per_request'], 0)} | "
          f"{_n(r['syscalls_per_request'], 2)}{f' ({kinds})' if kinds else ''} | "
          f"{_n(r['context_switches_per_request'], 3)} ({_n(r['voluntary_context_switches_per_request'], 3)} + "
          f"{_n(r['involuntary_context_switches_per_request'], 3)}) | {_n(r['hops_per_request'], 2)} | "
          f"{_n(r['cross_thread_hops_per_request'], 2)} | {_n(r['wakeups_per_request'], 3)} | "
          f"{_n(r['lock_waits_per_request'], 4)} |")


def markdown_lines(index):
    """summary.md's cost sections (the cost account, the contended run), from index.json."""
    rows = index.get("cost")
    if rows is None:
        return []
    out = []
    w = out.append
    plain_rows = [r for r in rows if not r.get("contended")]
    cont = [r for r in rows if r.get("contended")]
    w("")
    w("## Cost account: per request, counted")
    w("")
    w("Counts per request of the binaries this batch measured, one server thread unless SERVER_THREADS said "
      "otherwise: user-space instructions (callgrind, 2N-N, whole process), system calls by kind (strace -f -c, "
      "2N-N), context switches summed over the server's threads and the servers' own counters (/metrics), "
      "SPEC.md section 16. Counts do not move with the host's noise as times do; \"-\" is not measured (why: "
      "below).")
    w("")
    _table(plain_rows, w)
    ratios = {(c["scenario"], c["candidate"], c["baseline"]): c for c in index.get("comparisons") or []}
    lines = []
    for r in plain_rows:
        if r.get("baseline") is None:
            continue
        c = ratios.get((r["scenario"], r["server"], r["baseline"]), {})
        ci = "" if c.get("ci_low") is None else f" ({_n(c['ci_low'], 2)}-{_n(c['ci_high'], 2)})"
        lines.append(f"- {r['scenario']} {r['server']} / {r['baseline']}: throughput ratio "
                     f"{_n(c.get('ratio'), 3)}{ci}; {extra_words(r.get('extra_over_baseline'))}")
    if lines:
        w("")
        w("Beside the throughput ratio, the candidate's extra cost per request (and per hop):")
        w("")
        out.extend(lines)
    if cont:
        w("")
        w("## Contended run (reported, never part of the verdict)")
        w("")
        w(f"{CONTENDED['threads']} server threads (I/O loops) under a pipelined load "
          f"({CONTENDED['depth']} requests in flight on each of {CONTENDED['connections']} connections): the case "
          "where the async server's store mutex is contended and the actor server's messages cross threads. "
          "Counts per request; what this configuration can and cannot show: SPEC.md section 16.3.")
        w("")
        _table(cont, w)
        w("")
        for r in cont:
            lw, ch = r.get("lock_waits_per_request"), r.get("cross_thread_hops_per_request")
            seen = []
            # (a server reports only the mechanism it has: the store lock, or messages)
            if lw is not None and r.get("lock_acquisitions_per_request"):
                seen.append(f"lock waits {'> 0' if lw > 0 else '= 0 (not contended)'}")
            if ch is not None and r.get("hops_per_request"):
                seen.append(f"cross-thread hops {'> 0' if ch > 0 else '= 0 (none crossed)'}")
            w(f"- {r['server']}: {', '.join(seen) or 'neither a store lock nor messages counted'}")
    why = {}
    for r in rows:
        for f, reason in (r.get("unmeasured") or {}).items():
            why.setdefault(reason, set()).add(f)
    if why:
        w("")
        w("Not measured:")
        w("")
        for reason, fields in sorted(why.items()):
            w(f"- {', '.join(sorted(fields))}: {reason}")
    return out


def report_html(index, page):
    """report.html's cost account and contended run (empty when the stage did not run)."""
    from .render import esc
    rows = index.get("cost")
    if rows is None:
        return ""
    f = page.fig
    out = []
    for title, contended, note in (
            ("Cost account: per request, counted", False,
             "Counts a request of the binaries this batch measured (SPEC.md section 16): user-space instructions "
             "(callgrind, 2N-N), system calls (strace -f -c, 2N-N), context switches over the server's threads, "
             "and the servers' own counters on /metrics. The host's noise does not move counts as it moves times."),
            ("Contended run (reported, never part of the verdict)", True,
             f"{CONTENDED['threads']} server threads under a pipelined load: the async server's store mutex "
             "contended, the actor "
             "server's messages crossing threads.")):
        mine = [(i, r) for i, r in enumerate(rows) if bool(r.get("contended")) == contended]
        if not mine:
            continue
        out += [f'<h2 id="cost{"-contended" if contended else ""}">{esc(title)}</h2>',
                f'<p class="note">{esc(note)}</p>',
                "<table><tr><th>scenario</th><th>server</th><th>threads</th><th>instructions</th>"
                "<th>system calls</th><th>context switches</th><th>hops</th><th>cross-thread hops</th>"
                "<th>wake-ups</th><th>lock waits</th><th>extra over the baseline</th></tr>"]
        for i, r in mine:
            k = f"cost/{i}"
            out.append(f"<tr><td>{esc(r['scenario'])}</td><td>{esc(r['server'])}</td>"
                       f"<td class=\"n\">{f(k + '/server_threads')}</td>"
                       f"<td class=\"n\">{f(k + '/instructions_per_request')}</td>"
                       f"<td class=\"n\">{f(k + '/syscalls_per_request', 2)}</td>"
                       f"<td class=\"n\">{f(k + '/context_switches_per_request', 3)}</td>"
                       f"<td class=\"n\">{f(k + '/hops_per_request', 2)}</td>"
                       f"<td class=\"n\">{f(k + '/cross_thread_hops_per_request', 2)}</td>"
                       f"<td class=\"n\">{f(k + '/wakeups_per_request', 3)}</td>"
                       f"<td class=\"n\">{f(k + '/lock_waits_per_request', 4)}</td>"
                       f"<td>{esc(extra_words(r['extra_over_baseline'])) if r.get('extra_over_baseline') else ''}"
                       "</td></tr>")
        out.append("</table>")
    return "\n".join(out)
