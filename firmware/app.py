"""The firmware set's entry point: wiring only.

The loader (boot.py, main.py, slots.py) imports this module from the set the
slot pointer names and calls `main()`. The simulator passes arguments through:
    main.py --config PATH --hal fake [--host 127.0.0.1] [--port N] [--serial]

Exit codes the simulator reads: 3 the HTTP port cannot be had, 4 out of memory
while starting (each after one log line, no traceback).
"""

import gc

from core import heap

heap.collect_often()  # first: everything imported and made from here on packs low in the heap

import asyncio  # noqa: E402
import sys  # noqa: E402

import slots  # noqa: E402
from core import config as config_mod  # noqa: E402
from core import serial_frames  # noqa: E402
from core.log import log  # noqa: E402

CONFIG_PATHS = ("/flash/config.json", "config.json")


class ListenError(Exception):
    """The HTTP port cannot be had (e.g. another program holds it)."""


def parse_args(argv):
    options = {"config": None, "hal": None, "host": "0.0.0.0", "port": None, "serial": None}
    i = 0
    while i < len(argv):
        flag = argv[i]
        if flag == "--serial":
            options["serial"] = True
        elif flag in ("--config", "--hal", "--host", "--port") and i + 1 < len(argv):
            options[flag[2:]] = argv[i + 1]
            i += 1
        i += 1
    return options


def read_config(path):
    paths = (path,) if path else CONFIG_PATHS
    for candidate in paths:
        try:
            with open(candidate) as handle:
                return config_mod.parse(handle.read())
        except OSError:
            continue
    if path:
        raise config_mod.ConfigError("cannot read " + path)
    return config_mod.parse("{}")


def pick_hal(name, config):
    """The HAL named in config (or on the command line); "auto" probes for UIFlow2."""
    if name == "auto":
        try:
            import M5  # noqa: F401  (only UIFlow2 firmware has it)

            name = "uiflow"
        except ImportError:
            name = "generic"
    if name == "fake":
        from hal.fake import Hal
    elif name == "uiflow":
        from hal.uiflow import Hal
    else:
        from hal.generic import Hal
    return Hal(config)


async def run(options):
    config, warnings = read_config(options["config"])
    # The updater (core/ota.py) first, while the heap is nearly empty and in one piece: compiled from
    # source it needs ~50 KB for a moment (less live memory under it now), and imported at the first
    # /firmware request its code would land in the holes between the running body's objects, where the
    # next request body found no room (measured at 256K). Without a token there are no updates.
    Updates = None
    if config["token"]:
        from core.ota import Updates

        gc.collect()
    # Imported here, not at the top, so running out of memory while loading them is caught by main().
    # A collection after each: compiling leaves garbage, and the next module's code should fill its room
    # rather than scatter holes among what lives for good (a fragmented heap refuses the next large body).
    from body import Body

    gc.collect()
    from links import SerialLink, http_app

    gc.collect()

    if options["hal"]:
        config["hal"] = options["hal"]
    if options["serial"]:
        config["serial"] = True
    port = int(options["port"]) if options["port"] else config["port"]
    for warning in warnings:
        log("config:", warning)
    if slots.running["version"] is None:
        slots.running["version"] = serial_frames.VERSION  # the set beside the loader says the firmware's own
    hal = pick_hal(config["hal"], config)
    hal.begin()
    link = None
    body = Body(hal, config, version=slots.running["version"])
    checkpoint = getattr(hal, "checkpoint", None)  # the fake HAL's power-cut points; real boards have none
    receiver = Updates(slots, config["token"], hal.flash_free, checkpoint, hal.name) if Updates else None

    def updates():
        return receiver

    note = slots.rolled_back()
    if note:  # the words that matter first: the screen's error line shows its first ~26 characters
        log("update to", str(note.get("version")), "rolled back:", str(note.get("reason")))
        hal.show_error("update rolled back: " + str(note.get("reason")) + " (" + str(note.get("version")) + ")")
    if config["serial"]:
        link = SerialLink(body.dispatcher)
        body.serial_out = link.write
    tasks = [asyncio.create_task(job) for job in body.tasks()]
    if link:
        tasks.append(asyncio.create_task(link.serve()))
    await serve(http_app(body.dispatcher, updates=updates), options["host"], port, hal.name, checkpoint)


async def serve(app, host, port, hal_name, checkpoint=None):
    """Serve HTTP forever; "serving" is logged once the port is really ours, ListenError if it cannot be.

    Serving is what ends a new set's trial (slots.confirm): from here on it is kept.
    """
    refused = []

    async def listen():
        try:
            await app.start_server(host=host, port=port)
        except OSError as problem:  # caught here, so asyncio never prints it as an unretrieved task error
            refused.append(problem)

    server = asyncio.create_task(listen())
    while app.server is None and not refused:
        await asyncio.sleep(0.02)
    if refused:
        raise ListenError("cannot listen on " + host + ":" + str(port) + ": " + str(refused[0]))
    log(
        "serving Body Protocol v1 on",
        host + ":" + str(port),
        "hal",
        hal_name,
        "firmware",
        str(slots.running["version"]),
        "slot",
        slots.running["slot"],
    )
    slots.confirm(checkpoint)
    await server


def main(argv=None):
    options = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        asyncio.run(run(options))
    except config_mod.ConfigError as problem:
        # Shown on the device's screen by boot.py's handler and in the log: each line says what to fix.
        print(serial_frames.ready(None, "config.json: " + str(problem).replace("\n", "; "), "unknown"), end="")
        log("config.json cannot be used:\n" + str(problem))
        raise
    except ListenError as problem:
        log(problem)
        sys.exit(3)
    except MemoryError as problem:
        log("out of memory while starting:", problem)
        sys.exit(4)
    except KeyboardInterrupt:
        log("stopped")


if __name__ == "__main__":
    main()
