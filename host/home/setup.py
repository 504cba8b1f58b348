"""The home's services and the steps of `soulstack home init`.

Every service listens on the LAN address (the robot must reach it), so every one has a token. Tokens
live in each service's environment file (0600, read by systemd as root), never in a unit or in
argv; a re-run keeps the tokens there and every line a person added (a model key), and rewrites
only SOULSTACK_ARGS. The soul's config sits in its state folder, where its unit reads it (placement.py:
a --state-dir other than systemd's own is named in the units, and a --unit-dir systemd does not read
gets a line saying what to copy where instead of the start hint).
"""

import ipaddress
import json
import secrets
import shlex
from dataclasses import dataclass
from pathlib import Path

from soulstack.errors import UsageError
from soulstack.home import placement
from soulstack.private_files import PRIVATE_FILE, write_atomically
from soulstack.service.units import systemd_reads, unit_path_problem, where_to_copy


@dataclass(frozen=True)
class HomeService:
    name: str  # its unit is soulstack-NAME.service in deploy/; a service without one there is left out
    port: int
    tokens: dict  # environment variable -> which of the home's tokens (TOKENS) it holds
    soul_url: bool = False  # takes --soul http://HOST:9202 (the soul it tells or hands words to)
    robot: str = ""  # how it names the robot on its command line, once the robot's address is known
    needs_robot: bool = False  # it cannot start before it knows the robot: enabled once --robot names it


# The home's tokens, each made once (secrets.token_urlsafe) and kept across re-runs.
TOKENS = ("body", "soul", "tts", "ears", "flock")

# One entry per service; `ears` counts once deploy/ ships its unit.
SERVICES = (
    HomeService("soul", 9202, {"NUDGE_TOKEN": "soul", "BODY_TOKEN": "body", "FLOCK_TOKEN": "flock"}),
    HomeService("tts", 9204, {"TTS_TOKEN": "tts"}),
    HomeService(
        "ears",
        9205,
        {"EARS_TOKEN": "ears", "NUDGE_TOKEN": "soul", "BODY_TOKEN": "body"},
        soul_url=True,
        robot="--body stackchan={robot}",
        needs_robot=True,
    ),
    HomeService("flock", 8470, {"FLOCK_TOKEN": "flock", "NUDGE_TOKEN": "soul"}, soul_url=True),
)


def available() -> list[HomeService]:
    from soulstack.service.units import NAMES

    return [service for service in SERVICES if service.name in NAMES]


def soulstack_args(service: HomeService, host: str, robot: str | None) -> str:
    args = ["--host", host]
    if service.soul_url:
        args += ["--soul", f"http://{host}:9202"]
    if service.robot and robot:
        args += shlex.split(service.robot.format(robot=robot))
    return shlex.join(args)


# --- environment files -------------------------------------------------------------------------


