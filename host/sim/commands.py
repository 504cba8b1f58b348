"""`soulstack body sim`: meet the firmware without a robot."""

import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path

from soulstack.errors import UsageError
from soulstack.commandline import DEFAULT_NUDGE_URL, add_body_token, add_secret, subcommand_group

DEFAULT_PORT = 9311
# The head each HAL drives in the simulator: M5Stack's StackChan has SCS0009 bus servos; the generic
# build stands for a DIY StackChan with SG90s on two PWM pins.
SERVOS = {"fake": None, "uiflow": {"kind": "scs0009"}, "generic": {"kind": "sg90", "pan_pin": 5, "tilt_pin": 6}}


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def printer():
    """print() for lines coming from several relay threads at once: whole lines, in order, flushed."""
    lock = threading.Lock()

    def show(line):
        with lock:
            try:
                print(line, flush=True)
            except (OSError, ValueError):
                pass  # nobody reads our output any more: keep draining the firmware's pipes so it never stalls

    return show


def why_it_stopped(simulator):
    """One line for a firmware that stopped before serving; UsageError when the --heap was too small."""
    time.sleep(0.2)  # let the relay threads read its last words
    words = [line.strip() for line in simulator.last_words if line.strip()]
    if simulator.process.returncode == 4 or any("MemoryError" in line or "NLR" in line for line in words):
        raise UsageError(
            f"--heap {simulator.heap} is too small: the firmware ran out of memory while starting; try the default 256K"
        )
    if simulator.process.returncode == 3:  # main.py could not listen: someone took the port after our check
        raise UsageError(f"port {simulator.port} on 127.0.0.1 is in use; choose another --port (0 picks a free one)")
    last = words[-1] if words else "no message"
    return f"soulstack body sim: the firmware stopped before serving (exit {simulator.process.returncode}): {last}"


def flash_folder(given):
    """--flash DIR: a robot's flash kept across runs; new or empty (the firmware is copied in), or one made before."""
    if given is None:
        return None
    folder = Path(given).expanduser()
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"--flash {given} is a file; name a folder (a new one is made)")
    if folder.is_dir() and any(folder.iterdir()) and not (folder / "main.py").exists():
        raise UsageError(f"--flash {given} holds files but no robot's flash (no main.py); name a new or empty folder")
    if not folder.parent.is_dir():
        raise UsageError(f"--flash {given}: {folder.parent} does not exist")
    folder.mkdir(exist_ok=True)
    return folder


def firmware_tokens(args) -> dict | None:
    """The config.json keys for the servers the firmware calls, as tools/flash writes them."""
    config = {"ears_url": args.ears_url, "ears_token": args.ears_token} if args.ears_url else {}
    for key, token in (("nudge_token", args.nudge_token), ("tts_token", args.tts_token)):
        if token:
            config[key] = token
    return config or None


def sim_nudge_url(args) -> str | None:
    """Where the firmware nudges: the soul by default, up the cable with --serial, none for `--nudge-url ""`."""
    from soulstack.protocol.commands import nudge_url

    if args.nudge_url is None:
        return None if args.serial else DEFAULT_NUDGE_URL
    return nudge_url(args.nudge_url) if args.nudge_url else None


def sim(args) -> int:
    from soulstack.sim.runner import Simulator
    from soulstack.sim.settings import ANSWERS_FROM_HEAP, parse_heap, port_in_use

    if not 0 <= args.port <= 65535:
        raise UsageError("--port must be from 0 to 65535 (0 picks a free one)")
    if args.port and port_in_use(args.port):
        raise UsageError(f"port {args.port} on 127.0.0.1 is in use; choose another --port (0 picks a free one)")
    flash = flash_folder(args.flash)
    port = args.port or free_port()
    show = printer()
    # A terminal's Ctrl+C reaches the firmware too; SIGTERM (e.g. from a test) should end it the same way,
    # from before the simulator makes its folder (which holds the body's token) to when it removed it.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    simulator = None
    try:
        simulator = Simulator(
            port,
            token=args.token,
            serial=args.serial,
            python=args.python,
            heap=args.heap,
            nudge_url=sim_nudge_url(args),
            tts_url=args.tts_url,
            show=show,
            hal=args.hal,
            servo=SERVOS[args.hal],
            config=firmware_tokens(args),
            flash=flash,
        )
        if args.serial:
            show(f"serial: {simulator.open_pty()}")  # the first line: printed before the firmware can say anything
        simulator.start()
        if not simulator.wait_until_serving():
            if simulator.process.poll() is None:
                print("soulstack body sim: the firmware did not start serving within 30 s", file=sys.stderr)
                return 1
            print(why_it_stopped(simulator), file=sys.stderr)
            return 1
        if args.heap and not args.python and parse_heap(args.heap) < ANSWERS_FROM_HEAP:
            # It booted, and may fail its requests with 503 MemoryError: said now, not found out later.
            print(
                f"warning: --heap {args.heap} is under {ANSWERS_FROM_HEAP // 1024}K, the smallest heap the firmware "
                'answers in (docs/firmware.md, "Memory"); expect requests to fail for want of memory',
                file=sys.stderr,
            )
        runtime = "CPython" if args.python else "MicroPython"
        hardware = "fake hardware" if args.hal == "fake" else f"hal/{args.hal}.py on documented-API doubles"
        show(f"body: http://127.0.0.1:{port} (the real firmware on {runtime}, {hardware})")
        if args.hal != "generic":  # the generic build has no camera
            show(f"face: create {simulator.face_file} to put a face in front of the camera, delete it to take it away")
        if args.hal != "fake":
            show(
                f"doubles: every call the HAL makes is written to {simulator.journal}; "
                f"the files in {simulator.world} set the world (wifi: up|down|no_ap|wrong_password, camera: fail|old, ...)"
            )
        show(room_line(args.hal, bool(args.ears_url), simulator))
        simulator.release()  # what the robot showed and logged meanwhile, then everything as it comes
        show(
            f"power: kill -USR1 {os.getpid()} cuts the power and boots again"
            + (f" (the flash in {flash} stays, across runs too)" if flash else "")
        )
        code = run_until_stopped(simulator, show)  # a reset the firmware asks for (after an update) starts it again
        if code:
            words = [line for line in simulator.last_words if line.strip()]
            print(
                f"soulstack body sim: the firmware stopped with exit code {code}" + (f": {words[-1]}" if words else ""),
                file=sys.stderr,
            )
        return 1 if code else 0
    except KeyboardInterrupt:
        return 0
    finally:
        for stopping in (signal.SIGTERM, signal.SIGINT):  # a second one must not cut the clean-up short
            signal.signal(stopping, signal.SIG_IGN)
        if simulator is not None:
            simulator.stop()


