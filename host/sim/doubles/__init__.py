"""Documented-API doubles of the robot's own modules, for `soulstack body sim --hal uiflow|generic`.

These files run under the MicroPython unix port in place of modules only a
robot has: UIFlow2's `M5`, `camera`, `jpg` and `dl`, and upstream
MicroPython's `machine` and `network`. The simulator puts this folder on
MICROPYPATH (never on the robot: tools/flash uploads firmware/ only), so the
real `hal/uiflow.py`, `hal/generic.py` and `hal/esp32.py` run unchanged.

Each call checks its arguments the way the vendor's binding does (names,
count, types; see `_double.accept`), and is written to a journal a test can
read. What the outside world is like (Wi-Fi up or down, a face in view, a
camera that fails to start, an older UIFlow2 build) is read from small files
in the folder named by SOULSTACK_DOUBLES; see `_double.world`.
"""
