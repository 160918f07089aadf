#!/usr/bin/env python3
"""bundle.py: writes dist/<name>-<commit>-linux-x86_64.tar.gz, the suite as one folder that runs
with no install and no network on an x86-64 Linux with bash, coreutils, util-linux and python3
(3.9 or later): the servers and the load generator (built by make into build-bundle/ with the
run path $ORIGIN/../lib, copied to build/), the tracked tree (runner, analysis, servers/,
loadgen-scripts/, scripts/, docs), and the programs the run path calls that a bare Linux lacks
(jq, curl, ps/pkill, taskset/setsid, hostname; strace and valgrind for the cost account) with every shared library they
and the servers need, from this machine's own files (ldd), never glibc's own libraries.

Layout inside the folder: build/ (servers, load generator), lib/ (shared libraries), libexec/
(the bundled programs), bin/ (one small wrapper per program: LD_LIBRARY_PATH=lib/ for that
program only, so the host's python3 never loads a bundled library), BUNDLE (the marker:
key=value lines, read by runner/bundle.sh: the commit, the libraries' versions, what is in it).

Run by `make bundle` (which builds build-bundle/ first). Usage: scripts/bundle.py [--help]
[--out=DIR] [--build=DIR]. Exit: 0 written, 1 a file or program missing, 2 usage.
"""
import datetime
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "actor-vs-async"
# The programs the run path calls that a minimal Debian or a lab image may lack (runner.sh,
# run_all.sh, runner/*.sh: jq everywhere, curl for /metrics and readiness, ps and pkill in
# runner.sh; strace and valgrind for the cost account when present). util-linux (taskset,
# setsid), coreutils, awk, getconf and hostname are in every base system. gnuplot is not
# bundled (about 70 libraries): report.html then has its tables without plots, said once.
TOOLS = ["jq", "curl", "ps", "pkill", "strace"]
# util-linux's taskset and setsid (runner.sh pins and starts every server and load generator
# with them) and hostname, in case a lab image lacks them: glibc only, copied to bin/ as they
# are (no wrapper: what they start inherits no LD_LIBRARY_PATH).
PLAIN_TOOLS = ["taskset", "setsid", "hostname"]
# valgrind: the launcher and, of its tools, those the cost account uses (callgrind for
# instructions; memcheck is its default tool); 64-bit only. VALGRIND_LIB points at them.
VALGRIND_FILES = ["callgrind-amd64-linux", "memcheck-amd64-linux", "cachegrind-amd64-linux",
                  "vgpreload_core-amd64-linux.so", "vgpreload_memcheck-amd64-linux.so", "default.supp"]
VALGRIND_LIBEXEC = "/usr/libexec/valgrind"
BINARIES = ["async-server", "actor-server", "loadgen"]
# glibc's own libraries: always the host's (a copied libc would not match its ld.so)
GLIBC = re.compile(r"^(ld-linux.*|libc|libm|libpthread|libdl|librt|libresolv|libutil|libanl|"
                   r"libnsl|libmvec|libBrokenLocale|libcrypt|libnss_.*)\.so")
# The tracked tree, less what a run never reads (fuzz corpora, reference batches).
TREE_SKIP = ("tests/fuzz/", "results/", ".ci/")
# Debian packages whose versions the runner records (runner/host.sh reads them from BUNDLE).
PKG_VERSIONS = {"libuv": "libuv1-dev", "sqlite3": "libsqlite3-dev", "ck": "libck-dev",
                "jansson": "libjansson-dev"}


class BundleError(Exception):
    """A file or program the bundle needs is missing."""


def run(cmd, **kw):
    """CMD's stdout (text); raises BundleError when it fails."""
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)
    if proc.returncode != 0:
        raise BundleError(f"{' '.join(cmd)} failed: {proc.stderr.strip()}")
    return proc.stdout


def ldd_libs(path):
    """The shared libraries PATH loads (ldd's resolved paths), glibc's own left out."""
    out = subprocess.run(["ldd", path], capture_output=True, text=True, check=False).stdout
    libs = []
    for line in out.splitlines():
        m = re.match(r"\s*(\S+)\s+=>\s+(/\S+)", line)
        if m:
            if not GLIBC.match(m.group(1)):
                libs.append(m.group(2))
        elif "not found" in line:
            raise BundleError(f"{path}: {line.strip()}")
    return libs


