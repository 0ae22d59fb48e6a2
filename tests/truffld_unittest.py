"""Runs a Python test file's unittest cases so that ctest can tell a skip from a pass.

unittest.main() exits 0 when every test was skipped, which ctest reports as PASS. main() here
lists every skipped test with its reason ("SKIPPED: test id: reason"), then exits
  0   at least one test ran and all that ran passed,
  77  every test was skipped (the ctest entries set SKIP_RETURN_CODE 77: reported as skipped),
  1   a test failed or errored, or nothing was found to run.
A missing test dependency (python3-jsonschema, ...) must fail a test, never skip it: use
require() to import one.
Usage, at the end of a test file:  truffld_unittest.main()
"""

import importlib
import sys
import unittest

SKIP_RETURN_CODE = 77


def require(module, package):
    """Imports `module`; a missing one is an error naming the Debian package to install."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise AssertionError("test dependency missing: %s (install the Debian package %s; "
                             "tools/bootstrap.sh lists them)" % (e, package)) from e


def main():
    program = unittest.main(exit=False)
    result = program.result
    for test, reason in result.skipped:
        print("SKIPPED: %s: %s" % (test.id(), reason))
    sys.stdout.flush()
    if not result.wasSuccessful() or result.testsRun == 0:
        sys.exit(1)
    if len(result.skipped) == result.testsRun:
        print("all %d test(s) skipped" % result.testsRun)
        sys.exit(SKIP_RETURN_CODE)
    sys.exit(0)
