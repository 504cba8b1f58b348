"""Upstream MicroPython (ESP32_GENERIC_S3): Wi-Fi, servos and a watchdog work.

This build has no drivers for the CoreS3's screen, GC0308 camera or AW88298
speaker, so /status answers online: false and /look says there is no camera,
in words. Everything else (the protocol, serial mode, nudges by button-less
means) behaves as on UIFlow2.
"""

from hal.esp32 import Esp32Hal


class Hal(Esp32Hal):
    name = "generic"
