"""The heap: kept in one piece (collect_often), and what it has left (free bytes, the largest block).

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


COLLECT_EVERY = 4096  # bytes allocated between collections (see collect_often)


def collect_often(every=COLLECT_EVERY):
    """Collect after every `every` bytes allocated, for the rest of the firmware's life.

    MicroPython allocates first-fit from the lowest free block, and by default collects only when an
    allocation fails: by then garbage fills the whole heap, so whatever is made to last at that moment
    (a module's code at boot, a request's objects, a new status string) lands at the top, among the
    garbage, and stays an island once it is swept. A robot's 256K heap ended its boot with ~27 KB free
    in holes of at most ~3 KB, and a 513-byte /look piece could fail with 18 KB free (UIFlow2 doubles).
    Collected every 4 KB, new objects fill the holes low in the heap and the free room stays in one
    run at the top (docs/firmware.md, "Memory": the figures). The cost is more, smaller collections.
    """
    if hasattr(gc, "threshold"):  # MicroPython; CPython's gc has no such call
        gc.threshold(every)
