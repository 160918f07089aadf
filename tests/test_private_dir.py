#!/usr/bin/env python3
"""test_private_dir.py: scripts/fresh-check.sh works as root only in a folder no other user
could have prepared (issue 32): scripts/private-dir.sh private_dir_claim makes an absent
folder root's with mode 0700 and accepts such a folder, and refuses one owned by another
user, one with another mode, a symbolic link, and one under a folder another user owns or
may write without the sticky bit; fresh-check.sh given a folder another user made stops
(exit 3) before it writes anything there. Needs root (chown to uid 65534): without it the
cases are skipped. Writes only in a temporary folder; installs and mounts nothing.
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

OTHER_UID = 65534  # nobody


def claim(path):
    """(exit status, stderr) of private_dir_claim PATH."""
    r = subprocess.run(["bash", "-c", 'set -euo pipefail; source scripts/private-dir.sh; '
                        'private_dir_claim "$1"', "claim", path], cwd=ROOT,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    return r.returncode, r.stderr.decode(errors="replace")


@unittest.skipUnless(os.geteuid() == 0, "needs root (chown to another user)")
class TestClaim(unittest.TestCase):
    def setUp(self):
        # under a root-owned 0755 folder: private_dir_claim checks every folder above
        self.top = tempfile.mkdtemp(prefix="test-private-dir-")
        os.chmod(self.top, 0o755)

    def tearDown(self):
        shutil.rmtree(self.top)

    def path(self, name):
        return os.path.join(self.top, name)

    def test_absent_is_made_root_0700(self):
        p = self.path("fresh")
        rc, err = claim(p)
        self.assertEqual(rc, 0, err)
        st = os.lstat(p)
        self.assertEqual((st.st_uid, st.st_mode & 0o7777), (0, 0o700))

    def test_root_0700_is_accepted(self):
        p = self.path("mine")
        os.mkdir(p, 0o700)
        self.assertEqual(claim(p)[0], 0)

    def test_other_users_folder_is_refused(self):
        p = self.path("theirs")
        os.mkdir(p, 0o700)
        os.chown(p, OTHER_UID, OTHER_UID)
        rc, err = claim(p)
        self.assertEqual(rc, 1)
        self.assertIn("owned by uid %d" % OTHER_UID, err)

    def test_root_folder_open_to_others_is_refused(self):
        p = self.path("open")
        os.mkdir(p)
        os.chmod(p, 0o777)
        rc, err = claim(p)
        self.assertEqual(rc, 1)
        self.assertIn("mode 777", err)

    def test_symbolic_link_is_refused(self):
        target = self.path("target")
        os.mkdir(target, 0o700)
        link = self.path("link")
        os.symlink(target, link)
        rc, err = claim(link)
        self.assertEqual(rc, 1)
        self.assertIn("symbolic link", err)

    def test_under_a_folder_others_may_write_is_refused(self):
        parent = self.path("shared")
        os.mkdir(parent)
        os.chmod(parent, 0o777)  # no sticky bit: anybody may rename what is in it
        p = os.path.join(parent, "mine")
        os.mkdir(p, 0o700)
        rc, err = claim(p)
        self.assertEqual(rc, 1)
        self.assertIn(parent, err)

    def test_under_a_sticky_folder_is_accepted(self):
        parent = self.path("sticky")
        os.mkdir(parent)
        os.chmod(parent, 0o1777)  # as /var/tmp
        self.assertEqual(claim(os.path.join(parent, "fresh"))[0], 0)

    def test_under_another_users_folder_is_refused(self):
        parent = self.path("home")
        os.mkdir(parent, 0o755)
        os.chown(parent, OTHER_UID, OTHER_UID)
        rc, err = claim(os.path.join(parent, "fresh"))
        self.assertEqual(rc, 1)
        self.assertIn("owned by uid %d" % OTHER_UID, err)

    def test_fresh_check_stops_before_writing_in_a_prepared_folder(self):
        p = self.path("prepared")
        os.mkdir(p, 0o755)
        os.chown(p, OTHER_UID, OTHER_UID)
        env = dict(os.environ, FRESH_DIR=p, FRESH_MIRROR="http://127.0.0.1:9/debian",
                   FRESH_TIMEOUT="5")
        r = subprocess.run([os.path.join(ROOT, "scripts", "fresh-check.sh"), "--cases=root"],
                           cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=120)
        err = r.stderr.decode(errors="replace")
        self.assertEqual(os.listdir(p), [], "fresh-check.sh wrote in a folder uid %d made: %s"
                         % (OTHER_UID, err[-500:]))
        self.assertEqual(r.returncode, 3, err[-500:])
        self.assertIn("FRESH_DIR refused", err)


if __name__ == "__main__":
    tap_unittest.main(__name__)
