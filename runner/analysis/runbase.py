"""runbase.py: what every part of a run shares, in Python: the failure that ends a run with
its one-line cause, the progress log (stderr and the run's runner.log), the run's facts
(facts.json, kept in memory and written whole on each change) and the clocks.

Invariant: facts.json on disk is always a whole JSON document (atomic.write_text); a fact
that cannot be written raises OSError with the cause, the run's earlier facts stay.
"""
import json
import os
import sys
import time

from . import atomic


class RunFailure(Exception):
    """Ends the run: str(self) is its one-line cause (result.json's failure, the FAILED
    line)."""


def now_iso():
    """The current time, ISO-8601 UTC to the second (timestamps only)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def clock_s():
    """Seconds since boot (CLOCK_BOOTTIME, as /proc/uptime): monotonic, so a window's
    length never depends on wall-clock steps."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def sleep_until(t):
    """Sleeps until clock_s() reaches T (at once when it has)."""
    d = t - clock_s()
    if d > 0:
        time.sleep(d)


class Log:
    """Progress lines: '[TAG] MSG' on stderr, and 'ISO [TAG] MSG' appended to FILE when one
    is set. A log file that cannot be written (a full disk) loses the line there, never the
    run."""

    def __init__(self, tag=None, file=None):
        self.tag = tag or os.environ.get("LOG_TAG") or "runner"
        self.file = file if file is not None else (os.environ.get("LOG_FILE") or None)

    def info(self, msg):
        line = f"[{self.tag}] {msg}"
        print(line, file=sys.stderr, flush=True)
        if self.file:
            try:
                with open(self.file, "a", encoding="utf-8") as fh:
                    fh.write(f"{now_iso()} {line}\n")
            except OSError:
                pass


class Facts:
    """A run's facts.json: a JSON object edited by dotted paths ('timestamps.end') and
    written whole after each change (or each batch of changes with update())."""

    def __init__(self, path, doc=None):
        self.path = path
        if doc is None:
            with open(path, encoding="utf-8") as fh:
                doc = json.load(fh)
        self.doc = doc

    def _set(self, dotted, value):
        node = self.doc
        keys = dotted.lstrip(".").split(".")
        for k in keys[:-1]:
            if not isinstance(node.get(k), dict):
                node[k] = {}
            node = node[k]
        node[keys[-1]] = value

    def get(self, dotted, default=None):
        node = self.doc
        for k in dotted.lstrip(".").split("."):
            if not isinstance(node, dict) or k not in node:
                return default
            node = node[k]
        return node

    def set(self, dotted, value):
        """Sets DOTTED to VALUE (any JSON value) and writes the file."""
        self._set(dotted, value)
        self.save()

    def update(self, values):
        """Sets each DOTTED: VALUE of the dict VALUES, then writes the file once."""
        for k, v in values.items():
            self._set(k, v)
        self.save()

    def save(self):
        atomic.write_text(self.path, json.dumps(self.doc, indent=2) + "\n")
