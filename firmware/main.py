# The loader's second half (boot.py ran first): run the firmware set the slot pointer names.
# Wiring only; the rules are in slots.py, which an update over Wi-Fi never replaces.
# On the robot MicroPython runs this file at boot; the simulator runs it with app.py's arguments
# (see app.py).
import sys

import slots

slots.start(sys.argv[1:])