def read_env(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []


def env_values(lines: list[str]) -> dict:
    values = {}
    for line in lines:
        key, sep, value = line.partition("=")
        if sep and not key.startswith("#") and key.strip():
            values[key.strip()] = value.strip()
    return values


def merged_env(lines: list[str], ours: dict, replace: tuple = ("SOULSTACK_ARGS",)) -> str:
    """`lines` with our keys set: a key already there keeps its value unless it is in `replace`;
    every other line (comments, a model key) stays as it was."""
    out, done = [], set()
    for line in lines:
        key = line.partition("=")[0].strip()
        if "=" in line and key in ours and not key.startswith("#"):
            done.add(key)
            out.append(f"{key}={ours[key]}" if key in replace else line)
        else:
            out.append(line)
    out += [f"{key}={value}" for key, value in ours.items() if key not in done]
    return "\n".join(out) + "\n"


def home_tokens(env_dir: Path) -> dict:
    """Each home token: the one an environment file already holds, else a fresh one."""
    found: dict[str, str] = {}
    for service in SERVICES:
        values = env_values(read_env(env_dir / f"{service.name}.env"))
        for variable, token in service.tokens.items():
            if values.get(variable):
                found.setdefault(token, values[variable])
    return {token: found.get(token) or secrets.token_urlsafe(24) for token in TOKENS}


# --- the soul's config ----------------------------------------------------------------------------


def soul_config(path: Path, host: str, robot: str | None, language: str | None = None) -> dict:
    """The soul's config: the one there (kept), else a starter; the robot as its body once known, the
    flock on this host, the language when one is asked for. Tokens stay null here: the soul reads them
    from its environment file."""
    from soulstack.config_checks import ConfigError, read_json_file
    from soulstack.protocol.shapes import ENDPOINTS
    from soulstack.soul import config

    def check(raw: dict) -> None:
        try:
            config.from_dict(raw, path.parent)
        except ConfigError as error:
            raise UsageError(f"{path}: {error}") from None

    if path.exists():
        try:
            raw = read_json_file(path)
        except ConfigError as error:
            raise UsageError(str(error)) from None
        raw = {} if raw is None else raw  # null: the defaults, as the soul reads it
        if not isinstance(raw, dict):
            raise UsageError(f"{path} must hold a JSON object (the soul's config), not {type(raw).__name__}")
        check(raw)  # the kept file as it is first: its own mistakes are named as its own
    else:
        raw = config.starter(language or "en")
        raw["body"] = {"name": "stackchan", "endpoints": {name: None for name in ENDPOINTS}}
    if language:
        raw["persona"] = {**(raw.get("persona") or {}), "language": language}
    if robot:
        raw["body"] = {**(raw.get("body") or {}), "endpoints": {name: f"{robot}/{name}" for name in ENDPOINTS}}
    raw["flock"] = {**(raw.get("flock") or {}), "url": f"http://{host}:8470"}
    check(raw)
    return raw


# --- the command ------------------------------------------------------------------------------------


def check_host(host: str) -> str:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise UsageError(f"--host {host!r} is not an IP address; give this computer's LAN address") from None
    if address.version == 6:
        # The robot's Wi-Fi stack (MicroPython's on the ESP32) reaches IPv4 addresses only.
        raise UsageError(f"--host {host}: the robot reaches IPv4 addresses only; give this computer's IPv4 LAN address")
    if address.is_loopback or address.is_unspecified:
        raise UsageError(
            f"--host {host}: the robot cannot reach this computer there; give its LAN address (e.g. 192.168.1.10)"
        )
    return host


def check_robot(robot: str | None) -> str | None:
    if robot is None:
        return None
    from soulstack.config_checks import split_url
    from soulstack.protocol.commands import check_url

    robot = check_url(robot, "--robot", "http://192.168.1.42")
    parts = split_url(robot)
    if parts is not None and (parts.username is not None or parts.password is not None):
        # The Body Protocol's only key is BODY_TOKEN: a name and password here would sit in argv and units.
        raise UsageError(f"--robot takes no name or password (the robot's key is BODY_TOKEN); give {robot_base(parts)}")
    if parts is not None and (parts.path or parts.query or parts.fragment):
        # Each endpoint is added to it (…/look): a path here would become /status/look.
        raise UsageError(f"--robot is the robot's address alone, {robot_base(parts)}; not {robot!r}")
    return robot


def robot_base(parts) -> str:
    """The robot's address alone: scheme, host and port, nothing else the URL carried."""
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}"


def init_home(args) -> int:
    from soulstack.flash.provision import lan_address
    from soulstack.service.commands import checkout_note, enable, restart, write_unit

    host = check_host(lan_address() if args.host is None else args.host)
    robot = check_robot(args.robot)
    # Absolute, as the units name them: what is printed is where the units look.
    unit_dir, env_dir, state_dir = (Path(folder).absolute() for folder in (args.unit_dir, args.env_dir, args.state_dir))
    for flag, folder in (("--unit-dir", unit_dir), ("--state-dir", state_dir)):
        if not folder.is_dir():  # before anything is written
            raise UsageError(f"{flag} {folder} does not exist")
    problem = unit_path_problem(str(state_dir))  # the units name it (placement.py)
    if problem:
        raise UsageError(f"--state-dir {state_dir} {problem}; choose a folder whose path has none")
    services = available()
    soul_path = state_dir / "soulstack-soul" / "soul.config.json"
    raw = soul_config(soul_path, host, robot, args.language)
    robot = robot or body_of(raw)  # named by an earlier run: the soul's body
    tokens = home_tokens(env_dir)
    # Outside systemd's own state folder the units name the folders, and run as their owner.
    runs_as = None if placement.is_systemds_own(state_dir) else placement.owner(state_dir)
    units, written, waiting, executable = [], [], [], None
    for service in services:
        unit, env_path, executable = write_unit(service.name, unit_dir, env_dir)
        written.append(unit)
        if runs_as:
            user, group, uid, gid = runs_as
            text = placement.with_state_dir(unit.read_text(), service.name, state_dir, user, group)
            write_atomically(unit, text.encode(), 0o644)
            placement.make_state_folder(state_dir / f"soulstack-{service.name}", uid, gid)
        lines = read_env(env_path)
        ours = {variable: tokens[token] for variable, token in service.tokens.items()}
        ours["SOULSTACK_ARGS"] = soulstack_args(service, host, robot)
        write_atomically(env_path, merged_env(lines, ours).encode(), PRIVATE_FILE)
        if service.needs_robot and not robot:
            waiting.append(service.name)
        else:
            units.append(unit.name)
    soul_path.parent.mkdir(mode=0o700, exist_ok=True)
    write_atomically(soul_path, (json.dumps(raw, indent=2, ensure_ascii=False) + "\n").encode(), PRIVATE_FILE)
    if runs_as:
        placement.give(soul_path, runs_as[2], runs_as[3])  # the soul reads it as the folder's owner
    again = again_command(executable, args, unit_dir, env_dir, state_dir)
    language = (raw.get("persona") or {}).get("language") or "en"
    say_what_was_done(services, host, tokens, unit_dir, env_dir, soul_path, robot, again, language)
    if waiting:
        print(f"{', '.join(waiting)} waits for the robot: started when you run this again with --robot")
    note = checkout_note(executable) if executable else None
    if note:
        print(note)
    if runs_as:
        user = runs_as[0]
        fix = f"; chown -R {state_dir} to an account of their own and run this again" if runs_as[2] == 0 else ""
        print(
            f"the services run as {user}, who owns {state_dir} (the account systemd makes for a service, "
            f"DynamicUser=, keeps its state in {placement.SYSTEMD_STATE} only){fix}"
        )
    start = f"systemctl daemon-reload && systemctl enable --now {' '.join(units)}"
    if not systemd_reads(unit_dir):  # systemctl would not find them: say what to copy where
        print(where_to_copy(unit_dir, written, start))
        return 0
    if args.no_enable:
        print(f"start them with: {start}")
        return 0
    enable(units)
    restart(units)  # a re-run (a new --robot, a new host) takes effect now
    print(f"enabled and started {', '.join(units)}; follow them with: journalctl -f -u 'soulstack-*'")
    return 0


