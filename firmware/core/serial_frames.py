"""Serial framing shared by the firmware and the host's serial bridge.

USB serial also carries boot noise, REPL banners and log lines, so a protocol
frame is one line: MARKER, then a compact JSON object, then "\\n". Any other
line is noise. The host's bridge imports this very module
(`soulstack.firmware.core.serial_frames`), so both ends agree by construction.
Runs on CPython and MicroPython.
"""

import json

from . import protocol

MARKER = "@ss1 "
VERSION = "0.1.0"

# Lines the device will hold. The host writes text as UTF-8 (at most 4 bytes a character), so
# a request frame carries its capped string in at most 4 bytes per character plus its JSON;
# a longer frame cannot be valid and is answered 413 from its first bytes, never read into memory.
FRAME_OVERHEAD_BYTES = 256
MAX_LINE_BYTES = 4 * protocol.MAX_SPEAK_CHARS + FRAME_OVERHEAD_BYTES  # the longest valid frame, and noise's limit
HEAD_BYTES = 64  # enough of a line to find its id and endpoint in


def _dumps(obj):
    # Compact, and always one line: json escapes "\n" inside strings. Text goes as UTF-8, not
    # \uXXXX escapes (up to 12 bytes a character), so the device's line limits stay small.
    try:
        text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    except TypeError:  # MicroPython's json has no ensure_ascii: it writes UTF-8 already
        return json.dumps(obj, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeError:  # a lone surrogate cannot travel as UTF-8: let JSON escape it
        return json.dumps(obj, separators=(",", ":"))
    return text


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
        obj = json.loads(line[len(MARKER) :])
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    return obj


def _peek(head):
    """(id, endpoint) from the start of a request line (bytes), read without the rest; None for either unknown.

    The host writes them first ('@ss1 {"id":7,"ep":"look",...': CPython keeps
    request()'s key order); a line that does not start so has nothing we can trust.
    """
    start = (MARKER + '{"id":').encode()
    if not head.startswith(start):
        return None, None
    end = head.find(b",", len(start))
    if end < 0:
        return None, None
    try:
        frame_id = json.loads(head[len(start) : end].decode("utf-8"))
    except (ValueError, UnicodeError):
        return None, None
    if isinstance(frame_id, bool) or not isinstance(frame_id, (int, str)):
        return None, None
    endpoint = None
    if head[end : end + 7] == b',"ep":"':
        close = head.find(b'"', end + 7)
        if close > 0:
            endpoint = head[end + 7 : close].decode("utf-8", "ignore")
    return frame_id, endpoint


def peek_id(head):
    """The id at the start of a request line (bytes), or None."""
    return _peek(head)[0]


def line_limit(head):
    """The longest line a request starting with `head` may be: its endpoint's cap in UTF-8, plus the JSON."""
    endpoint = _peek(head)[1]
    if endpoint in protocol.FIELDS:
        return 4 * protocol.FIELDS[endpoint][1] + FRAME_OVERHEAD_BYTES
    if endpoint in protocol.ENDPOINTS:
        return FRAME_OVERHEAD_BYTES
    return MAX_LINE_BYTES


class Lines:
    """Bytes in, whole lines out, never holding more than `limit` bytes of any one line.

    feed(data) returns the lines `data` completed, each as (line, None) — the bytes
    without the newline — or, for a line over the limit, (its first HEAD_BYTES,
    its full size): enough to answer it honestly, with nothing else kept.
    """

    def __init__(self, limit=MAX_LINE_BYTES, limit_of=None):
        self.most = limit
        # head -> the limit for a line starting so (line_limit for request frames), known once
        # HEAD_BYTES have come: a frame that cannot be valid is never held past its head.
        self.limit_of = limit_of
        self._reset()

    def _reset(self):
        self._parts = []
        self._size = 0
        self.limit = self.most
        self.head = b""  # the current line's first bytes: its id, should holding the rest fail

    def feed(self, data):
        done = []
        start = 0
        while True:
            end = data.find(b"\n", start)
            self._take(data[start:] if end < 0 else data[start:end])
            if end < 0:
                return done
            done.append(self._finish())
            start = end + 1

    def _take(self, piece):
        if len(self.head) < HEAD_BYTES:
            self.head = (self.head + piece[:HEAD_BYTES])[:HEAD_BYTES]
            if len(self.head) == HEAD_BYTES and self.limit_of:
                self.limit = min(self.most, self.limit_of(self.head))
        self._size += len(piece)
        if self._size <= self.limit:
            self._parts.append(piece)
        else:
            self._parts = []  # too long: from here on only its size is counted

    def _finish(self):
        if self._size > self.limit:
            line = (self.head, self._size)
        else:
            line = (b"".join(self._parts), None)
        self._reset()
        return line


def too_long(head, size):
    """The reply to a request line over its limit (413, naming both sizes), or None when it has no id."""
    frame_id, endpoint = _peek(head)
    if frame_id is None:
        return None
    message = "the request frame is " + str(size) + " bytes; "
    if endpoint in protocol.FIELDS:
        key, cap, _ = protocol.FIELDS[endpoint]
        message += (
            "a /"
            + endpoint
            + " frame is at most "
            + str(line_limit(head))
            + ' bytes ("'
            + key
            + '" is at most '
            + str(cap)
            + " characters)"
        )
    else:
        message += "the robot reads at most " + str(line_limit(head))
    return reply(frame_id, 413, {"message": message})


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


def nudge(reason, heard=None, speaker=None, nudge_id=None, codes=None):
    """A device -> host nudge, already debounced on the device. `heard` (what the person heard of
    the robot's speech), `speaker`, `nudge_id` and `codes` travel with it as in a /nudge body; the bridge
    passes them on (the id too: the same nudge may have reached the soul over Wi-Fi already)."""
    frame = {"nudge": reason}
    if heard is not None:
        frame["heard"] = heard
    if speaker is not None:
        frame["speaker"] = speaker
    if nudge_id is not None:
        frame["nudge_id"] = nudge_id
    if codes is not None:
        frame["codes"] = codes
    return encode(frame)


def ready(ip, wifi, hal, version=VERSION):
    """The announcement `tools/flash` waits for to learn the IP: at boot and on each Wi-Fi change,
    then repeated every few seconds for a minute (body.py), so a late reader still hears it."""
    return encode({"ready": {"ip": ip, "wifi": wifi, "version": version, "hal": hal}})


def is_request(obj):
    """True when a decoded frame is a host -> device request (has an id and an endpoint name)."""
    return isinstance(obj, dict) and "id" in obj and isinstance(obj.get("ep"), str)
