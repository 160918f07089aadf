#!/usr/bin/env python3
# it_actor: actor-server specific integration checks with --threads 2 and --workers 0,
# then --workers 1, then with real parallelism at --threads 4 (--workers 2, and 0): pipelined mixed requests from many clients answered in request order
# and correctly (POST then GET of the new id on one connection), concurrent POSTs get
# distinct ids and are readable (group commit), the 503 path (Retry-After: 1, counted
# in http_overload_rejections_total; a 503 is never sent for a committed write) when a
# burst arrives while the server is frozen (SIGSTOP) and overfills the actors, and SIGTERM
# under load exits 0 within 2 s; the same POST checks with --group-commit 64 (sqlite), and
# the --group-commit flag itself (default 1 on both servers, printed in the start-up
# line; async-server refuses values above 1); thread creation that fails at start-up
# (RLIMIT_STACK above RLIMIT_AS: no thread stack fits, or only the first one) ends the
# process with a message and exit 1, no abort, no hang. Python stdlib only, TAP on
# stdout; kept under 60 s.
import os
import re
import resource
import selectors
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reliability_lib import (BUILD, Reader, Server, Tap, connect, get,  # noqa: E402
                             nofile_shortfall, post)

CLIENTS = int(os.environ.get("IT_ACTOR_CLIENTS", "24"))
ROUNDS = int(os.environ.get("IT_ACTOR_ROUNDS", "15"))
SEED = 100
BURST_CONNS = int(os.environ.get("IT_ACTOR_BURST_CONNS", "2400"))
BURST_DEPTH = 16  # the server's per-connection pipeline cap


def user_body(tag):
    return ('{"name":"%s","email":"%s@example.com"}' % (tag, tag)).encode()


def created_id(resp):
    m = re.search(rb'"id":(\d+)', resp.body)
    return int(m.group(1)) if m else None


class MixedClient(threading.Thread):
    """One connection, ROUNDS rounds of 5 pipelined requests: GET of the id this client
    created last round (read-your-writes), GET /users/k, a list, POST, /ping. Every
    response is checked against the request in its position."""

    def __init__(self, port, n):
        super().__init__(daemon=True)
        self.port, self.n = port, n
        self.problems = []
        self.responses = 0
        self.ids = []

    def run(self):
        try:
            s = connect(self.port, 10.0)
            r = Reader(s)
            last = None  # (id, name)
            for rnd in range(ROUNDS):
                k = 1 + (self.n * 7 + rnd) % SEED
                name = "c%d-r%d" % (self.n, rnd)
                reqs = []
                if last is not None:
                    reqs.append(("own", get(b"/users/%d" % last[0]), last))
                reqs.append(("get", get(b"/users/%d" % k), k))
                reqs.append(("list", get(b"/users?limit=3&after=%d" % k), k))
                reqs.append(("post", post(user_body(name)), name))
                reqs.append(("ping", get(b"/ping", auth=False), None))
                s.sendall(b"".join(q[1] for q in reqs))
                for kind, _, arg in reqs:
                    resp = r.response()
                    self.responses += 1
                    bad = self.check(kind, arg, resp)
                    if bad:
                        self.problems.append("client %d round %d %s: %s: %r" %
                                             (self.n, rnd, kind, bad, resp))
                        return
                    if kind == "post":
                        last = (created_id(resp), name)
                        self.ids.append(last[0])
            s.close()
        except (OSError, EOFError, ValueError) as e:
            self.problems.append("client %d: %r after %d responses" % (self.n, e,
                                                                        self.responses))

    @staticmethod
    def check(kind, arg, resp):
        if kind == "own":
            uid, name = arg
            if resp.status != 200 or b'"id":%d,' % uid not in resp.body or \
                    name.encode() not in resp.body:
                return "own write %d (%s) not read back" % (uid, name)
        elif kind == "get":
            if resp.status != 200 or not resp.body.startswith(b'{"id":%d,' % arg):
                return "expected user %d" % arg
        elif kind == "list":
            want = b'{"users":[{"id":%d,' % (arg + 1)
            if resp.status != 200 or not resp.body.startswith(want):
                return "expected a list after %d" % arg
        elif kind == "post":
            uid = created_id(resp)
            if resp.status != 201 or uid is None or arg.encode() not in resp.body or \
                    resp.headers.get("location") != "/users/%d" % uid:
                return "expected 201 for %s" % arg
        elif kind == "ping":
            if resp.status != 200 or resp.body != b"pong":
                return "expected pong"
        return None


