#!/usr/bin/env python3
"""test_ran.py: unit tests of runner/analysis/ran.py (TAP): what ran is recorded: the program
(resolved on PATH) and each script argument with its sha256, the run's data files left out,
the version from the definition's command or the default one, and summary.md's "What ran"
table with each server's same-work warnings once. Temporary files only; under a second.
"""
import hashlib
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "runner"))

from analysis import ran, servers  # noqa: E402
import tap_unittest  # noqa: E402


class Describe(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.script = os.path.join(self.tmp.name, "server.py")
        with open(self.script, "w", encoding="utf-8") as fh:
            fh.write("print('hi')\n")
        self.log = os.path.join(self.tmp.name, "access.log")
        open(self.log, "w").close()

    def tearDown(self):
        self.tmp.cleanup()

    def test_program_script_and_version(self):
        d = ran.describe(["python3", self.script, "--log", self.log], skip=(self.log,))
        self.assertTrue(os.path.isabs(d["program"]) and d["program"].endswith("python3"), d)
        with open(d["program"], "rb") as fh:
            self.assertEqual(d["program_sha256"], hashlib.sha256(fh.read()).hexdigest())
        want = hashlib.sha256(b"print('hi')\n").hexdigest()
        self.assertEqual(d["scripts"], [{"path": self.script, "sha256": want}])   # not the log
        self.assertRegex(d["version"], r"^Python 3\.\d+")

    def test_the_definitions_version_command_wins(self):
        d = ran.describe(["/bin/true"], version_command=["echo", "mine 1.2.3"])
        self.assertEqual(d["version"], "mine 1.2.3")
        self.assertEqual(ran.describe(["/bin/true"], version_command=["false"])["version"], None)
        self.assertIsNone(ran.describe(["no-such-program-here"])["program"])

    def test_definition_key_version(self):
        path = os.path.join(self.tmp.name, "x.toml")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write('scenarios = ["s1"]\ncommand = ["/bin/x", "{port}"]\nversion = ["/bin/x", "--v", "{root}"]\n')
        srv = servers.load_file(path)
        self.assertEqual(servers.version_argv(srv, {"root": "/r"}), ["/bin/x", "--v", "/r"])
        with open(path, "w", encoding="utf-8") as fh:
            fh.write('scenarios = ["s1"]\ncommand = ["/bin/x"]\nversion = ["{nope}"]\n')
        with self.assertRaises(servers.DefinitionError):
            servers.load_file(path)


class Summary(unittest.TestCase):
    def test_section_and_markdown(self):
        ran_doc = {"program": "/usr/bin/node", "program_sha256": "ab" * 32,
                   "scripts": [{"path": "/x/server.js", "sha256": "cd" * 32}], "version": "v20"}
        runs = [{"server": "node-users", "config": {"server_definition": {"ran": ran_doc},
                                                   "verify_warnings": ["w1"]}},
                {"server": "node-users", "config": {"verify_warnings": ["w1", "w2"]}},
                {"server": "async-mem", "config": {}}]
        sec = ran.section(runs)
        self.assertEqual([r["server"] for r in sec], ["async-mem", "node-users"])
        self.assertEqual(sec[1]["warnings"], ["w1", "w2"])
        self.assertEqual(sec[1]["version"], "v20")
        md = "\n".join(ran.markdown_lines({"servers_ran": sec}))
        self.assertIn("| node-users | /usr/bin/node | abababababab | server.js cdcdcdcdcdcd | v20 | w1; w2 |", md)
        self.assertIn("| async-mem | ? | ? | - | not known | no warning |", md)
        self.assertEqual(ran.markdown_lines({}), [])


if __name__ == "__main__":
    tap_unittest.main(__name__)
