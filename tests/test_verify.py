#!/usr/bin/env python3
"""test_verify.py: unit tests of runner/analysis/verify.py (TAP): the mix files parse into the
request kinds CONTRACT.md names; against tests/helpers/contract_server.py, a server that keeps
the contract passes every case of s1, s2 and s3, and each deliberate breach (--lie) fails
exactly the cases that check it, named in words; one that sends 1xx interim responses (103
before every answer, 100 Continue before a body) passes, one that sends an unasked-for 101
fails; a server that does not answer fails every case within the budget. Loopback only, a
free port per server; a few seconds in all.
"""
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "runner"))

from analysis import servers, verify  # noqa: E402
import tap_unittest  # noqa: E402

HELPER = os.path.join(ROOT, "tests", "helpers", "contract_server.py")
MIX = {sc: os.path.join(ROOT, "loadgen-scripts", m) for sc, m in servers.MIXES.items()}
BEARER = "verify-token-0123456789"
SEED = 10000


class Helper:
    """tests/helpers/contract_server.py on a free port, with one --lie."""

    def __init__(self, lie, interim="none"):
        self.proc = subprocess.Popen([sys.executable, HELPER, "--port", "0", "--bearer", BEARER,
                                      "--seed-users", str(SEED), "--lie", lie, "--interim", interim],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        line = self.proc.stderr.readline()
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if not m:
            self.stop()
            raise RuntimeError(f"contract_server did not start: {line!r}")
        self.url = f"http://127.0.0.1:{m.group(1)}"

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        self.proc.stderr.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def run(url, scenario, budget=verify.BUDGET_S):
    return verify.run(verify.Ctx(url, MIX[scenario], BEARER, SEED, budget))


class Mix(unittest.TestCase):
    def test_kinds_of_the_mix_files(self):
        kinds = {sc: [line.kind() for line in verify.parse_mix(MIX[sc], BEARER)[1]] for sc in MIX}
        self.assertEqual(kinds, {"s1": ["ping"], "s2": ["user"], "s3": ["user", "list", "create"],
                                 "s4": ["user", "list", "create"]})
        headers, lines = verify.parse_mix(MIX["s2"], BEARER)
        self.assertEqual(headers, {"Authorization": f"Bearer {BEARER}"})
        self.assertEqual(lines[0].expect, 200)

    def test_instantiate_both_ends_and_seq(self):
        _, lines = verify.parse_mix(MIX["s3"], BEARER)
        seq = verify.Seq()
        self.assertEqual(verify.instantiate(lines[0], seq, "lo")[0], "/users/1")
        self.assertEqual(verify.instantiate(lines[0], seq, "hi")[0], "/users/10000")
        self.assertEqual(verify.instantiate(lines[1], seq, "hi")[0], "/users?limit=10&after=9990")
        _, b1 = verify.instantiate(lines[2], seq, "lo")
        _, b2 = verify.instantiate(lines[2], seq, "lo")
        self.assertRegex(b1, r'^\{"name":"lg-(\d+)","email":"lg-\1@example.com"\}$')
        self.assertNotEqual(b1, b2)

    def test_case_list_per_scenario(self):
        with Helper("none") as h:
            names = {sc: [n for n, _ in verify.cases(verify.Ctx(h.url, MIX[sc], BEARER, SEED))] for sc in MIX}
        self.assertEqual(len(names["s1"]), 3)   # GET /ping, HEAD /ping, keep-alive
        self.assertEqual(len(names["s2"]), 8)
        self.assertEqual(len(names["s3"]), 16)
        self.assertEqual(names["s3"], names["s4"])
        for sc in ("s2", "s3"):
            self.assertTrue(any(n.startswith("seeded users") for n in names[sc]))
            self.assertTrue(any(n.startswith("unknown id") for n in names[sc]))
            self.assertTrue(any("with a wrong token -> 401" in n for n in names[sc]))
            self.assertTrue(any("without Authorization -> 401" in n for n in names[sc]))
        self.assertTrue(names["s1"][-1].startswith("keep-alive: 100 requests"))


class Shapes(unittest.TestCase):
    def resp(self, body, ctype="application/json", status=200, headers=None):
        h = {"content-type": ctype}
        h.update(headers or {})
        return verify.Resp("1.1", status, h, body.encode())

    def test_user_shape(self):
        verify.check_shape("user", "/users/5", None, self.resp('{"id":5,"name":"user-5","email":"user-5@example.com"}'),
                           10, "w")
        for body in ('{"id":5,"name":"user-5"}', '{"id":"5","name":"user-5","email":"user-5@example.com"}',
                     '{"id":6,"name":"user-6","email":"user-6@example.com"}',
                     '{"id":5,"name":"user-5","email":"x@example.com"}',
                     '{"id":5,"name":"user-5","email":"user-5@example.com","extra":1}', 'not json'):
            with self.assertRaises(verify.Fail, msg=body):
                verify.check_shape("user", "/users/5", None, self.resp(body), 10, "w")
        with self.assertRaises(verify.Fail):
            verify.check_shape("user", "/users/5", None,
                               self.resp('{"id":5,"name":"user-5","email":"user-5@example.com"}', "text/plain"), 10, "w")

    def test_list_next(self):
        def page(ids, nxt):
            users = ",".join('{"id":%d,"name":"user-%d","email":"user-%d@example.com"}' % (i, i, i) for i in ids)
            return self.resp('{"users":[%s],"next":%s}' % (users, "null" if nxt is None else nxt))
        verify.check_shape("list", "/users?limit=2&after=3", None, page([4, 5], 5), 10, "w")
        verify.check_shape("list", "/users?limit=5&after=8", None, page([9, 10], None), 10, "w")
        verify.check_shape("list", "/users?limit=2&after=8", None, page([9, 10], None), 10, "w")
        verify.check_shape("list", "/users?limit=2&after=8", None, page([9, 10], 10), 10, "w")  # created users follow
        for bad in (page([4, 5], None), page([4, 5], 6), page([4], None), page([5, 4], 4), page([4, 5, 6], 6)):
            with self.assertRaises(verify.Fail):
                verify.check_shape("list", "/users?limit=2&after=3", None, bad, 10, "w")

    def test_create_location(self):
        body = '{"name":"a","email":"a@b"}'
        good = self.resp('{"id":11,"name":"a","email":"a@b"}', status=201, headers={"location": "/users/11"})
        self.assertEqual(verify.check_shape("create", "/users", body, good, 10, "w")["id"], 11)
        absolute = self.resp('{"id":11,"name":"a","email":"a@b"}', status=201,
                             headers={"location": "http://127.0.0.1:1/users/11"})
        verify.check_shape("create", "/users", body, absolute, 10, "w")
        for loc in (None, "/users/12", "/user/11"):
            r = self.resp('{"id":11,"name":"a","email":"a@b"}', status=201, headers={"location": loc} if loc else {})
            with self.assertRaises(verify.Fail):
                verify.check_shape("create", "/users", body, r, 10, "w")
        with self.assertRaises(verify.Fail):   # an id among the seeded ones
            verify.check_shape("create", "/users", body,
                               self.resp('{"id":3,"name":"a","email":"a@b"}', headers={"location": "/users/3"}), 10, "w")


class AgainstAServer(unittest.TestCase):
    def failed(self, lie, scenario, interim="none"):
        with Helper(lie, interim) as h:
            rep = run(h.url, scenario)
        for c in rep["cases"]:
            if not c["ok"]:
                self.assertTrue(c["why"], c["name"])   # a failure says why, in words
        return set(rep["failed"]), rep

    def test_a_server_that_keeps_the_contract_passes(self):
        for sc in ("s1", "s2", "s3"):
            bad, rep = self.failed("none", sc)
            self.assertEqual(bad, set(), (sc, [c for c in rep["cases"] if not c["ok"]]))
            self.assertTrue(rep["passed"])
            self.assertFalse(rep["metrics"])   # the helper has no /metrics
            self.assertIn("404", rep["metrics_note"])

    def test_interim_responses_are_skipped(self):
        # RFC 9110 15.2: 103 before every answer, 100 Continue before a body: still the contract
        for interim, scenarios in (("hints", ("s1", "s2", "s3")), ("continue", ("s3",))):
            for sc in scenarios:
                bad, rep = self.failed("none", sc, interim)
                self.assertEqual(bad, set(), (interim, sc, [c for c in rep["cases"] if not c["ok"]]))

    def test_an_unasked_for_101_fails_every_case(self):
        bad, rep = self.failed("switch-101", "s2")
        self.assertEqual(len(bad), len(rep["cases"]))
        self.assertTrue(all("101 Switching Protocols" in c["why"] for c in rep["cases"]))

    def test_a_mix_of_ones_own_checks_its_routes_only(self):
        # the bearer cases for the /users line only (/ping takes none); no list or POST case
        with tempfile.TemporaryDirectory() as d:
            mix = os.path.join(d, "checkout.mix")
            with open(mix, "w", encoding="utf-8") as fh:
                fh.write("header Authorization: Bearer ${BEARER}\n9 GET /users/{rand:1:9} - 200\n1 GET /ping - 200\n")
            with Helper("none") as h:
                rep = verify.run(verify.Ctx(h.url, mix, BEARER, SEED))
        names = [c["name"] for c in rep["cases"]]
        self.assertTrue(rep["passed"], [c for c in rep["cases"] if not c["ok"]])
        self.assertEqual(len([n for n in names if n.startswith("bearer:")]), 2, names)
        self.assertFalse(any("/ping" in n for n in names if n.startswith("bearer:")), names)

    def test_same_work_warnings(self):
        # CONTRACT.md section 7: warnings, never failures; none for a server that does the work
        _, rep = self.failed("none", "s2")
        self.assertEqual(rep["warnings"], [])
        bad, rep = self.failed("no-request-id", "s2")
        self.assertEqual(bad, set())
        self.assertEqual(len(rep["warnings"]), 2, rep["warnings"])
        self.assertTrue(all("X-Request-Id" in w for w in rep["warnings"]), rep["warnings"])
        bad, rep = self.failed("list-open", "s2")
        self.assertEqual(bad, set())
        self.assertEqual(len(rep["warnings"]), 1, rep["warnings"])
        self.assertRegex(rep["warnings"][0], r"^GET /users\?limit=1 without a token -> 200 \(want 401")
        with Helper("none") as h:
            ctx = verify.Ctx(h.url, MIX["s3"], BEARER, SEED)
            ctx.access_log = False
            rep = verify.run(ctx)
            self.assertEqual(rep["warnings"], ["its definition passes no {access_log}: no access-log line per "
                                               "/users request"])
            self.assertEqual(verify.run(verify.Ctx(h.url, MIX["s1"], BEARER, SEED))["warnings"], [])

    def expect(self, lie, scenario, *patterns):
        bad, rep = self.failed(lie, scenario)
        self.assertFalse(rep["passed"])
        for p in patterns:
            hits = [n for n in bad if re.search(p, n)]
            self.assertTrue(hits, f"{lie}: no failed case matches {p!r}; failed: {sorted(bad)}")
            bad -= set(hits)
        self.assertEqual(bad, set(), f"{lie}: other cases failed too")
        return rep

    def test_a_wrong_seeded_user(self):
        rep = self.expect("user-email", "s2", r"^mix line 3 .*hi end", r"^seeded users")
        why = [c["why"] for c in rep["cases"] if c["name"].startswith("seeded users")][0]
        self.assertIn("GET /users/10000", why)
        self.assertIn("someone-else@example.com", why)

    def test_any_token(self):
        self.expect("any-token", "s3", r"GET /users/\{rand.* with a wrong token", r"GET /users\?\.\.\. with a wrong token",
                    r"POST /users with a wrong token")

    def test_no_location(self):
        rep = self.expect("no-location", "s3", r"^mix line 6 \(POST")
        self.assertIn("Location None", [c["why"] for c in rep["cases"] if not c["ok"]][0])

    def test_head_with_a_body(self):
        self.expect("head-body", "s2", r"^HEAD /users/")

    def test_connection_close(self):
        self.expect("close", "s1", r"^keep-alive")

    def test_unknown_id_answered(self):
        self.expect("unknown-200", "s2", r"^unknown id")

    def test_list_next_off(self):
        self.expect("list-next", "s3", r"^mix line 5 .*lo end")

    def test_ping_type(self):
        self.expect("ping-type", "s1", r"^mix line 2 \(GET /ping\)")

    def test_nothing_listening(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        rep = run(f"http://127.0.0.1:{port}", "s2")
        self.assertEqual(len(rep["failed"]), len(rep["cases"]))
        self.assertTrue(all("cannot connect" in c["why"] for c in rep["cases"]))

    def test_a_silent_server_fails_within_the_budget(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(64)   # accepts in the kernel, never answers
        try:
            t0 = time.monotonic()
            rep = run(f"http://127.0.0.1:{s.getsockname()[1]}", "s3", budget=1.5)
            took = time.monotonic() - t0
        finally:
            s.close()
        self.assertLess(took, 4.0)
        self.assertEqual(len(rep["failed"]), len(rep["cases"]))
        self.assertTrue(any("budget" in c["why"] for c in rep["cases"]))

    def test_cli_exit_codes(self):
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "runner"))
        with Helper("unknown-200") as h:
            p = subprocess.run([sys.executable, "-m", "analysis", "verify", h.url, MIX["s2"], f"--bearer={BEARER}",
                                f"--seed-users={SEED}"], capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertRegex(p.stdout, r"(?m)^FAIL - unknown id: GET /users/\d+ with the bearer -> 404: .*want 404, got 200")
        self.assertRegex(p.stdout, r"(?m)^7 of 8 cases passed")
        p = subprocess.run([sys.executable, "-m", "analysis", "verify", "http://127.0.0.1:1", MIX["s2"]],
                           capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(p.returncode, 2)


if __name__ == "__main__":
    tap_unittest.main(__name__)
