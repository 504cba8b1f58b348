"""The board under every HAL: machine.WDT and machine.reset(), as the ESP32-S3 port has them.

machine.py (the double of upstream `machine`) takes both from here. Under the
fake HAL this module alone is the board's `machine` (host/sim/runner.py stages
it under that name): the firmware's loader needs only the watchdog and a reset,
and loading the whole double with its argument checking (_double.py) into a
256K heap cost ~12 KB of it on every trial boot, where a robot's own `machine`
is built in and costs nothing. So this module is small and imports no other
double: it writes its journal lines itself, in _double.py's format.

From the MicroPython docs: machine.WDT.rst (WDT(id=0, timeout=5000); feed();
it cannot be stopped) and machine.rst's reset() (journalled; then the process
exits 5, which the simulator takes for a reset and starts the board again).
"""

import json
import os
import sys
import time

FOLDER = os.getenv("SOULSTACK_DOUBLES") or ""


def _record(call, fields):
    """One journal line, as _double.record writes it (the file is opened per line: these are rare)."""
    if not FOLDER:
        return
    entry = {"call": call}
    entry.update(fields)
    with open(FOLDER + "/journal", "a") as journal:
        journal.write(json.dumps(entry) + "\n")


def _world(name):
    try:
        with open(FOLDER + "/" + name) as handle:
            return handle.read().split()[0]
    except (OSError, IndexError):
        return ""


# The watchdog itself is the simulator's (runner.py), as the chip's is outside the CPU: WDT() writes the timeout to
# the world file `wdt.armed`, and feeding bumps a count in `wdt.fed`, written at most every quarter timeout (a frame's
# feed is many times a second). A board whose count stops for the timeout is reset by the simulator.
_watch = {"timeout": 0, "fed": 0, "written_at": 0}


def _write(name, text):
    if not FOLDER:
        return
    with open(FOLDER + "/" + name + ".new", "w") as handle:
        handle.write(text)
    os.rename(FOLDER + "/" + name + ".new", FOLDER + "/" + name)


def _fed(force=False):
    now = time.ticks_ms()
    if not force and time.ticks_diff(now, _watch["written_at"]) < _watch["timeout"] // 4:
        return
    _watch["fed"] += 1
    _watch["written_at"] = now
    _write("wdt.fed", str(_watch["fed"]))


class WDT:
    def __init__(self, *args, **kwargs):
        # The binding's arguments (machine_wdt.c): id and timeout, both ints, positional or by name.
        if len(args) > 2:
            raise TypeError("WDT() takes at most 2 positional arguments, got " + str(len(args)))
        parsed = {}
        for name, value in zip(("id", "timeout"), args):
            parsed[name] = value
        for name in kwargs:
            if name not in ("id", "timeout"):
                raise TypeError("WDT() got an unexpected keyword argument '" + name + "'")
            if name in parsed:
                raise TypeError("WDT() got argument '" + name + "' twice")
            parsed[name] = kwargs[name]
        for name in parsed:
            if not isinstance(parsed[name], int):
                raise TypeError("WDT() argument '" + name + "' must be int, not " + type(parsed[name]).__name__)
        _record("WDT", parsed)
        if _world("wdt") == "fail":  # e.g. the task watchdog already configured by the build
            raise OSError("WDT: ESP_ERR_INVALID_STATE")
        if parsed.get("id", 0) != 0:
            raise ValueError("WDT: only id 0 exists")
        if parsed.get("timeout", 5000) <= 0:
            raise ValueError("WDT timeout too short")
        # ESP32: one task watchdog; a second WDT() sets its timeout again (esp_task_wdt_reconfigure), none stops it.
        _watch["timeout"] = parsed.get("timeout", 5000)
        _fed(True)
        _write("wdt.armed", str(_watch["timeout"]))

    def feed(self):
        _fed()  # journalling each feed would drown the rest


def reset():
    """machine.reset(): the board restarts; here the process ends with slots.RESTART_EXIT and the simulator starts it again."""
    _record("machine.reset", {})
    sys.exit(5)
