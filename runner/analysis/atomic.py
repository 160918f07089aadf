"""atomic.py: the analysis package's outputs written whole or not at all (result.json,
index.json with summary.md, report.html), and the one-line cause when the results folder's
file system is full. Does not retry or make room: a failed write fails the command.
Invariant: after write_all, each target holds its new text, or (on an error) none of the
targets exists: no stale or half-written output is left to be taken for the new one.
"""
import os

# Free space under which a failed write in the results folder is put down to a full file
# system (a run writes a few MB; 1 MiB left is no room for one phase's histograms).
FULL_BELOW_BYTES = 1 << 20


def write_all(files):
    """Writes each (path, text) of FILES as a whole: every text to PATH.tmp first (flushed
    and fsynced), then each renamed over its PATH. On any OSError every PATH.tmp and every
    PATH is removed (so none is left stale beside the new others) and the error is raised
    again with the path and, when the file system is full, that cause."""
    tmps = []
    try:
        for path, text in files:
            tmp = path + ".tmp"
            tmps.append(tmp)
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
        for (path, _), tmp in zip(files, tmps):
            os.replace(tmp, path)
    except OSError as err:
        for path in [p for p, _ in files] + tmps:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            except OSError:
                pass
        where = err.filename or (files[0][0] if files else "?")
        note = full_note(os.path.dirname(os.path.abspath(where)))
        raise OSError(err.errno, f"writing {where} failed: {err.strerror}" + (f" ({note})" if note else "")) from err


def write_text(path, text):
    """write_all for one file."""
    write_all([(path, text)])


def full_note(path):
    """'the file system of PATH is full: N KB free of M KB' when less than FULL_BELOW_BYTES
    are free to an unprivileged writer there (PATH or its nearest existing parent), else ''.
    Never raises."""
    try:
        while not os.path.exists(path) and os.path.dirname(path) != path:
            path = os.path.dirname(path)
        st = os.statvfs(path)
    except OSError:
        return ""
    free = st.f_bavail * st.f_frsize
    if free >= FULL_BELOW_BYTES:
        return ""
    return f"the file system of {path} is full: {free // 1024} KB free of {st.f_blocks * st.f_frsize // 1024} KB"