def metric(port, name):
    s = connect(port, 5.0)
    r = Reader(s)
    s.sendall(get(b"/metrics", auth=False))
    resp = r.response()
    s.close()
    total = 0
    for line in resp.body.decode().splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total += int(float(line.split()[-1]))
    return total


def test_mixed(tap, label, srv):
    clients = [MixedClient(srv.port, n) for n in range(CLIENTS)]
    t0 = time.monotonic()
    for c in clients:
        c.start()
    for c in clients:
        c.join(30)
    problems = [p for c in clients for p in c.problems]
    hung = [c.n for c in clients if c.is_alive()]
    n = sum(c.responses for c in clients)
    tap.ok(not problems and not hung,
           "%s: %d clients x %d pipelined rounds (own write, get, list, post, ping): %d "
           "responses in request order and correct (%.1f s)" %
           (label, CLIENTS, ROUNDS, n, time.monotonic() - t0),
           "\n".join(problems[:5] + (["hung clients %r" % hung] if hung else [])))
    ids = [i for c in clients for i in c.ids]
    tap.ok(len(ids) == len(set(ids)) and len(ids) == CLIENTS * ROUNDS,
           "%s: %d POSTs over %d connections got distinct ids" % (label, len(ids), CLIENTS),
           "%d ids, %d distinct" % (len(ids), len(set(ids))))


