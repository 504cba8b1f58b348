"""The serial bridge: Body Protocol v1 over HTTP for a robot on a USB cable.

`soulstack bridge serial` opens the robot's USB serial port, speaks the
firmware's line framing to it (`firmware/core/serial_frames.py`), and serves
/status /look /speak /express on loopback for the soul.
"""