def body_of(raw: dict) -> str | None:
    status = ((raw.get("body") or {}).get("endpoints") or {}).get("status")
    return status.rsplit("/", 1)[0] if status else None


def flash_command(host: str, tokens: dict, names: list[str], language: str = "en") -> str:
    """The exact tools/flash line: tokens in its environment (never its argv), LAN URLs as flags, and
    the soul's language when it is not English (the robot's screen speaks it too)."""
    env = [f"BODY_TOKEN={tokens['body']}", f"NUDGE_TOKEN={tokens['soul']}"]
    flags = ["--nudge-url", f"http://{host}:9202/nudge"]
    if language != "en":
        flags += ["--lang", language]
    if "tts" in names:
        env.append(f"TTS_TOKEN={tokens['tts']}")
        flags += ["--tts-url", f"http://{host}:9204/tts"]
    if "ears" in names:
        env.append(f"EARS_TOKEN={tokens['ears']}")
        flags += ["--ears-url", f"http://{host}:9205/utterance"]
    return " ".join(env) + " tools/flash " + shlex.join(flags)


def again_command(executable, args, unit_dir, env_dir, state_dir) -> str:
    """This command again with the robot named: by the full path the units run (sudo's PATH seldom
    has a venv's bin), and with every folder the person chose, so the second run finds the first's."""
    line = [executable or "soulstack", "home", "init", "--robot", "http://ROBOT-ADDRESS"]
    for flag, value, default in (
        ("--unit-dir", unit_dir, "/etc/systemd/system"),
        ("--env-dir", env_dir, "/etc/soulstack"),
        ("--state-dir", state_dir, "/var/lib"),
    ):
        if str(value) != default:
            line += [flag, shlex.quote(str(value))]
    if args.host:
        line += ["--host", shlex.quote(args.host)]
    return "sudo " + " ".join(line)


def say_what_was_done(services, host, tokens, unit_dir, env_dir, soul_path, robot, again, language):
    names = [service.name for service in services]
    left_out = [service.name for service in SERVICES if service.name not in names]
    print(f"home on {host}: " + ", ".join(f"{s.name} http://{host}:{s.port}" for s in services))
    print(f"wrote {', '.join(f'{unit_dir}/soulstack-{n}.service' for n in names)}")
    print(f"tokens in {env_dir}/NAME.env (0600; kept when you run this again); the soul's config: {soul_path}")
    if left_out:
        print(f"left out (this soulstack ships no unit for it): {', '.join(left_out)}")
    print("flash the robot (in a soulstack checkout, on the computer its USB cable is plugged into):")
    print(f"  {flash_command(host, tokens, names, language)}")
    if robot:
        print(f"the soul's body: {robot}")
    else:
        print(f"then, with the address tools/flash prints: {again}")
    print(f"the flock's page: http://{host}:8470 (it asks once for FLOCK_TOKEN, in {env_dir}/flock.env)")
