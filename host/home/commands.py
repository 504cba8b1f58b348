"""`soulstack home init`: set up this computer as the robot's home (docs/home.md)."""


def init(args) -> int:
    from soulstack.home.setup import init_home

    return init_home(args)


def register(subparsers):
    from soulstack.commandline import subcommand_group

    group = subcommand_group(subparsers, "home", "set up this computer as the robot's home")
    parser = group.add_parser(
        "init",
        help="one-box home: the soul, tts, ears and the flock on the LAN with fresh tokens, as systemd services",
        description="Write the environment files (fresh tokens, kept when run again) and the soul's config for "
        "every home service, bound to this computer's LAN address; install and start their systemd units; print "
        "the tools/flash command for the robot. Run as root. Run it again with --robot once the robot is flashed.",
    )
    parser.add_argument(
        "--host", metavar="ADDRESS", help="the LAN address the services listen on (default: this computer's own)"
    )
    parser.add_argument(
        "--robot",
        metavar="URL",
        help="the robot's address, as tools/flash printed it (http://192.168.1.42): the soul's body "
        "(default: the config's, or none yet)",
    )
    parser.add_argument(
        "--unit-dir", default="/etc/systemd/system", metavar="DIR", help="where the units go (default: %(default)s)"
    )
    parser.add_argument(
        "--env-dir", default="/etc/soulstack", metavar="DIR", help="where the secrets go (default: %(default)s)"
    )
    parser.add_argument(
        "--state-dir",
        default="/var/lib",
        metavar="DIR",
        help="the services' state folders, the soul's config among them (default: %(default)s)",
    )
    parser.add_argument(
        "--language",
        choices=("en", "zh"),
        help="the language the soul lives in (its persona.language; the robot's screen and ears follow it; "
        "default: the config's, en for a new one)",
    )
    parser.add_argument("--no-enable", action="store_true", help="write the files only; do not run systemctl")
    parser.set_defaults(func=init)
