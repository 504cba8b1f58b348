"""`soulstack flash --over-wifi URL --token T`: update a robot on the network, and report a rollback as a failure.

The robot's side is firmware/core/ota.py (the /firmware/* endpoints) and
firmware/slots.py (the two slots, the pointer, the trial boots). Here:

  1. ask the robot what it runs (POST /firmware/info): its version, slot, .mpy ABI, free flash
  2. build the set for it: firmware/ (less the loader, which changes only by cable) and microdot,
     compiled with mpy-cross for the ABI it reports, or as sources with a warning (compiled.decide)
  3. send what changed: /firmware/begin lists every file with its size and sha256; the robot copies
     the ones it already has and names the rest, which go in pieces of its piece_bytes
  4. switch and restart: /firmware/switch verifies the staged set and points the loader at it
  5. wait until /status answers online on the new version; a robot that came back on the old one
     rolled back, and its reason is the failure's message

A set's version is the firmware's own (core/serial_frames.VERSION) and the
first 12 hex digits of the sha256 of its file list: the same files are the
same version, so a robot already running it is left alone.
"""

import hashlib
import http.client
import json
import shutil
import sys
import tempfile
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from soulstack.firmware import slots as loader
from soulstack.firmware.core import ota
from soulstack.firmware.core.serial_frames import VERSION
from soulstack.flash import compiled, provision
from soulstack.flash.tools import FlashError

STEPS = 5
LOADER_FILES = ("boot.py", "main.py", "slots.py")
POLL_S = 0.25


@dataclass
class SetFile:
    path: str  # inside the set, e.g. core/protocol.mpy
    local: Path
    size: int
    sha256: str


@dataclass
class Report:
    """What one update did, for the person and for tools/bench-ota."""

    version: str = ""
    before: str = ""
    files: int = 0
    set_bytes: int = 0
    sent_files: list = field(default_factory=list)
    sent_bytes: int = 0  # file bytes carried by pieces
    wire_bytes: int = 0  # everything the host sent, from /firmware/info to the last /status
    wire_received: int = 0  # everything the robot answered
    pieces: int = 0
    copied: int = 0
    send_s: float = 0.0
    switch_s: float = 0.0
    back_s: float = 0.0
    total_s: float = 0.0
    info: dict = field(default_factory=dict)  # the robot's /firmware/info after the update
    lowest_heap: int | None = None
    nothing_to_do: bool = False


# --- talking to the robot -----------------------------------------------------------


class Robot:
    """The robot's /firmware/* and /status over HTTP, one request (and connection) at a time, bytes counted."""

    def __init__(self, url: str, token: str, timeout_s: float = 60):
        self.url = url.rstrip("/")
        parts = urllib.parse.urlsplit(self.url)
        self.host, self.port = parts.hostname or "", parts.port or 80
        self.token = token
        self.timeout_s = timeout_s
        self.sent_bytes = 0  # request lines, headers and bodies, as they went on the wire
        self.received_bytes = 0  # status lines, headers and bodies of the answers

    def post(
        self,
        path: str,
        body=None,
        data: bytes | None = None,
        query: dict | None = None,
        timeout_s: float | None = None,
        kind: str = "application/octet-stream",
    ):
        """(status, answer as JSON); FlashError when nothing answers. `body` goes as JSON, `data` as `kind`."""
        if data is None:
            data, kind = json.dumps({} if body is None else body).encode(), "application/json"
        target = path + ("?" + urllib.parse.urlencode(query) if query else "")
        headers = {
            "Host": f"{self.host}:{self.port}",
            "Content-Type": kind,
            "Content-Length": str(len(data)),
            "Authorization": f"Bearer {self.token}",
            "Connection": "close",
        }
        connection = http.client.HTTPConnection(self.host, self.port, timeout=timeout_s or self.timeout_s)
        try:
            connection.putrequest("POST", target, skip_host=True, skip_accept_encoding=True)
            for name, value in headers.items():
                connection.putheader(name, value)
            connection.endheaders(data)
            response = connection.getresponse()
            raw = response.read()
            status = response.status
            self.received_bytes += len(raw) + 17 + sum(len(k) + len(v) + 4 for k, v in response.getheaders()) + 2
        except (OSError, http.client.HTTPException) as error:
            raise FlashError(f"nothing answers at {self.url} ({error}); is the robot on and on this network?") from None
        finally:
            connection.close()
        self.sent_bytes += (
            len(f"POST {target} HTTP/1.1\r\n") + sum(len(k) + len(v) + 4 for k, v in headers.items()) + 2 + len(data)
        )
        try:
            return status, json.loads(raw or b"{}")
        except ValueError:
            return status, {"message": raw[:200].decode("utf-8", "replace")}

    def firmware(self, action: str, body=None, **options):
        status, answer = self.post("/firmware/" + action, body, **options)
        if status == 401:
            raise FlashError(
                f"the robot at {self.url} refused the token (401); give the one in its config.json "
                "with --token, --token-file or $BODY_TOKEN"
            )
        if status == 403:
            raise FlashError(f"the robot at {self.url} refuses updates over Wi-Fi: {answer.get('message')}")
        if status == 404 and action == "info":
            raise FlashError(
                f"the robot at {self.url} has no over-the-air update (404 for /firmware/info): its "
                "firmware predates it; flash it once by cable (tools/flash), then update over Wi-Fi"
            )
        return status, answer


