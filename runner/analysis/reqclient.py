"""reqclient: sends exactly N requests of a loadgen mix (loadgen-scripts/README.md)
over C keep-alive connections and checks every response's status: the fixed-count client of
bench/instr-per-req.sh (through bench/instr_client.py) and of the batch's cost account
(cost.py), one copy for both.

The request sequence depends only on the mix, N and --seed, never on timing. Two ways of
keeping the connections busy:
  closed  every connection has one request in flight; the next request goes to whichever
          connection answered (the load generator's closed loop; how many requests the
          server finds per wake-up depends on timing)
  serial  one request in flight in all, the connections taken in turn: every request
          costs the server exactly one wake-up (fully deterministic)
  burst   rounds of one request per connection, written while the server is stopped
          (SIGSTOP, then SIGCONT once every request is in its socket): every round costs
          the server one wake-up that finds all C requests ready (deterministic, and
          the loaded regime of `closed`); needs --pid
  closed with --depth D > 1: pipelined, D requests in flight on every connection (a
          contended load: the server always finds work on every connection)
Exit 0 when every response had the expected status, 1 otherwise (or on a socket error),
2 on bad usage or a bad mix file.
"""
import argparse
import collections
import json
import os
import random
import re
import selectors
import signal
import socket
import sys
import time

PLACEHOLDER = re.compile(r"\{(rand:(\d+):(\d+)|seq)\}")


def die(msg, code=2):
    print(f"reqclient: {msg}", file=sys.stderr)
    sys.exit(code)


def parse_mix(path, bearer):
    """-> (headers list, [(weight, method, path, body or None, expect)])"""
    headers, lines = [], []
    with open(path, encoding="utf-8") as f:
        for no, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("header "):
                value = line[len("header "):].strip()
                value = value.replace("${BEARER}", bearer)
                if "${" in value:
                    die(f"{path}: line {no}: unknown ${{...}} in a header")
                headers.append(value)
                continue
            parts = line.split()
            if len(parts) < 4:
                die(f"{path}: line {no}: expected WEIGHT METHOD PATH [BODY] EXPECT")
            try:
                weight, expect = int(parts[0]), int(parts[-1])
            except ValueError:
                die(f"{path}: line {no}: weight and expect must be integers")
            body = " ".join(parts[3:-1])
            lines.append((weight, parts[1], parts[2], None if body in ("", "-") else body,
                          expect))
    if not lines:
        die(f"{path}: no request lines")
    return headers, lines


def expand(template, rng, seq):
    def sub(m):
        if m.group(1) == "seq":
            return str(seq)
        return str(rng.randint(int(m.group(2)), int(m.group(3))))
    return PLACEHOLDER.sub(sub, template)


def build_requests(headers, lines, n, seed, host):
    """The n requests as (bytes, expected status), from one seeded generator."""
    rng = random.Random(seed)
    weights = [w for w, *_ in lines]
    hdr = "".join(f"{h}\r\n" for h in headers)
    out = []
    for i in range(n):
        _, method, path, body, expect = rng.choices(lines, weights)[0]
        path = expand(path, rng, i + 1)
        head = f"{method} {path} HTTP/1.1\r\nHost: {host}\r\n{hdr}"
        if body is not None:
            body = expand(body, rng, i + 1).encode()
            if not any(h.lower().startswith("content-type:") for h in headers):
                head += "Content-Type: application/json\r\n"
            head += f"Content-Length: {len(body)}\r\n\r\n"
            out.append((head.encode() + body, expect))
        else:
            out.append(((head + "\r\n").encode(), expect))
    return out


