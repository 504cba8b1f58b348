"""`soulstack flash`: flash, upload, provision and verify a StackChan (CoreS3) in one command."""

import sys
from pathlib import Path


def flash(args) -> int:
    from soulstack.serial_ports import PortError
    from soulstack.errors import UsageError
    from soulstack.flash import plan, provision
    from soulstack.flash.tools import FlashError

    if args.firmware:
        args.firmware = Path(args.firmware)
        plan.check_image(args.firmware)
    if args.wait <= 0:
        raise UsageError(f"--wait must be a positive number of seconds, not {args.wait:g}")
    if args.no_wifi and (args.ssid or args.password):
        raise UsageError("--no-wifi sets up a cable-only robot; leave out --ssid and --password, or drop --no-wifi")
    provision.check_reachable(args.nudge_url, args.tts_url)  # flag mistakes before touching the robot
    interactive = sys.stdin.isatty() and not args.dry_run
    run = plan.Flash(
        options=args,
        config={},
        port=None if args.port == "auto" else args.port,
        flavour=None if args.target == "auto" else args.target,
    )
    if not args.dry_run:
        try:
            plan.locate(run)  # the robot first: no questions for a robot that is not there
        except PortError as error:
            print(f"soulstack flash: {error}", file=sys.stderr)
            return 1
    run.config = provision.gather(args, interactive)
    warnings = provision.check(run.config)
    if args.no_wifi:
        warnings = [w for w in warnings if "wifi.ssid" not in w]  # asked for: the cable is the way in
    for warning in warnings:
        run.say(f"note: {warning}")
    plan_steps = plan.build_plan(args, run.config)
    try:
        plan.execute(run, plan_steps, dry_run=args.dry_run)
    except (FlashError, PortError) as error:
        print(f"soulstack flash: {error}", file=sys.stderr)
        return 1
    finally:
        for temp in run.temp_files:
            temp.unlink(missing_ok=True)
    return 0


def register(subparsers):
    parser = subparsers.add_parser(
        "flash",
        help="flash, upload, provision and check a StackChan (M5Stack CoreS3) over USB",
        description="Set up a StackChan over its USB cable: optionally write MicroPython, upload soulstack's "
        "firmware and microdot, write config.json (Wi-Fi, token, soul URLs), restart, wait for the robot "
        "to report its address, run body-check, and print the body section for soul.config.json. "
        "Missing settings are asked for; --dry-run prints every step and touches nothing.",
    )
    parser.add_argument("--port", default="auto", help="serial port, or 'auto' to find USB id 303a:1001 (default: auto)")
    parser.add_argument("--firmware", metavar="IMAGE.bin", help="erase the flash and write this MicroPython image first (esptool)")
    parser.add_argument(
        "--target", choices=("auto", "uiflow", "upstream"), default="auto",
        help="which MicroPython the robot runs: uiflow (files in /flash/), upstream (files in /), "
        "or auto to ask the robot (default: auto)",
    )
    parser.add_argument("--ssid", help="Wi-Fi network name (2.4 GHz)")
    parser.add_argument("--password", help="Wi-Fi password (asked for, unseen, when missing)")
    parser.add_argument("--no-wifi", action="store_true", help="cable only: no Wi-Fi; serve it with soulstack bridge serial")
    parser.add_argument("--token", help="the body's bearer token (default: a new random one; --dry-run shows an example)")
    parser.add_argument("--nudge-url", help="where the robot sends nudges: the soul's /nudge as the robot reaches it")
    parser.add_argument("--nudge-token", help="bearer token for the soul's nudge URL")
    parser.add_argument("--tts-url", help="a soulstack tts server for speech, e.g. http://192.168.1.10:9204/tts")
    parser.add_argument("--wait", type=float, default=60, help="seconds to wait for the robot to come online (default: %(default)s)")
    parser.add_argument("--dry-run", action="store_true", help="print every step (password masked) and touch nothing")
    parser.set_defaults(func=flash)
