# reliability_lib: helpers shared by tests/it_hostile.py and tests/it_faults.py: TAP
# output, starting a server binary on a free port (parsed from its "listening on" line),
# raw-socket HTTP exchanges, and /proc readings (RSS, fds, CPU ticks) of a server.
# Importing it raises the soft open-file limit to the hard one (for this process and the
# servers it starts). Not a test itself (run.sh only runs tests/it_*). Python stdlib only.
# Invariant: every process started here is tracked and killed by pid in Server.kill().
import os
import re
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import threading

BUILD = os.environ.get("BUILD", "build")
BEARER = "hostile-token-0123456789abcdef"


def nofile_raise():
    """Raises this process's soft RLIMIT_NOFILE to its hard limit (the servers and tools it
    starts inherit it); returns the soft limit in effect afterwards."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
        target = hard
        if hard == resource.RLIM_INFINITY:  # Linux caps the soft limit at fs.nr_open
            try:
                with open("/proc/sys/fs/nr_open") as f:
                    target = int(f.read())
            except (OSError, ValueError):
                target = 1 << 20
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            pass
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def nofile_shortfall(need, what):
    """None when this process can open `need` more descriptors (and so can a server it
    starts, which runs with the same limit), else a one-line reason naming `what` and the
    command that would give them."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return None
    in_use = len(os.listdir("/proc/self/fd"))
    if soft - in_use >= need:
        return None
    hard_s = "unlimited" if hard == resource.RLIM_INFINITY else str(hard)
    return ("%s needs %d open files; the limit is %d (hard %s, %d in use): "
            "run with 'ulimit -n %d' or more" % (what, need, soft, hard_s, in_use,
                                                 need + in_use))


NOFILE = nofile_raise()


class Tap:
    """TAP writer: ok/not ok lines, diagnostics as '#', a plan at the end."""

    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, name, diag=""):
        self.n += 1
        if cond:
            print("ok %d - %s" % (self.n, name), flush=True)
        else:
            self.failed += 1
            print("not ok %d - %s" % (self.n, name), flush=True)
            for line in str(diag).splitlines()[:20]:
                print("#   " + line, flush=True)
        return cond

    def skip(self, name, reason):
        self.n += 1
        print("ok %d - %s # SKIP %s" % (self.n, name, reason), flush=True)

    def note(self, msg):
        for line in str(msg).splitlines():
            print("# " + line, flush=True)

    def finish(self):
        print("1..%d" % self.n, flush=True)
        sys.exit(1 if self.failed else 0)


def server_binaries(tap):
    """[(name, path)] of the servers to test: $SERVER alone when set, else the async and
    actor servers in $BUILD. A binary that is absent or whose --help fails gets a TAP
    skip line and is left out."""
    env = os.environ.get("SERVER")
    paths = [env] if env else [os.path.join(BUILD, "async-server"),
                               os.path.join(BUILD, "actor-server")]
    out = []
    for p in paths:
        name = os.path.basename(p)
        usable = os.access(p, os.X_OK)
        if usable:
            try:
                r = subprocess.run([p, "--help"], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, timeout=10)
                usable = r.returncode == 0
            except (OSError, subprocess.TimeoutExpired):
                usable = False
        if usable:
            out.append((name, p))
        else:
            tap.skip("%s: all tests" % name, "%s absent or --help fails" % p)
    return out


