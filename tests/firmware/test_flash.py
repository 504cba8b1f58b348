"""soulstack flash: dry-run plans for each option set, and every error path reachable without a robot."""

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from soulstack.serial_ports import PortError, explain_open_error, find_esp32s3, open_serial
from soulstack.flash import plan, provision
from soulstack.flash.ready import wait_for_ready
from soulstack.flash.tools import FlashError
from tests.fakes.serial_device import FakeEspRom, FakeSerialDevice
from tests.helpers import ROOT

SOULSTACK = [sys.executable, "-c", "import sys; from soulstack.cli import main; sys.exit(main())"]
PASSWORD = "hunter2-secret"


def soulstack(*args, user=None, timeout=60, env=None):
    argv = [*SOULSTACK, "flash", *args]
    if user:
        argv = ["setpriv", f"--reuid={user}", "--regid=65534", "--clear-groups", *argv]
    return subprocess.run(
        argv, cwd=ROOT, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, env=env
    )


@pytest.fixture
def image(tmp_path):
    path = tmp_path / "ESP32_GENERIC_S3.bin"
    path.write_bytes(b"\xe9" + bytes(4095))
    return path


@pytest.fixture
def device():
    fake = FakeSerialDevice(boot_noise=False, silent=True)
    yield fake
    fake.unplug()


# --- dry runs ---------------------------------------------------------------------


WIFI = ["--ssid", "home", "--password", PASSWORD, "--nudge-url", "http://192.168.1.5:9202/nudge"]


@pytest.mark.parametrize(
    "case, args, present, absent",
    [
        (
            "auto port, no image",
            ["--port", "auto", *WIFI],
            [
                "USB id 303a:1001",
                "mpremote connect PORT exec",
                "DEST/core/",
                "mpremote connect PORT reset",
                "body-check http://<IP>",
            ],
            ["esptool", "erase-flash"],
        ),
        (
            "with an image",
            ["--port", "auto", "--firmware", "IMAGE", *WIFI],
            [
                "esptool --chip esp32s3 --port PORT erase-flash",
                "esptool --chip esp32s3 --port PORT write-flash 0 IMAGE",
                "wait up to 30 s",
                "DEST/core/",
            ],
            [],
        ),
        (
            "UIFlow2",
            ["--port", "DEVICE", "--target", "uiflow", *WIFI],
            [":/flash/core/", ":/flash/microdot/", "write /flash/config.json", "mpremote connect DEVICE reset"],
            ["DEST", "PORT", "esptool"],
        ),
        (
            "upstream",
            ["--port", "DEVICE", "--target", "upstream", "--firmware", "IMAGE", *WIFI],
            [":/core/", ":/microdot/", "write /config.json", "esptool --chip esp32s3 --port DEVICE erase-flash"],
            [":/flash/", "DEST"],
        ),
        (
            "cable only",
            ["--port", "DEVICE", "--target", "upstream", "--no-wifi"],
            ['"ssid": ""', "report its Wi-Fi and address"],
            ["body-check", "esptool"],
        ),
    ],
)
def test_dry_run_plans_each_option_set_and_touches_nothing(case, args, present, absent, image, device):
    args = [str(image) if a == "IMAGE" else device.path if a == "DEVICE" else a for a in args]
    present = [p.replace("IMAGE", str(image)).replace("DEVICE", device.path) for p in present]
    result = soulstack("--dry-run", *args)
    assert result.returncode == 0, result.stderr
    for text in present:
        assert text in result.stdout, f"{case}: {text!r} missing from:\n{result.stdout}"
    for text in absent:
        assert text not in result.stdout, f"{case}: {text!r} should not be in:\n{result.stdout}"
    assert PASSWORD not in result.stdout + result.stderr
    assert "nothing was touched" in result.stdout
    assert device.requests == [] and device.noise_received == []  # not one byte reached the device


def test_dry_run_lists_every_firmware_file_and_microdot_from_the_wheel_without_absolute_paths(device):
    import microdot

    result = soulstack("--dry-run", "--port", device.path, "--target", "upstream", "--no-wifi")
    lines = result.stdout.splitlines()
    for folder in ("", "core/", "hal/"):
        names = sorted(
            p.name for p in (ROOT / "firmware" / folder).glob("*.py") if not (folder == "" and p.name == "__init__.py")
        )
        line = next(line for line in lines if line.strip().startswith(f"firmware/{folder}:"))
        assert line.strip() == f"firmware/{folder}: {', '.join(names)} -> :/{folder}"
    assert "microdot (the installed package): __init__.py, microdot.py, helpers.py -> :/microdot/" in result.stdout
    assert str(ROOT) not in result.stdout and str(Path(microdot.__file__).parent) not in result.stdout