def test_concurrent_posts(tap, label, srv, conns=8, per=20):
    """conns connections each pipeline `per` POSTs at the same moment."""
    socks = [connect(srv.port, 10.0) for _ in range(conns)]
    payloads = [b"".join(post(user_body("g%d-%d" % (c, i))) for i in range(per))
                for c in range(conns)]
    barrier = threading.Barrier(conns)
    results = [None] * conns

    def one(c):
        try:
            barrier.wait(5)
            socks[c].sendall(payloads[c])
            r = Reader(socks[c])
            results[c] = [r.response() for _ in range(per)]
        except (OSError, EOFError, ValueError, threading.BrokenBarrierError) as e:
            results[c] = e

    ts = [threading.Thread(target=one, args=(c,), daemon=True) for c in range(conns)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(20)
    for s in socks:
        s.close()
    problems, ids = [], {}
    for c, res in enumerate(results):
        if not isinstance(res, list):
            problems.append("conn %d: %r" % (c, res))
            continue
        for i, resp in enumerate(res):
            uid = created_id(resp)
            name = "g%d-%d" % (c, i)
            if resp.status != 201 or uid is None or name.encode() not in resp.body:
                problems.append("conn %d post %d: %r" % (c, i, resp))
            else:
                ids[uid] = name
    tap.ok(not problems and len(ids) == conns * per,
           "%s: %d POSTs from %d connections at once: all 201 in order, %d distinct ids" %
           (label, conns * per, conns, len(ids)), "\n".join(problems[:5]))
    # Read them back from a fresh connection (pipelined).
    bad = []
    try:
        s = connect(srv.port, 10.0)
        r = Reader(s)
        order = sorted(ids)
        s.sendall(b"".join(get(b"/users/%d" % uid) for uid in order))
        for uid in order:
            resp = r.response()
            if resp.status != 200 or ids[uid].encode() not in resp.body:
                bad.append("%d: %r" % (uid, resp))
        s.close()
    except (OSError, EOFError, ValueError) as e:
        bad.append(repr(e))
    tap.ok(not bad and ids, "%s: every acknowledged POST is readable afterwards" % label,
           "\n".join(bad[:5]))


def burst(srv, conns, depth, body_tag):
    """Opens conns connections (accepted, checked with a /ping each), freezes the server
    (SIGSTOP), writes depth pipelined POSTs on each so they all arrive at once, thaws it
    and reads every response. Returns (status counts, [503 responses missing
    Retry-After: 1], dropped connections, connections opened)."""
    sel = selectors.DefaultSelector()
    socks = []
    for c in range(conns):
        try:
            s = connect(srv.port, 10.0)
        except OSError:
            break
        socks.append(s)
    for s in socks:
        s.sendall(get(b"/ping", auth=False))
    for s in socks:
        Reader(s).response()  # accepted and served: the burst meets open connections
    srv.signal(signal.SIGSTOP)
    try:
        for c, s in enumerate(socks):
            s.sendall(b"".join(post(user_body("%s%d-%d" % (body_tag, c, i)))
                               for i in range(depth)))
    finally:
        srv.signal(signal.SIGCONT)
    readers = {}
    for s in socks:
        s.setblocking(False)
        readers[s] = [Reader(s), 0]
        sel.register(s, selectors.EVENT_READ)
    counts, bad_503, errors = {}, [], 0
    deadline = time.monotonic() + 30
    while readers and time.monotonic() < deadline:
        for key, _ in sel.select(1.0):
            s = key.fileobj
            rd = readers[s]
            try:
                chunk = s.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                errors += 1
                sel.unregister(s)
                del readers[s]
                s.close()
                continue
            rd[0].buf += chunk
            while b"\r\n\r\n" in rd[0].buf:
                head = rd[0].buf.split(b"\r\n\r\n", 1)[0]
                m = re.search(rb"content-length: *(\d+)", head, re.I)
                need = len(head) + 4 + (int(m.group(1)) if m else 0)
                if len(rd[0].buf) < need:
                    break
                resp = rd[0].response()  # complete: does not block
                counts[resp.status] = counts.get(resp.status, 0) + 1
                if resp.status == 503 and resp.headers.get("retry-after") != "1":
                    bad_503.append(resp)
                rd[1] += 1
            if rd[1] == depth:
                sel.unregister(s)
                del readers[s]
                s.close()
    for s in readers:
        errors += 1
        s.close()
    sel.close()
    return counts, bad_503, errors, len(socks)


def test_overload(tap, label, path, workers, extra=(), threads=2):
    """Many connections x a full pipeline of POSTs on sqlite arriving at once (the server
    is frozen while they are written): more than 16,383 requests reach one middleware
    ring (per loop with --workers 0, shared by both loops with --workers 1). Skipped, with
    one line saying why, when the open-file limit cannot hold the burst's connections."""
    short = nofile_shortfall(BURST_CONNS + 64, "the overload burst of %d connections" %
                             BURST_CONNS)
    if short is not None:
        tap.note("%s: %s" % (label, short))
        for check in ("burst of pipelined POSTs: only 201 or 503, every response arrives",
                      "503s carry Retry-After: 1 and are counted",
                      "overload: exit 0 after SIGTERM, no sanitizer report",
                      "rows after the burst = seed + 201s"):
            tap.skip("%s: %s" % (label, check), "open-file limit too low")
        return
    srv = Server(path, "sqlite", seed=SEED, threads=threads,
                 args=["--workers", str(workers), "--max-conns", "20000"] + list(extra)).start()
    try:
        before = metric(srv.port, "http_overload_rejections_total")
        counts, bad_503, errors, opened = burst(srv, BURST_CONNS, BURST_DEPTH, "o")
        after = metric(srv.port, "http_overload_rejections_total")
        n503 = counts.get(503, 0)
        tap.note("%s overload burst: %d connections x %d POSTs: statuses %r, %d dropped "
                 "connections, overload counter %d -> %d" %
                 (label, opened, BURST_DEPTH, counts, errors, before, after))
        tap.ok(set(counts) <= {201, 503} and errors == 0,
               "%s: burst of %d pipelined POSTs: only 201 or 503, every response arrives" %
               (label, opened * BURST_DEPTH), "statuses %r, dropped %d" % (counts, errors))
        # the burst is built to overfill a ring (more than 16,383 requests while the server
        # is frozen): no 503 means the overload path went unexercised, a failure, not a skip;
        # except in the ThreadSanitizer build (build-thread, make check-tsan), whose runtime
        # serializes and slows the server's threads so that the burst's timing differs (it
        # got 38,400 201s and no 503 there, twice, 2026-12-04): the path is checked in the
        # normal and the ASan builds, TSan checks the same burst for races
        if n503 == 0 and os.path.basename(os.path.normpath(BUILD)) == "build-thread":
            tap.skip("%s: 503s carry Retry-After: 1 and are counted" % label,
                     "ThreadSanitizer build: the burst did not overfill a ring under TSan's timing")
        else:
            tap.ok(n503 > 0 and not bad_503 and after - before == n503,
                   "%s: %d 503s (the burst overfills a ring), each with Retry-After: 1, counted "
                   "in http_overload_rejections_total (+%d)" % (label, n503, after - before),
                   "no 503: the burst did not overfill a mailbox or the in-flight cap"
                   if n503 == 0 else "%r" % bad_503[:3])
    finally:
        rc = srv.stop(5)
        tap.ok(rc == 0 and not srv.sanitizer_reports(),
               "%s overload: exit 0 after SIGTERM, no sanitizer report" % label,
               "rc %r\n%s" % (rc, "\n".join(srv.sanitizer_reports()[:5] or srv.log[-5:])))
    # A 503 must mean "not done": the database holds the seed plus exactly the 201s.
    try:
        db = sqlite3.connect(srv.db)
        rows = db.execute("select count(*) from users").fetchone()[0]
        db.close()
    except sqlite3.Error as e:
        rows = repr(e)
    tap.ok(rows == SEED + counts.get(201, 0),
           "%s: rows after the burst = seed + 201s (%r = %d + %d): no 503 for a committed "
           "write" % (label, rows, SEED, counts.get(201, 0)))


class Loader(threading.Thread):
    def __init__(self, port, n):
        super().__init__(daemon=True)
        self.port, self.n = port, n
        self.stop = False
        self.done = 0

    def run(self):
        try:
            s = connect(self.port, 5.0)
            r = Reader(s)
            while not self.stop:
                s.sendall(get(b"/users/1") + post(user_body("t%d-%d" % (self.n, self.done))) +
                          get(b"/ping", auth=False))
                for _ in range(3):
                    r.response()
                self.done += 1
        except (OSError, EOFError, ValueError):
            pass


def test_sigterm(tap, label, srv):
    loaders = [Loader(srv.port, n) for n in range(16)]
    for t in loaders:
        t.start()
    time.sleep(0.5)
    done = sum(t.done for t in loaders)
    t0 = time.monotonic()
    srv.signal(signal.SIGTERM)
    rc = srv.wait(5)
    dt = time.monotonic() - t0
    for t in loaders:
        t.stop = True
    if rc is None:
        srv.kill()
    srv._thread.join(2)  # the last of stderr (sanitizer reports) is read
    tap.ok(rc == 0 and dt < 2.0,
           "%s: SIGTERM under load (%d rounds done) exits 0 in %.2f s" % (label, done, dt),
           "rc %r after %.2f s\n%s" % (rc, dt, "\n".join(srv.log[-5:])))
    tap.ok(not srv.sanitizer_reports(), "%s: no sanitizer report" % label,
           "\n".join(srv.sanitizer_reports()[:5]))


def startup_line(srv):
    return next((l for l in srv.log if "listening on" in l), "")


def test_group_commit_flag(tap, actor_path):
    """--group-commit: 1 by default on both servers and printed in the start-up line;
    the actor server takes 1..64, async-server only 1 (usage error, exit 2, otherwise)."""
    async_path = os.path.join(os.path.dirname(actor_path), "async-server")
    for path in (actor_path, async_path):
        name = os.path.basename(path)
        if not os.access(path, os.X_OK):
            tap.skip("%s: default group_commit=1 in the start-up line" % name, "absent")
            continue
        srv = Server(path, "memory", seed=SEED, threads=1).start()
        try:
            line = startup_line(srv)
            tap.ok(re.search(r"group_commit=1\b", line) is not None,
                   "%s: default --group-commit 1, printed in the start-up line" % name, line)
        finally:
            srv.kill()
    refused = [(actor_path, "0"), (actor_path, "65"), (actor_path, "x"), (async_path, "2"),
               (async_path, "64")]
    for path, value in refused:
        if not os.access(path, os.X_OK):
            continue
        name = os.path.basename(path)
        p = subprocess.run([path, "--port", "0", "--group-commit", value],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, timeout=10)
        err = p.stderr.decode("utf-8", "replace")
        tap.ok(p.returncode == 2 and "--group-commit" in err.splitlines()[0],
               "%s --group-commit %s: usage error naming the flag, exit 2" % (name, value),
               "rc %r: %s" % (p.returncode, err[:300]))


def test_serving(tap, label, path, store, threads, workers):
    """On a fresh server: mixed pipelined clients, concurrent POSTs, SIGTERM under load."""
    srv = Server(path, store, seed=SEED, threads=threads, args=["--workers", str(workers)]).start()
    try:
        test_mixed(tap, label, srv)
        test_concurrent_posts(tap, label, srv)
        test_sigterm(tap, label, srv)
    finally:
        srv.kill()


def limits(stack_bytes, as_bytes):
    """A preexec_fn: the child's default thread stack is stack_bytes (glibc takes it from
    RLIMIT_STACK at start) and its address space at most as_bytes."""
    def apply():
        resource.setrlimit(resource.RLIMIT_STACK, (stack_bytes, resource.RLIM_INFINITY))
        resource.setrlimit(resource.RLIMIT_AS, (as_bytes, resource.RLIM_INFINITY))
    return apply


def vm_size_bytes(path, workers):
    """The address space of a running actor-server with 2 loops and this many workers."""
    srv = Server(path, "memory", seed=1, threads=2, args=["--workers", str(workers)]).start()
    try:
        with open("/proc/%d/status" % srv.proc.pid) as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    finally:
        srv.stop()
    return 0


def test_thread_failures(tap, path):
    """Thread creation failing at start-up: arch_init undoes what it made (workers that
    started are joined, actors and schedulers freed), the loops stop, exit 1 with the
    reason on stderr; never an abort (sched_free aborts on a scheduler left running) nor
    a hang."""
    with open(path, "rb") as f:
        image = f.read()
    names = ("no worker thread fits", "worker 0 starts, worker 1 does not",
             "no loop thread fits (--workers 0)")
    if b"__asan_init" in image or b"__tsan_init" in image:
        for name in names:
            tap.skip("thread failure: %s" % name, "a sanitizer runtime needs more address "
                     "space than RLIMIT_AS leaves")
        return
    gib = 1 << 30
    base = vm_size_bytes(path, 2)  # an upper bound of the process before its threads
    cases = (
        # every thread stack (8 GiB) is larger than the whole address space allowed
        (names[0], 2, limits(8 * gib, base + 4 * gib), "cannot start worker thread 0:"),
        # room for one 256 MiB stack and a half: the first worker starts, the second fails
        (names[1], 2, limits(gib // 4, base + (gib // 4) * 3 // 2),
         "cannot start worker thread 1:"),
        # the architecture has no thread of its own: the loops' threads fail
        (names[2], 0, limits(8 * gib, base + 4 * gib), "cannot start threads:"),
    )
    for name, workers, preexec, expect in cases:
        argv = [path, "--port", "0", "--threads", "2", "--workers", str(workers),
                "--store=memory", "--seed-users", "1"]
        t0 = time.monotonic()
        try:
            p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, preexec_fn=preexec, timeout=20)
            rc, err = p.returncode, p.stderr.decode("utf-8", "replace")
        except subprocess.TimeoutExpired as e:
            rc, err = None, (e.stderr or b"").decode("utf-8", "replace")
        dt = time.monotonic() - t0
        tap.ok(rc == 1 and expect in err and "listening on" not in err,
               "thread failure: %s: exit 1 with '%s' on stderr, never listening" %
               (name, expect), "rc %r after %.1f s\n%s" % (rc, dt, err))


def main():
    tap = Tap()
    path = os.environ.get("SERVER", os.path.join(BUILD, "actor-server"))
    if os.path.basename(path) != "actor-server" or not os.access(path, os.X_OK):
        tap.skip("actor-server: all tests", "%s absent or not the actor server" % path)
        tap.finish()
    t0 = time.monotonic()
    for workers in (0, 1):
        label = "threads 2 workers %d" % workers
        test_serving(tap, label, path, "memory", 2, workers)
        test_overload(tap, label + " sqlite", path, workers)
    # Real parallelism (issue 16): 4 I/O loops and 2 workers, so requests cross threads on
    # every hop (loop -> worker i mod 2 -> the store on worker 0 -> back); and 4 loops with
    # the actors on the loops (loops 1-3 hop to the store on loop 0). Pipelined order,
    # read-your-writes, distinct ids, SIGTERM under load; the 503 path at 4 x 2.
    for store, workers in (("memory", 2), ("sqlite", 0)):
        label = "threads 4 workers %d %s" % (workers, store)
        t1 = time.monotonic()
        test_serving(tap, label, path, store, 4, workers)
        tap.note("%s took %.1f s" % (label, time.monotonic() - t1))
    t1 = time.monotonic()
    test_overload(tap, "threads 4 workers 2 sqlite", path, 2, threads=4)
    tap.note("threads 4 workers 2 overload took %.1f s" % (time.monotonic() - t1))
    # Group commit, the store actor's opt-in: POSTs that arrive together share one
    # transaction; every 201 is still committed, distinct and readable.
    label = "threads 2 workers 0 sqlite group-commit 64"
    srv = Server(path, "sqlite", seed=SEED, threads=2,
                 args=["--workers", "0", "--group-commit", "64"]).start()
    try:
        line = startup_line(srv)
        tap.ok("group_commit=64" in line, "%s: printed in the start-up line" % label, line)
        test_concurrent_posts(tap, label, srv)
    finally:
        srv.kill()
    test_overload(tap, "threads 2 workers 0 group-commit 64 sqlite", path, 0,
                  ["--group-commit", "64"])
    test_group_commit_flag(tap, path)
    test_thread_failures(tap, path)
    tap.note("it_actor took %.1f s" % (time.monotonic() - t0))
    tap.finish()


if __name__ == "__main__":
    main()
