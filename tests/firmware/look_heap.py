"""What one /look allocates under MicroPython, through the real Body and dispatcher with the fake HAL.

Run: MICROPYPATH=.frozen:firmware micropython tests/firmware/look_heap.py
Prints `look_status N`, `look_handle_bytes N` (everything handle() allocated,
the collector switched off meanwhile) and `look_largest_piece N` (the biggest
piece of the streamed answer).
"""

import gc
import json

from body import Body
from core import config
from core.b64json import pieces
from hal.fake import Hal

settings, _ = config.parse(json.dumps({"hal": "fake"}))
body = Body(Hal(settings), settings)


def look():
    return body.dispatcher.handle("look", b'{"question": "who is there?"}', None)


status, answer = look()  # once first, so nothing is measured that only the first call makes
for _ in pieces(answer):
    pass
gc.collect()
gc.disable()
before = gc.mem_alloc()
status, answer = look()
handled = gc.mem_alloc() - before
largest = 0
for piece in pieces(answer):
    largest = max(largest, len(piece))
gc.enable()
print("look_status", status)
print("look_handle_bytes", handled)
print("look_largest_piece", largest)