def test_steps_are_numbered_as_in_docs_wired(device, image):
    result = soulstack("--dry-run", "--port", device.path, "--firmware", str(image), *WIFI)
    numbers = [line.split("]")[0] + "]" for line in result.stdout.splitlines() if line.startswith("[")]
    assert numbers == [f"[{n}/10]" for n in range(1, 11)]
    docs = (ROOT / "docs" / "wired.md").read_text()
    for n in range(1, 11):
        assert f"\n{n}. **" in docs  # docs/wired.md has the same ten
    result = soulstack("--dry-run", "--port", device.path, "--no-wifi")
    numbers = [line.split("]")[0] + "]" for line in result.stdout.splitlines() if line.startswith("[")]
    assert numbers == ["[1/10]", "[2/10]", "[4/10]", "[5/10]", "[6/10]", "[7/10]", "[8/10]", "[10/10]"]


def test_dry_run_says_the_token_is_an_example(device):
    result = soulstack("--dry-run", "--port", device.path, "--no-wifi")
    assert f'"token": "{provision.EXAMPLE_TOKEN}"' in result.stdout
    result = soulstack("--dry-run", "--port", device.path, "--no-wifi", "--token", "mine")
    assert '"token": "mine"' in result.stdout


@pytest.mark.parametrize("flag", ["--nudge-url", "--tts-url"])
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]", "0.0.0.0"])
def test_loopback_urls_are_refused_naming_the_lan_address(flag, host):
    url = f"http://{host}:9202/nudge"
    result = soulstack("--dry-run", "--ssid", "home", "--password", "x", flag, url)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert f"{flag} {url} names this computer's loopback, which the robot cannot reach; give " in result.stderr
    lan = provision.lan_address()
    if lan != "127.0.0.1":
        assert f"give http://{lan}:9202/nudge" in result.stderr


def test_dry_run_without_wifi_flags_asks_nothing_and_shows_placeholders():
    result = soulstack("--dry-run")
    assert result.returncode == 0, result.stderr
    assert "<asked at run time>" in result.stdout


# --- config -------------------------------------------------------------------------


def test_config_passes_the_firmware_own_check_and_masks_the_password():
    options = SimpleNamespace(
        ssid="home",
        password=PASSWORD,
        no_wifi=False,
        nudge_url="http://10.0.0.2:9202/nudge",
        tts_url=None,
        token=None,
        nudge_token="n",
        dry_run=False,
    )
    config = provision.gather(options, interactive=False)
    assert provision.check(config) == []
    assert len(config["token"]) >= 24
    # The cable stays a way in; the firmware still sends nudges to nudge_url over Wi-Fi (test_sim.py).
    assert config["serial"] is True and config["nudge_url"] == "http://10.0.0.2:9202/nudge"
    shown = provision.masked(config)
    assert PASSWORD not in shown and provision.MASK in shown
    local = provision.write_private(config)
    try:
        assert oct(local.stat().st_mode & 0o777) == "0o600"
        assert json.loads(local.read_text())["wifi"]["password"] == PASSWORD
    finally:
        local.unlink()


def test_cable_only_config_turns_serial_mode_on():
    options = SimpleNamespace(
        ssid=None,
        password=None,
        no_wifi=True,
        nudge_url=None,
        tts_url=None,
        token="t0k",
        nudge_token=None,
        dry_run=False,
    )
    config = provision.gather(options, interactive=False)
    assert config["serial"] is True and config["wifi"] == {"ssid": "", "password": ""} and config["token"] == "t0k"
    assert any("only answer over the USB serial line" in w for w in provision.check(config))


def test_a_config_the_device_would_refuse_is_one_line_exit_2():
    # A value the computer does not check and the device does (an sg90's pin): the device's own verdict, caught here.
    servo = ("--servo", "sg90", "--pan-pin", "99", "--tilt-pin", "1")
    result = soulstack("--dry-run", "--ssid", "home", "--password", "x", *servo)
    assert result.returncode == 2
    assert "would refuse" in result.stderr and "servo.pan_pin" in result.stderr
    assert "Traceback" not in result.stderr


def test_non_interactive_without_ssid_says_what_to_give(device):
    result = soulstack("--port", device.path)
    assert result.returncode == 2 and "--ssid" in result.stderr and "--no-wifi" in result.stderr


def test_an_image_that_is_not_esp32_firmware_is_refused_before_anything(tmp_path):
    bogus = tmp_path / "firmware.bin"
    bogus.write_bytes(b"<html>404</html>")
    result = soulstack("--firmware", str(bogus), "--no-wifi", "--dry-run")
    assert result.returncode == 2 and "not an ESP32 firmware image" in result.stderr
    result = soulstack("--firmware", str(tmp_path / "missing.bin"), "--no-wifi", "--dry-run")
    assert result.returncode == 2 and "No such file" in result.stderr


