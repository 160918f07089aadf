#!/usr/bin/env python3
"""test_atomic.py: unit tests of runner/analysis/atomic.py (TAP): outputs written whole or
not at all (a failed write leaves neither the new pair index.json + summary.md nor the old
one, nor a .tmp), the full-disk note (a 40 KB tmpfs when root; a counted skip otherwise), and
the failure summary.py gives a run that started but left no result.json.
Writes only to a temporary folder."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "runner"))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from analysis import atomic, summary  # noqa: E402
import tap_unittest  # noqa: E402


def read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


class TestWriteAll(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def p(self, name):
        return os.path.join(self.tmp, name)

    def test_writes_each_file_whole_and_no_tmp(self):
        atomic.write_all([(self.p("a.json"), "{}\n"), (self.p("b.md"), "# b\n")])
        self.assertEqual((read(self.p("a.json")), read(self.p("b.md"))), ("{}\n", "# b\n"))
        self.assertEqual(sorted(os.listdir(self.tmp)), ["a.json", "b.md"])

    def test_a_failed_write_leaves_neither_file_nor_the_old_ones(self):
        # the old pair from an earlier summary; the second new file cannot be written
        for name in ("index.json", "summary.md"):
            with open(self.p(name), "w", encoding="utf-8") as fh:
                fh.write("old\n")
        os.mkdir(self.p("summary.md.tmp"))        # its temporary file cannot be opened
        with self.assertRaises(OSError) as cm:
            atomic.write_all([(self.p("index.json"), "new\n"), (self.p("summary.md"), "new\n")])
        self.assertIn("summary.md.tmp failed", str(cm.exception))
        self.assertEqual(os.listdir(self.tmp), ["summary.md.tmp"], "stale or half-written files left")

    def test_full_note_is_empty_with_room(self):
        self.assertEqual(atomic.full_note(self.tmp), "")
        self.assertEqual(atomic.full_note(os.path.join(self.tmp, "not", "yet")), "")

    @unittest.skipUnless(os.geteuid() == 0, "not root: cannot mount a 40 KB tmpfs")
    def test_a_full_disk_is_named(self):
        mnt = self.p("full")
        os.mkdir(mnt)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=40k", "test-atomic", mnt]).returncode != 0:
            self.skipTest("mounting a tmpfs failed")
        try:
            with open(os.path.join(mnt, "old.json"), "w", encoding="utf-8") as fh:
                fh.write("old\n")
            with self.assertRaises(OSError) as cm:
                atomic.write_text(os.path.join(mnt, "old.json"), "x" * 200_000)
            self.assertRegex(str(cm.exception), r"writing .*old\.json failed: No space left on device "
                                                r"\(the file system of .* is full: \d+ KB free of 40 KB\)")
            self.assertEqual(os.listdir(mnt), [], "the old file or the .tmp was left")
        finally:
            subprocess.run(["umount", mnt])


class TestNoResult(unittest.TestCase):
    def test_a_started_run_without_result_is_told_from_one_never_started(self):
        tmp = tempfile.mkdtemp()
        try:
            os.mkdir(os.path.join(tmp, "actor-mem-s1"))
            self.assertEqual(summary._no_result(tmp, "actor-mem-s1"),
                             "no result.json (the run started but did not write it: see its runner.log)")
            self.assertEqual(summary._no_result(tmp, "async-mem-s1"),
                             "no result.json (runner.sh did not start the run)")
        finally:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    tap_unittest.main(__name__)
