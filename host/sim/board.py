"""What the ESP32 port does at reset, for the simulator: run boot.py, then main.py, from the flash folder.

MicroPython's ports execute both files by name, as `__main__`, compiling them
on the spot; so does this. The simulator starts it with the flash folder as
the current directory and main.py's arguments after its own name. It runs on
the unix port (and on CPython for `--python`); it is never put on a robot.
"""

try:
    # The board's own `machine` is there before boot.py runs, as it is built into a robot's firmware: imported
    # first, its double sits at the bottom of the heap on every boot alike (the simulator adds its size to the
    # heap, runner.doubles_heap), not only on the trial boots whose watchdog needs it.
    import machine  # noqa: F401
except ImportError:  # CPython (--python)
    pass


def run(name):
    with open(name) as handle:
        code = handle.read()
    exec(code, {"__name__": "__main__", "__file__": name})


run("boot.py")
run("main.py")
