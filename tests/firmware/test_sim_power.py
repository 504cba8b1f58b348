"""`soulstack body sim --flash DIR`: a simulated robot whose flash outlives the process, and a power switch (SIGUSR1).

The command itself runs, as an owner runs it (docs/firmware.md, "If a robot is stuck"); each step waits on the
line it prints or on the robot's answer, never on a clock.
"""

import os
import queue
import signal
import subprocess
import sys
import threading

import pytest

from soulstack.firmware import slots
from soulstack.flash import wifi
from tests.firmware.test_firmware_ota import TOKEN, ROOT

HANGS = "import time\n\n\ndef main(argv):\n    while True:\n        time.sleep(1)\n"


class Sim:
    """`soulstack body sim` in a process; `expect(text)` returns the first line from now on holding it."""

    def __init__(self, *args):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "soulstack.cli", "body", "sim", "--port", "0", "--token", TOKEN, *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        self.lines = queue.Queue()
        self.seen = []
        threading.Thread(target=self._read, daemon=True).start()
        self.url = self.expect("body: ").split()[1]

    def _read(self):
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def expect(self, text, seconds=120):
        while True:
            line = self.lines.get(timeout=seconds)
            assert line is not None, f"the simulator ended before {text!r}: {self.seen[-15:]}"
            self.seen.append(line)
            if text in line:
                return line

    def power_cycle(self):
        self.process.send_signal(signal.SIGUSR1)
        self.expect("power: cut; booting again")

    def stop(self):
        self.process.terminate()
        return self.process.wait(30)


@pytest.fixture
def sims():
    started = []
    yield lambda *args: started.append(Sim(*args)) or started[-1]
    for sim in started:
        if sim.process.poll() is None:
            sim.process.kill()
            sim.process.wait()


def robot(url):
    return wifi.Robot(url, TOKEN)


def firmware_info(url):
    status, answer = robot(url).post("/firmware/info", {})
    assert status == 200, answer
    return answer


def test_the_flash_stays_across_power_cycles_and_runs(sims, tmp_path):
    flash = tmp_path / "robot-flash"
    sim = sims("--flash", str(flash))
    line = sim.expect("power: kill -USR1")
    assert f"kill -USR1 {sim.process.pid}" in line and str(flash) in line
    report = wifi.Update(sim.url, TOKEN, wait_s=60, out=open(os.devnull, "w")).run()
    assert report.info["slot"] == "a"
    sim.power_cycle()
    sim.expect("serving Body Protocol v1")
    assert firmware_info(sim.url)["version"] == report.version  # the flash kept the update through the cut
    assert sim.stop() == 0

    again = sims("--flash", str(flash))  # a new run on the same folder: the robot as it was left
    now = firmware_info(again.url)
    assert now["version"] == report.version and now["slot"] == "a"
    assert again.stop() == 0


def test_three_power_cycles_of_a_set_that_hangs_bring_the_old_set_back(sims, tmp_path):
    hangs = tmp_path / "hangs"
    hangs.mkdir()
    (hangs / "app.py").write_text(HANGS)
    sim = sims("--flash", str(tmp_path / "flash"))
    old = firmware_info(sim.url)["version"]
    # The longest watchdog there is, so that the person's power cycles are what switches it back.
    outcome = {}
    thread = threading.Thread(
        target=lambda: outcome.update(
            code=subprocess.run(
                [sys.executable, "-m", "soulstack.cli", "flash", "--over-wifi", sim.url, "--token", TOKEN]
                + ["--set", str(hangs), "--watchdog", "60", "--wait", "5"],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=120,
            )
        ),
        daemon=True,
    )
    thread.start()
    for boot in range(1, slots.TRIES + 1):
        sim.expect(f"on trial: boot {boot} of {slots.TRIES}")
        sim.expect("watchdog armed: the new set has 60 s to serve")
        sim.power_cycle()
    sim.expect("rolled back: the update to")
    sim.expect("serving Body Protocol v1")
    now = firmware_info(sim.url)
    assert now["version"] == old and now["slot"] == "root"
    assert f"had not served after {slots.TRIES} boots" in now["rolled_back"]["reason"]
    thread.join(120)
    assert outcome["code"].returncode == 1  # the host said the update did not take
    assert sim.stop() == 0


@pytest.mark.parametrize(
    "make, says",
    [
        (lambda p: p.write_text("x"), "is a file"),
        (lambda p: (p.mkdir(), (p / "notes.txt").write_text("mine")), "no robot's flash"),
        (lambda p: None, None),  # the parent is missing: said below
    ],
)
def test_flash_folder_mistakes_are_one_line_and_exit_2(tmp_path, make, says):
    target = tmp_path / "flash"
    make(target)
    if says is None:
        target, says = tmp_path / "missing" / "flash", "does not exist"
    done = subprocess.run(
        [sys.executable, "-m", "soulstack.cli", "body", "sim", "--port", "0", "--flash", str(target)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and says in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr


def test_watchdog_and_set_flags_are_for_over_wifi_only_and_checked(tmp_path):
    def flash(*args):
        return subprocess.run(
            [sys.executable, "-m", "soulstack.cli", "flash", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )

    for args, says in (
        (["--watchdog", "10", "--dry-run"], "only with --over-wifi"),
        (["--over-wifi", "http://127.0.0.1:9", "--token", "t", "--watchdog", "61"], "from 2 to 60"),
        (["--over-wifi", "http://127.0.0.1:9", "--token", "t", "--set", str(tmp_path)], "app.py or app.mpy"),
    ):
        done = flash(*args)
        assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr, (args, done.stderr)
