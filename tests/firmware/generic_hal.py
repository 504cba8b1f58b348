"""hal/generic.py's senses it lacks, called directly under MicroPython: each refuses, none pretends.

The body never calls these (it asks `camera_problem()`/`speaker_problem()`
first), so this is the only place they run. Also the free flash it reports
(only the updater asks, core/ota.py), from the unix port's statvfs. Prints "ok" when every check holds.
Run with firmware/ and host/sim/doubles on MICROPYPATH and SOULSTACK_DOUBLES set.
"""

from core import config

from hal.generic import Hal


def refuses(call, *args):
    try:
        call(*args)
    except OSError as problem:
        return str(problem)
    raise AssertionError(call.__name__ + " did not refuse")


hal = Hal(config.parse("{}")[0])
assert refuses(hal.snapshot_jpeg, 70) == "no camera"
assert refuses(hal.play_start, 16000, 1) == "no speaker"
assert refuses(hal.play, b"\x00\x00") == "no speaker"
assert hal.play_end() is None and hal.show_error("shown nowhere") is None and hal.draw(None) is None
assert hal.camera_problem().startswith("no camera") and hal.speaker_problem().startswith("no speaker")
free, block = hal.flash_free("")
assert free > 0 and block > 0 and free % block == 0
print("ok")
