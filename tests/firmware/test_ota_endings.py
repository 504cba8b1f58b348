"""Every way a set on trial can end before it serves is a rollback, and the board's watchdog catches a hang.

The real firmware under real MicroPython in the simulator (see tests/firmware/test_firmware_ota.py); the
simulator's board has the watchdog machine.WDT stands for (host/sim/runner.py): a firmware that
armed it and stops feeding it is reset, as the chip would be, with nobody cutting the power.
"""

import json
import shutil
import threading

import pytest

from soulstack.firmware import FIRMWARE_DIR, slots
from soulstack.flash import wifi
from soulstack.flash.tools import FlashError
from tests.firmware.test_firmware_ota import TOKEN, info, online, pointer, robot_factory, unix_mpy, update, wait_for  # noqa: F401

# app.py of a set that ends, one way or another, before it serves.
ENDINGS = {
    "sys.exit(0)": ("import sys\n\n\ndef main(argv):\n    sys.exit(0)\n", "exited with 0"),
    "sys.exit()": ("import sys\n\n\ndef main(argv):\n    sys.exit()\n", "exited"),
    "sys.exit(3)": ("import sys\n\n\ndef main(argv):\n    sys.exit(3)\n", "exited with 3"),
    "KeyboardInterrupt": ("def main(argv):\n    raise KeyboardInterrupt\n", "KeyboardInterrupt"),
    "a return": ("def main(argv):\n    return\n", "it stopped before serving"),
    "an exception": ("def main(argv):\n    raise ValueError('no such thing')\n", "ValueError: no such thing"),
    "SystemExit at import": ("raise SystemExit(0)\n", "exited with 0"),
}
HANGS = "import time\n\n\ndef main(argv):\n    while True:\n        time.sleep(1)\n"
BUSY = "while True:\n    pass\n"  # hangs while it is imported, never giving the event loop a turn


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sets") / "good"
    wifi.build_set(unix_mpy(), folder)
    return folder


def variant(good, tmp_path, app_source):
    folder = tmp_path / "set"
    shutil.copytree(good, folder)
    (folder / "app.mpy").unlink()
    (folder / "app.py").write_text(app_source)
    return folder


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_every_way_a_trial_set_ends_before_serving_is_a_rollback(robot_factory, good, tmp_path, ending):  # noqa: F811
    source, reason = ENDINGS[ending]
    robot = robot_factory()
    old = info(robot)["version"]
    with pytest.raises(FlashError, match="rolled back") as failure:
        update(robot, variant(good, tmp_path, source))
    assert reason in str(failure.value)
    now = info(robot)
    assert now["version"] == old and now["slot"] == "root" and online(robot)
    assert reason in now["rolled_back"]["reason"] and robot.process.poll() is None  # the body is still there


def test_a_5_mb_piece_is_answered_413_and_the_robot_goes_on(robot_factory, good):  # noqa: F811
    robot = robot_factory()
    files = wifi.set_files(good)
    listing = "".join(["version big\n"] + [f"file {f.sha256} {f.size} {f.path}\n" for f in files]).encode()
    status, started = robot.robot.post("/firmware/begin", data=listing, kind="text/plain")
    assert status == 200
    query = {"stage": started["stage"], "path": files[0].path, "offset": 0}
    status, answer = robot.robot.post("/firmware/file", data=b"\0" * (5 * 1024 * 1024), query=query)
    assert status == 413 and "too large" in answer["message"]
    status, answer = robot.robot.post("/speak", {"text": "x" * (5 * 1024 * 1024)})  # a Body Protocol endpoint too
    assert status == 413
    assert online(robot)


def start_update(robot, folder, **options):
    outcome = {}

    def run():
        try:
            outcome["report"] = wifi.Update(
                robot.url, TOKEN, wait_s=3, out=open("/dev/null", "w"), prebuilt=folder, **options
            ).run()
        except FlashError as error:
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


