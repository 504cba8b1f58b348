"""The StackChan firmware, shipped inside the soulstack package.

These files run ON the robot (MicroPython): `tools/flash` copies them onto it,
`soulstack body sim` runs them under the MicroPython unix port, and the host
imports `core` (the one Body Protocol source, the serial framing) from here.
This file itself is never uploaded.
"""

from pathlib import Path

FIRMWARE_DIR = Path(__file__).resolve().parent
