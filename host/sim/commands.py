"""`soulstack body sim`: meet the firmware without a robot."""

import signal
import socket
import sys

from host.cli import UsageError, subcommand_group

DEFAULT_PORT = 9311


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def sim(args) -> int:
    from host.sim.runner import Simulator

    if not 0 <= args.port <= 65535:
        raise UsageError("--port must be from 0 to 65535 (0 picks a free one)")
    port = args.port or free_port()
    simulator = Simulator(port, token=args.token, serial=args.serial, python=args.python,
                          heap=args.heap, nudge_url=args.nudge_url, tts_url=args.tts_url)
    simulator.start()
    if args.serial:
        print(f"serial: {simulator.serial_path}", flush=True)
    runtime = "CPython" if args.python else "MicroPython"
    print(f"body: http://127.0.0.1:{port} (the real firmware on {runtime}, fake hardware)", flush=True)
    print(f"face: create {simulator.face_file} to put a face in front of the camera, delete it to take it away", flush=True)
    # A terminal's Ctrl+C reaches the firmware too; SIGTERM (e.g. from a test) should end it the same way.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        code = simulator.process.wait()
        if code:
            print(f"soulstack body sim: the firmware stopped with exit code {code}", file=sys.stderr)
        return 1 if code else 0
    except KeyboardInterrupt:
        return 0
    finally:
        simulator.stop()


def register(subparsers):
    body = subcommand_group(subparsers, "body", "run a body")
    parser = body.add_parser(
        "sim", help="run the real StackChan firmware with fake hardware on this computer",
        description="Runs firmware/main.py with the fake HAL under MicroPython's unix port, serving Body Protocol v1 on loopback.",
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"HTTP port on 127.0.0.1 (default {DEFAULT_PORT}; 0 picks a free one)")
    parser.add_argument("--token", help="bearer token the body requires (default: none)")
    parser.add_argument("--serial", action="store_true", help="also speak the serial framing on a new pty; prints 'serial: PATH' first")
    parser.add_argument("--python", action="store_true", help="run the firmware under CPython instead of MicroPython")
    parser.add_argument("--heap", default="256K", help="MicroPython heap size (default 256K)")
    parser.add_argument("--nudge-url", help="where the firmware POSTs nudges (e.g. a soul's http://127.0.0.1:9202/nudge)")
    parser.add_argument("--tts-url", help="a `soulstack tts` URL the firmware fetches speech from")
    parser.set_defaults(func=sim)