@pytest.mark.parametrize("hang", ["in main", "at import"])
def test_a_set_that_hangs_is_reset_by_the_watchdog_and_switched_back_with_nobody_there(
    robot_factory,  # noqa: F811
    good,
    tmp_path,
    hang,
):
    robot = robot_factory()
    old = info(robot)["version"]
    thread, _ = start_update(robot, variant(good, tmp_path, HANGS if hang == "in main" else BUSY), watchdog_s=2)
    # Nobody cuts the power: the watchdog resets the board after each of the three trial boots, the fourth rolls back.
    rolled = wait_for(lambda: (pointer(robot) or {}).get("rolled_back"), seconds=120, what="the rollback")
    assert f"had not served after {slots.TRIES} boots" in rolled["reason"]
    wait_for(lambda: robot.wait_until_serving(5) and online(robot), seconds=60, what="the old set to serve")
    assert info(robot)["version"] == old and info(robot)["slot"] == "root"
    assert robot.watchdog_resets == slots.TRIES and robot.boots == 1 + 1 + slots.TRIES  # start, switch, 3 trial boots
    assert [call["timeout"] for call in robot.calls("WDT")] == [2000] * slots.TRIES  # the loader's, on trial boots
    thread.join(30)


def fed_count(robot):
    try:
        return int((robot.world / "wdt.fed").read_text())
    except (OSError, ValueError):
        return 0


def test_a_set_that_serves_is_kept_and_keeps_feeding_the_watchdog(robot_factory, good):  # noqa: F811
    robot = robot_factory()
    report = update(robot, good)  # the switch asks for no watchdog time: the loader's 30 s
    assert report.info["slot"] == "a" and pointer(robot)["trial"] is False
    assert [call["timeout"] for call in robot.calls("WDT")] == [slots.TRIAL_WATCHDOG_S * 1000]

    robot2 = robot_factory()
    thread, outcome = start_update(robot2, good, watchdog_s=2)
    thread.join(60)
    assert outcome["report"].info["slot"] == "a", outcome
    # Fed every half second (a quarter of the timeout) long after it served, in the same boot: never reset.
    boots = robot2.boots
    wait_for(lambda: fed_count(robot2) >= 12, seconds=60, what="the watchdog fed for 6 s")
    assert robot2.watchdog_resets == 0 and robot2.boots == boots and online(robot2)


def test_on_the_uiflow_hal_its_own_watchdog_starts_only_once_the_trial_set_serves(robot_factory, good):  # noqa: F811
    robot = robot_factory(hal="uiflow")
    assert [call["timeout"] for call in robot.calls("WDT")] == [10000]  # not on trial: the HAL's own, at once
    update(robot, good, wait_s=30)
    # The loader's on the trial boot, then the HAL's (the same task watchdog on the ESP32), after serving.
    after = [call["timeout"] for call in robot.calls("WDT")][1:]
    assert after == [slots.TRIAL_WATCHDOG_S * 1000, 10000]
    assert robot.watchdog_resets == 0 and pointer(robot)["trial"] is False


def test_a_set_whose_face_runs_but_that_never_serves_is_reset_on_the_uiflow_hal(robot_factory, good, tmp_path):  # noqa: F811
    # The real app, but where it would serve it waits: the HAL's animation runs and would feed a watchdog of its own.
    source = (FIRMWARE_DIR / "app.py").read_text()
    assert "    slots.confirm(checkpoint)\n" in source
    robot = robot_factory(hal="uiflow")
    old = info(robot)["version"]
    never = variant(
        good, tmp_path, source.replace("    slots.confirm(checkpoint)\n", "    await asyncio.sleep(3600)\n")
    )
    thread, _ = start_update(robot, never, watchdog_s=2)
    rolled = wait_for(lambda: (pointer(robot) or {}).get("rolled_back"), seconds=120, what="the rollback")
    assert f"had not served after {slots.TRIES} boots" in rolled["reason"] and robot.watchdog_resets == slots.TRIES
    wait_for(lambda: robot.wait_until_serving(5) and online(robot), seconds=60, what="the old set to serve")
    assert info(robot)["version"] == old
    thread.join(30)


def test_a_switch_refuses_a_watchdog_time_out_of_range(robot_factory, good):  # noqa: F811
    robot = robot_factory()
    files = wifi.set_files(good)
    listing = "".join(["version w\n"] + [f"file {f.sha256} {f.size} {f.path}\n" for f in files]).encode()
    status, started = robot.robot.post("/firmware/begin", data=listing, kind="text/plain")
    for wrong in (1, 61, "5", True, 2.5):
        status, answer = robot.robot.post(
            "/firmware/switch", {"stage": started["stage"], "version": "w", "watchdog_s": wrong}
        )
        assert status == 400 and "watchdog_s" in answer["message"], (wrong, status, answer)
    assert json.loads((robot.flash / "ota" / "pointer.json").read_text())["active"] == "root"
