"""Serial framing shared by the firmware and the host's serial bridge.

USB serial also carries boot noise, REPL banners and log lines, so a protocol
frame is one line: MARKER, then a compact JSON object, then "\\n". Any other
line is noise. The host bridge imports this very module (firmware/ on
sys.path), so both ends agree by construction. Runs on CPython and MicroPython.
"""

import json

MARKER = "@ss1 "
VERSION = "0.1.0"


def _dumps(obj):
    # Compact, and always one line: json escapes "\n" inside strings.
    return json.dumps(obj, separators=(",", ":"))


def encode(obj):
    """The frame line (str, ending in "\\n") carrying the JSON object `obj`."""
    return MARKER + _dumps(obj) + "\n"


def decode(line):
    """The JSON object in a frame line (str or bytes), or None for noise or a malformed frame."""
    if isinstance(line, (bytes, bytearray)):
        try:
            line = bytes(line).decode("utf-8")
        except UnicodeError:
            return None
    line = line.rstrip("\r\n")
    if not line.startswith(MARKER):
        return None
    try:
        obj = json.loads(line[len(MARKER):])
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    return obj


def request(frame_id, endpoint, body):
    """A host -> device request frame."""
    return encode({"id": frame_id, "ep": endpoint, "body": body})


def reply(frame_id, status, body):
    """A device -> host reply frame: the status and body the HTTP endpoint would give."""
    return encode({"id": frame_id, "status": status, "body": body})


def reply_head(frame_id, status):
    """The start of a reply whose body is streamed in pieces (a /look image); end it with REPLY_TAIL."""
    return MARKER + '{"id":' + _dumps(frame_id) + ',"status":' + str(int(status)) + ',"body":'


REPLY_TAIL = "}\n"


def nudge(reason):
    """A device -> host nudge, already debounced on the device."""
    return encode({"nudge": reason})


def ready(ip, wifi, hal, version=VERSION):
    """The announcement `tools/flash` waits for to learn the IP: at boot and on each Wi-Fi change,
    then repeated every few seconds for a minute (body.py), so a late reader still hears it."""
    return encode({"ready": {"ip": ip, "wifi": wifi, "version": version, "hal": hal}})


def is_request(obj):
    """True when a decoded frame is a host -> device request (has an id and an endpoint name)."""
    return isinstance(obj, dict) and "id" in obj and isinstance(obj.get("ep"), str)
