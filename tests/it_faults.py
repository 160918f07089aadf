#!/usr/bin/env python3
# it_faults: faults, slow clients and overload against each server ($SERVER, or
# $BUILD/async-server and $BUILD/actor-server): slowloris, body and idle timeouts, a
# steady pipeline across the header timeout, a store locked by another process (503
# within the store timeout, /ping and SIGTERM not held), a second SIGTERM, a port another
# process holds, the command line, a low fd limit, thousands of RST disconnects (fds/RSS
# flat, no sanitizer report: run with BUILD=build-address for ASan+UBSan), SIGTERM under
# load, kill -9 durability of the SQLite store, and 10x overload (200/201/503+Retry-After
# only, no hang, RSS plateau).
# TAP on stdout. Env: FAULTS_ONLY (substring of a test name), FAULTS_LONG=1 (longer soaks),
# FAULTS_DISCONNECT_ROUNDS, FAULTS_KILL_ROUNDS, FAULTS_OVERLOAD_S, FAULTS_OVERLOAD_WARM_S.
import collections
import json
import os
import random
import resource
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reliability_lib import (BEARER, BUILD, Reader, Server, Tap, connect, get,  # noqa: E402
                             healthy, nofile_shortfall, post, request, server_binaries)

LONG = os.environ.get("FAULTS_LONG") == "1"
ONLY = os.environ.get("FAULTS_ONLY", "")
DISCONNECT_ROUNDS = int(os.environ.get("FAULTS_DISCONNECT_ROUNDS", "20000" if LONG else "3000"))
KILL_ROUNDS = int(os.environ.get("FAULTS_KILL_ROUNDS", "40" if LONG else "10"))
OVERLOAD_S = float(os.environ.get("FAULTS_OVERLOAD_S", "30" if LONG else "5"))
OVERLOAD_WARM_S = float(os.environ.get("FAULTS_OVERLOAD_WARM_S", "5"))
HEADER_TIMEOUT_MS = 2000
BODY_TIMEOUT_MS = 2000
IDLE_TIMEOUT_MS = 3000
SWEEP_SLACK_S = 1.0  # the server checks deadlines every 250 ms; scheduling noise on top
PING = b"GET /ping HTTP/1.1\r\nHost: t\r\n\r\n"

# Under ASan the quarantine would make RSS grow by design; keep it small so the RSS checks
# still mean something, and keep leak detection on.
os.environ.setdefault("ASAN_OPTIONS", "quarantine_size_mb=16:detect_leaks=1")
os.environ.setdefault("UBSAN_OPTIONS", "print_stacktrace=1")


def start_with_timeouts(path, store="memory", **kw):
    """Starts with short header, body and idle timeouts (documented flags of both servers:
    a server that refuses them fails here, it is never tested at the defaults instead).
    Returns (server, header_timeout_s, idle_timeout_s); the body timeout is
    BODY_TIMEOUT_MS."""
    args = list(kw.pop("args", []))
    srv = Server(path, store, args=args + ["--header-timeout-ms", str(HEADER_TIMEOUT_MS),
                                            "--body-timeout-ms", str(BODY_TIMEOUT_MS),
                                            "--idle-timeout-ms", str(IDLE_TIMEOUT_MS)],
                 **kw).start()
    return srv, HEADER_TIMEOUT_MS / 1000.0, IDLE_TIMEOUT_MS / 1000.0


def finish_server(tap, label, srv):
    rc = srv.stop()
    tap.ok(rc == 0, "%s: exits 0 on SIGTERM" % label, "rc=%s\n%s" % (rc, "\n".join(srv.log[-15:])))
    reports = srv.sanitizer_reports()
    tap.ok(not reports, "%s: no sanitizer reports" % label, "\n".join(srv.log[-40:]))


