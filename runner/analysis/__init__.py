"""analysis: everything the suite derives from what a run recorded, in one place (stdlib only).

result.json of a run is built from the raw facts runner.sh collected (result.py); the
validity flags and their thresholds live in rules.py; a batch folder is read by batch.py, its
plan from the server definitions by servers.py and matrix.py; each comparison's decision and
the overall verdict in verdict.py (its interval in stats.py); index.json and summary.md in
summary.py; report.html in report.py (its HTML and gnuplot helpers in render.py, number
formats in fmt.py); sweeps and scaling runs in sweep.py and scaling.py; the batch-to-batch
comparison in compare.py; run_all.sh's re-run rule in rounds.py. `python3 -m analysis
--help` (with runner/ on PYTHONPATH; the runner's shell wrappers set it) lists the commands.
Invariant: every figure printed anywhere is computed here, once; the leaf modules (rules,
fmt, render, stats, servers, rounds) import nothing above them.
"""