# --- errors a person can act on -------------------------------------------------------


def test_no_device_found_lists_what_was_seen():
    result = soulstack("--port", "auto", "--no-wifi")
    if "found" in result.stdout and result.returncode == 0:
        pytest.skip("an ESP32-S3 is actually plugged into this machine")
    assert result.returncode == 1
    line = result.stderr.strip()
    assert "no device with USB id 303a:1001" in line and "saw:" in line and "\n" not in line
    assert "name its port with --device PATH" in line  # --port: its old spelling, kept as an alias


def test_port_discovery_picks_the_one_esp32s3_and_names_the_others():
    def port(device, vid=None, pid=None, product=None):
        return SimpleNamespace(device=device, vid=vid, pid=pid, product=product, description="n/a")

    others = [port("/dev/ttyUSB0", 0x10C4, 0xEA60, "CP2102"), port("/dev/ttyS0")]
    assert find_esp32s3(lambda: [*others, port("/dev/ttyACM0", 0x303A, 0x1001)]) == "/dev/ttyACM0"
    with pytest.raises(PortError, match=r"saw: /dev/ttyUSB0 \(10c4:ea60 CP2102\); /dev/ttyS0 \(no USB id\)"):
        find_esp32s3(lambda: others)
    with pytest.raises(PortError, match="more than one"):
        find_esp32s3(lambda: [port("/dev/ttyACM0", 0x303A, 0x1001), port("/dev/ttyACM1", 0x303A, 0x1001)])


def test_permission_denied_names_the_dialout_group(device):
    os.chmod(device.path, 0o600)  # a root-owned tty, like /dev/ttyACM0 is root:dialout
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("running as root without setpriv: cannot open a port as an ordinary user")
        result = soulstack("--port", device.path, "--no-wifi", user="nobody")
    else:
        os.chmod(device.path, 0)
        result = soulstack("--port", device.path, "--no-wifi")
    assert result.returncode == 1, result.stderr
    assert "permission denied" in result.stderr and "sudo usermod -aG dialout $USER" in result.stderr


def test_permission_error_mapping_from_a_real_permission_error():
    # Root bypasses file modes, but the kernel still refuses another process's memory without ptrace rights.
    try:
        open("/proc/1/mem", "r+b").close()
        pytest.skip("this process may open /proc/1/mem; no PermissionError to be had")
    except PermissionError as error:
        assert "sudo usermod -aG dialout $USER" in explain_open_error("/dev/ttyACM0", error)
    except OSError as error:
        pytest.skip(f"/proc/1/mem gave {error!r}, not a PermissionError")


def test_a_directory_is_not_a_serial_port(tmp_path):
    with pytest.raises(PortError, match="not a serial port"):
        open_serial(str(tmp_path))


def test_esptool_that_cannot_reach_the_bootloader_says_how_to_enter_download_mode(device, image, tmp_path):
    # esptool's own configuration file (ESPTOOL_CFGFILE, as a person may set it): two tries, not seven.
    settings = tmp_path / "esptool.cfg"
    settings.write_text("[esptool]\nconnect_attempts = 2\n")
    env = dict(os.environ, ESPTOOL_CFGFILE=str(settings))
    result = soulstack("--port", device.path, "--no-wifi", "--firmware", str(image), timeout=120, env=env)
    assert result.returncode == 1
    assert "could not reach the ESP32-S3 bootloader" in result.stderr and "download mode" in result.stderr


def test_wrong_chip_is_named_from_esptool_own_detection(image):
    rom = FakeEspRom()  # a classic ESP32's ROM bootloader on the cable, not an S3
    try:
        result = soulstack("--port", rom.path, "--no-wifi", "--firmware", str(image), timeout=60)
    finally:
        rom.close()
    assert result.returncode == 1
    assert f"wrong chip on {rom.path}: esptool found an ESP32, not an ESP32-S3" in result.stderr
    assert FakeEspRom.READ_REG in rom.commands  # esptool really asked the chip...
    assert 0xD0 not in rom.commands  # ...and never got as far as ERASE_FLASH


# --- waiting for the robot to report in ---------------------------------------------------


def answer_later(device, *frames, delay_s=0.3):
    def send():
        device.reboot_noise()
        for frame in frames:
            device.send(frame)

    threading.Timer(delay_s, send).start()


