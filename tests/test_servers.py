#!/usr/bin/env python3
"""test_servers.py: unit tests of runner/analysis/servers.py (TAP): the shipped definitions
load; a definition using every placeholder expands exactly; unknown keys, placeholders and
scenarios, a lone brace, a bad signal or ready_path are refused naming the file; a name
defined twice across SERVER_DEFS folders names both files; env_args add arguments only when
their variable is set; plan() says what runner.sh needs; a mix file as a scenario of its
own (mix:PATH); the command line's exit codes.
Starts no server; writes only to a temporary folder.
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "runner"))

from analysis import matrix, servers  # noqa: E402
import tap_unittest  # noqa: E402

EVERY = '''description = "every placeholder"
scenarios = ["s1", "s4"]
command = ["{root}/bin/srv", "--build={build}", "--listen", "{host}:{port}", "-t", "{threads}",
           "--db", "{db}", "--token", "{bearer}", "--users", "{seed_users}", "--log", "{access_log}",
           "--dir", "{run_dir}", "--literal", "{{not a placeholder}}"]
ready_path = "/health"
stop_signal = "INT"
[env]
SRV_HOME = "{run_dir}/home"
SRV_PLAIN = "x"
[env_args]
SRV_WORKERS = ["--workers", "{value}", "--on={host}"]
'''
VALUES = {"root": "/r", "build": "/r/build", "host": "10.0.0.1", "port": "8080", "threads": "3",
          "db": "/run/server.db", "bearer": "tok", "seed_users": "77", "access_log": "/dev/null",
          "run_dir": "/run"}


class Defs(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="test_servers.")
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, text, folder=None):
        folder = folder or self.dir
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, name + ".toml")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        return path

    def refused(self, text, *words):
        path = self.write("bad", text)
        with self.assertRaises(servers.DefinitionError) as cm:
            servers.load_file(path)
        msg = str(cm.exception)
        self.assertIn(path, msg)
        for w in words:
            self.assertIn(w, msg)

    def test_shipped_definitions_load(self):
        defs = servers.load_all(server_defs="")
        for name in ("actor-mem", "async-mem", "actor-sqlite", "async-sqlite", "node-users", "nginx-ping"):
            self.assertIn(name, defs)
        self.assertEqual(defs["nginx-ping"].scenarios, ["s1"])
        self.assertEqual(defs["node-users"].scenarios, ["s1", "s2", "s3"])
        self.assertEqual(defs["async-sqlite"].scenarios, ["s4"])
        self.assertEqual(defs["actor-mem"].build, ["actor-server"])
        self.assertEqual(defs["node-users"].build, [])

    def test_every_placeholder_expands(self):
        srv = servers.load_file(self.write("every", EVERY))
        argv, env = servers.expand(srv, VALUES, variables={})
        self.assertEqual(argv, ["/r/bin/srv", "--build=/r/build", "--listen", "10.0.0.1:8080", "-t", "3",
                                "--db", "/run/server.db", "--token", "tok", "--users", "77", "--log",
                                "/dev/null", "--dir", "/run", "--literal", "{not a placeholder}"])
        self.assertEqual(env, {"SRV_HOME": "/run/home", "SRV_PLAIN": "x"})
        for p in servers.PLACEHOLDERS:
            self.assertTrue(srv.uses(p), p)
        self.assertEqual((srv.ready_path, srv.stop_signal, srv.description), ("/health", "INT", "every placeholder"))

    def test_env_args_only_when_set(self):
        srv = servers.load_file(self.write("every", EVERY))
        argv, _ = servers.expand(srv, VALUES, variables={"SRV_WORKERS": "4"})
        self.assertEqual(argv[-3:], ["--workers", "4", "--on=10.0.0.1"])
        for unset in ({}, {"SRV_WORKERS": ""}, {"OTHER": "4"}):
            argv, _ = servers.expand(srv, VALUES, variables=unset)
            self.assertEqual(argv[-1], "{not a placeholder}", unset)

    def test_builtin_env_args(self):
        defs = servers.load_all(server_defs="")
        argv, _ = servers.expand(defs["actor-mem"], VALUES, variables={"ACTOR_WORKERS": "2", "GROUP_COMMIT": "8"})
        self.assertEqual(argv[-4:], ["--workers", "2", "--group-commit", "8"])
        argv, _ = servers.expand(defs["async-mem"], VALUES, variables={"ACTOR_WORKERS": "2", "GROUP_COMMIT": "8"})
        self.assertNotIn("--workers", argv)
        self.assertNotIn("--group-commit", argv)

    def test_missing_value_is_an_error(self):
        srv = servers.load_file(self.write("every", EVERY))
        values = dict(VALUES)
        del values["port"]
        with self.assertRaises(servers.DefinitionError):
            servers.expand(srv, values, variables={})

    def test_unknown_key(self):
        self.refused('command = ["x"]\nscenarios = ["s1"]\nworkers = 2\n', "unknown key", "workers")

    def test_unknown_placeholder(self):
        self.refused('command = ["x", "{hostname}"]\nscenarios = ["s1"]\n', "unknown placeholder", "{hostname}")

    def test_value_outside_env_args(self):
        self.refused('command = ["x", "{value}"]\nscenarios = ["s1"]\n', "unknown placeholder", "{value}")

    def test_lone_brace(self):
        self.refused('command = ["x", "a{b"]\nscenarios = ["s1"]\n', "lone", "{{")

    def test_unknown_scenario(self):
        self.refused('command = ["x"]\nscenarios = ["s1", "s9"]\n', "unknown scenario 's9'")

    def test_scenario_twice(self):
        self.refused('command = ["x"]\nscenarios = ["s1", "s1"]\n', "twice")

    def test_required_keys(self):
        self.refused('scenarios = ["s1"]\n', "'command' is required")
        self.refused('command = ["x"]\n', "'scenarios' is required")
        self.refused('command = []\nscenarios = ["s1"]\n', "must not be empty")
        self.refused('command = "x --port {port}"\nscenarios = ["s1"]\n', "array of strings")

    def test_bad_signal_and_ready_path(self):
        self.refused('command = ["x"]\nscenarios = ["s1"]\nstop_signal = "SIGTERM"\n', "stop_signal")
        self.refused('command = ["x"]\nscenarios = ["s1"]\nstop_signal = "KILL"\n', "stop_signal")
        self.refused('command = ["x"]\nscenarios = ["s1"]\nready_path = "ping"\n', "ready_path")
        self.refused('command = ["x"]\nscenarios = ["s1"]\nready_path = "/a b"\n', "ready_path")

    def test_bad_env_and_build(self):
        self.refused('command = ["x"]\nscenarios = ["s1"]\n[env]\n"A-B" = "1"\n', "env")
        self.refused('command = ["x"]\nscenarios = ["s1"]\n[env]\nA = 1\n', "env")
        self.refused('command = ["x"]\nscenarios = ["s1"]\nbuild = ["../x"]\n', "build")
        self.refused('command = ["x"]\nscenarios = ["s1"]\n[env_args]\nW = "--w"\n', "env_args")

    def test_not_toml(self):
        self.refused('command = ["x"\n', "not valid TOML")

    def test_bad_name(self):
        path = self.write("bad name", 'command = ["x"]\nscenarios = ["s1"]\n')
        with self.assertRaises(servers.DefinitionError) as cm:
            servers.load_file(path)
        self.assertIn("may hold only", str(cm.exception))

    def test_duplicate_name_across_folders(self):
        a = self.write("twin", 'command = ["a"]\nscenarios = ["s1"]\n', os.path.join(self.dir, "a"))
        b = self.write("twin", 'command = ["b"]\nscenarios = ["s1"]\n', os.path.join(self.dir, "b"))
        with self.assertRaises(servers.DefinitionError) as cm:
            servers.load_all(server_defs=f"{os.path.dirname(a)}:{os.path.dirname(b)}")
        msg = str(cm.exception)
        self.assertIn("'twin' is defined twice", msg)
        self.assertIn(a, msg)
        self.assertIn(b, msg)

    def test_duplicate_of_a_builtin(self):
        path = self.write("async-mem", 'command = ["x"]\nscenarios = ["s1"]\n')
        with self.assertRaises(servers.DefinitionError) as cm:
            servers.load_all(server_defs=self.dir)
        self.assertIn(os.path.join(ROOT, "servers", "async-mem.toml"), str(cm.exception))
        self.assertIn(path, str(cm.exception))

    def test_folder_named_twice_is_read_once(self):
        self.write("solo", 'command = ["x"]\nscenarios = ["s1"]\n')
        defs = servers.load_all(server_defs=f"{self.dir}:{self.dir}/:{os.path.join(ROOT, 'servers')}")
        self.assertIn("solo", defs)

    def test_missing_folder(self):
        with self.assertRaises(servers.DefinitionError) as cm:
            servers.load_all(server_defs=os.path.join(self.dir, "nope"))
        self.assertIn("no such folder", str(cm.exception))

    def test_unknown_server(self):
        defs = servers.load_all(server_defs="")
        with self.assertRaises(servers.DefinitionError) as cm:
            servers.get(defs, "urus-mem")
        self.assertIn("unknown server 'urus-mem'", str(cm.exception))
        self.assertIn("async-mem", str(cm.exception))

    def test_plan(self):
        self.write("every", EVERY)
        defs = servers.load_all(server_defs=self.dir)
        p = servers.plan(defs, "every", "s4")
        with open(defs["every"].path, "rb") as fh:
            self.assertEqual(p["sha256"], hashlib.sha256(fh.read()).hexdigest())
        self.assertEqual((p["file"], p["ours"], p["store"], p["mix"], p["program"], p["env_args"]),
                         (defs["every"].path, False, "sqlite", "s3_mixed.mix", "srv", ["SRV_WORKERS"]))
        with self.assertRaises(servers.DefinitionError) as cm:
            servers.plan(defs, "every", "s2")
        self.assertIn("does not serve s2", str(cm.exception))
        with self.assertRaises(servers.DefinitionError):
            servers.plan(defs, "every", "s5")
        a = servers.plan(defs, "async-mem", "s1")
        self.assertEqual((a["file"], a["ours"], a["store"], a["mix"], a["build"]),
                         ("servers/async-mem.toml", True, "memory", "s1_ping.mix", ["async-server"]))
        self.assertEqual(servers.plan(defs, "nginx-ping", "s1")["store"], None)
        self.assertEqual(servers.plan(defs, "actor-sqlite", "s4")["store"], "sqlite")

    def test_matrix_pair_with_a_peer(self):
        defs = servers.load_all(server_defs="")
        m = matrix.build(defs, pairs=["async-mem,nginx-ping"])
        self.assertEqual([g["scenario"] for g in m["groups"]], ["s1"])
        self.assertEqual(m["groups"][0]["servers"], ["async-mem", "nginx-ping"])
        m = matrix.build(defs, pairs=["node-users,async-mem"])
        self.assertEqual([g["scenario"] for g in m["groups"]], ["s1", "s2", "s3"])


    def test_a_server_already_running(self):
        # url and no command: no start, no stop; nothing of a command may come with it
        self.write("up", 'scenarios = ["s1", "s2"]\nurl = "http://10.0.0.5:8080"\n')
        defs = servers.load_all(server_defs=self.dir)
        p = servers.plan(defs, "up", "s2")
        self.assertEqual((p["url"], p["program"], p["uses_access_log"], p["build_command"]),
                         ("http://10.0.0.5:8080", None, None, False))
        self.assertIsNone(servers.plan(defs, "async-mem", "s1")["url"])
        for text, words in (('scenarios = ["s1"]\n', "'command' is required"),
                            ('scenarios = ["s1"]\ncommand = ["x"]\nurl = "http://h:1"\n', "'command' is required"),
                            ('scenarios = ["s1"]\nurl = "https://h:1"\n', "url must be http://HOST:PORT"),
                            ('scenarios = ["s1"]\nurl = "http://h:70000"\n', "url must be http://HOST:PORT"),
                            ('scenarios = ["s1"]\nurl = "http://h:1"\n[env]\nA = "b"\n', "takes no env")):
            path = self.write("bad", text)
            with self.assertRaises(servers.DefinitionError, msg=text) as cm:
                servers.load_file(path)
            self.assertIn(words, str(cm.exception), text)

    def test_mix_scenario_of_ones_own(self):
        # a mix file is a scenario of its own, named by its stem; a server serves it when the
        # scenarios it lists cover every route the mix uses, or when it lists the mix itself
        mixes = os.path.join(self.dir, "mixes")
        os.makedirs(mixes)
        for name, text in (("checkout", "header Authorization: Bearer ${BEARER}\n9 GET /users/{rand:1:9} - 200\n"
                                        "1 GET /ping - 200\n"),
                           ("cart", "1 GET /cart - 200\n"), ("s2", "1 GET /ping - 200\n")):
            with open(os.path.join(mixes, name + ".mix"), "w", encoding="utf-8") as fh:
                fh.write(text)
        self.write("carts", 'scenarios = ["s1", "mix:mixes/cart.mix"]\ncommand = ["/bin/srv"]\n')
        defs = servers.load_all(server_defs=self.dir)
        self.assertEqual(defs["carts"].scenarios, ["s1", "cart"])
        p = servers.plan(defs, "node-users", "mix:" + os.path.join(mixes, "checkout.mix"))
        self.assertEqual((p["scenario"], p["mix"]), ("checkout", os.path.join(mixes, "checkout.mix")))
        self.assertEqual(servers.plan(defs, "carts", "cart")["mix"], os.path.join(mixes, "cart.mix"))
        with self.assertRaises(servers.DefinitionError) as cm:   # s1 only: no /users
            servers.plan(defs, "nginx-ping", "checkout")
        self.assertIn("does not serve checkout", str(cm.exception))
        with self.assertRaises(servers.DefinitionError):          # a route outside the contract
            servers.plan(defs, "async-mem", "cart")
        with self.assertRaises(servers.DefinitionError) as cm:    # a stem that is a built-in name
            servers.plan(defs, "async-mem", "mix:" + os.path.join(mixes, "s2.mix"))
        self.assertIn("must be", str(cm.exception))
        m = matrix.build(defs, pairs=["actor-mem,async-mem"], scenarios="mix:%s,s1" % os.path.join(mixes, "checkout.mix"))
        self.assertEqual([g["scenario"] for g in m["groups"]], ["s1", "checkout"])
        self.assertEqual(m["scenario_mixes"], {"checkout": os.path.join(mixes, "checkout.mix")})
        self.assertEqual(servers.custom_mix("nope", env={"SCENARIO_MIXES": ""}), None)

    def test_matrix_selection_errors(self):
        defs = servers.load_all(server_defs="")
        for kw, words in ((dict(pairs=["async-mem,nginx-ping"], servers="async-mem"), "--servers without --baseline"),
                          (dict(baseline="async-mem"), "--baseline needs --servers"),
                          (dict(pairs=["async-mem,async-mem"]), "named twice"),
                          (dict(pairs=["nginx-ping,async-sqlite"]), "share no selected scenario"),
                          (dict(pairs=["async-mem,nginx-ping"], scenarios="s2"), "share no selected scenario")):
            with self.assertRaises(servers.DefinitionError, msg=kw) as cm:
                matrix.build(defs, **kw)
            self.assertIn(words, str(cm.exception), kw)

    def test_pairs_file_rules(self):
        defs = servers.load_all(server_defs="")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "pairs.toml")
            for text, words in (('[[pair]]\ncandidate = "async-mem"\nbaseline = "async-mem"\n', "with itself"),
                                ('[[pair]]\ncandidate = "node-users"\nbaseline = "async-mem"\nscenarios = ["s4"]\n',
                                 "do not both serve s4"),
                                ('decides = ["s1"]\n', "no [[pair]]")):
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(text)
                with self.assertRaises(servers.DefinitionError) as cm:
                    servers.load_pairs(path, defs)
                self.assertIn(words, str(cm.exception))
                self.assertIn(path, str(cm.exception))


class Cli(unittest.TestCase):
    def run_cli(self, *args, env=None):
        e = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "runner"), SERVER_DEFS="")
        e.update(env or {})
        return subprocess.run([sys.executable, "-m", "analysis", *args], capture_output=True, text=True, env=e,
                              timeout=30)

    def test_server_plan(self):
        p = self.run_cli("server-plan", "node-users", "s2")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout)["mix"], "s2_user_get.mix")
        p = self.run_cli("server-plan", "nginx-ping", "s2")
        self.assertEqual(p.returncode, 2)
        self.assertIn("nginx-ping does not serve s2", p.stderr)
        p = self.run_cli("server-plan", "nope", "s1")
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown server 'nope'", p.stderr)

    def test_server_run(self):
        p = self.run_cli("server-run", "actor-mem", *[f"{k}={v}" for k, v in VALUES.items()],
                         env={"ACTOR_WORKERS": "3"})
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["command"][0], "/r/build/actor-server")
        self.assertEqual(doc["command"][-2:], ["--workers", "3"])
        self.assertEqual(doc["env"], {})

    def test_servers_listing_and_bad_defs(self):
        p = self.run_cli("servers")
        self.assertEqual(p.returncode, 0, p.stderr)
        names = [line.split("\t")[0] for line in p.stdout.splitlines()]
        self.assertEqual(names, sorted(names))
        self.assertIn("nginx-ping", names)
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "x.toml"), "w", encoding="utf-8") as fh:
                fh.write('command = ["x"]\nscenarios = ["s7"]\n')
            p = self.run_cli("servers", env={"SERVER_DEFS": d})
            self.assertEqual(p.returncode, 2)
            self.assertIn("unknown scenario 's7'", p.stderr)


if __name__ == "__main__":
    tap_unittest.main(__name__)
