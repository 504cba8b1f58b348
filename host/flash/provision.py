"""What goes onto the device: the files to upload and its config.json, from flags or prompts.

The config is checked with the firmware's own `core.config.parse` before it is
written, so a value the device would refuse is caught on the computer.
"""

import getpass
import ipaddress
import json
import os
import secrets
import socket
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import microdot

from soulstack.firmware import FIRMWARE_DIR
from soulstack.firmware.core import config as firmware_config
from soulstack.firmware.core.protocol import ENDPOINTS

MICRODOT_FILES = ("__init__.py", "microdot.py", "helpers.py")
MASK = "********"
EXAMPLE_TOKEN = "<example: the real run keeps the robot's token, or makes a new random one>"
SKIP_NAMES = ("__pycache__", "config.json")


def firmware_files(root: Path = FIRMWARE_DIR) -> dict[str, list[Path]]:
    """Device directory ('' for the top) -> the local files to copy there, in a stable order."""
    layout: dict[str, list[Path]] = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if path.is_dir() or any(part in SKIP_NAMES or part.startswith(".") for part in relative.parts):
            continue
        if path.suffix != ".py" or relative == Path("__init__.py"):  # that one makes it a host package
            continue
        folder = "" if relative.parent == Path(".") else relative.parent.as_posix()
        layout.setdefault(folder, []).append(path)
    microdot_dir = Path(microdot.__file__).parent
    layout["microdot"] = [microdot_dir / name for name in MICRODOT_FILES]
    return layout