def test_ready_frame_gives_the_address(device):
    answer_later(device, {"ready": {"ip": "192.168.1.23", "wifi": "connected", "version": "0.1.0", "hal": "uiflow"}})
    info = wait_for_ready(device.path, timeout_s=5)
    assert info["ip"] == "192.168.1.23"


def test_wifi_join_failed_reports_the_device_reason(device):
    answer_later(device, {"ready": {"ip": None, "wifi": "wrong password", "version": "0.1.0", "hal": "uiflow"}})
    with pytest.raises(FlashError, match="Wi-Fi join failed: the robot says 'wrong password'"):
        wait_for_ready(device.path, timeout_s=5)


def test_a_refused_config_is_reported(device):
    answer_later(
        device,
        {
            "ready": {
                "ip": None,
                "wifi": 'config.json: "port" must be a whole number',
                "version": "0.1.0",
                "hal": "unknown",
            }
        },
    )
    with pytest.raises(FlashError, match="refused its config.json"):
        wait_for_ready(device.path, timeout_s=5)


def test_cable_only_accepts_ready_without_wifi(device):
    answer_later(
        device, {"ready": {"ip": None, "wifi": "no wifi.ssid in config.json", "version": "0.1.0", "hal": "generic"}}
    )
    assert wait_for_ready(device.path, timeout_s=5, want_wifi=False)["hal"] == "generic"


def test_silence_times_out_with_what_to_do(device):
    with pytest.raises(FlashError, match="did not report in over serial within 0.5 s.*mpremote connect"):
        wait_for_ready(device.path, timeout_s=0.5)


def test_upload_makes_every_folder_first():
    commands = plan.upload_commands("/flash/")
    assert commands[0][0] == "exec"
    for folder in ("/flash/core", "/flash/hal", "/flash/microdot"):
        assert repr(folder) in commands[0][1]
    targets = [command[-1] for command in commands[1:]]
    assert targets[0] == ":/flash/" and ":/flash/microdot/" in targets


def on_a_terminal(*args):
    """Run `soulstack flash ARGS` on a real pty (getpass turns echo off as for a person): pid, terminal."""
    import pty

    pid, terminal = pty.fork()
    if pid == 0:
        os.chdir(ROOT)
        os.execv(sys.executable, [*SOULSTACK, "flash", *args])
    return pid, terminal


def test_a_missing_robot_is_said_before_any_question():
    pid, terminal = on_a_terminal("--port", "/nonexistent/ttyACM9")
    output = b""
    try:
        while True:
            try:
                chunk = os.read(terminal, 4096)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(terminal)
    text = output.decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 1
    assert "/nonexistent/ttyACM9 does not exist" in text and "Wi-Fi" not in text


def check_not_running_micropython_when_nothing_answers(device):
    result = soulstack("--port", device.path, "--no-wifi", timeout=60)
    assert result.returncode == 1
    assert "not running MicroPython" in result.stderr and "--firmware" in result.stderr
    assert PASSWORD not in result.stdout


def test_interactive_prompts_ask_for_what_is_missing_and_never_show_the_password(device):
    """Beside it, on a second silent device, the same silence without a terminal (--no-wifi): each
    waits out mpremote's 10 s for a REPL answer, so the two wait at once."""
    import select
    from concurrent.futures import ThreadPoolExecutor

    other = FakeSerialDevice(boot_noise=False, silent=True)
    beside = ThreadPoolExecutor(1)
    unasked = beside.submit(check_not_running_micropython_when_nothing_answers, other)
    pid, terminal = on_a_terminal("--port", device.path)
    answers = [
        (b"Wi-Fi network name", b"home\n"),
        (b"password for home", PASSWORD.encode() + b"\n"),
        (b"nudge URL", b"\n"),
        (b"soulstack tts", b"\n"),
    ]
    output = b""
    try:
        while True:
            ready, _, _ = select.select([terminal], [], [], 30)
            assert ready, f"no prompt within 30 s; so far: {output!r}"
            try:
                chunk = os.read(terminal, 4096)
            except OSError:  # the child closed its terminal: it has finished
                break
            if not chunk:
                break
            output += chunk
            if answers and answers[0][0] in output:
                os.write(terminal, answers.pop(0)[1])
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(terminal)
        try:
            unasked.result(timeout=90)  # its assertions fail the test here
        finally:
            beside.shutdown()
            other.unplug()
    text = output.decode(errors="replace")
    assert not answers, f"never asked: {[a[0] for a in answers]}\n{text}"
    assert os.waitstatus_to_exitcode(status) == 1
    assert "not running MicroPython" in text  # the silent fake device: asked first, then found wanting
    assert PASSWORD not in text
    assert "9202/nudge" in text  # the default nudge URL offered is this computer's address
