"""What the heap has left: free bytes, and the largest block one allocation can still get.

Free bytes alone hide fragmentation: a running body once had 136 KB free and no
run of 16 KB (docs/firmware.md, "Memory"). MicroPython tells the largest free
run only by printing it (micropython.mem_info), so `largest_block` asks the heap
itself: it allocates ever larger buffers, halving the gap, until one fails. A
failed allocation makes MicroPython collect and retry, and its MemoryError is a
preallocated object, so the probe leaves nothing behind but a collection.
On CPython (no gc.mem_free) both answer None.
"""

import gc

STEP = 64  # bytes: the probe's precision


def free():
    """Free heap after a collection (None on CPython)."""
    if not hasattr(gc, "mem_free"):
        return None
    gc.collect()
    return gc.mem_free()


def largest_block():
    """The largest bytearray the heap can give now, to STEP bytes (None on CPython)."""
    if not hasattr(gc, "mem_free"):
        return None
    gc.collect()
    low, high = 0, gc.mem_free() + STEP  # low always fits, high never does
    while high - low > STEP:
        middle = (low + high) // 2
        try:
            block = bytearray(middle)
        except MemoryError:
            high = middle
            continue
        block = None  # noqa: F841  (dropped, then collected: the next try may need its room)
        gc.collect()
        low = middle
    return low
