#!/usr/bin/env python3
"""instr_client.py: the fixed-count client of bench/instr-per-req.sh; the code is the
analysis package's runner/analysis/reqclient.py (shared with the batch's cost account), run
from here so that bench/ keeps its command line. See that module for the modes."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "runner"))
from analysis import reqclient  # noqa: E402

if __name__ == "__main__":
    sys.exit(reqclient.main())