def room_line(hal, listens, simulator):
    """Where a person taps the robot and plays sound into its room: the same words on every HAL (the
    fake HAL's files, or the doubles' world files on the robot's own); what it says shows as `says:`."""
    if hal == "generic":
        return "room: this build has no screen, touch, microphone or speaker (hal/generic.py): nothing to tap or hear"
    tap = f"create {simulator.touch_file} to tap the screen (delete it to lift the finger)"
    if not listens:  # without ears the robot never listens: a tap nudges the soul
        return f"touch: {tap}"
    return f"ears: {tap}; write a 16 kHz mono WAV to {simulator.sound_file} to speak in the robot's room"


def run_until_stopped(simulator, show):
    """Wait for the firmware to stop for good; each SIGUSR1 meanwhile is a power cut and a boot (the flash stays)."""
    cycle = threading.Event()
    signal.signal(signal.SIGUSR1, lambda *_: cycle.set())
    while True:
        if cycle.wait(0.2):
            cycle.clear()
            show("power: cut; booting again")
            simulator.power_cycle()
            simulator.serving = True  # its log goes on to the terminal, as before the cut
        elif simulator.stopped():
            return simulator.wait()


def register(subparsers):
    body = subcommand_group(subparsers, "body", "run a body")
    parser = body.add_parser(
        "sim",
        help="run the real StackChan firmware with fake hardware on this computer",
        description="Runs firmware/main.py with the fake HAL (or, with --hal, the robot's own HAL on documented-API "
        "doubles) under MicroPython's unix port, serving Body Protocol v1 on loopback.",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"HTTP port on 127.0.0.1 (default {DEFAULT_PORT}; 0 picks a free one)",
    )
    add_body_token(parser, "bearer token the body requires")
    parser.add_argument(
        "--serial", action="store_true", help="also speak the serial framing on a new pty; prints 'serial: PATH' first"
    )
    parser.add_argument(
        "--hal",
        choices=("fake", "uiflow", "generic"),
        default="fake",
        help="fake: simulated hardware; uiflow/generic: the robot's own HAL on documented-API doubles "
        "of UIFlow2's M5, camera, jpg, dl and MicroPython's machine, network (default fake)",
    )
    parser.add_argument(
        "--flash",
        metavar="DIR",
        help="keep the robot's flash in DIR across power cycles and runs (a new or empty folder gets the firmware "
        "as the cable leaves it; default: a temporary folder, gone at the end)",
    )
    parser.add_argument("--python", action="store_true", help="run the firmware under CPython instead of MicroPython")
    parser.add_argument(
        "--heap",
        help="the firmware's MicroPython heap (default 256K; 1M with --hal uiflow, whose heap is in PSRAM); "
        "the doubles' own heap is added to it",
    )
    parser.add_argument(
        "--nudge-url",
        help=f"where the firmware POSTs nudges; empty turns them off (default: the soul's {DEFAULT_NUDGE_URL}; "
        "with --serial none: nudges go up the cable, to the bridge)",
    )
    parser.add_argument("--tts-url", help="a `soulstack tts` URL the firmware fetches speech from")
    parser.add_argument(
        "--ears-url",
        help="a `soulstack ears` URL the firmware streams what it hears to (e.g. http://127.0.0.1:9205/utterance)",
    )
    add_secret(parser, "--ears-token", "EARS_TOKEN", "the ears server's token")
    add_secret(parser, "--nudge-token", "NUDGE_TOKEN", "the soul's nudge token, sent with every nudge")
    add_secret(parser, "--tts-token", "TTS_TOKEN", "the tts server's token")
    parser.set_defaults(func=sim)
