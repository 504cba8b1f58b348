"""`soulstack flash`: flash, upload, provision and verify a StackChan (CoreS3) in one command.

With `--over-wifi http://ROBOT --token T` it updates a robot already on the network instead
(host/flash/wifi.py): no cable, and a new set that fails is rolled back by the robot itself.
"""

import sys
from pathlib import Path

# What --servo writes (provision.servo_config): M5Stack's StackChan has SCS0009 bus servos (the firmware
# knows their UART and ids, and the first-boot checklist expects their nod); a DIY StackChan's SG90s
# need the two pins they hang on. Here, not in provision, so `soulstack --help` stays quick.
SERVOS = ("scs0009", "sg90", "none")
DEFAULT_SERVO = "scs0009"


# Flags that only mean something with the cable: refused next to --over-wifi rather than ignored.
CABLE_ONLY = (
    "firmware",
    "ssid",
    "password",
    "no_wifi",
    "nudge_url",
    "nudge_token",
    "tts_url",
    "tts_token",
    "ears_url",
    "ears_token",
    "lang",
    "pan_pin",
    "tilt_pin",
    "new_token",
)


def over_wifi(args) -> int:
    from soulstack.errors import UsageError
    from soulstack.flash import wifi

    given = [f"--{name.replace('_', '-')}" for name in CABLE_ONLY if getattr(args, name)]
    if args.port != "auto" or args.target != "auto" or args.servo is not None:
        given += ["--device" if args.port != "auto" else "--target" if args.target != "auto" else "--servo"]
    if given:
        raise UsageError(
            f"{', '.join(given)}: only for the cable; --over-wifi updates the firmware of a robot already "
            "set up (its config.json stays as it is)"
        )
    if not args.token and not args.dry_run:
        raise UsageError(
            "--over-wifi needs the robot's token: --token T, --token-file FILE or $BODY_TOKEN "
            '(the "token" in its config.json)'
        )
    if args.wait <= 0:
        raise UsageError(f"--wait must be a positive number of seconds, not {args.wait:g}")
    low, high = wifi.loader.WATCHDOG_S
    if args.watchdog is not None and not low <= args.watchdog <= high:
        raise UsageError(f"--watchdog must be whole seconds from {low} to {high}, not {args.watchdog}")
    if args.set is not None:
        folder = Path(args.set)
        if not ((folder / "app.py").is_file() or (folder / "app.mpy").is_file()):
            raise UsageError(f"--set {args.set}: a firmware set is a folder with app.py or app.mpy in it")
    return wifi.flash_over_wifi(args)