# --- the set --------------------------------------------------------------------------


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(65536), b""):
            digest.update(block)
    return digest.hexdigest()


def set_files(folder: Path) -> list[SetFile]:
    """The set in `folder` (a tree as the robot's slot will hold it), the loader's files left out."""
    out = []
    for local in sorted(Path(folder).rglob("*")):
        relative = local.relative_to(folder)
        if local.is_dir() or "__pycache__" in relative.parts or local.suffix not in (".py", ".mpy"):
            continue
        if len(relative.parts) == 1 and (
            relative.name in LOADER_FILES
            or relative.stem in ("boot", "main", "slots")
            or relative.name == "__init__.py"
        ):
            continue
        out.append(SetFile(relative.as_posix(), local, local.stat().st_size, sha256_of(local)))
    return out


def file_list(files: list[SetFile], version: str) -> bytes:
    """The body of /firmware/begin: "version V", then "file SHA256 SIZE PATH" a line (firmware/core/ota.py)."""
    lines = [f"version {version}"] + [f"file {f.sha256} {f.size} {f.path}" for f in files]
    return ("\n".join(lines) + "\n").encode()


def set_version(files: list[SetFile]) -> str:
    listing = "".join(f"{f.path}\0{f.size}\0{f.sha256}\n" for f in sorted(files, key=lambda f: f.path))
    return f"{VERSION}+{hashlib.sha256(listing.encode()).hexdigest()[:12]}"


def build_set(robot_mpy: int, into: Path) -> tuple[list[SetFile], str | None, str | None]:
    """(files, -march or None for sources, a warning): firmware/ and microdot as the robot will load them."""
    layout = {
        folder: [f for f in files if folder or f.name not in LOADER_FILES]
        for folder, files in provision.firmware_files().items()
    }
    arch, warning = compiled.decide(robot_mpy, compiled.emitted_version())
    if arch is None:
        for folder, files in layout.items():
            target = into / folder if folder else into
            target.mkdir(parents=True, exist_ok=True)
            for source in files:
                shutil.copy(source, target / source.name)
    else:
        compiled.compile_layout(layout, arch, into)
    return set_files(into), arch, warning


def kb(size: int) -> str:
    return f"{size / 1024:.1f} KB" if size < 1024 * 1024 else f"{size / 1024 / 1024:.1f} MB"


# --- the update -------------------------------------------------------------------------


