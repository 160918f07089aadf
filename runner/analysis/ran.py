"""ran: what ran, recorded. For one run, the server's program as started (its path on PATH
resolved, its SHA-256), the scripts it was given (each argument that names a regular file, with
its SHA-256) and its version, as a command prints it: the definition's `version` command when
it has one, else `PROGRAM --version` for ours (the suite's commit), node and python, the OTP
release for erl, `nginx -v`, and `go version PROGRAM` for a Go binary (`go` on PATH). runner.sh
keeps it in result.json's config.server_definition.ran; summary.md lists it per server
(`section`, `markdown_lines`) with the same-work warnings of the verify stage
(config.verify_warnings, verify.same_work).
Reads files and runs version commands only (each bounded by VERSION_TIMEOUT_S).
"""
import hashlib
import os
import shutil
import subprocess

VERSION_TIMEOUT_S = 10
MAX_HASH_BYTES = 1 << 30   # a file above this is named, not hashed
ERL_RELEASE = 'io:format("Erlang/OTP ~s, erts ~s~n", [erlang:system_info(otp_release), erlang:system_info(version)]), halt().'


def sha256_file(path):
    """The hex SHA-256 of the file at PATH, or None when it cannot be read or is too big."""
    try:
        if os.path.getsize(path) > MAX_HASH_BYTES:
            return None
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()
    except OSError:
        return None


def resolve(program, cwd=None):
    """PROGRAM's path: as given when it holds a '/', else the one on PATH (None when absent)."""
    if "/" in program:
        return program if os.path.isabs(program) or cwd is None else os.path.join(cwd, program)
    return shutil.which(program)


def _is_elf(path):
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


def default_version_command(program_path, ours):
    """The command that prints PROGRAM_PATH's version when the definition names none, or None."""
    if program_path is None:
        return None
    base = os.path.basename(program_path)
    if ours or base in ("node", "nodejs") or base.startswith("python"):
        return [program_path, "--version"]
    if base == "erl":
        return [program_path, "-noshell", "-eval", ERL_RELEASE]
    if base == "nginx":
        return [program_path, "-v"]
    go = shutil.which("go")
    if go and _is_elf(program_path):
        return [go, "version", program_path]   # a Go binary carries its toolchain's version
    return None


def version_of(argv, cwd=None):
    """The first line ARGV prints (stdout, else stderr), or None when it fails or says nothing."""
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=VERSION_TIMEOUT_S, cwd=cwd,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    if p.returncode != 0:
        return None
    for text in (p.stdout, p.stderr):
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        if lines:
            return lines[0][:200]
    return None


def describe(command, version_command=None, ours=False, cwd=None, skip=()):
    """What ran for the filled-in COMMAND (argv): {program, program_sha256, scripts: [{path,
    sha256}], version, version_command}; an argument in SKIP (the run's access log and
    database: data, not code) is no script. VERSION_COMMAND: the definition's (filled in),
    else the default one (default_version_command)."""
    prog = resolve(command[0], cwd) if command else None
    scripts = []
    for arg in command[1:]:
        path = arg if os.path.isabs(arg) or cwd is None else os.path.join(cwd, arg)
        if "/" in arg and arg not in skip and os.path.isfile(path):
            scripts.append({"path": arg, "sha256": sha256_file(path)})
    vcmd = version_command or default_version_command(prog, ours)
    return {"program": prog, "program_sha256": sha256_file(prog) if prog else None, "scripts": scripts,
            "version": version_of(vcmd, cwd) if vcmd else None, "version_command": vcmd}


def section(runs):
    """[{server, program, program_sha256, scripts, version, warnings}] over RUNS (result.json
    documents), one per server (its first run that recorded what ran; every same-work warning
    of its runs, once each), in name order."""
    out = {}
    for r in runs:
        cfg = r.get("config") or {}
        name = r.get("server") or (cfg.get("server_definition") or {}).get("name")
        if not name:
            continue
        row = out.setdefault(name, {"server": name, "program": None, "program_sha256": None, "scripts": [],
                                    "version": None, "warnings": []})
        ran = (cfg.get("server_definition") or {}).get("ran")
        if ran and row["program"] is None:
            row.update({k: ran.get(k) for k in ("program", "program_sha256", "scripts", "version")})
        for wng in cfg.get("verify_warnings") or []:
            if wng not in row["warnings"]:
                row["warnings"].append(wng)
    return [out[k] for k in sorted(out)]


def markdown_lines(index):
    """summary.md's "What ran" section for INDEX's servers_ran ([] when there is none)."""
    rows = index.get("servers_ran") or []
    if not rows:
        return []
    out = ["", "## What ran", "",
           "| server | program | sha256 | scripts | version | same work (CONTRACT.md section 7) |",
           "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        scripts = ", ".join(f"{os.path.basename(s['path'])} {(s.get('sha256') or '?')[:12]}"
                            for s in r.get("scripts") or []) or "-"
        warn = "; ".join(r["warnings"]) if r.get("warnings") else "no warning"
        out.append(f"| {r['server']} | {r.get('program') or '?'} | {(r.get('program_sha256') or '?')[:12]} | "
                   f"{scripts} | {r.get('version') or 'not known'} | {warn} |")
    if any(r.get("warnings") for r in rows):
        out += ["", "A same-work warning says a server may do less per request than the others (no "
                "X-Request-Id, no bearer check on a /users route, no access log): its figures are then not "
                "for the same work."]
    return out
