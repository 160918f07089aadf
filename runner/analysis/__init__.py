"""analysis: everything the suite derives from what a run recorded, in one place (stdlib only).

result.json of a run is built from the raw facts runner.sh collected (result.py); the
validity flags and their thresholds live in rules.py; the per-scenario decision and the
overall verdict in verdict.py; index.json and summary.md in summary.py; report.html in
report.py; the batch-to-batch comparison in compare.py. `python3 -m analysis --help` (with
runner/ on PYTHONPATH; the runner's shell wrappers set it) lists the commands.
Invariant: every figure printed anywhere is computed here, once.
"""
