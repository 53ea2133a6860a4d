#!/usr/bin/env python3
"""Runs the Python client's tests (tests/python/test_*.py) against a real
tickd ($BUILD/tickd, as the integration tests) and prints a summary line in
Check's format, so make check reads the same for every suite:

    100%: Checks: 46, Failures: 0, Errors: 0

Exit status 0 when every test passed (skipped ones are listed with why).
"""

import os
import sys
import unittest

sys.dont_write_bytecode = True  # nothing written into the source tree
os.environ["PYTHONDONTWRITEBYTECODE"] = "1"

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    if sys.version_info < (3, 9):
        print(f"tests/python: Python 3.9 or later is needed, this is {sys.version.split()[0]}")
        return 1
    suite = unittest.defaultTestLoader.discover(HERE, pattern="test_*.py", top_level_dir=HERE)
    result = unittest.TextTestRunner(stream=sys.stdout, verbosity=1).run(suite)
    for test, why in result.skipped:
        print(f"skipped: {test.id()}: {why}")
    run = result.testsRun - len(result.skipped)
    failures, errors = len(result.failures), len(result.errors)
    passed = run - failures - errors
    percent = 100 * passed // run if run else 0
    print(f"{percent}%: Checks: {run}, Failures: {failures}, Errors: {errors}")
    return 0 if result.wasSuccessful() and run > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
