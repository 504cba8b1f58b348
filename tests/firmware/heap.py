"""Heap figures under MicroPython: bytes in use after importing the whole core.

Run: MICROPYPATH=.frozen:firmware micropython tests/firmware/heap.py
Prints `core_heap_bytes N` (after gc.collect()) and `baseline_heap_bytes N`.
"""

import gc

gc.collect()
baseline = gc.mem_alloc()
from core import auth, b64json, balloon, clock, config, emotions, face, httpc, nudges  # noqa: E402,F401
from core import protocol, serial_frames, servo, speech, wav  # noqa: E402,F401

gc.collect()
print("baseline_heap_bytes", baseline)
print("core_heap_bytes", gc.mem_alloc() - baseline)