def flash(args) -> int:
    from soulstack.serial_ports import PortError
    from soulstack.errors import UsageError
    from soulstack.flash import plan, provision
    from soulstack.flash.tools import FlashError

    if args.over_wifi:
        return over_wifi(args)
    wifi_only = [flag for flag, value in (("--watchdog", args.watchdog), ("--set", args.set)) if value is not None]
    if wifi_only:
        raise UsageError(f"{', '.join(wifi_only)}: only with --over-wifi (the cable boots what it writes, no trial)")

    if args.firmware:
        args.firmware = Path(args.firmware)
        plan.check_image(args.firmware)
    if args.wait <= 0:
        raise UsageError(f"--wait must be a positive number of seconds, not {args.wait:g}")
    if args.no_wifi and (args.ssid or args.password):
        raise UsageError("--no-wifi sets up a cable-only robot; leave out --ssid and --password, or drop --no-wifi")
    if args.token and args.new_token:
        raise UsageError("--new-token makes a new token; leave out --token, or drop --new-token")
    # Flag mistakes before touching the robot; a URL with no path is completed, and said so.
    url_notes = provision.check_reachable(args.nudge_url, args.tts_url, args.ears_url)
    if args.servo is None:
        args.servo = DEFAULT_SERVO
    provision.servo_config(args)
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
    for note in url_notes:
        run.say(f"note: {note}")
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
    from soulstack.commandline import add_secret, add_serial_port

    parser = subparsers.add_parser(
        "flash",
        help="flash, upload, provision and check a StackChan (M5Stack CoreS3) over USB",
        description="Set up a StackChan over its USB cable: optionally write MicroPython, upload soulstack's "
        "firmware and microdot, write config.json (Wi-Fi, token, soul URLs), restart, wait for the robot "
        "to report its address, run body-check, and print the body section for soul.config.json. "
        "Missing settings are asked for; --dry-run prints every step and touches nothing. "
        "With --over-wifi http://ROBOT --token T: update a robot already on the network (no cable), "
        "with an automatic rollback on the robot if the new firmware fails to start.",
    )
    parser.add_argument(
        "--over-wifi",
        metavar="URL",
        help="update the robot at this http:// address over the network instead of the cable: send the "
        "changed files, switch, restart, and wait for it to serve the new version (see docs/firmware.md)",
    )
    parser.add_argument(
        "--watchdog",
        type=int,
        metavar="SECONDS",
        help="--over-wifi: seconds the new set has to serve before the robot's watchdog resets it "
        "(2 to 60; default 30); three such resets and the robot switches back by itself",
    )
    parser.add_argument(
        "--set",
        metavar="DIR",
        help="--over-wifi: send this folder as the firmware set (it needs an app.py or app.mpy) instead of "
        "building one from this soulstack's firmware",
    )
    add_serial_port(parser)
    parser.add_argument(
        "--firmware", metavar="IMAGE.bin", help="erase the flash and write this MicroPython image first (esptool)"
    )
    parser.add_argument(
        "--target",
        choices=("auto", "uiflow", "upstream"),
        default="auto",
        help="which MicroPython the robot runs: uiflow (files in /flash/), upstream (files in /), "
        "or auto to ask the robot (default: auto)",
    )
    parser.add_argument("--ssid", help="Wi-Fi network name (2.4 GHz)")
    parser.add_argument("--password", help="Wi-Fi password (asked for, unseen, when missing)")
    parser.add_argument(
        "--no-wifi", action="store_true", help="cable only: no Wi-Fi; serve it with soulstack bridge serial"
    )
    add_secret(
        parser,
        "--token",
        "BODY_TOKEN",
        "the body's bearer token: written into config.json by the cable flash "
        "(a new random one when none is given; --dry-run shows an example); with --over-wifi the robot's token",
    )
    parser.add_argument(
        "--new-token",
        action="store_true",
        help="make a new random token even when the robot's config.json has one (default: keep the robot's, "
        "which the soul's body.token already holds)",
    )
    parser.add_argument(
        "--nudge-url",
        metavar="URL",
        help="where the robot sends nudges: the soul's /nudge as the robot reaches it, e.g. "
        "http://192.168.1.10:9202/nudge (a URL with no path gets /nudge; default: asked, or none)",
    )
    add_secret(parser, "--nudge-token", "NUDGE_TOKEN", "bearer token for the soul's nudge URL")
    parser.add_argument(
        "--tts-url",
        metavar="URL",
        help="a soulstack tts server for speech, e.g. http://192.168.1.10:9204/tts (default: asked, or none)",
    )
    add_secret(parser, "--tts-token", "TTS_TOKEN", "bearer token for the tts server")
    parser.add_argument(
        "--ears-url",
        metavar="URL",
        help="a soulstack ears server the robot streams what it hears to, e.g. http://192.168.1.10:9205/utterance "
        "(a URL with no path gets /utterance; default: none)",
    )
    add_secret(parser, "--ears-token", "EARS_TOKEN", "bearer token for the ears server")
    parser.add_argument(
        "--lang",
        choices=("en", "zh"),
        help="the soul's language (its persona.language), which the robot's screen speaks too (default en)",
    )
    parser.add_argument(
        "--servo",
        choices=SERVOS,
        help="the head's servos: scs0009 (M5Stack's StackChan, serial bus), sg90 (a DIY StackChan, "
        f"with --pan-pin and --tilt-pin) or none (default: {DEFAULT_SERVO})",
    )
    parser.add_argument("--pan-pin", type=int, metavar="GPIO", help="--servo sg90: the pan servo's pin")
    parser.add_argument("--tilt-pin", type=int, metavar="GPIO", help="--servo sg90: the tilt servo's pin")
    parser.add_argument(
        "--wait", type=float, default=60, help="seconds to wait for the robot to come online (default: %(default)s)"
    )
    parser.add_argument("--dry-run", action="store_true", help="print every step (password masked) and touch nothing")
    parser.set_defaults(func=flash)
