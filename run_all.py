#!/usr/bin/env python3
"""frameval: framework evaluation reports from parameterized notebooks.

    python3 run_all.py            build what is needed, run the default matrix, write reports/default/report.html
    python3 run_all.py test       the test suite
    python3 run_all.py --help     every option

Needs only Python 3 to start: it builds its own environment (environment.yml)
in the per-user cache and re-executes inside it. The logic lives in frameval/.
"""
import sys

if sys.version_info < (3, 8):
    sys.exit("frameval needs Python 3.8 or newer to start")

from frameval.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
