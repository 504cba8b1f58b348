"""config.json on the device: parsed, checked, defaults filled in.

Every problem is reported at once, each naming the key and what to put there,
because the person reading it may be squinting at a 2-inch screen. Unknown
keys are warnings (a typo should not brick the robot).
"""

import json

HALS = ("auto", "uiflow", "generic", "fake")
SERVO_KINDS = ("none", "scs0009", "sg90")
LANGS = ("en", "zh")  # the soul's languages: what the balloon says in (listening.py)

DEFAULTS = {
    "wifi": {"ssid": "", "password": ""},
    "token": "",
    "nudge_url": None,
    "nudge_token": None,
    "tts_url": None,
    "tts_token": None,
    "ears_url": None,
    "ears_token": None,
    "name": "stackchan",
    "lang": "en",
    "listen": {
        "conversation": True,
        "follow_s": 10,
        "silence_ms": 700,
        "max_s": 15,
        "wait_s": 5,
    },
    "port": 80,
    "hal": "auto",
    "serial": False,
    "volume": 60,
    "face_detect_hz": 3,
    "servo": {
        "kind": "none",
        "uart": 1,
        "tx": 6,
        "rx": 7,
        "baud": 1000000,
        "yaw_id": 1,
        "pitch_id": 2,
        "pan_pin": None,
        "tilt_pin": None,
        "min_interval_ms": 100,
        "idle_off_ms": 3000,
    },
    "debounce": {
        "face_frames": 3,
        "face_absent_frames": 10,
        "face_min_interval_s": 600,
        "pickup_min_interval_s": 120,
        "touch_min_interval_s": 60,
        "button_min_interval_s": 30,
    },
    "fake": {
        "camera": True,
        "speaker": True,
        "display": True,
        "face_file": None,
        "jpeg_pad": 14000,
        "screen": None,
        "flash_free": None,
        "halt_at": None,
        "halt_file": None,
        "touch_file": None,
        "mic_file": None,
        "speaker_log": None,
        "speaker_pcm": None,
    },
}


class ConfigError(Exception):
    """config.json cannot be used; str() lists every problem, one per line."""


def _copy(value):
    if isinstance(value, dict):
        out = {}
        for key in value:
            out[key] = _copy(value[key])
        return out
    return value


class _Checker:
    def __init__(self):
        self.errors = []
        self.warnings = []

    def string(self, section, key, path, hint, optional=False):
        value = section.get(key)
        if value is None and optional:
            return
        if not isinstance(value, str):
            self.errors.append('"' + path + '" must be text (' + hint + ")")

    def url(self, section, key, path, hint):
        value = section.get(key)
        if value is None or value == "":
            section[key] = None
            return
        if not isinstance(value, str) or not value.startswith("http://") or len(value) == 7 or " " in value:
            self.errors.append(
                '"' + path + '" must be an http:// URL (' + hint + "); https is not supported on the device"
            )

    def integer(self, section, key, path, low, high, optional=False):
        value = section.get(key)
        if value is None and optional:
            return
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            self.errors.append('"' + path + '" must be a whole number from ' + str(low) + " to " + str(high))

    def choice(self, section, key, path, options):
        if section.get(key) not in options:
            self.errors.append('"' + path + '" must be one of ' + ", ".join(options))

    def boolean(self, section, key, path):
        if not isinstance(section.get(key), bool):
            self.errors.append('"' + path + '" must be true or false')


def _merge(defaults, given, prefix, checker):
    """Defaults overlaid with `given`; unknown keys become warnings, wrong nesting errors."""
    merged = _copy(defaults)
    for key in given:
        path = prefix + key
        if key not in defaults:
            checker.warnings.append('unknown key "' + path + '" ignored')
            continue
        if isinstance(defaults[key], dict):
            if not isinstance(given[key], dict):
                checker.errors.append(
                    '"' + path + '" must be an object like {"' + '": ..., "'.join(defaults[key]) + '": ...}'
                )
                continue
            merged[key] = _merge(defaults[key], given[key], path + ".", checker)
        else:
            merged[key] = given[key]
    return merged