def commit_of():
    """(commit, dirty): HEAD's full hash, and whether tracked files differ from it."""
    commit = run(["git", "-C", ROOT, "rev-parse", "HEAD"]).strip()
    dirty = subprocess.run(["git", "-C", ROOT, "diff", "--quiet", "HEAD", "--"],
                           check=False).returncode != 0
    return commit, dirty


def pkg_version(pc_name):
    proc = subprocess.run(["pkg-config", "--modversion", pc_name], capture_output=True, text=True,
                          check=False)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def llhttp_version(header="/usr/share/include/llhttp/llhttp.h"):
    parts = {}
    try:
        with open(header, encoding="utf-8") as fh:
            for line in fh:
                m = re.match(r"#define LLHTTP_VERSION_(MAJOR|MINOR|PATCH)\s+(\d+)", line)
                if m:
                    parts[m.group(1)] = m.group(2)
    except OSError:
        return ""
    return ".".join(parts.get(k, "?") for k in ("MAJOR", "MINOR", "PATCH")) if parts else ""


def glibc_needed(paths):
    """The highest GLIBC_2.N symbol version the ELF files PATHS name ('2.35'): the oldest
    glibc the bundle runs on (the host's libc is always the one used)."""
    best = (2, 0)
    for path in paths:
        with open(path, "rb") as fh:
            for m in re.finditer(rb"GLIBC_2\.(\d+)", fh.read()):
                best = max(best, (2, int(m.group(1))))
    return f"{best[0]}.{best[1]}"


def wrapper(prog, extra_env=""):
    """The bin/ wrapper of libexec/PROG: its libraries from lib/, for that program only."""
    # no subshell, no dirname: the runner calls jq a few hundred times a batch (on the busy
    # 2-CPU host a wrapper that forked twice cost 63 ms a call)
    return ("#!/bin/sh\n"
            f"# bundle wrapper (scripts/bundle.py): libexec/{prog} with the bundle's libraries\n"
            'case $0 in */*) d=${0%/*}/.. ;; *) d=.. ;; esac\n'
            f'{extra_env}LD_LIBRARY_PATH="$d/lib${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}" '
            f'exec "$d/libexec/{prog}" "$@"\n')


class Bundle:
    """The members of the tarball: (arcname, bytes or source path, mode)."""

    def __init__(self, top):
        self.top = top
        self.members = {}

    def add_file(self, arc, src, mode=None):
        self.members[arc] = (src, mode if mode is not None else os.stat(src).st_mode & 0o777)

    def add_bytes(self, arc, data, mode=0o644):
        self.members[arc] = (data.encode() if isinstance(data, str) else data, mode)

    def write(self, path):
        tmp = path + ".tmp"
        now = int(time.time())
        with tarfile.open(tmp, "w:gz", compresslevel=9) as tar:
            dirs = set()
            for arc in sorted(self.members):
                parts = arc.split("/")[:-1]
                for i in range(1, len(parts) + 1):
                    d = "/".join(parts[:i])
                    if d not in dirs:
                        dirs.add(d)
                        info = tarfile.TarInfo(f"{self.top}/{d}")
                        info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, now
                        tar.addfile(info)
                src, mode = self.members[arc]
                data = src if isinstance(src, bytes) else open(src, "rb").read()
                info = tarfile.TarInfo(f"{self.top}/{arc}")
                info.size, info.mode, info.mtime = len(data), mode, now
                tar.addfile(info, io.BytesIO(data))
        os.replace(tmp, path)