class Update:
    """One run of `soulstack flash --over-wifi`, printing each step as the cable flash does."""

    def __init__(
        self,
        url: str,
        token: str,
        wait_s: float = 60,
        out=None,
        prebuilt: Path | None = None,
        clock=time.monotonic,
        watchdog_s: int | None = None,
    ):
        self.robot = Robot(url, token)
        self.url = self.robot.url
        self.wait_s = wait_s
        self.out = out or sys.stdout
        self.prebuilt = prebuilt  # a set already built (--set, tests, tools/bench-ota); None: build from this package
        self.watchdog_s = watchdog_s  # how long the new set has to serve (None: the robot's loader's default)
        self.clock = clock
        self.report = Report()
        # An upstream MicroPython build (hal generic) has no screen, so its /status is honestly never
        # online: it is back once it serves /status on the new version. (A robot's info names its HAL.)
        self.never_online = False

    def say(self, line: str = ""):
        print(line, file=self.out, flush=True)

    def step(self, number: int, title: str, *lines: str):
        self.say(f"[{number}/{STEPS}] {title}")
        for line in lines:
            self.say(f"    {line}")

    def describe(self) -> None:
        """The plan, for --dry-run: nothing is sent."""
        self.step(
            1, "ask the robot what it runs", f"POST {self.url}/firmware/info  (Authorization: Bearer <the token>)"
        )
        self.step(
            2,
            "build the firmware set for it",
            "firmware/ (less boot.py, main.py, slots.py: the loader changes only by cable) and microdot's "
            f"{', '.join(provision.MICRODOT_FILES)}, compiled with mpy-cross -march=<its arch> when it loads the "
            ".mpy version mpy-cross writes, as sources otherwise",
        )
        self.step(
            3,
            "send what changed",
            f"POST {self.url}/firmware/begin with every file's sha256 and size; the robot "
            "copies the files it already has; the rest go to /firmware/file in pieces",
        )
        self.step(
            4,
            "switch and restart",
            f"POST {self.url}/firmware/switch: the robot checks every staged file, points "
            "its loader at the new set (one atomic rename) and restarts",
        )
        self.step(
            5,
            "wait for the new version",
            f"POST {self.url}/status until it answers online (up to {self.wait_s:g} s), "
            "then /firmware/info: the new version, or the robot's reason for rolling back",
        )
        self.say()
        self.say("dry run: nothing was sent. Without --dry-run, the steps above run in this order.")

    def run(self) -> Report:
        started = self.clock()
        info = self.ask()
        with tempfile.TemporaryDirectory(prefix="soulstack-ota-") as folder:
            files = self.build(info, Path(folder))
            version = set_version(files)
            self.report.version, self.report.before = version, str(info.get("version"))
            if info.get("version") == version and not info.get("trial"):
                self.say(f"  the robot already runs {version}; nothing to send")
                self.report.nothing_to_do = True
                self.report.info = info
                self.report.total_s = self.clock() - started
                return self.report
            stage = self.send(files, version)
        self.switch(stage, version)
        self.wait_back(info, version)
        self.report.total_s = self.clock() - started
        self.report.wire_bytes, self.report.wire_received = self.robot.sent_bytes, self.robot.received_bytes
        self.say()
        self.say(
            f"updated {self.url}: {info.get('version')} -> {version} (slot {self.report.info.get('slot')}); "
            f"the previous set stays in slot {(self.report.info.get('previous') or {}).get('slot')}"
        )
        return self.report

    # --- the steps ---

    def ask(self) -> dict:
        self.step(1, "ask the robot what it runs", f"POST {self.url}/firmware/info")
        status, info = self.robot.firmware("info")
        if status != 200:
            raise FlashError(f"/firmware/info answered {status}: {info.get('message')}")
        if info.get("loader") != loader.LOADER:
            self.say(
                f"  warning: the robot's loader is version {info.get('loader')}, this soulstack's is {loader.LOADER}; "
                "the loader changes only by cable (tools/flash)"
            )
        mpy = info.get("mpy") or 0
        abi = f".mpy v{mpy & 0xFF}" + (
            f" {compiled.ARCHS[mpy >> 10]}" if mpy >> 10 < len(compiled.ARCHS) and mpy >> 10 else ""
        )
        self.say(
            f"  firmware {info.get('version')} (slot {info.get('slot')}), loads {abi if mpy else 'no .mpy version'}, "
            f"{kb(info.get('free_flash') or 0)} flash free"
        )
        rolled = info.get("rolled_back")
        if rolled:
            self.say(f"  note: it rolled back from {rolled.get('version')} earlier: {rolled.get('reason')}")
        if info.get("restart_pending"):
            raise FlashError("the robot has switched sets and not restarted yet; wait a few seconds and run this again")
        self.never_online = info.get("hal") == "generic"
        if self.never_online:
            self.say("  hal generic (upstream MicroPython, no screen): never online, so it is back once it serves")
        return info

    def build(self, info: dict, folder: Path) -> list[SetFile]:
        self.step(
            2, "build the firmware set for it", "firmware/ (less the loader: boot.py, main.py, slots.py) and microdot"
        )
        if self.prebuilt is not None:
            files = set_files(self.prebuilt)
            self.say(f"  a set built before, from {self.prebuilt}")
        else:
            files, arch, warning = build_set(info.get("mpy") or 0, folder)
            if warning:
                self.say(f"  warning: {warning}")
            else:
                self.say(f"  compiled with mpy-cross{' -march=' + arch if arch else ''}")
        self.report.files = len(files)
        self.report.set_bytes = sum(f.size for f in files)
        self.say(f"  {len(files)} files, {kb(self.report.set_bytes)}, version {set_version(files)}")
        limits = info.get("limits") or {}
        if len(files) > limits.get("files", ota.MAX_FILES) or self.report.set_bytes > limits.get(
            "set_bytes", ota.MAX_SET_BYTES
        ):
            raise FlashError(
                f"this set ({len(files)} files, {kb(self.report.set_bytes)}) is over the robot's limits {limits}"
            )
        return files

    def send(self, files: list[SetFile], version: str) -> str:
        self.step(3, "send what changed", f"POST {self.url}/firmware/begin, then /firmware/file in pieces")
        started = self.clock()
        status, answer = self.robot.firmware("begin", data=file_list(files, version), kind="text/plain", timeout_s=120)
        if status != 200:
            raise FlashError(f"the robot refused the new set ({status}): {answer.get('message')}")
        stage, needed, piece = (
            answer["stage"],
            answer.get("needed", []),
            int(answer.get("piece_bytes") or ota.PIECE_BYTES),
        )
        self.report.copied = answer.get("copied", 0)
        by_path = {f.path: f for f in files}
        changed = sum(by_path[p].size for p in needed if p in by_path)
        self.say(
            f"  {len(needed)} of {len(files)} files changed ({kb(changed)})"
            + (f"; the robot copied the other {self.report.copied} from its running set" if self.report.copied else "")
        )
        for path in needed:
            self.send_file(stage, by_path[path], piece)
            self.say(f"  sent {path} ({kb(by_path[path].size)})")
        self.report.send_s = self.clock() - started
        self.say(f"  {kb(self.report.sent_bytes)} in {self.report.pieces} pieces in {self.report.send_s:.2f} s")
        status, info = self.robot.firmware("info")
        if status == 200:
            self.report.lowest_heap = (info.get("heap") or {}).get("lowest_while_receiving")
        return stage

    def send_file(self, stage: str, item: SetFile, piece: int):
        offset, retries = 0, 0
        with open(item.local, "rb") as handle:
            while offset < item.size:
                handle.seek(offset)
                data = handle.read(piece)
                status, answer = self.robot.firmware(
                    "file", data=data, query={"stage": stage, "path": item.path, "offset": offset}
                )
                if status == 200:
                    offset += len(data)
                    self.report.pieces += 1
                    self.report.sent_bytes += len(data)
                    continue
                if status == 409 and isinstance(answer.get("offset"), int) and retries < 3:
                    offset, retries = answer["offset"], retries + 1  # the robot says where the file continues
                    continue
                raise FlashError(f"the robot refused {item.path} at byte {offset} ({status}): {answer.get('message')}")
        self.report.sent_files.append(item.path)

    def switch(self, stage: str, version: str):
        self.step(4, "switch and restart", f"POST {self.url}/firmware/switch")
        started = self.clock()
        try:
            request: dict[str, str | float] = {"stage": stage, "version": version}
            if self.watchdog_s is not None:
                request["watchdog_s"] = self.watchdog_s
            status, answer = self.robot.firmware("switch", request, timeout_s=120)
        except FlashError as error:  # the answer may be lost in the restart: which set comes back says what happened
            self.say(f"  no answer ({error}); waiting to see which set the robot comes back with")
            return
        if status != 200:
            raise FlashError(f"the robot did not switch ({status}): {answer.get('message')}; it still runs the old set")
        self.report.switch_s = self.clock() - started
        self.say(f"  verified and switched to slot {answer.get('slot')}; the robot is restarting")

    def wait_back(self, before: dict, version: str):
        until = "it serves" if self.never_online else "online"
        self.step(5, "wait for the new version", f"POST {self.url}/status until {until} (up to {self.wait_s:g} s)")
        started = self.clock()
        deadline = started + self.wait_s
        seen = "nothing yet"
        while self.clock() < deadline:
            try:
                status, answer = self.robot.post("/status", {}, timeout_s=3)
                if status == 200 and (answer.get("online") is True or self.never_online):
                    status, info = self.robot.firmware("info", timeout_s=5)
                    if status == 200 and not info.get("restart_pending"):
                        seen = f"{info.get('version')} (slot {info.get('slot')})"
                        rolled = info.get("rolled_back") or {}
                        if info.get("version") == version and not info.get("trial"):
                            self.report.back_s = self.clock() - started
                            self.report.info = info
                            back = "online" if answer.get("online") is True else "serving (never online: hal generic)"
                            self.say(
                                f"  {back} on {version} (slot {info.get('slot')}) after {self.report.back_s:.2f} s"
                            )
                            return
                        if rolled.get("version") == version:
                            self.report.info = info
                            raise FlashError(
                                f"the update to {version} was rolled back: the robot runs {info.get('version')} "
                                f"(slot {info.get('slot')}) again and says: {rolled.get('reason')}"
                            )
                        if info.get("version") == before.get("version") and info.get("slot") == before.get("slot"):
                            raise FlashError(
                                f"the robot still runs {info.get('version')} (slot {info.get('slot')}): the "
                                "switch did not take; run this again"
                            )
                else:
                    seen = f"/status answered {status} {answer}"
            except FlashError as error:
                if "rolled back" in str(error) or "did not take" in str(error):
                    raise
                seen = "no answer (restarting)"
            time.sleep(POLL_S)
        raise FlashError(
            f"the robot did not come back on {version} within {self.wait_s:g} s (last: {seen}); a new set that "
            f"never serves is switched back after {loader.TRIES} boots: restart the robot (power it off and "
            "on) and run this again to see why, or flash it by cable"
        )


def check_url(url: str) -> str:
    from soulstack.config_checks import split_url
    from soulstack.errors import UsageError

    parts = split_url(url, ("http",))
    if parts is None:
        raise UsageError(f"--over-wifi {url} must be the robot's http:// address, e.g. http://192.168.1.23")
    if parts.path not in ("", "/"):
        raise UsageError(f"--over-wifi {url}: give the robot's address alone (http://HOST[:PORT]), without a path")
    return url.rstrip("/")


def flash_over_wifi(args) -> int:
    """The --over-wifi run of `soulstack flash`: 0 updated (or nothing to do), 1 failed or rolled back."""
    url = check_url(args.over_wifi)
    run = Update(
        url,
        args.token or "",
        wait_s=args.wait,
        prebuilt=Path(args.set) if args.set else None,
        watchdog_s=args.watchdog,
    )
    if args.dry_run:
        run.describe()
        return 0
    try:
        run.run()
    except FlashError as error:
        print(f"soulstack flash: {error}", file=sys.stderr)
        return 1
    except TimeoutError:
        print(
            f"soulstack flash: the robot at {url} stopped answering mid-update; run this again (the robot still "
            "boots its old set until a switch)",
            file=sys.stderr,
        )
        return 1
    return 0