def parse(text):
    """(config dict with defaults, list of warnings) from config.json text; ConfigError otherwise."""
    try:
        given = json.loads(text) if text and text.strip() else {}
    except ValueError:
        raise ConfigError("config.json is not valid JSON (check for a missing comma or quote)")
    if not isinstance(given, dict):
        raise ConfigError('config.json must be one JSON object, like {"wifi": {"ssid": "...", "password": "..."}}')
    check = _Checker()
    config = _merge(DEFAULTS, given, "", check)
    wifi = config["wifi"]
    check.string(wifi, "ssid", "wifi.ssid", "your Wi-Fi network's name")
    check.string(wifi, "password", "wifi.password", 'its password, or "" for an open network')
    check.string(config, "token", "token", 'the bearer token the soul sends, or "" for none')
    check.url(config, "nudge_url", "nudge_url", "where to POST nudges, e.g. http://192.168.1.10:9202/nudge")
    check.string(config, "nudge_token", "nudge_token", "the soul's nudge token", optional=True)
    check.url(config, "tts_url", "tts_url", "a `soulstack tts` server, e.g. http://192.168.1.10:9204/tts")
    check.string(config, "tts_token", "tts_token", "the tts server's token", optional=True)
    check.url(config, "ears_url", "ears_url", "a `soulstack ears` server, e.g. http://192.168.1.10:9205/utterance")
    check.string(config, "ears_token", "ears_token", "the ears server's token", optional=True)
    check.string(config, "name", "name", "the robot's name, as `soulstack ears --body NAME=URL` knows it")
    if isinstance(config.get("name"), str) and not 0 < len(config["name"]) <= 40:
        check.errors.append('"name" must be 1 to 40 characters')
    check.choice(config, "lang", "lang", LANGS)
    listen = config["listen"]
    check.boolean(listen, "conversation", "listen.conversation")
    check.integer(listen, "follow_s", "listen.follow_s", 0, 600)
    check.integer(listen, "silence_ms", "listen.silence_ms", 200, 5000)
    check.integer(listen, "max_s", "listen.max_s", 1, 60)
    check.integer(listen, "wait_s", "listen.wait_s", 1, 60)
    check.integer(config, "port", "port", 1, 65535)
    check.choice(config, "hal", "hal", HALS)
    check.boolean(config, "serial", "serial")
    check.integer(config, "volume", "volume", 0, 100)
    check.integer(config, "face_detect_hz", "face_detect_hz", 1, 10)
    servo = config["servo"]
    check.choice(servo, "kind", "servo.kind", SERVO_KINDS)
    for key, low, high in (
        ("uart", 0, 2),
        ("tx", 0, 48),
        ("rx", 0, 48),
        ("baud", 9600, 1000000),
        ("yaw_id", 0, 253),
        ("pitch_id", 0, 253),
        ("min_interval_ms", 20, 5000),
        ("idle_off_ms", 0, 600000),
    ):
        check.integer(servo, key, "servo." + key, low, high)
    for key in ("pan_pin", "tilt_pin"):
        check.integer(servo, key, "servo." + key, 0, 48, optional=servo.get("kind") != "sg90")
    debounce = config["debounce"]
    check.integer(debounce, "face_frames", "debounce.face_frames", 1, 100)
    check.integer(debounce, "face_absent_frames", "debounce.face_absent_frames", 1, 1000)
    for kind in ("face", "pickup", "touch", "button"):
        check.integer(debounce, kind + "_min_interval_s", "debounce." + kind + "_min_interval_s", 0, 86400)
    if check.errors:
        raise ConfigError("\n".join(check.errors))
    if not wifi["ssid"]:
        check.warnings.append('no "wifi.ssid": the body will only answer over the USB serial line')
    elif not config["token"]:
        check.warnings.append('no "token": anyone on your Wi-Fi can make the body speak and look')
    return config, check.warnings


def windows_ms(config):
    """The per-kind nudge windows in milliseconds, from the debounce settings."""
    debounce = config["debounce"]
    out = {}
    for kind in ("face", "pickup", "touch", "button"):
        out[kind] = debounce[kind + "_min_interval_s"] * 1000
    return out
