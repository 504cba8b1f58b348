"""Boot figures under MicroPython: how long until the body serves, and the heap it leaves free.

Run from a firmware tree (sources, or tools/flash's compiled .mpy layout) with
microdot on MICROPYPATH and main.py's own arguments:
    micropython -X heapsize=256K boot_figures.py --config PATH --hal fake --host 127.0.0.1 --port N
Prints `boot_ms N` (from before `import app` until the port accepts a
connection), `free_after_boot N` and `used_after_boot N` (gc, after a
collection), `peak N` (micropython.mem_peak, where the build has it), then
exits. Nothing of the firmware is replaced: it boots exactly as main.py does.
"""

import gc
import sys
import time

started = time.ticks_ms()
import asyncio  # noqa: E402

import app as main  # noqa: E402  (the set's entry: main.py is the loader, which would run it)


async def serving(port):
    while True:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            await asyncio.sleep_ms(5)


async def measure(options):
    body = asyncio.create_task(main.run(options))
    await serving(int(options["port"]))
    boot_ms = time.ticks_diff(time.ticks_ms(), started)
    gc.collect()
    print("boot_ms", boot_ms)
    print("free_after_boot", gc.mem_free())
    print("used_after_boot", gc.mem_alloc())
    import micropython

    if hasattr(micropython, "mem_peak"):
        print("peak", micropython.mem_peak())
    body.cancel()
    sys.exit(0)


asyncio.run(measure(main.parse_args(sys.argv[1:])))
