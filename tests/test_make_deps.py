#!/usr/bin/env python3
"""test_make_deps.py: `make` on a machine without a build package names it and says to run
`make deps` (issue 32; it used to stop at "common/server.h:16:10: fatal error: uv.h"). Runs
`make -n binaries` (nothing is built) with a pkg-config search path that hides one
module's .pc file, or with LLHTTP_INC pointing nowhere: make exits non-zero naming that
package's Debian name (and no other) and `make deps`; with everything there it names
nothing. Writes only in a temporary folder.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import tap_unittest  # noqa: E402

# pkg-config module -> the Debian package the message names (scripts/deps.sh BUILD_PKGS)
MODULES = {"libuv": "libuv1-dev", "ck": "libck-dev", "sqlite3": "libsqlite3-dev",
           "jansson": "libjansson-dev", "cmocka": "libcmocka-dev"}
DEBS = sorted(MODULES.values()) + ["node-llhttp"]


def pc_dirs():
    r = subprocess.run(["pkg-config", "--variable", "pc_path", "pkg-config"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=10)
    return [d for d in r.stdout.decode().strip().split(":") if os.path.isdir(d)]


def make_n(env_extra=None, args=()):
    """(exit status, stderr) of `make -n binaries` in the repository."""
    env = dict(os.environ, **(env_extra or {}))
    env.pop("MAKEFLAGS", None)
    r = subprocess.run(["make", "--no-print-directory", "-n", "binaries"] + list(args),
                       cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       timeout=120)
    return r.returncode, r.stderr.decode(errors="replace")


@unittest.skipUnless(shutil.which("pkg-config") and shutil.which("make"),
                     "needs make and pkg-config")
class TestMissing(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="test-make-deps-")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def pc_without(self, module):
        """A pkg-config search folder with every .pc file of this machine but module's."""
        for d in pc_dirs():
            for f in os.listdir(d):
                dst = os.path.join(self.dir, f)
                if f.endswith(".pc") and f != module + ".pc" and not os.path.exists(dst):
                    os.symlink(os.path.join(d, f), dst)
        return {"PKG_CONFIG_LIBDIR": self.dir, "PKG_CONFIG_PATH": ""}

    def assert_names_only(self, err, deb):
        self.assertIn("missing build packages: %s." % deb, err)
        self.assertIn("make deps", err)
        for other in DEBS:
            if other != deb:
                self.assertNotIn(other, err)

    def test_everything_there_names_nothing(self):
        rc, err = make_n()
        self.assertEqual(rc, 0, err[-500:])
        self.assertNotIn("missing build packages", err)

    def test_each_hidden_module_is_named_with_make_deps(self):
        problems = []  # one TAP line for all modules (tap_unittest prints no subtests)
        for module, deb in sorted(MODULES.items()):
            shutil.rmtree(self.dir)
            os.mkdir(self.dir)
            rc, err = make_n(self.pc_without(module))
            try:
                self.assertNotEqual(rc, 0)
                self.assert_names_only(err, deb)
            except AssertionError as e:
                problems.append("%s hidden: %s" % (module, str(e).splitlines()[0][:200]))
        self.assertEqual(problems, [])

    def test_missing_llhttp_is_named(self):
        rc, err = make_n(args=["LLHTTP_INC=" + os.path.join(self.dir, "none")])
        self.assertNotEqual(rc, 0)
        self.assert_names_only(err, "node-llhttp")

    def test_deps_and_clean_are_not_held(self):
        env = self.pc_without("libuv")
        for goal in ("deps", "clean"):
            r = subprocess.run(["make", "-n", goal], cwd=ROOT, env=dict(os.environ, **env),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
            self.assertEqual(r.returncode, 0, "%s: %s" % (goal, r.stderr.decode()[-300:]))


if __name__ == "__main__":
    tap_unittest.main(__name__)