def bundle_make(out_dir, build_dir):
    """Writes the tarball into OUT_DIR; returns (path, size in bytes, members)."""
    commit, dirty = commit_of()
    short = commit[:12] + ("-dirty" if dirty else "")
    top = f"{NAME}-{short}-linux-x86_64"
    b = Bundle(top)
    files = run(["git", "-C", ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard"]).split("\0")
    for f in files:
        if f and not f.startswith(TREE_SKIP) and os.path.isfile(os.path.join(ROOT, f)):
            b.add_file(f, os.path.join(ROOT, f))
    libs = set()
    for name in BINARIES:
        src = os.path.join(build_dir, name)
        if not os.access(src, os.X_OK):
            raise BundleError(f"{src} missing (make bundle builds it)")
        b.add_file(f"build/{name}", src, 0o755)
        libs.update(ldd_libs(src))
    tools = []
    for prog in TOOLS:
        path = shutil.which(prog)
        if not path:
            raise BundleError(f"{prog} is not installed here (scripts/deps.sh dev installs it)")
        real = os.path.realpath(path)
        b.add_file(f"libexec/{prog}", real, 0o755)
        b.add_bytes(f"bin/{prog}", wrapper(prog), 0o755)
        libs.update(ldd_libs(real))
        tools.append(prog)
    for prog in PLAIN_TOOLS:
        path = shutil.which(prog)
        if not path:
            raise BundleError(f"{prog} is not installed here (util-linux, hostname)")
        real = os.path.realpath(path)
        if ldd_libs(real):
            raise BundleError(f"{real} needs libraries beyond glibc: not copied as it is")
        b.add_file(f"bin/{prog}", real, 0o755)
        tools.append(prog)
    vg = shutil.which("valgrind")
    if vg and os.path.exists(vg + ".bin"):   # Debian's valgrind is a script around valgrind.bin
        vg += ".bin"
    if vg and all(os.path.exists(os.path.join(VALGRIND_LIBEXEC, f)) for f in VALGRIND_FILES):
        b.add_file("libexec/valgrind", os.path.realpath(vg), 0o755)
        for f in VALGRIND_FILES:
            b.add_file(f"libexec/valgrind.d/{f}", os.path.join(VALGRIND_LIBEXEC, f))
        b.add_bytes("bin/valgrind", wrapper("valgrind", 'VALGRIND_LIB="$d/libexec/valgrind.d" '), 0o755)
        libs.update(ldd_libs(os.path.realpath(vg)))
        tools.append("valgrind")
    for lib in sorted(libs):
        b.add_file(f"lib/{os.path.basename(lib)}", os.path.realpath(lib), 0o644)
    cc = subprocess.run([os.environ.get("CC", "cc"), "--version"], capture_output=True, text=True,
                        check=False).stdout.splitlines()
    marker = {
        "name": top,
        "commit": commit,
        "dirty": "true" if dirty else "false",
        "built": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "built_on": " ".join(os.uname()[i] for i in (1, 2)),
        "compiler": cc[0] if cc else "",
        "llhttp": llhttp_version(),
        "tools": " ".join(tools),
        "libs": " ".join(sorted(os.path.basename(x) for x in libs)),
        "glibc_min": glibc_needed([src for src, _ in b.members.values()
                                   if isinstance(src, str) and src.startswith(("/usr", "/lib", build_dir))]),
        "gnuplot": "not bundled: report.html has tables without plots unless the host has gnuplot",
    }
    for key, pc in PKG_VERSIONS.items():
        marker[key] = pkg_version(key) or pkg_version(pc)
    b.add_bytes("BUNDLE", "".join(f"{k}={v}\n" for k, v in marker.items()))
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{top}.tar.gz")
    b.write(path)
    for old in os.listdir(out_dir):   # one bundle in OUT_DIR: the older ones go
        if old != os.path.basename(path) and re.fullmatch(rf"{NAME}-[0-9a-f]+(-dirty)?-linux-x86_64\.tar\.gz", old):
            os.remove(os.path.join(out_dir, old))
    return path, os.path.getsize(path), len(b.members)


def main(argv):
    out_dir, build_dir = os.path.join(ROOT, "dist"), os.path.join(ROOT, "build-bundle")
    for arg in argv:
        if arg in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        if arg.startswith("--out="):
            out_dir = arg.split("=", 1)[1]
        elif arg.startswith("--build="):
            build_dir = arg.split("=", 1)[1]
        else:
            print(f"bundle.py: unknown argument '{arg}' (see --help)", file=sys.stderr)
            return 2
    try:
        path, size, n = bundle_make(out_dir, build_dir)
    except BundleError as exc:
        print(f"bundle.py: {exc}", file=sys.stderr)
        return 1
    print(f"bundle.py: wrote {path}: {size / 1048576:.1f} MiB, {n} files", file=sys.stderr)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
