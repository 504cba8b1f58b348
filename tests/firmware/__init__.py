"""The firmware's tests (firmware/ under CPython and real MicroPython, the simulator, flashing, the
HALs), with the scripts they hand to MicroPython beside them (core_tests.py, run.py, heap.py, ...:
not pytest modules) and their helpers in helpers.py."""