class PingProbe(threading.Thread):
    """A fresh client every 100 ms asking /ping; records failures and the worst latency."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port = port
        self.stop_ev = threading.Event()
        self.fails = []
        self.worst_s = 0.0
        self.count = 0

    def run(self):
        while not self.stop_ev.is_set():
            t0 = time.monotonic()
            try:
                s = connect(self.port, 2.0)
                s.sendall(PING)
                resp = Reader(s).response()
                s.close()
                if resp.status != 200:
                    self.fails.append("status %d" % resp.status)
            except (OSError, EOFError, ValueError) as e:
                self.fails.append(repr(e))
            self.worst_s = max(self.worst_s, time.monotonic() - t0)
            self.count += 1
            self.stop_ev.wait(0.1)

    def finish(self):
        self.stop_ev.set()
        self.join(5)


# ---- slowloris and idle timeouts ----

def wait_closed(sock, deadline_s):
    """Reads until EOF/RST; returns (seconds waited, bytes read, how) or None at deadline."""
    t0 = time.monotonic()
    data = b""
    sock.setblocking(False)
    while time.monotonic() - t0 < deadline_s:
        r, _, _ = select.select([sock], [], [], 0.05)
        if not r:
            continue
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return time.monotonic() - t0, data, "reset"
        except BlockingIOError:
            continue
        if not chunk:
            return time.monotonic() - t0, data, "eof"
        data += chunk
    return None


def test_slowloris(tap, label, path):
    srv, hdr_s, idle_s = start_with_timeouts(path)
    try:
        probe = PingProbe(srv.port)
        probe.start()
        n = 40
        socks = []
        for _ in range(n):
            s = connect(srv.port)
            s.sendall(b"GET /ping HTTP/1.1\r\nHost: t\r\nX-Slow: ")
            socks.append(s)
        # the body deadline is progress-based (nginx's client_body_timeout): a body that
        # keeps coming, however slowly, is not cut; one that stops is, with 408
        body = b'{"name":"slowbody","email":"slow@example.com"}'
        body_head = (b"POST /users HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " +
                     BEARER.encode() + b"\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body))
        slow_body = connect(srv.port)
        slow_body.sendall(body_head + body[:1])
        slow_sent = 1
        stalled_body = connect(srv.port)
        stalled_body.sendall(body_head + body[:1])
        t0 = time.monotonic()
        closed_at = {}
        got408 = 0
        step_s = 0.5 if hdr_s < 5 else 1.0
        next_send = t0 + step_s
        limit_s = hdr_s + SWEEP_SLACK_S + 1.0
        everyone = socks + [stalled_body]
        for s in everyone + [slow_body]:
            s.setblocking(False)
        bufs = {s: b"" for s in everyone + [slow_body]}
        while len(closed_at) < len(everyone) and time.monotonic() - t0 < limit_s:
            now = time.monotonic()
            if now >= next_send:
                next_send += step_s
                for s in socks:
                    if s not in closed_at:
                        try:
                            s.send(b"a")  # one more header byte
                        except OSError:
                            pass
                if slow_sent < len(body) - 1:
                    try:
                        slow_body.send(body[slow_sent:slow_sent + 1])  # one more body byte
                        slow_sent += 1
                    except OSError:
                        pass
            live = [s for s in everyone if s not in closed_at]
            r, _, _ = select.select(live, [], [], 0.05)
            for s in r:
                try:
                    chunk = s.recv(65536)
                except BlockingIOError:
                    continue
                except ConnectionResetError:
                    chunk = b""
                if chunk:
                    bufs[s] += chunk
                else:
                    closed_at[s] = time.monotonic() - t0
        for s in everyone:
            if bufs[s].startswith(b"HTTP/1.1 408"):
                got408 += 1
        early = [t for t in closed_at.values() if t < hdr_s * 0.9]
        times = sorted(closed_at.values())
        tap.ok(len(closed_at) == len(everyone) and not early,
               "%s: %d slowloris clients (1 header byte / %.1f s) closed at the %.0f s header "
               "timeout" % (label, n, step_s, hdr_s),
               "closed %d of %d; times %s; early %s" % (len(closed_at), len(everyone),
                                                        times[:3] + times[-3:], early))
        tap.ok(stalled_body in closed_at and closed_at[stalled_body] >= hdr_s * 0.9,
               "%s: a body that stops is closed at the body timeout" % label,
               "closed at %s" % closed_at.get(stalled_body))
        tap.ok(got408 == len(everyone), "%s: timed-out clients get 408 before the close" % label,
               "%d of %d got 408" % (got408, len(everyone)))
        # the slow but steady body was never cut: the rest of it gets its 201
        outcome = "cut"
        try:
            extra = slow_body.recv(65536)
            outcome = "closed" if not extra else "answered early: %r" % extra[:60]
        except BlockingIOError:
            slow_body.setblocking(True)
            slow_body.settimeout(5)
            try:
                slow_body.sendall(body[slow_sent:])
                resp = Reader(slow_body).response()
                outcome = "status %d" % resp.status
            except (OSError, EOFError, ValueError) as e:
                outcome = repr(e)
        except OSError as e:
            outcome = repr(e)
        tap.ok(outcome == "status 201",
               "%s: a slow but steady body (1 byte / %.1f s for %.1f s, past the %.0f s "
               "header and body timeouts) is not cut, then answered 201" %
               (label, step_s, time.monotonic() - t0, hdr_s), outcome)
        for s in everyone + [slow_body]:
            s.close()
        a = connect(srv.port)
        a.sendall(PING)
        Reader(a).response()
        b = connect(srv.port)  # connected, never sends
        t0 = time.monotonic()
        ra = wait_closed(a, idle_s + SWEEP_SLACK_S + 1.5)
        rb = wait_closed(b, max(0.1, idle_s + SWEEP_SLACK_S + 1.5 - (time.monotonic() - t0)))
        tb = time.monotonic() - t0
        tap.ok(ra is not None and idle_s * 0.9 <= ra[0] <= idle_s + SWEEP_SLACK_S and
               ra[2] == "eof",
               "%s: idle keep-alive connection closed (FIN) at the %.0f s idle timeout" %
               (label, idle_s), "result %r" % (ra,))
        tap.ok(rb is not None and tb <= idle_s + SWEEP_SLACK_S + 0.5,
               "%s: silent new connection closed at the idle timeout" % label,
               "result %r after %.2f s" % (rb, tb))
        a.close()
        b.close()
        probe.finish()
        tap.ok(not probe.fails and probe.worst_s < 1.0 and probe.count > 10,
               "%s: other clients served meanwhile (%d pings, worst %.0f ms)" %
               (label, probe.count, probe.worst_s * 1000),
               "failures %r" % probe.fails[:5])
    finally:
        finish_server(tap, label + " slowloris", srv)


# ---- a steady pipeline across the header deadline ----

def test_stream(tap, label, path):
    """Pipelines GET /ping for twice the header timeout, one write every 50 ms, each write
    ending inside a request: every request's header block is quick, so none may get 408
    (the old servers armed the header deadline once, at the first partial read, and cut
    the stream after the timeout, losing what was in flight)."""
    srv, hdr_s, idle_s = start_with_timeouts(path)
    try:
        s = connect(srv.port)
        s.setblocking(False)
        writes = int(hdr_s * 2 / 0.05)
        stream = PING * (writes + 1)
        sent, got, t0 = 0, b"", time.monotonic()
        next_send = t0
        closed = False
        for k in range(writes):
            end = len(PING) // 2 + k * len(PING)  # in the middle of request k
            while time.monotonic() < next_send:
                r, _, _ = select.select([s], [], [], max(0.0, next_send - time.monotonic()))
                if r:
                    try:
                        chunk = s.recv(65536)
                    except (BlockingIOError, ConnectionResetError):
                        chunk = b""
                    if not chunk:
                        closed = True
                        break
                    got += chunk
            if closed:
                break
            next_send += 0.05
            try:
                sent += s.send(stream[sent:end])
            except BlockingIOError:
                pass
        complete = sent // len(PING)
        s.setblocking(True)
        s.settimeout(5)
        deadline = time.monotonic() + 5
        while not closed and got.count(b"HTTP/1.1 ") < complete and time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            got += chunk
        answers = got.count(b"HTTP/1.1 200 ")
        took = time.monotonic() - t0
        tap.ok(got.count(b"HTTP/1.1 408") == 0 and not closed and answers == complete and
               took > hdr_s * 1.5,
               "%s: %d pipelined requests over %.1f s, every write ending inside one, past the "
               "%.0f s header timeout: all answered, no 408" % (label, complete, took, hdr_s),
               "%d of %d answered; 408s %d; closed %s" %
               (answers, complete, got.count(b"HTTP/1.1 408"), closed))
        s.close()
    finally:
        finish_server(tap, label + " stream", srv)


# ---- a store that does not answer ----

LOCKED_POST = post(b'{"name":"locked","email":"l@example.com"}')


def posts_under_lock(port, n_conns, per_conn):
    """n_conns clients each pipelining per_conn POSTs; returns [(seconds, [statuses],
    [retry-after values]) or repr(error)]."""
    out = []

    def one():
        try:
            s = connect(port, 10)
            t0 = time.monotonic()
            s.sendall(LOCKED_POST * per_conn)
            r = Reader(s)
            resps = [r.response() for _ in range(per_conn)]
            out.append((time.monotonic() - t0, [x.status for x in resps],
                        [x.headers.get("retry-after") for x in resps]))
            s.close()
        except (OSError, EOFError, ValueError) as e:
            out.append(repr(e))
    threads = [threading.Thread(target=one, daemon=True) for _ in range(n_conns)]
    for t in threads:
        t.start()
    return threads, out


def ping_s(port):
    """Seconds a fresh client waits for GET /ping 200 (None when it failed)."""
    t0 = time.monotonic()
    try:
        resp, r = request(port, PING, timeout_s=10)
        r.sock.close()
        return time.monotonic() - t0 if resp.status == 200 else None
    except (OSError, AttributeError):
        return None


def test_stuck_store(tap, label, path):
    """Another process holds the SQLite write lock (a sqlite3 shell in a transaction):
    POSTs are answered 503 + Retry-After within the store timeout (250 ms by default)
    instead of waiting 5 s per statement; requests that do not need the store (/ping) wait
    at most about one store timeout; SIGTERM with POSTs stuck still exits 0 within 2 s;
    once the lock is gone POSTs succeed again. The old servers took 19.9 s for a /ping and
    14.8 s to stop."""
    import sqlite3
    work = tempfile.mkdtemp(prefix="it-stuck-")
    db = os.path.join(work, "stuck.db")
    srv = Server(path, "sqlite", db=db, workdir=work, seed=100).start()
    holder = None
    try:
        holder = sqlite3.connect(db, isolation_level=None, timeout=5)
        holder.execute("BEGIN IMMEDIATE")
        # SIGTERM while the first POSTs wait for the lock (a fresh server: nothing has
        # timed out yet, so the first call really waits its full timeout)
        threads, out = posts_under_lock(srv.port, 4, 2)
        time.sleep(0.05)
        t0 = time.monotonic()
        srv.signal(signal.SIGTERM)
        rc = srv.wait(20)
        took = time.monotonic() - t0
        tap.ok(rc == 0 and took < 2.0,
               "%s: SIGTERM with POSTs waiting on a locked store: exit 0 in %.2f s" %
               (label, took), "rc %r\n%s" % (rc, "\n".join(srv.log[-8:])))
        for t in threads:
            t.join(5)
        srv = Server(path, "sqlite", db=db, workdir=work, seed=100).start()
        threads, out = posts_under_lock(srv.port, 8, 3)
        time.sleep(0.05)
        pings = [ping_s(srv.port) for _ in range(5)]
        for t in threads:
            t.join(20)
        bad = [o for o in out if isinstance(o, str) or set(o[1]) != {503} or
               set(o[2]) != {"1"}]
        worst = max((o[0] for o in out if not isinstance(o, str)), default=None)
        tap.ok(len(out) == 8 and not bad and worst is not None and worst < 2.0,
               "%s: 24 POSTs under a write lock held by another process: all 503 with "
               "Retry-After: 1 within %.2f s" % (label, worst or -1), "%r" % (bad or out)[:3])
        tap.ok(None not in pings and max(pings) < 1.0,
               "%s: /ping meanwhile answered within one store timeout plus slack (worst "
               "%.0f ms)" % (label, 1000 * max(p or 99 for p in pings)), "%r" % pings)
        holder.execute("ROLLBACK")
        resp, r = request(srv.port, LOCKED_POST)
        r.sock.close()
        tap.ok(getattr(resp, "status", None) == 201,
               "%s: the lock released, a POST is stored (201)" % label, repr(resp))
    finally:
        if holder is not None:
            holder.close()
        finish_server(tap, label + " stuck store", srv)


# ---- signals ----

def test_second_signal(tap, label, path):
    """The graceful stop waits for a connection with a request half sent (up to the 1.5 s
    stop timeout); a second SIGTERM meanwhile exits at once with 128 + 15 (the old
    servers ignored it)."""
    srv = Server(path, "memory").start()
    s = connect(srv.port)
    s.sendall(b"GET /ping HTTP/1.1\r\nHo")
    time.sleep(0.1)
    srv.signal(signal.SIGTERM)
    time.sleep(0.2)
    t0 = time.monotonic()
    srv.signal(signal.SIGTERM)
    rc = srv.wait(3)
    took = time.monotonic() - t0
    if rc is None:
        srv.kill()
    s.close()
    tap.ok(rc == 128 + signal.SIGTERM and took < 0.5,
           "%s: a second SIGTERM during the stop exits at once with %d (%.0f ms)" %
           (label, 128 + signal.SIGTERM, took * 1000), "rc %r\n%s" % (rc, "\n".join(srv.log[-5:])))


# ---- the port ----

def test_port_in_use(tap, label, path):
    """A server refuses a port on which another process listens, SO_REUSEPORT or not
    (exit 1, one line on stderr); the first server keeps all the traffic. The old servers
    joined the first one's SO_REUSEPORT group silently and took half of its requests."""
    first = Server(path, "memory").start()
    try:
        for who, port in (("a running server", first.port), ("a foreign SO_REUSEPORT listener",
                                                               None)):
            foreign = None
            if port is None:
                foreign = socket.socket()
                foreign.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
                foreign.bind(("127.0.0.1", 0))
                foreign.listen(8)
                port = foreign.getsockname()[1]
            p = subprocess.run([path, "--port", str(port), "--threads", "2"],
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
            err = p.stderr.decode("utf-8", "replace").strip().splitlines()
            tap.ok(p.returncode == 1 and len(err) == 1 and "already in use" in err[0],
                   "%s: a port held by %s is refused: exit 1, one line" % (label, who),
                   "rc %r: %r" % (p.returncode, err[:3]))
            if foreign is not None:
                foreign.close()
        seen = [ping_s(first.port) for _ in range(12)]
        tap.ok(None not in seen, "%s: the first server still answers every request" % label,
               "%r" % seen)
    finally:
        finish_server(tap, label + " port", first)


def test_cli(tap, label, path):
    """--version names the program, the commit it was built from and the libraries; -h is
    the help; a usage error is two lines, exit 2."""
    p = subprocess.run([path, "--version"], capture_output=True, timeout=10)
    out = p.stdout.decode("utf-8", "replace")
    tap.ok(p.returncode == 0 and out.startswith(os.path.basename(path) + " ") and
           "libuv " in out and "llhttp " in out and "sqlite " in out and out.count("\n") == 1,
           "%s: --version is one line: program, commit, libuv, llhttp, sqlite" % label, out)
    p = subprocess.run([path, "-h"], capture_output=True, timeout=10)
    tap.ok(p.returncode == 0 and b"--store-timeout-ms" in p.stdout,
           "%s: -h prints the help (with the timeouts), exit 0" % label)
    p = subprocess.run([path, "--threads="], capture_output=True, timeout=10)
    err = p.stderr.decode("utf-8", "replace").splitlines()
    tap.ok(p.returncode == 2 and len(err) == 2 and "--threads" in err[0] and "--help" in err[1],
           "%s: an empty value is a usage error in two lines, exit 2" % label, "%r" % err)


# ---- file descriptors ----

def test_fd_limit(tap, label, path):
    limit = 64
    short = nofile_shortfall(4 * limit + 32, "the fd-limit test's %d clients" % (4 * limit))
    if short is not None:
        tap.note("%s: %s" % (label, short))
        tap.skip("%s: ulimit -n %d: no crash, no busy loop, service and fds back" %
                 (label, limit), "open-file limit too low")
        return

    def lower():
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    srv = Server(path, "memory", preexec_fn=lower).start()
    try:
        base_fds = srv.fd_count()
        clients = []
        for i in range(4 * limit):
            try:
                s = socket.create_connection(("127.0.0.1", srv.port), timeout=2)
                if i % 2 == 0:
                    s.sendall(PING)
                clients.append(s)
            except OSError:
                pass
        time.sleep(0.5)
        cpu0 = srv.cpu_s()
        time.sleep(2.0)
        cpu_idle = srv.cpu_s() - cpu0
        alive = srv.alive()
        tap.ok(alive, "%s: ulimit -n %d with %d clients: no crash" % (label, limit, len(clients)),
               "\n".join(srv.log[-20:]))
        tap.ok(cpu_idle < 0.2, "%s: no busy loop at the fd limit (CPU %.2f s over 2 s idle)" %
               (label, cpu_idle))
        for s in clients:
            s.close()
        bad = "not tried"
        t0 = time.monotonic()
        while time.monotonic() - t0 < 5:
            bad = healthy(srv.port) if srv.alive() else "server died"
            if bad is None:
                break
            time.sleep(0.2)
        tap.ok(bad is None, "%s: normal service once the clients leave (after %.1f s)" %
               (label, time.monotonic() - t0), bad)
        time.sleep(0.3)
        fds = srv.fd_count()
        tap.ok(fds <= base_fds + 2, "%s: fds back to the baseline (%d, baseline %d)" %
               (label, fds, base_fds))
    finally:
        finish_server(tap, label + " fd-limit", srv)


# ---- --max-conns ----

def test_max_conns(tap, label, path):
    limit = 8
    srv = Server(path, "memory", args=["--max-conns", str(limit)]).start()
    try:
        held = []
        for _ in range(limit):
            s = connect(srv.port)
            s.sendall(PING)
            Reader(s).response()  # accepted and served
            held.append(s)
        extra = connect(srv.port)
        r = Reader(extra)
        try:
            extra.sendall(PING)
            resp = r.response()
            outcome = "status %d" % resp.status
            ok = resp.status == 503
        except (OSError, EOFError, ValueError) as e:
            outcome = type(e).__name__
            ok = isinstance(e, (EOFError, ConnectionResetError))
        tap.ok(ok, "%s: connection %d over --max-conns %d is closed or gets 503 (%s)" %
               (label, limit + 1, limit, outcome))
        extra.close()
        held.pop().close()
        time.sleep(0.3)
        tap.ok(healthy(srv.port) is None, "%s: a slot freed under --max-conns serves again" % label)
        for s in held:
            s.close()
    finally:
        finish_server(tap, label + " max-conns", srv)


# ---- RST disconnects ----

def rst_close(s):
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def disconnect_worker(port, rounds, seed, errors):
    rnd = random.Random(seed)
    body = b'{"name":"rst","email":"rst@example.com"}'
    full = post(body)
    for i in range(rounds):
        kind = i % 4
        try:
            s = connect(port, 5)
            if kind == 0:
                s.sendall(full)                       # whole POST, then reset at once
            elif kind == 1:
                s.sendall(full[:rnd.randrange(1, len(full))])  # part of it
            elif kind == 2:
                s.sendall(get(b"/users?limit=100") * 16)  # server busy writing
            else:
                s.sendall(full)                       # answered, then reset
                Reader(s).response()
            rst_close(s)
        except (OSError, EOFError, ValueError) as e:
            errors.append(repr(e))
            if len(errors) > 20:
                return


def test_disconnects(tap, label, path, store):
    srv = Server(path, store).start()
    try:
        threads = 4
        per = max(1, DISCONNECT_ROUNDS // threads)
        errors = []

        def run(rounds, seed):
            ts = [threading.Thread(target=disconnect_worker, args=(srv.port, rounds, seed + k,
                                                                     errors)) for k in range(threads)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()

        # warm-up as long as the measured part: pools, buffers and, under ASan, its 16 MB
        # quarantine of freed memory reach their size before the baseline is read
        run(per, 1)
        time.sleep(0.3)
        fds0, rss0 = srv.fd_count(), srv.rss_kb()
        t0 = time.monotonic()
        run(per, 100)
        secs = time.monotonic() - t0
        time.sleep(0.5)
        fds1, rss1 = srv.fd_count(), srv.rss_kb()
        tap.ok(srv.alive() and not errors,
               "%s/%s: %d SO_LINGER-0 resets after POSTs (%.1f s)" %
               (label, store, per * threads, secs), "errors %r\n%s" % (errors[:5], "\n".join(srv.log[-20:])))
        tap.ok(fds1 <= fds0 + 2, "%s/%s: open fds flat (%d -> %d)" % (label, store, fds0, fds1))
        grow_kb = rss1 - rss0
        tap.ok(grow_kb <= max(8192, rss0 // 10),
               "%s/%s: RSS flat (%d -> %d KiB)" % (label, store, rss0, rss1))
        tap.ok(healthy(srv.port) is None, "%s/%s: serves normally afterwards" % (label, store))
    finally:
        finish_server(tap, "%s/%s disconnects" % (label, store), srv)


# ---- a client that sends but never reads ----

def test_no_read(tap, label, path):
    """Pipelines GET /users?limit=100 (about 7 KiB per response) for 3 s and never reads:
    the server must apply backpressure (stop reading that connection) instead of queueing
    responses without bound."""
    srv = Server(path, "memory", seed=1000).start()
    try:
        rss0 = srv.rss_kb()
        s = connect(srv.port)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.settimeout(0.2)
        burst = get(b"/users?limit=100") * 500
        sent, peak = 0, rss0
        t0 = time.monotonic()
        while time.monotonic() - t0 < 3.0 and peak - rss0 < 256 * 1024:
            try:
                sent += s.send(burst)
            except socket.timeout:
                pass
            except OSError:
                break
            peak = max(peak, srv.rss_kb())
        tap.ok(peak - rss0 < 64 * 1024,
               "%s: a client that never reads its responses does not grow the server "
               "(RSS %d -> %d KiB after %.1f MB of requests)" % (label, rss0, peak, sent / 1e6),
               "unbounded output queue: no backpressure on the output queue")
        rst_close(s)
        tap.ok(healthy(srv.port) is None, "%s: serves others after the non-reading client" % label)
        # backpressure must not lose or stall anything: a reader that starts late (and
        # pauses now and then) gets every pipelined response, in order
        n = 3000
        s = connect(srv.port, 10)
        sender = threading.Thread(target=s.sendall, args=(b"".join(
            get(b"/users?limit=100&after=%d" % (i % 900)) for i in range(n)),), daemon=True)
        sender.start()
        time.sleep(1.0)
        r = Reader(s)
        got, problem = 0, None
        try:
            for i in range(n):
                resp = r.response()
                if resp.status != 200 or not resp.body.startswith(
                        b'{"users":[{"id":%d,' % (i % 900 + 1)):
                    problem = "response %d: %r" % (i, resp)
                    break
                got += 1
                if i % 500 == 0:
                    time.sleep(0.2)
        except (OSError, EOFError, ValueError) as e:
            problem = "after %d responses: %r" % (got, e)
        sender.join(5)
        s.close()
        tap.ok(problem is None, "%s: a late, pausing reader gets all %d pipelined responses in "
               "order (no stall)" % (label, n), problem)
    finally:
        finish_server(tap, label + " no-read", srv)


# ---- SIGTERM under load ----

class LoadClient(threading.Thread):
    """Keep-alive closed loop of GET /users/N and POST /users until the connection ends.
    Classifies how it ended."""

    def __init__(self, port, k):
        super().__init__(daemon=True)
        self.port, self.k = port, k
        self.ok = 0
        self.bad = []
        self.partial = 0
        self.unanswered = 0  # closed with no response byte: the idle-close race

    def run(self):
        try:
            s = connect(self.port, 5)
        except OSError:
            return
        r = Reader(s)
        i = 0
        while True:
            i += 1
            raw = (post(b'{"name":"t%d-%d","email":"t@e"}' % (self.k, i)) if i % 5 == 0
                   else get(b"/users/%d" % (i % 100 + 1)))
            try:
                s.sendall(raw)
                resp = r.response()
            except (EOFError, ConnectionResetError, BrokenPipeError):
                if r.buf:
                    self.partial += 1
                else:
                    self.unanswered += 1
                break
            except (OSError, ValueError) as e:
                self.bad.append(repr(e))
                break
            if resp.status in (200, 201):
                self.ok += 1
            elif resp.status == 503 and resp.headers.get("retry-after") == "1":
                self.ok += 1
            else:
                self.bad.append(resp.status)
            if resp.headers.get("connection", "").lower() == "close":
                break
        s.close()


def test_sigterm(tap, label, path, store):
    label = "%s/%s" % (label, store)
    work = tempfile.mkdtemp(prefix="it-term-")
    access_log = os.path.join(work, "access.log")
    srv = Server(path, store, workdir=work, args=["--access-log", access_log]).start()
    clients = [LoadClient(srv.port, k) for k in range(6)]
    for c in clients:
        c.start()
    time.sleep(1.0)
    # in flight: requests whose last bytes arrive after the signal
    body = b'{"name":"inflight","email":"i@example.com"}'
    raw = post(body)
    inflight = []
    for cut in (len(raw) - 5, len(raw) - 1):
        s = connect(srv.port)
        s.sendall(raw[:cut])
        inflight.append((s, raw[cut:]))
    time.sleep(0.1)
    t0 = time.monotonic()
    srv.signal(signal.SIGTERM)
    refused_after = None
    while time.monotonic() - t0 < 1.0:
        try:
            c = socket.create_connection(("127.0.0.1", srv.port), timeout=0.2)
            c.close()
        except ConnectionRefusedError:
            refused_after = time.monotonic() - t0
            break
        except OSError:
            pass
        time.sleep(0.01)
    time.sleep(max(0.0, 0.25 - (time.monotonic() - t0)))
    answered = []
    for s, rest in inflight:
        try:
            s.sendall(rest)
            resp = Reader(s).response()
            answered.append(resp.status)
        except (OSError, EOFError, ValueError) as e:
            answered.append(repr(e))
        s.close()
    rc = srv.wait(max(0.0, 2.0 - (time.monotonic() - t0)))
    exit_s = time.monotonic() - t0
    if rc is None:
        srv.kill()
    for c in clients:
        c.join(5)
    tap.ok(refused_after is not None and refused_after < 0.5,
           "%s: listener closed at once after SIGTERM (refused after %s s)" %
           (label, "%.3f" % refused_after if refused_after is not None else "never"))
    tap.ok(answered == [201, 201], "%s: requests in flight at SIGTERM answered" % label,
           "got %r" % answered)
    tap.ok(rc == 0 and exit_s <= 2.0, "%s: exit 0 within 2 s of SIGTERM under load" % label,
           "rc=%s after %.2f s\n%s" % (rc, exit_s, "\n".join(srv.log[-10:])))
    ok = sum(c.ok for c in clients)
    bad = [b for c in clients for b in c.bad]
    partial = sum(c.partial for c in clients)
    unanswered = sum(c.unanswered for c in clients)
    tap.ok(ok > 100 and not bad and partial == 0,
           "%s: load clients saw only complete valid responses (%d ok, %d closed while idle)" %
           (label, ok, unanswered), "bad %r partial %d" % (bad[:5], partial))
    # every /users request the server answered is in the access log after the stop
    with open(access_log, "rb") as f:
        lines = f.read().count(b"\n")
    answered = ok + len([a for a in answered if a == 201])
    tap.ok(answered <= lines <= answered + unanswered,
           "%s: access log flushed at stop (%d lines, %d responses received)" %
           (label, lines, answered))
    reports = srv.sanitizer_reports()
    tap.ok(not reports, "%s sigterm: no sanitizer reports" % label, "\n".join(reports))


# ---- kill -9 durability (sqlite) ----

class Poster(threading.Thread):
    def __init__(self, port, rnd_i, k, acked, lock):
        super().__init__(daemon=True)
        self.port, self.rnd_i, self.acked, self.lock = port, rnd_i, acked, lock
        self.tag = "r%d-t%d" % (rnd_i, k)
        self.bad = []

    def run(self):
        i = 0
        while True:
            try:
                s = connect(self.port, 5)
            except OSError:
                return
            r = Reader(s)
            try:
                while True:
                    i += 1
                    name = "%s-%d" % (self.tag, i)
                    email = "%s@k.example" % name
                    s.sendall(post(('{"name":"%s","email":"%s"}' % (name, email)).encode()))
                    resp = r.response()
                    if resp.status == 201:
                        doc = json.loads(resp.body)
                        with self.lock:
                            self.acked.append((doc["id"], name, email, doc, self.rnd_i,
                                               time.monotonic()))
                    elif resp.status != 503:
                        self.bad.append(resp.status)
            except (OSError, EOFError, ValueError):
                s.close()
                return  # killed


def sqlite_check(db):
    r = subprocess.run(["sqlite3", db, "PRAGMA integrity_check;"], capture_output=True,
                       text=True, timeout=30)
    return r.stdout.strip() + r.stderr.strip()


def test_durability(tap, label, path):
    work = tempfile.mkdtemp(prefix="it-dur-")
    db = os.path.join(work, "dur.db")
    acked, lock = [], threading.Lock()
    rnd = random.Random(7)
    integrity = []
    bad = []
    for rnd_i in range(KILL_ROUNDS):
        srv = Server(path, "sqlite", db=db, workdir=work, seed=100).start()
        posters = [Poster(srv.port, rnd_i, k, acked, lock) for k in range(3)]
        for p in posters:
            p.start()
        time.sleep(rnd.uniform(0.2, 0.9))
        srv.kill()  # SIGKILL at a random moment under POST load
        for p in posters:
            p.join(5)
            bad += p.bad
        integrity.append(sqlite_check(db))
    tap.ok(all(x == "ok" for x in integrity),
           "%s: PRAGMA integrity_check ok after each of %d kill -9 rounds" % (label, KILL_ROUNDS),
           "results %r" % integrity)
    ids = [a[0] for a in acked]
    tap.ok(len(ids) == len(set(ids)) and len(ids) > KILL_ROUNDS,
           "%s: %d acknowledged POSTs have unique ids" % (label, len(ids)),
           "duplicates %r" % [i for i, n in collections.Counter(ids).items() if n > 1][:10])
    # Read back through the server: every ack of the last 100 ms before each kill (the
    # writes most at risk) plus a random sample; the rest through the sqlite3 CLI.
    by_round = {}
    for a in acked:
        by_round.setdefault(a[4], []).append(a)
    via_server = []
    for rows in by_round.values():
        last_t = rows[-1][5]
        via_server += [a for a in rows if a[5] >= last_t - 0.1]
    via_server += rnd.sample(acked, min(len(acked), 2000))
    srv = Server(path, "sqlite", db=db, workdir=work, seed=100).start()
    missing = []
    try:
        s = connect(srv.port, 10)
        r = Reader(s)
        batch = 64
        for off in range(0, len(via_server), batch):
            part = via_server[off:off + batch]
            s.sendall(b"".join(get(b"/users/%d" % a[0]) for a in part))
            for uid, name, email, doc, _, _ in part:
                resp = r.response()
                if resp.status != 200 or json.loads(resp.body) != doc or doc["name"] != name \
                        or doc["email"] != email:
                    missing.append((uid, resp.status, resp.body[:80]))
        s.close()
    finally:
        finish_server(tap, label + " durability restart", srv)
    tap.ok(not missing and not bad,
           "%s: %d acknowledged POSTs (each round's last 100 ms + a sample) read back through "
           "the server with the same body" % (label, len(via_server)),
           "missing/different %d: %r; bad statuses %r" % (len(missing), missing[:5], bad[:5]))
    out = subprocess.run(["sqlite3", "-separator", "\t", db,
                          "SELECT id, name, email FROM users WHERE id > 100"],
                         capture_output=True, text=True, timeout=60).stdout
    rows = {}
    for line in out.splitlines():
        f = line.split("\t")
        rows[int(f[0])] = (f[1], f[2])
    lost = [a[0] for a in acked if rows.get(a[0]) != (a[1], a[2])]
    tap.ok(not lost, "%s: all %d acknowledged POSTs are in the database file" % (label, len(acked)),
           "lost or different: %r" % lost[:10])


# ---- overload ----

# Reads only: POSTs would grow the store and hide a leak in the RSS plateau check (the
# raw checker clients still POST a little).
READ_MIX = """header Authorization: Bearer ${BEARER}
80 GET /users/{rand:1:10000} - 200
20 GET /users?limit=10&after={rand:0:9990} - 200
"""


def run_loadgen(port, args, json_path, mix):
    cmd = [os.path.join(BUILD, "loadgen"), "--url", "http://127.0.0.1:%d" % port, "--mix", mix,
           "--bearer", BEARER, "--quiet", "--json", json_path] + args
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError("loadgen failed rc=%d: %s" % (r.returncode, r.stderr[-500:]))
    with open(json_path) as f:
        return json.load(f)


class Checker(threading.Thread):
    """Raw clients during overload: each response is 200/201, or 503 with Retry-After: 1;
    nothing takes longer than the client timeout."""

    def __init__(self, port, timeout_s):
        super().__init__(daemon=True)
        self.port, self.timeout_s = port, timeout_s
        self.stop_ev = threading.Event()
        self.problems = []
        self.n = 0
        self.n503 = 0

    def run(self):
        while not self.stop_ev.is_set():
            try:
                s = connect(self.port, self.timeout_s)
                r = Reader(s)
                for i in range(20):
                    s.sendall(get(b"/users/%d" % (i + 1)) if i % 4 else
                              post(b'{"name":"ov","email":"o@v"}'))
                    resp = r.response()
                    self.n += 1
                    if resp.status == 503:
                        self.n503 += 1
                        if resp.headers.get("retry-after") != "1":
                            self.problems.append("503 without Retry-After: 1")
                    elif resp.status not in (200, 201):
                        self.problems.append("status %d" % resp.status)
                    if resp.headers.get("connection", "").lower() == "close":
                        break
                s.close()
            except socket.timeout:
                self.problems.append("no response within %.0f s" % self.timeout_s)
            except (OSError, EOFError, ValueError) as e:
                self.problems.append(repr(e))


def test_overload(tap, label, path):
    if not os.access(os.path.join(BUILD, "loadgen"), os.X_OK):
        tap.skip("%s: overload" % label, "no %s/loadgen" % BUILD)
        return
    # the server holds the load generator's 512 connections (same limit as this process)
    short = nofile_shortfall(512 + 64, "the overload test's 512 connections")
    if short is not None:
        tap.note("%s: %s" % (label, short))
        tap.skip("%s: overload" % label, "open-file limit too low")
        return
    srv = Server(path, "memory", seed=10000).start()
    work = srv.workdir
    try:
        mix = os.path.join(work, "read.mix")
        with open(mix, "w") as f:
            f.write(READ_MIX)
        cap = run_loadgen(srv.port, ["--connections", "64", "--duration", "1500ms"],
                          os.path.join(work, "cap.json"), mix)
        capacity = max(1000.0, cap["achieved_rps"])
        rss = []
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                try:
                    rss.append(srv.rss_kb())
                except OSError:
                    return
                stop.wait(0.2)

        sampler = threading.Thread(target=sample, daemon=True)
        checker = Checker(srv.port, 5.0)
        sampler.start()
        checker.start()
        over = ["--rate", str(int(10 * capacity)), "--connections", "512", "--threads", "2",
                "--pipeline", "32", "--timeout", "5s"]
        # Warm-up at the same overload: pooled request objects keep the buffers they grew
        # (a list result array is ~20 KiB), so RSS rises towards its bound while the pool
        # fills; the plateau is judged on the run after it.
        warm = run_loadgen(srv.port, over + ["--duration", "%gs" % OVERLOAD_WARM_S],
                           os.path.join(work, "warm.json"), mix)
        rss_warm = list(rss)
        del rss[:]
        res = run_loadgen(srv.port, over + ["--duration", "%gs" % OVERLOAD_S],
                          os.path.join(work, "over.json"), mix)
        checker.stop_ev.set()
        checker.join(10)
        stop.set()
        sampler.join(2)
        statuses = set(res["status_counts"].keys()) | set(warm["status_counts"].keys())
        errs = {k: res["errors"][k] + warm["errors"][k] for k in res["errors"]}
        tap.note("%s overload: capacity %.0f req/s, offered %.0f req/s, achieved %.0f req/s, "
                 "statuses %s, errors %s, RSS samples (warm-up) %s then %s KiB" %
                 (label, capacity, 10 * capacity, res["achieved_rps"], res["status_counts"], errs,
                  rss_warm[::max(1, len(rss_warm) // 6)], rss[::max(1, len(rss) // 8)]))
        tap.ok(statuses <= {"200", "201", "503"} and srv.alive(),
               "%s: at 10x capacity every response is 200, 201 or 503" % label,
               "status counts %r %r" % (warm["status_counts"], res["status_counts"]))
        tap.ok(errs["timeout"] == 0 and errs["read"] == 0 and errs["parse"] == 0 and
               errs["write"] == 0 and errs["connect"] == 0,
               "%s: at 10x capacity none hangs past the 5 s client timeout, no errors" % label,
               "errors %r" % errs)
        tap.ok(not checker.problems and checker.n > 0,
               "%s: raw clients during overload: %d responses, %d 503 (all with Retry-After)" %
               (label, checker.n, checker.n503), "%r" % checker.problems[:5])
        third = max(1, len(rss) // 3)
        first, last = rss[:third], rss[2 * third:]
        ok = bool(first and last) and max(last) <= max(first) * 1.10 + 4096
        tap.ok(ok, "%s: RSS plateaus under overload (first third max %s, last third max %s KiB)" %
               (label, max(first) if first else "?", max(last) if last else "?"),
               "samples %r" % rss)
        tap.ok(healthy(srv.port) is None, "%s: serves normally after the overload" % label)
    finally:
        finish_server(tap, label + " overload", srv)


def main():
    tap = Tap()
    tests = [
        ("slowloris", lambda l, p: test_slowloris(tap, l, p)),
        ("stream", lambda l, p: test_stream(tap, l, p)),
        ("stuckstore", lambda l, p: test_stuck_store(tap, l, p)),
        ("secondsignal", lambda l, p: test_second_signal(tap, l, p)),
        ("port", lambda l, p: test_port_in_use(tap, l, p)),
        ("cli", lambda l, p: test_cli(tap, l, p)),
        ("fdlimit", lambda l, p: test_fd_limit(tap, l, p)),
        ("maxconns", lambda l, p: test_max_conns(tap, l, p)),
        ("disconnect", lambda l, p: [test_disconnects(tap, l, p, st) for st in ("memory", "sqlite")]),
        ("noread", lambda l, p: test_no_read(tap, l, p)),
        ("sigterm", lambda l, p: [test_sigterm(tap, l, p, st) for st in ("memory", "sqlite")]),
        ("durability", lambda l, p: test_durability(tap, l, p)),
        ("overload", lambda l, p: test_overload(tap, l, p)),
    ]
    for name, path in server_binaries(tap):
        for tname, fn in tests:
            if ONLY and ONLY not in tname:
                continue
            t0 = time.monotonic()
            try:
                fn(name, path)
            except Exception as e:  # a harness failure is a test failure, not a crash
                tap.ok(False, "%s: %s ran to completion" % (name, tname), repr(e))
            tap.note("%s %s: %.1f s" % (name, tname, time.monotonic() - t0))
    tap.finish()


if __name__ == "__main__":
    main()