def lan_address() -> str:
    """This computer's address on the LAN (no packet is sent), for the default nudge URL."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: routing decides the source address, nothing leaves
            return probe.getsockname()[0]
        except OSError:
            return "127.0.0.1"


def robot_cannot_reach(flag: str, url: str | None) -> str | None:
    """Why the robot could not reach `url` (it names this computer's loopback), with the URL to give instead."""
    if not url:
        return None
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    try:
        local = ipaddress.ip_address(host).is_loopback or ipaddress.ip_address(host).is_unspecified
    except ValueError:
        local = host == "localhost" or host.endswith(".localhost")
    if not local:
        return None
    lan = lan_address()
    netloc = lan + (f":{parts.port}" if parts.port else "")
    instead = parts._replace(netloc=netloc).geturl() if lan != "127.0.0.1" else "this computer's LAN address"
    return f"{flag} {url} names this computer's loopback, which the robot cannot reach; give {instead}"


# A URL of each kind the robot is given, as the soul, `soulstack tts` and `soulstack ears` serve it,
# and the path each ends in.
URL_EXAMPLES = {
    "--nudge-url": "http://192.168.1.10:9202/nudge",
    "--tts-url": "http://192.168.1.10:9204/tts",
    "--ears-url": "http://192.168.1.10:9205/utterance",
}
URL_PATHS = {flag: urlsplit(example).path for flag, example in URL_EXAMPLES.items()}


def robot_url(flag: str, url: str | None) -> tuple[str | None, str | None]:
    """(the URL as the robot gets it, a note when it was completed); UsageError for one it cannot use.

    The robot speaks plain http only. A URL with no path gets the one its server serves
    (http://192.168.1.10:9202 -> http://192.168.1.10:9202/nudge), said in the note."""
    from soulstack.errors import UsageError
    from soulstack.protocol.commands import check_url

    if not url:
        return None, None
    path = URL_PATHS[flag]
    if "://" not in url:
        raise UsageError(f"{flag} {url} has no scheme; the robot needs http://, e.g. http://{url.lstrip('/')}")
    check_url(url, flag, URL_EXAMPLES[flag])
    parts = urlsplit(url)
    if parts.scheme == "https":
        raise UsageError(
            f"{flag} {url}: the robot speaks plain http only; give http://{parts.netloc}{parts.path or path}"
        )
    problem = robot_cannot_reach(flag, url)
    if problem:
        raise UsageError(problem)
    if parts.path in ("", "/"):
        completed = parts._replace(path=path).geturl()
        return completed, f"{flag} {url} names no path: the robot will use {completed}"
    return url, None


def check_reachable(nudge_url: str | None, tts_url: str | None, ears_url: str | None = None) -> list[str]:
    """The notes for the URLs (completed paths); UsageError when one is unusable or only this computer's."""
    urls = (("--nudge-url", nudge_url), ("--tts-url", tts_url), ("--ears-url", ears_url))
    return [note for flag, url in urls if (note := robot_url(flag, url)[1])]


def listen_hint(config: dict) -> list[str]:
    """What must listen on the LAN for a Wi-Fi robot to reach it: the soul and `soulstack tts` bind loopback
    by default, and a LAN bind needs a token (docs/home.md sets both up)."""
    lines = []
    if config.get("nudge_url"):
        host = urlsplit(config["nudge_url"]).hostname
        lines.append(
            f"the soul must listen where the robot reaches it: soulstack soul --host {host} (or 0.0.0.0), "
            "with nudge.token in its config (or $NUDGE_TOKEN) and the same token here as --nudge-token"
        )
    if config.get("tts_url"):
        host = urlsplit(config["tts_url"]).hostname
        lines.append(
            f"soulstack tts must listen there too: soulstack tts --host {host} --token-file FILE, "
            "with that token here as --tts-token"
        )
    if config.get("ears_url"):
        host = urlsplit(config["ears_url"]).hostname
        lines.append(
            f"soulstack ears must listen there too: soulstack ears --host {host} --token-file FILE, "
            "with that token here as --ears-token"
        )
    return lines


def ask(prompt: str, default: str = "", secret: bool = False) -> str:
    if secret:
        return getpass.getpass(f"{prompt}: ")  # never echoed, never trimmed: spaces may be part of it
    shown = f" [{default}]" if default else ""
    return input(f"{prompt}{shown}: ").strip() or default


def gather(options, interactive: bool) -> dict:
    """The settings for config.json: flags first, prompts for what is missing when interactive.

    A dry run asks nothing: what would be asked shows as a placeholder.
    """
    from soulstack.errors import UsageError

    ssid, password = options.ssid, options.password
    if options.dry_run:
        ssid = "<asked at run time>" if ssid is None else ssid
        password = "<asked at run time>" if password is None else password
    nudge_url, tts_url = options.nudge_url, options.tts_url
    if not options.no_wifi:
        if ssid is None:
            if not interactive:
                raise UsageError(
                    "give --ssid NAME (and --password) for the robot's Wi-Fi, or --no-wifi for a cable-only robot"
                )
            ssid = ask("Wi-Fi network name (2.4 GHz)")
            if not ssid:
                raise UsageError("a Wi-Fi network name is needed (or run with --no-wifi for a cable-only robot)")
        if password is None:
            password = (
                ask(f"password for {ssid} (not shown; empty for an open network)", secret=True) if interactive else ""
            )
        if nudge_url is None and interactive:
            nudge_url = ask("the soul's nudge URL, as the robot reaches it", f"http://{lan_address()}:9202/nudge")
        if tts_url is None and interactive:
            tts_url = ask("a `soulstack tts` URL for speech (empty: none)", "")
    nudge_url, tts_url = robot_url("--nudge-url", nudge_url)[0], robot_url("--tts-url", tts_url)[0]
    token = options.token or (EXAMPLE_TOKEN if options.dry_run else secrets.token_urlsafe(24))
    return {
        "wifi": {"ssid": "" if options.no_wifi else ssid, "password": "" if options.no_wifi else password},
        "token": token,
        "nudge_url": nudge_url or None,
        "nudge_token": options.nudge_token,
        "tts_url": tts_url or None,
        "tts_token": getattr(options, "tts_token", None) or None,
        "ears_url": robot_url("--ears-url", getattr(options, "ears_url", None))[0],
        "ears_token": getattr(options, "ears_token", None) or None,
        "lang": getattr(options, "lang", None) or "en",  # the soul's language: what the balloon says in
        # The cable stays a way in on every robot (soulstack bridge serial); nudges still go to
        # nudge_url over Wi-Fi when there is one, and up the cable only when there is not.
        "serial": True,
        "servo": servo_config(options),
    }


def servo_config(options) -> dict:
    from soulstack.errors import UsageError

    kind = getattr(options, "servo", None) or "scs0009"  # flash's DEFAULT_SERVO (host/flash/commands.py)
    pins = {"pan_pin": getattr(options, "pan_pin", None), "tilt_pin": getattr(options, "tilt_pin", None)}
    if kind == "sg90":
        missing = [f"--{name.replace('_', '-')}" for name, pin in pins.items() if pin is None]
        if missing:
            raise UsageError(f"--servo sg90 needs {' and '.join(missing)}: the GPIO pins the SG90s are wired to")
        return {"kind": kind, **pins}
    given = [f"--{name.replace('_', '-')}" for name, pin in pins.items() if pin is not None]
    if given:
        raise UsageError(f"{', '.join(given)}: only for --servo sg90 (the SCS0009 bus has fixed pins)")
    return {"kind": kind}


def existing_token(output: str, dest: str) -> str | None:
    """The token in the robot's config.json at `dest`, from TOKEN_SCRIPT's output; None when it has none."""
    for line in output.splitlines():
        words = line.strip().split(" ", 2)
        if len(words) == 3 and words[0] == "SOULSTACK-TOKEN" and words[1] == dest + "config.json":
            return words[2].strip() or None
    return None


def token_script(paths=("/flash/config.json", "/config.json")) -> str:
    """Run on the robot: the token of the config.json each kind of MicroPython keeps, if there is one."""
    return (
        "import json\n"
        f"for p in {tuple(paths)!r}:\n"
        "    try:\n"
        "        t = json.load(open(p)).get('token')\n"
        "        if isinstance(t, str) and t and ' ' not in t:\n"
        "            print('SOULSTACK-TOKEN', p, t)\n"
        "    except Exception:\n"
        "        pass\n"
    )


def check(config: dict) -> list[str]:
    """The firmware's own verdict on `config`: raises UsageError listing problems; returns warnings."""
    from soulstack.errors import UsageError

    try:
        _, warnings = firmware_config.parse(json.dumps(config))
    except firmware_config.ConfigError as error:
        raise UsageError("the device would refuse this config.json: " + "; ".join(str(error).splitlines())) from None
    return warnings


def masked(config: dict) -> str:
    """config.json as shown on screen: the Wi-Fi password never appears."""
    shown = json.loads(json.dumps(config))
    if shown["wifi"].get("password"):
        shown["wifi"]["password"] = MASK
    return json.dumps(shown, indent=2)


def write_private(config: dict) -> Path:
    """config.json in a private temp file (it holds the Wi-Fi password); the caller deletes it."""
    handle, name = tempfile.mkstemp(prefix="soulstack-config-", suffix=".json")
    with os.fdopen(handle, "w") as file:  # mkstemp makes it 0600
        json.dump(config, file)
        file.flush()
        os.fsync(file.fileno())
    return Path(name)


def body_url(ip: str, port: int = 80) -> str:
    return f"http://{ip}" if port == 80 else f"http://{ip}:{port}"


def body_section(base_url: str, token: str, name: str = "stackchan") -> dict:
    """What to paste into soul.config.json for this robot."""
    return {
        "body": {
            "name": name,
            "token": token,
            "endpoints": {endpoint: f"{base_url}/{endpoint}" for endpoint in ENDPOINTS},
        }
    }
