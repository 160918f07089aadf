"""tap_unittest.py: runs a module's unittest cases with one TAP line per test, for the
Python unit tests (tests/test_*.py; tests/run.sh counts the lines). Not a test itself.
"""
import os
import sys
import unittest


class TapResult(unittest.TextTestResult):
    """Prints one TAP line per test: ok, not ok, or ok with a "# SKIP reason" directive
    (tests/run.sh counts skips). expectedFailure is refused: a test that passes by failing
    cannot fail."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.n = 0

    def _tap(self, test, ok, detail=""):
        self.n += 1
        print(f"{'ok' if ok else 'not ok'} {self.n} - {test.id().split('.', 1)[1]}{detail}", flush=True)

    def addSuccess(self, test):
        super().addSuccess(test)
        self._tap(test, True)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._tap(test, False, ": " + self._exc_info_to_string(err, test).strip().splitlines()[-1])

    def addError(self, test, err):
        super().addError(test, err)
        self._tap(test, False, ": " + self._exc_info_to_string(err, test).strip().splitlines()[-1])

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._tap(test, True, " # SKIP " + " ".join(str(reason).split()))

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._tap(test, False, ": expected failure (a test that does not test; remove the decorator)")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._tap(test, False, ": unexpected success")


def main(module_name):
    """Runs every test case of the module named module_name (pass __name__), TAP on stdout,
    tracebacks on stderr, the plan line last; exits 0 when all passed, else 1."""
    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[module_name])
    with open(os.devnull, "w") as devnull:
        res = unittest.TextTestRunner(stream=devnull, resultclass=TapResult, verbosity=0).run(suite)
    for _, tb in res.failures + res.errors:
        sys.stderr.write(tb)
    print(f"1..{res.n}")
    sys.exit(0 if res.wasSuccessful() and not res.expectedFailures else 1)
