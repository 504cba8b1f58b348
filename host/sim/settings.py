"""A simulated robot's settings, checked before its firmware starts: its HAL, its heap, its config.json, its port.

What the firmware would refuse is refused here first, in the words of `soulstack body sim`'s
flags (host/sim/commands.py), by the firmware's own validator (firmware/core/config.py).
"""

import json
import re
import socket

from soulstack.commandline import DEFAULT_NUDGE_URL
from soulstack.errors import UsageError
from soulstack.firmware.core import config as firmware_config  # the firmware's own validator: one set of rules

HALS = ("fake", "uiflow", "generic")
MIN_HEAP = 64 * 1024  # below this MicroPython cannot even import the firmware
ANSWERS_FROM_HEAP = 207 * 1024  # the smallest heap that answers 30 /look in a row (tools/bench-firmware, 2026-12-03)
FLAGS = {"nudge_url": "--nudge-url", "tts_url": "--tts-url", "token": "--token", "ears_url": "--ears-url"}
URL_EXAMPLES = {
    "nudge_url": DEFAULT_NUDGE_URL,
    "tts_url": "http://127.0.0.1:9204/tts",
    "ears_url": "http://127.0.0.1:9205/utterance",
}


def parse_heap(text):
    """Bytes from a size like 256K, 1M or 300000; UsageError when it is not one or is far too small."""
    match = re.fullmatch(r"(\d+)([KkMm]?)", str(text).strip())
    if not match:
        raise UsageError(f"--heap {text} is not a size; give one like 256K or 1M (default 256K)")
    size = int(match.group(1)) * {"": 1, "k": 1024, "m": 1024 * 1024}[match.group(2).lower()]
    if size < MIN_HEAP:
        raise UsageError(f"--heap {text} is too small: the firmware needs well over {MIN_HEAP // 1024}K (default 256K)")
    return size


def default_heap(hal):
    """UIFlow2 on the CoreS3 keeps its heap in the 8 MB PSRAM; the other builds get the simulator's usual 256K."""
    return "1M" if hal == "uiflow" else "256K"


def check_config(config):
    """Refuse what the firmware would refuse, before starting it, in the flags' own words; and a URL
    that only starts like one (http://[::1/nudge), which the firmware's check takes and every request to fails."""
    from soulstack.protocol.commands import check_url

    try:
        firmware_config.parse(json.dumps(config))
    except firmware_config.ConfigError as problem:
        text = "; ".join(str(problem).splitlines())
        for key, flag in FLAGS.items():
            text = text.replace(f'"{key}"', flag)
        raise UsageError(text) from None
    for key, example in URL_EXAMPLES.items():
        if config.get(key):
            check_url(config[key], FLAGS[key], example)


def port_in_use(port):
    """True when something on this computer already listens on 127.0.0.1:port."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the firmware's server does
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def sim_config(token, face_file, nudge_url=None, tts_url=None, fake=None, hal="fake", servo=None, more=None):
    """The simulated robot's config.json (check_config says whether the firmware takes it)."""
    config = {
        "wifi": {"ssid": "(simulated)", "password": ""},
        "token": token or "",
        "hal": hal,
        "fake": {"face_file": str(face_file)},
    }
    if servo:
        config["servo"] = servo
    if nudge_url:
        config["nudge_url"] = nudge_url
    if tts_url:
        config["tts_url"] = tts_url
    if fake:
        config["fake"].update(fake)
    config.update(more or {})  # any other config.json keys (ears_url, listen, name, ...)
    return config