class Conn:
    """One keep-alive connection; its requests in flight are answered in order."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.expect = None
        self.expects = collections.deque()

    @property
    def pending(self):
        return len(self.expects)

    def send(self, req, expect):
        self.sock.sendall(req)
        self.expect = expect
        self.expects.append(expect)

    def _parse(self):
        """The status of the first complete response in the buffer (consumed), or None."""
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            return None
        head = self.buf[:end].decode("latin-1")
        status = int(head.split(" ", 2)[1])
        length = 0
        for h in head.split("\r\n")[1:]:
            name, _, value = h.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        if len(self.buf) < end + 4 + length:
            return None
        self.buf = self.buf[end + 4 + length:]
        self.expects.popleft()
        return status

    def responses(self):
        """Reads what is available; returns the statuses of the responses it completed."""
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("server closed the connection")
        self.buf += data
        out = []
        while self.pending > 0:
            status = self._parse()
            if status is None:
                break
            out.append(status)
        if self.buf and self.pending == 0:
            raise ConnectionError("bytes after the response (nothing else was asked)")
        return out

    def response(self):
        """Reads what is available; returns the status of a complete response, or None
        (one request in flight)."""
        got = self.responses()
        return got[0] if got else None


# Syscalls a server thread waits in when it has nothing to do: epoll_wait, epoll_pwait,
# epoll_pwait2, rt_sigtimedwait (the main thread's sigwait), futex (x86-64 numbers).
IDLE_SYSCALLS = {"232", "281", "441", "128", "202"}


def task_states(pid):
    """[(state, syscall number or 'running')] of every thread of pid."""
    out = []
    tasks = f"/proc/{pid}/task"
    for t in os.listdir(tasks):
        try:
            with open(f"{tasks}/{t}/stat", encoding="ascii") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            with open(f"{tasks}/{t}/syscall", encoding="ascii") as f:
                call = f.read().split()[0]
        except (FileNotFoundError, ProcessLookupError):
            continue
        out.append((state, call))
    return out


def wait_for(pid, ok, what):
    for _ in range(200000):
        states = task_states(pid)
        if states and all(ok(st, call) for st, call in states):
            return
        time.sleep(0)
    raise ConnectionError(f"pid {pid} never {what}: {task_states(pid)}")


def stop_process(pid):
    """Waits until every thread of pid is blocked waiting for work (so it is stopped at
    the same point every round), SIGSTOPs it and waits until it is stopped, so that
    nothing it does can interleave with the requests written next."""
    wait_for(pid, lambda st, call: st == "S" and call in IDLE_SYSCALLS, "went idle")
    os.kill(pid, signal.SIGSTOP)
    wait_for(pid, lambda st, call: st in ("T", "t"), "stopped")


def send(port, mix, requests, connections=8, mode="closed", pid=None, seed=1, bearer=None, depth=1, conns=None):
    """Sends REQUESTS requests of the mix file MIX to 127.0.0.1:PORT over CONNECTIONS
    keep-alive connections in MODE (closed, serial, burst; see the module's text), DEPTH in
    flight per connection in closed mode. Returns {"requests": answered, "unexpected_status":
    {status: count}}. CONNS: open Conn objects to use (and leave open: a caller that counts
    what the server does keeps connection set-up out of its windows), else CONNECTIONS new
    ones, closed at the end. Raises ConnectionError (or OSError) when a connection fails,
    ValueError on bad arguments; exits 2 (die) on a bad mix file."""
    if requests < 1 or connections < 1 or depth < 1:
        raise ValueError("requests, connections and depth must be >= 1")
    if mode == "burst" and pid is None:
        raise ValueError("mode burst needs the server's pid")
    if depth > 1 and mode != "closed":
        raise ValueError("depth > 1 is for mode closed")
    if bearer is None:
        bearer = os.environ.get("BEARER") or "test-token-aaaaaaaaaaaaaaaaaaaa"
    headers, lines = parse_mix(mix, bearer)
    reqs = build_requests(headers, lines, requests, seed, f"127.0.0.1:{port}")
    own = conns is None
    if own:
        conns = [Conn(port) for _ in range(connections)]
    bad = {}
    done = 0
    nxt = 0

    def check(status, expect):
        if status != expect:
            bad[status] = bad.get(status, 0) + 1

    try:
        if mode == "burst":
            for start in range(0, len(reqs), len(conns)):
                batch = list(zip(conns, reqs[start:start + len(conns)]))
                stop_process(pid)
                for c, (req, expect) in batch:
                    c.send(req, expect)
                os.kill(pid, signal.SIGCONT)
                for c, _ in batch:
                    status = None
                    while status is None:
                        status = c.response()
                    check(status, c.expect)
                    done += 1
        elif mode == "serial":
            for i, (req, expect) in enumerate(reqs):
                c = conns[i % len(conns)]
                c.send(req, expect)
                status = None
                while status is None:
                    status = c.response()
                check(status, expect)
                done += 1
        else:
            sel = selectors.DefaultSelector()
            for c in conns:
                for _ in range(depth):
                    if nxt < len(reqs):
                        c.send(*reqs[nxt])
                        nxt += 1
                if c.pending:
                    sel.register(c.sock, selectors.EVENT_READ, c)
            while done < len(reqs):
                for key, _ in sel.select():
                    c = key.data
                    expects = list(c.expects)
                    for status, expect in zip(c.responses(), expects):
                        check(status, expect)
                        done += 1
                        if nxt < len(reqs):
                            c.send(*reqs[nxt])
                            nxt += 1
                    if not c.pending:
                        sel.unregister(c.sock)
    except (OSError, ConnectionError, ValueError, IndexError) as e:
        raise ConnectionError(f"after {done} responses: {e}") from e
    finally:
        if own:
            for c in conns:
                c.sock.close()
    return {"requests": done, "unexpected_status": bad}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--mix", required=True, help="loadgen .mix file")
    ap.add_argument("--requests", type=int, required=True, help="requests to send (N)")
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--mode", choices=("closed", "serial", "burst"), default="closed")
    ap.add_argument("--depth", type=int, default=1, help="requests in flight per connection (closed)")
    ap.add_argument("--pid", type=int, help="the server's pid (burst mode)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--bearer", default=None)
    a = ap.parse_args(argv)
    if a.requests < 1 or a.connections < 1 or a.depth < 1:
        die("--requests, --connections and --depth must be >= 1")
    if a.mode == "burst" and a.pid is None:
        die("--mode burst needs --pid")
    if a.depth > 1 and a.mode != "closed":
        die("--depth needs --mode closed")
    try:
        out = send(a.port, a.mix, a.requests, a.connections, a.mode, a.pid, a.seed, a.bearer, a.depth)
    except ConnectionError as e:
        die(str(e), 1)
    except OSError as e:
        die(f"connect to 127.0.0.1:{a.port}: {e}", 1)
    print(json.dumps(out))
    return 1 if out["unexpected_status"] else 0
