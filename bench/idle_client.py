#!/usr/bin/env python3
"""idle_client: opens N keep-alive connections to a server, sends one GET /ping on each
and reads its whole response (so each is a real, used keep-alive connection), prints
"ready <ok> <failed>" on stdout, then holds them idle until SIGTERM/SIGINT, watching for
connections the server closes; on exit prints "closed_by_server <k>". Stdlib only."""
import argparse
import resource
import selectors
import signal
import socket
import sys
import time

REQ = b"GET /ping HTTP/1.1\r\nHost: localhost\r\n\r\n"


def raise_nofile(need):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        new = need if hard == resource.RLIM_INFINITY else min(need, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def response_complete(data):
    """True when data holds a whole response with a Content-Length body."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return False
    length = 0
    for line in data[:end].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    return len(data) >= end + 4 + length


def open_all(host, port, count, batch, timeout_s):
    """Returns (open sockets whose /ping was answered, number failed)."""
    sel = selectors.DefaultSelector()
    ready, failed, started = [], 0, 0
    pending = {}
    deadline = time.monotonic() + timeout_s
    while (started < count or pending) and time.monotonic() < deadline:
        while started < count and len(pending) < batch:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            try:
                s.connect_ex((host, port))
            except OSError:
                s.close()
                failed += 1
                started += 1
                continue
            pending[s.fileno()] = [s, "connect", b""]
            sel.register(s, selectors.EVENT_WRITE)
            started += 1
        for key, _ in sel.select(timeout=0.5):
            st = pending[key.fd]
            s = st[0]
            try:
                if st[1] == "connect":
                    err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if err:
                        raise OSError(err, "connect")
                    s.sendall(REQ)
                    st[1] = "read"
                    sel.modify(s, selectors.EVENT_READ)
                    continue
                chunk = s.recv(4096)
                if not chunk:
                    raise OSError("closed")
                st[2] += chunk
                if response_complete(st[2]):
                    if not st[2].startswith(b"HTTP/1.1 200"):
                        raise OSError("status")
                    sel.unregister(s)
                    del pending[key.fd]
                    ready.append(s)
            except OSError:
                sel.unregister(s)
                del pending[key.fd]
                s.close()
                failed += 1
    for st in pending.values():
        st[0].close()
        failed += 1
    sel.close()
    return ready, failed


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--batch", type=int, default=256, help="connects in flight at once")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds to open them all")
    a = ap.parse_args()
    if a.count < 1:
        ap.error("--count must be >= 1")
    limit = raise_nofile(a.count + 64)
    if limit < a.count + 16:
        print(f"idle_client: RLIMIT_NOFILE is {limit}, need {a.count + 16}", file=sys.stderr)
        return 1
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    socks, failed = open_all(a.host, a.port, a.count, a.batch, a.timeout)
    print(f"ready {len(socks)} {failed}", flush=True)
    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_READ)
    closed = 0
    while not stop:
        for key, _ in sel.select(timeout=0.2):
            sel.unregister(key.fileobj)
            closed += 1
    print(f"closed_by_server {closed}", flush=True)
    for s in socks:
        s.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
