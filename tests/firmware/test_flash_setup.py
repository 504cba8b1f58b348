"""soulstack flash for a new owner: the servo setting, completed and refused URLs, what must listen on the LAN,
and a re-flash that keeps the robot's token (issue 34, item 5)."""

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest

from soulstack.flash import plan, provision
from tests.firmware.helpers import micropython
from tests.helpers import ROOT

WIFI = ["--dry-run", "--device", "/dev/ttyACM9", "--target", "upstream", "--ssid", "home", "--password", "pw"]


def flash(*args):
    argv = [sys.executable, "-m", "soulstack.cli", "flash", *args]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


def written_config(stdout: str) -> dict:
    """The config.json the dry run shows under step 6."""
    lines = stdout.split("write /config.json:\n", 1)[1].splitlines()
    block = []
    for line in lines:
        block.append(line)
        if line == "    }":  # the plan indents its lines by 4: this is the object's own end
            break
    return json.loads("\n".join(block))


def test_the_default_servo_is_the_stackchans_own_and_passes_the_firmwares_check():
    done = flash(*WIFI, "--nudge-url", "http://192.168.1.10:9202/nudge")
    assert done.returncode == 0, done.stderr
    assert written_config(done.stdout)["servo"] == {"kind": "scs0009"}  # the first-boot checklist's nod
    done = flash(*WIFI, "--servo", "sg90", "--pan-pin", "5", "--tilt-pin", "6")
    assert done.returncode == 0, done.stderr
    assert written_config(done.stdout)["servo"] == {"kind": "sg90", "pan_pin": 5, "tilt_pin": 6}


@pytest.mark.parametrize(
    "args, said",
    [
        (["--servo", "sg90", "--pan-pin", "5"], "--servo sg90 needs --tilt-pin"),
        (["--pan-pin", "5"], "--pan-pin: only for --servo sg90"),
        (
            ["--nudge-url", "192.168.1.10:9202/nudge"],
            "has no scheme; the robot needs http://, e.g. http://192.168.1.10",
        ),
        (["--nudge-url", "https://192.168.1.10/nudge"], "the robot speaks plain http only; give http://192.168.1.10"),
        (["--token", "t", "--new-token"], "--new-token makes a new token; leave out --token"),
    ],
)
def test_mistakes_are_one_line_before_the_robot_is_touched(args, said):
    done = flash(*WIFI, *args)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and said in done.stderr, done.stderr


def test_a_url_with_no_path_is_completed_and_the_lan_listeners_are_named():
    done = flash(
        *WIFI,
        *("--nudge-url", "http://192.168.1.10:9202", "--tts-url", "http://192.168.1.10:9204/"),
        *("--ears-url", "http://192.168.1.10:9205", "--ears-token", "e"),
    )
    assert done.returncode == 0, done.stderr
    config = written_config(done.stdout)
    assert (
        config["nudge_url"] == "http://192.168.1.10:9202/nudge" and config["tts_url"] == "http://192.168.1.10:9204/tts"
    )
    assert config["ears_url"] == "http://192.168.1.10:9205/utterance" and config["ears_token"] == "e"
    assert "note: --nudge-url http://192.168.1.10:9202 names no path: the robot will use" in done.stdout
    assert "soulstack ears must listen there too: soulstack ears --host 192.168.1.10" in done.stdout
    assert "the soul must listen where the robot reaches it: soulstack soul --host 192.168.1.10" in done.stdout
    assert "soulstack tts must listen there too: soulstack tts --host 192.168.1.10" in done.stdout


def test_the_old_port_flag_still_names_the_serial_port():
    done = flash("--dry-run", "--port", "/dev/ttyACM7", "--target", "upstream", "--no-wifi")
    assert done.returncode == 0 and "use /dev/ttyACM7" in done.stdout, done.stderr
    assert "--port" not in flash("--help").stdout.split("--over-wifi", 1)[1].split("--firmware")[0]


def test_the_token_script_reads_the_robots_token_on_micropython(tmp_path):
    # The script the detect step runs on the robot, run by the real MicroPython on two config.json files.
    uiflow, upstream = tmp_path / "flash-config.json", tmp_path / "config.json"
    uiflow.write_text(json.dumps({"token": "kept-token-1", "wifi": {"ssid": "home"}}))
    upstream.write_text("{not json")
    script = tmp_path / "token.py"
    script.write_text(provision.token_script((str(uiflow), str(upstream), str(tmp_path / "missing.json"))))
    done = micropython(script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"SOULSTACK-TOKEN {uiflow} kept-token-1"
    assert provision.existing_token(done.stdout, str(tmp_path) + "/flash-") == "kept-token-1"
    assert provision.existing_token(done.stdout, str(tmp_path) + "/") is None  # the broken one gives none


@pytest.mark.parametrize(
    "flags, kept",
    [({}, True), ({"new_token": True}, False), ({"token": "given"}, False), ({"firmware": "IMAGE.bin"}, False)],
)
def test_a_reflash_keeps_the_robots_token_unless_told_otherwise(flags, kept):
    options = SimpleNamespace(**{"token": None, "new_token": False, "firmware": None, **flags})
    run = plan.Flash(options=options, config={"token": flags.get("token") or "fresh"}, flavour="uiflow")
    run.out = open("/dev/null", "w")
    plan.keep_token(run, "the-robots-token")
    assert (run.config["token"] == "the-robots-token") is kept


def test_the_cable_only_flags_are_refused_over_wifi():
    for flags, named in ((["--servo", "none"], "--servo"), (["--device", "/dev/x"], "--device")):
        done = flash("--over-wifi", "http://192.168.1.23", "--token", "t", "--dry-run", *flags)
        assert done.returncode == 2 and f"{named}: only for the cable" in done.stderr, done.stderr


def test_the_robot_is_given_the_souls_language_for_its_own_words():
    done = flash(*WIFI, "--lang", "zh")
    assert done.returncode == 0, done.stderr
    config = written_config(done.stdout)
    assert config["lang"] == "zh"
    sys.path.insert(0, str(ROOT / "firmware"))
    from core import config as firmware_config  # the robot's own check of what is written

    assert firmware_config.parse(json.dumps(config))[0]["lang"] == "zh"
    with pytest.raises(firmware_config.ConfigError, match='"lang"'):
        firmware_config.parse(json.dumps({**config, "lang": "fr"}))
    assert written_config(flash(*WIFI).stdout)["lang"] == "en"  # no --lang: English, as before