class Server:
    """One server process on a free loopback port. stderr is collected in a thread."""

    def __init__(self, path, store="memory", args=(), seed=100, threads=2, preexec_fn=None,
                 db=None, workdir=None):
        self.path = path
        self.store = store
        self.workdir = workdir or tempfile.mkdtemp(prefix="it-rel-")
        self.db = db or os.path.join(self.workdir, "users.db")
        self.argv = [path, "--port", "0", "--threads", str(threads), "--store=" + store,
                     "--db", self.db, "--seed-users", str(seed), "--bearer", BEARER]
        self.argv += list(args)
        # SERVER_ARGS: extra flags for the binary $SERVER names (e.g. the actor server's
        # ladder, "--placement=spread --message=copy"), as it_contract.py takes them
        if os.environ.get("SERVER") and path == os.environ["SERVER"]:
            self.argv += os.environ.get("SERVER_ARGS", "").split()
        self.preexec_fn = preexec_fn
        self.proc = None
        self.port = None
        self.log = []
        self._ready = threading.Event()

    def _pump(self):
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.log.append(line)
            m = re.search(r"listening on http://[0-9.]+:(\d+)", line)
            if m and self.port is None:
                self.port = int(m.group(1))
                self._ready.set()
        self._ready.set()

    def start(self, timeout_s=20.0):
        """Starts and waits for the listening line; raises RuntimeError otherwise."""
        self.port = None
        self._ready.clear()
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     preexec_fn=self.preexec_fn)
        t = threading.Thread(target=self._pump, daemon=True)
        t.start()
        self._thread = t
        self._ready.wait(timeout_s)
        if self.port is None:
            self.kill()
            raise RuntimeError("server did not start: %s\n%s" % (" ".join(self.argv),
                                                                  "\n".join(self.log[-20:])))
        return self

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        if self.alive():
            os.kill(self.proc.pid, sig)

    def wait(self, timeout_s):
        """Exit code, or None when still running after timeout_s."""
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, timeout_s=5.0):
        """SIGTERM, wait; SIGKILL if needed. Returns the exit code."""
        if self.proc is None:
            return None
        self.signal(signal.SIGTERM)
        rc = self.wait(timeout_s)
        if rc is None:
            self.kill()
            rc = self.proc.returncode
        self._thread.join(2)
        return rc

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        if getattr(self, "_thread", None):
            self._thread.join(2)

    def sanitizer_reports(self):
        return [l for l in self.log if "ERROR: AddressSanitizer" in l or
                "runtime error:" in l or "ERROR: LeakSanitizer" in l or
                "WARNING: ThreadSanitizer" in l]

    # --- /proc readings ---
    def rss_kb(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def fd_count(self):
        return len(os.listdir("/proc/%d/fd" % self.proc.pid))

    def cpu_s(self):
        """utime+stime of all threads, seconds."""
        with open("/proc/%d/stat" % self.proc.pid) as f:
            s = f.read()
        fields = s[s.rindex(")") + 2:].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ---- raw HTTP over sockets ----

def connect(port, timeout_s=5.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout_s)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def parse_head(raw):
    """(version, status, reason, headers) of a response head without its empty line:
    version "1.0" or "1.1", headers lower-cased name -> value (last wins). ValueError when
    the status line is not HTTP/1.x NNN."""
    lines = raw.decode("latin-1").split("\r\n")
    m = re.match(r"HTTP/1\.([01]) (\d{3}) (.*)$", lines[0] + " ")
    if not m:
        raise ValueError("bad status line %r" % lines[0])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return "1." + m.group(1), int(m.group(2)), m.group(3).rstrip(), headers


class Response:
    def __init__(self, status, headers, body, raw_head):
        self.status = status
        self.headers = headers  # lower-cased name -> value (last wins)
        self.body = body
        self.raw_head = raw_head

    def __repr__(self):
        return "<%s %r>" % (self.status, self.body[:200])


class Reader:
    """Buffered response reader on one socket."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError("connection closed")
        self.buf += chunk

    def head(self):
        """Reads one response head: (status, headers, raw head). Raises EOFError,
        socket.timeout, ConnectionResetError, ValueError (no status line, head > 1 MiB)."""
        while b"\r\n\r\n" not in self.buf:
            if len(self.buf) > 1 << 20:
                raise ValueError("response head too large")
            self._fill()
        raw, self.buf = self.buf.split(b"\r\n\r\n", 1)
        _, status, _, headers = parse_head(raw)
        return status, headers, raw

    def response(self):
        """Reads one response (Content-Length framed); raises what head() raises."""
        status, headers, raw = self.head()
        n = int(headers.get("content-length", "0"))
        while len(self.buf) < n:
            self._fill()
        body, self.buf = self.buf[:n], self.buf[n:]
        return Response(status, headers, body, raw)

    def closed(self, timeout_s=3.0):
        """'eof' when the peer closed cleanly (FIN) within timeout_s, 'reset' on RST,
        'open' when nothing came, 'data' when more bytes arrived."""
        if self.buf:
            return "data"
        self.sock.settimeout(timeout_s)
        try:
            chunk = self.sock.recv(4096)
        except socket.timeout:
            return "open"
        except ConnectionResetError:
            return "reset"
        if not chunk:
            return "eof"
        self.buf += chunk
        return "data"


def request(port, raw, timeout_s=5.0):
    """Sends raw bytes on a new connection; returns (Response or exception, reader)."""
    s = connect(port, timeout_s)
    r = Reader(s)
    try:
        s.sendall(raw)
        return r.response(), r
    except (OSError, EOFError, ValueError) as e:
        return e, r


def get(path, extra=b"", auth=True):
    h = b"GET " + path + b" HTTP/1.1\r\nHost: t\r\n"
    if auth:
        h += b"Authorization: Bearer " + BEARER.encode() + b"\r\n"
    return h + extra + b"\r\n"


def post(body, ctype=b"application/json", auth=True, path=b"/users", extra=b""):
    h = b"POST " + path + b" HTTP/1.1\r\nHost: t\r\n"
    if auth:
        h += b"Authorization: Bearer " + BEARER.encode() + b"\r\n"
    if ctype is not None:
        h += b"Content-Type: " + ctype + b"\r\n"
    h += b"Content-Length: " + str(len(body)).encode() + b"\r\n" + extra + b"\r\n"
    return h + body


def healthy(port):
    """None when a fresh client gets /ping 200 and GET /users/1 200, else a reason."""
    try:
        resp, r = request(port, get(b"/ping", auth=False), timeout_s=5)
        if not isinstance(resp, Response) or resp.status != 200 or resp.body != b"pong":
            return "ping: %r" % (resp,)
        r.sock.sendall(get(b"/users/1"))
        resp = r.response()
        r.sock.close()
        if resp.status != 200 or b'"id":1' not in resp.body:
            return "users/1: %r" % (resp,)
        return None
    except (OSError, EOFError, ValueError) as e:
        return "exception %r" % (e,)
