#!/usr/bin/env python3
# it_store_full: a full disk under the SQLite store, against each server ($SERVER, or
# $BUILD/async-server and $BUILD/actor-server). The database lives on a small tmpfs (2 MiB)
# that a filler file then fills: a POST the store cannot write is answered 503 with
# Retry-After (not 500), reads go on, the episode is said once on stderr with its cause and
# counted on /metrics (store_full_rejections_total), and once the filler is gone the next
# POST gets 201 without a restart (and that is said too). The actor server runs twice:
# each POST committed alone, and with --group-commit 8 (a batch). Needs root (mount); otherwise
# one SKIP line says why. TAP on stdout. Python stdlib only.
import os
import time
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reliability_lib import (Reader, Response, Server, Tap, connect, get,  # noqa: E402
                             post, request, server_binaries)

TMPFS_SIZE = "2m"
MAX_POSTS = 5000       # POSTs tried before the store must have refused one for space
EXTRA_REFUSALS = 5     # POSTs sent after the first refusal, all refused, one log line
FULL_LINE = "store: a write failed"
BACK_LINE = "store: writes succeed again"


def tmpfs_mount():
    """(folder, None) with a fresh tmpfs of TMPFS_SIZE mounted on it, or (None, reason)."""
    if os.geteuid() != 0:
        return None, "mounting a tmpfs needs root (uid %d)" % os.geteuid()
    d = tempfile.mkdtemp(prefix="it-store-full-")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + TMPFS_SIZE + ",mode=0700",
                        "tmpfs", d], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        os.rmdir(d)
        return None, "mount -t tmpfs failed: %s" % r.stdout.decode(errors="replace").strip()
    return d, None


def tmpfs_unmount(d):
    subprocess.run(["umount", d], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.rmdir(d)


def fill(path):
    """Writes path until the filesystem is full; returns the bytes written."""
    n = 0
    chunk = b"\0" * 4096
    with open(path, "wb", buffering=0) as f:
        try:
            while True:
                n += f.write(chunk)
        except OSError:
            pass
    return n


def metric(port, name):
    """The value of an unlabelled metric on /metrics, or None."""
    resp, r = request(port, get(b"/metrics", auth=False))
    r.sock.close()
    if not isinstance(resp, Response) or resp.status != 200:
        return None
    m = re.search(rb"(?m)^" + name.encode() + rb" (\d+)$", resp.body)
    return int(m.group(1)) if m else None


def user_post(sock, reader, i):
    sock.sendall(post(b'{"name":"full-%d","email":"f%d@example.com"}' % (i, i)))
    return reader.response()


def check_server(tap, sname, path, mnt, args=()):
    label = "%s/sqlite%s on a %s tmpfs" % (sname, "".join(" " + a for a in args), TMPFS_SIZE)
    srv = Server(path, "sqlite", args=args, db=os.path.join(mnt, "users.db"),
                 workdir=mnt).start()
    filler = os.path.join(mnt, "filler")
    try:
        fill(filler)
        s = connect(srv.port, timeout_s=10)
        r = Reader(s)
        first = None
        for i in range(MAX_POSTS):
            resp = user_post(s, r, i)
            if resp.status != 201:
                first = resp
                break
        if not tap.ok(first is not None and first.status == 503,
                      "%s: a POST the full disk cannot take is answered 503" % label,
                      "after %d POSTs: %r" % (MAX_POSTS if first is None else i, first)):
            return
        tap.ok(first.headers.get("retry-after") == "1" and b"store full" in first.body,
               "%s: the 503 says Retry-After: 1 and 'store full'" % label,
               "%r %r" % (first.headers, first.body))
        statuses = [user_post(s, r, MAX_POSTS + k).status for k in range(EXTRA_REFUSALS)]
        tap.ok(statuses == [503] * EXTRA_REFUSALS,
               "%s: the next %d POSTs while full: 503 each" % (label, EXTRA_REFUSALS),
               "%r" % statuses)
        s.sendall(get(b"/users/1"))
        resp = r.response()
        tap.ok(resp.status == 200, "%s: reads go on while the disk is full" % label,
               "%r" % resp)
        full_lines = [l for l in srv.log if FULL_LINE in l]
        tap.ok(len(full_lines) == 1 and "No space left on device" in full_lines[0],
               "%s: the episode is said once on stderr, with its cause" % label,
               "\n".join(full_lines) or "no line with %r in:\n%s" %
               (FULL_LINE, "\n".join(srv.log[-10:])))
        counted = metric(srv.port, "store_full_rejections_total")
        tap.ok(counted == 1 + EXTRA_REFUSALS,
               "%s: /metrics store_full_rejections_total counts the %d refusals" %
               (label, 1 + EXTRA_REFUSALS), "got %r" % counted)
        os.unlink(filler)
        resp = user_post(s, r, 2 * MAX_POSTS)
        tap.ok(resp.status == 201, "%s: space back: the next POST gets 201, no restart" % label,
               "%r" % resp)
        # (the line reaches srv.log through the server's stderr pipe, which the 201 may
        # overtake: wait for it a while, then count)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline and not any(BACK_LINE in l for l in srv.log):
            time.sleep(0.02)
        tap.ok(len([l for l in srv.log if BACK_LINE in l]) == 1,
               "%s: the end of the episode is said once on stderr" % label,
               "\n".join(srv.log[-10:]))
        s.close()
    finally:
        rc = srv.stop()
    reports = srv.sanitizer_reports()
    tap.ok(rc == 0 and not reports, "%s: SIGTERM exit 0, no sanitizer reports" % label,
           "rc=%s\n%s" % (rc, "\n".join(reports or srv.log[-10:])))


def main():
    tap = Tap()
    servers = server_binaries(tap)
    runs = [(sname, path, ()) for sname, path in servers]
    # the actor server's group commit writes through store_create_batch
    runs += [(sname, path, ("--group-commit", "8")) for sname, path in servers
             if sname == "actor-server"]
    for sname, path, args in runs:
        mnt, why = tmpfs_mount()
        if mnt is None:
            tap.skip("%s: full disk under the sqlite store" % sname, why)
            continue
        try:
            check_server(tap, sname, path, mnt, args)
        finally:
            tmpfs_unmount(mnt)
    tap.finish()


if __name__ == "__main__":
    main()
