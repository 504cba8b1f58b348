"""Heap figures under MicroPython: bytes in use after importing the core the body runs on.

Run: MICROPYPATH=.frozen:firmware micropython tests/firmware/heap.py
Prints `core_heap_bytes N` (after gc.collect()) and `baseline_heap_bytes N`, then
`ota_heap_bytes N`: what core/ota (the updater, imported at boot when the robot
has a token) holds on top, then `listen_heap_bytes N`: what listening holds (its
module, core/vad, the end-pointer's pre-roll ring and the microphone buffer; the
robot loads it when config.json has an ears_url).
"""

import gc

gc.collect()
baseline = gc.mem_alloc()
from core import auth, b64json, balloon, clock, config, emotions, face, httpc, nudges  # noqa: E402,F401
from core import protocol, serial_frames, servo, speech, wav  # noqa: E402,F401

gc.collect()
core = gc.mem_alloc() - baseline
print("baseline_heap_bytes", baseline)
print("core_heap_bytes", core)

from core import ota  # noqa: E402,F401

gc.collect()
print("ota_heap_bytes", gc.mem_alloc() - baseline - core)

gc.collect()
before = gc.mem_alloc()
import listening  # noqa: E402
from core.vad import Endpointer  # noqa: E402

held = (Endpointer(), bytearray(listening.READ_FRAMES * 640))
gc.collect()
print("listen_heap_bytes", gc.mem_alloc() - before)
