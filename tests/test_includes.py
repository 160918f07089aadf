#!/usr/bin/env python3
"""test_includes.py: scripts/check_includes.py (TAP): the house keeps its include rules (no
circle between modules, each folder of common/ on the layers below it only, actor/ on
common/base/ only, one spelling), and the checker finds each kind of breach in a small
tree built in a temporary git checkout (removed afterwards)."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import tap_unittest  # noqa: E402

CHECK = os.path.join(ROOT, "scripts", "check_includes.py")


def run_check(cwd):
    return subprocess.run([sys.executable, CHECK], cwd=cwd, capture_output=True, text=True)


class TheHouse(unittest.TestCase):
    def test_house_keeps_the_rules(self):
        r = run_check(ROOT)
        self.assertEqual(r.stdout, "")
        self.assertEqual(r.returncode, 0)


class Breaches(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="test_includes.")
        subprocess.run(["git", "init", "-q", self.tmp], check=True)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def write(self, path, *includes):
        full = os.path.join(self.tmp, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as f:
            f.write("".join(f'#include "{i}"\n' for i in includes))

    def test_circle_between_modules(self):
        self.write("actor/a.h")
        self.write("actor/a.c", "a.h", "b.h")
        self.write("actor/b.h")
        self.write("actor/b.c", "b.h", "a.h")
        r = run_check(self.tmp)
        self.assertEqual(r.returncode, 1)
        self.assertIn("round a circle: actor/a, actor/b", r.stdout)

    def test_header_only_files_are_not_modules(self):
        # a private header shared by two files (like common/net/loop.h) is no circle
        self.write("common/net/loop.h", "server.h")
        self.write("common/net/server.h")
        self.write("common/net/server.c", "server.h", "loop.h")
        r = run_check(self.tmp)
        self.assertEqual((r.returncode, r.stdout), (0, ""))

    def test_lower_layer_includes_higher(self):
        self.write("common/net/conn.h")
        self.write("common/base/util.c", "common/net/conn.h")
        r = run_check(self.tmp)
        self.assertEqual(r.returncode, 1)
        self.assertIn("common/base/util.c: includes common/net/conn.h", r.stdout)

    def test_actor_on_base_only(self):
        self.write("common/http/request.h")
        self.write("actor/sched.c", "common/http/request.h")
        r = run_check(self.tmp)
        self.assertEqual(r.returncode, 1)
        self.assertIn("actor/ may include only common/base", r.stdout)

    def test_own_folder_by_bare_name(self):
        self.write("common/base/util.h")
        self.write("common/base/gate.c", "common/base/util.h")
        r = run_check(self.tmp)
        self.assertEqual(r.returncode, 1)
        self.assertIn('include it as "util.h"', r.stdout)


if __name__ == "__main__":
    tap_unittest.main(__name__)
