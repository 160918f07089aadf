"""cli.py: what runner.sh and run_all.sh share on their command lines, written once: the
option grammar (--opt=VALUE or --opt VALUE), the usage error, the run modes' durations
(SPEC.md sections 5 and 14), the duration grammar of --budget, and --version's line.

Invariant: a usage error exits 2 before anything is created, with the program's name and a
hint to its --help, exactly as the shell scripts wrote it.
"""
import os
import re
import subprocess
import sys
from collections import namedtuple

# One run mode's default durations (s) and connections: sustain warm-up and measured window,
# probe measured window and warm-up, connections, sweep step warm-up and measured window.
Durations = namedtuple("Durations", "warmup measure probe probe_warmup conns sweep_warmup sweep_measure")

MODE_DURATIONS = {
    "full": Durations(30, 60, 30, 5, 256, 5, 20),
    "quick": Durations(10, 15, 8, 2, 256, 2, 4),
    "smoke": Durations(1, 2, 2, 1, 32, 1, 1),
}
MODES = tuple(MODE_DURATIONS)


def mode_durations(mode):
    """The Durations of MODE (full, quick or smoke); KeyError for any other."""
    return MODE_DURATIONS[mode]


_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s?)?$")


def duration_s(text):
    """TEXT (900, 900s, 15m, 1h30m, 2h) in whole seconds; None when it is not such a
    duration or is 0."""
    m = _DURATION.match(text or "")
    if not text or not m:
        return None
    h, mi, s = (int(g) if g else 0 for g in m.groups())
    total = h * 3600 + mi * 60 + s
    return total if total > 0 else None


class UsageError(Exception):
    """A command line that cannot run: exit 2 with this message."""


def usage_exit(prog, message, stream=None):
    """Print PROG: MESSAGE and the --help hint on stderr; exit 2."""
    stream = stream or sys.stderr
    print(f"{prog}: {message}", file=stream)
    print(f"run ./{prog} --help for usage", file=stream)
    sys.exit(2)


def parse_options(argv, valued, flags, empty_ok=("--rates",)):
    """Split ARGV into a list of (option, value, argument as written) and the positional
    arguments, in order. VALUED options take a value (--opt=V or --opt V); FLAGS take none.
    An unknown option is returned as it is (the caller names it). Raises UsageError with
    the shell scripts' messages."""
    out, positional = [], []
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        opt, val, has_val = arg, "", False
        if arg.startswith("--") and "=" in arg:
            opt, val = arg.split("=", 1)
            has_val = True
        if opt in valued:
            if not has_val:
                if i >= len(argv):
                    raise UsageError(f"{opt} needs a value ({opt}=VALUE or {opt} VALUE)")
                if argv[i].startswith("-"):
                    raise UsageError(f"{opt} needs a value, got the option '{argv[i]}'")
                val = argv[i]
                i += 1
            if not val and opt not in empty_ok:
                raise UsageError(f"{opt} needs a value, got an empty one")
            out.append((opt, val, arg))
        elif opt in flags:
            if has_val:
                raise UsageError(f"{opt} takes no value, got '{arg}'")
            out.append((opt, None, arg))
        elif arg.startswith("-"):
            out.append((opt, val if has_val else None, arg))
        else:
            positional.append(arg)
    return out, positional


def bundle_value(key, env=None):
    """The value of KEY in the unpacked bundle's BUNDLE file, or "" (also outside a bundle)."""
    root = (env or os.environ).get("BUNDLE_ROOT", "")
    try:
        with open(os.path.join(root, "BUNDLE"), encoding="utf-8") as f:
            for line in f:
                if line.startswith(key + "="):
                    return line[len(key) + 1:].rstrip("\n")
    except OSError:
        pass
    return ""


def pkg_version(name, env=None):
    """pkg-config's version of NAME (in a bundle: BUNDLE's), or ""."""
    env = env or os.environ
    if env.get("BUNDLE_ROOT"):
        return bundle_value(name, env)
    try:
        return subprocess.run(["pkg-config", "--modversion", name], capture_output=True,
                              text=True, check=False).stdout.strip()
    except OSError:
        return ""


def llhttp_version(env=None):
    """From the installed header's LLHTTP_VERSION_* macros (in a bundle: BUNDLE's), or ""."""
    env = env or os.environ
    if env.get("BUNDLE_ROOT"):
        return bundle_value("llhttp", env)
    parts = {}
    try:
        with open(env.get("LLHTTP_HEADER", "/usr/share/include/llhttp/llhttp.h"),
                  encoding="utf-8", errors="replace") as f:
            for line in f:
                m = re.match(r"#define LLHTTP_VERSION_(MAJOR|MINOR|PATCH)\s+(\S+)", line)
                if m:
                    parts[m.group(1)] = m.group(2)
    except OSError:
        return ""
    if "MAJOR" not in parts:
        return ""
    return f"{parts['MAJOR']}.{parts.get('MINOR', '')}.{parts.get('PATCH', '')}"


def suite_version(name, root, env=None):
    """NAME COMMIT[-dirty] (libuv X, sqlite Z, ck W, jansson V, llhttp Y): --version's line,
    the versions as result.json records them."""
    env = env or os.environ
    if bundle_value("commit", env):
        v = bundle_value("commit", env)[:12]
        if bundle_value("dirty", env) == "true":
            v += "-dirty"
    else:
        try:
            v = subprocess.run(["git", "-C", root, "rev-parse", "--short=12", "HEAD"],
                               capture_output=True, text=True, check=True).stdout.strip()
            st = subprocess.run(["git", "-C", root, "status", "--porcelain",
                                 "--untracked-files=no"], capture_output=True, text=True,
                                check=False).stdout.strip()
            if st:
                v += "-dirty"
        except (OSError, subprocess.CalledProcessError):
            v = "unknown"
    libs = ", ".join(f"{lib.rstrip('3')} {pkg_version(lib, env) or '?'}"
                     for lib in ("libuv", "sqlite3", "ck", "jansson"))
    return f"{name} {v} ({libs}, llhttp {llhttp_version(env) or '?'})"
