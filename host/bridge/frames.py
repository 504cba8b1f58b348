"""The serial framing, the firmware's own module: both ends of the cable share one implementation."""

from soulstack.firmware.core import serial_frames

MARKER = serial_frames.MARKER
encode = serial_frames.encode
decode = serial_frames.decode
request = serial_frames.request
