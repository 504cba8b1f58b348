"""The serial framing, imported from the firmware so both ends share one implementation.

`firmware/core/serial_frames.py` runs on the device and on the host alike; this
is the one place the host puts `<repo>/firmware` on `sys.path` to reach it.
"""

import sys
from pathlib import Path

FIRMWARE_DIR = Path(__file__).resolve().parents[2] / "firmware"

if str(FIRMWARE_DIR) not in sys.path:
    # Appended, not prepended: firmware's top-level names must never shadow the host's.
    sys.path.append(str(FIRMWARE_DIR))

from core import serial_frames  # noqa: E402  (needs the path above)

MARKER = serial_frames.MARKER
encode = serial_frames.encode
decode = serial_frames.decode
request = serial_frames.request
