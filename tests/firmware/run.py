"""Run core_tests.py under MicroPython: `micropython run.py` with firmware/ on MICROPYPATH.

Prints one line per failure and a summary "N passed, M failed"; exits 1 on any failure.
"""

import sys

import core_tests


def main():
    passed, failed = 0, 0
    for name in sorted(dir(core_tests)):
        if not name.startswith("test_"):
            continue
        try:
            getattr(core_tests, name)()
            passed += 1
        except Exception as failure:
            failed += 1
            print("FAIL", name, repr(failure))
            if hasattr(sys, "print_exception"):
                sys.print_exception(failure)
    print(passed, "passed,", failed, "failed")
    sys.exit(1 if failed else 0)


main()
