"""Body Protocol v1: the ONE source of its endpoints and request rules, and the device's dispatcher.

The firmware validates with this module and the host imports it
(`soulstack.firmware.core.protocol`): host/protocol/shapes.py adds only what the
host alone needs (answer validation, ProtocolError). So the endpoint names, what
each request must carry and how long each string may be are written once here,
in the MicroPython subset.

`Dispatcher.handle(endpoint, raw_body, authorization, content_type=..., origin=...)` returns (status, body).
`body` is a dict, or a b64json.ImageBody for a /look with pixels, which the
transport streams in pieces.

The dispatcher calls a `device` with four methods (main.Body is the real one):
  online() -> bool
  look(question) -> ImageBody, or a string saying honestly why there is no image
  speak(text) -> None once queued; raises Busy when the queue is full
  express(emotion) -> None
"""

import json

from . import auth
from .b64json import ImageBody

ENDPOINTS = ("status", "look", "speak", "express")

# Every string a request carries is capped: a small device must never be asked to hold
# (or draw, or say) an unbounded one. The caps are in characters.
MAX_SPEAK_CHARS = 2000  # about two minutes of speech
MAX_QUESTION_CHARS = 1000  # what the soul looks for; shown in the speech balloon
MAX_EMOTION_CHARS = 100  # a word or a short phrase

# endpoint -> (its one string field, its cap, whether it may be blank); /status takes none.
FIELDS = {
    "look": ("question", MAX_QUESTION_CHARS, True),
    "speak": ("text", MAX_SPEAK_CHARS, False),
    "express": ("emotion", MAX_EMOTION_CHARS, False),
}


def endpoint_list():
    """The endpoints as "/status /look /speak /express", for messages."""
    return " ".join("/" + name for name in ENDPOINTS)


class BadRequest(Exception):
    """The request is malformed; the message says what is wrong (HTTP 400)."""


class Busy(Exception):
    """The body cannot take this now (HTTP 503); the message says why."""


def _object(payload, what):
    if not isinstance(payload, dict):
        raise BadRequest(what + " must be a JSON object")
    return payload


def _string(payload, key, endpoint):
    if key not in payload:
        raise BadRequest("/" + endpoint + ' needs "' + key + '" (a string)')
    value = payload[key]
    if not isinstance(value, str):
        raise BadRequest('"' + key + '" must be a string, not ' + _json_type(value))
    return value


def _json_type(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return "something else"


def validate(endpoint, payload):
    """The clean request for `endpoint`, or BadRequest naming what is wrong.

    Extra fields are ignored, so future clients keep working.
    """
    if endpoint not in ENDPOINTS:
        raise BadRequest("unknown endpoint /" + str(endpoint) + "; Body Protocol v1 has " + endpoint_list())
    _object(payload, "the /" + endpoint + " body")
    if endpoint not in FIELDS:
        return {}
    key, cap, may_be_blank = FIELDS[endpoint]
    value = _string(payload, key, endpoint)
    if not may_be_blank and not value.strip():
        raise BadRequest('"' + key + '" must not be empty')
    if len(value) > cap:
        raise BadRequest('"' + key + '" is ' + str(len(value)) + " characters; at most " + str(cap))
    problem = text_problem(value)
    if problem:
        raise BadRequest('"' + key + '" ' + problem)
    return {key: value}


def text_problem(text):
    """Why `text` cannot be shown or said, or None.

    An escape sequence would repaint the terminal a simulated robot draws in, and a lone
    surrogate ("\\ud800" is valid JSON) is no character a screen or a voice can take. The
    walk is over the UTF-8 bytes: iterating a MicroPython str makes each character a qstr,
    which is never freed (core/balloon.py says more).
    """
    data = text.encode("utf-8", "surrogatepass")
    for at in range(len(data)):
        byte = data[at]
        lead = data[at + 1] if at + 1 < len(data) else 0
        if byte == 0xED and lead >= 0xA0:  # U+D800 to U+DFFF
            code = 0xD000 | (lead & 0x3F) << 6 | (data[at + 2] & 0x3F if at + 2 < len(data) else 0)
            return "contains a lone surrogate (U+%04X); send UTF-8 text" % code
        if byte == 0xC2 and 0x80 <= lead <= 0x9F:  # the C1 controls
            byte = lead
        elif not (byte < 0x20 and byte not in (9, 10, 13)) and byte != 0x7F:
            continue
        return "contains the control character U+%04X; only tab and line breaks are allowed" % byte
    return None


NO_BODY = "the request has no body; send a JSON object such as {}"


def parse_json(raw):
    """Parse a request body (bytes or str), or BadRequest; an empty body is one too (docs/body-protocol.md)."""
    if raw is None:
        raise BadRequest(NO_BODY)
    if isinstance(raw, (bytes, bytearray, memoryview)):
        try:
            raw = bytes(raw).decode("utf-8")
        except UnicodeError:
            raise BadRequest("the request body is not UTF-8 text")
    if not raw.strip():
        raise BadRequest(NO_BODY)
    # A few KB of brackets fill a robot's heap with empty lists. The count is C-speed; the walk
    # runs only for the rare body with that many brackets at all.
    if raw.count("[") + raw.count("{") > MAX_DEPTH:
        depth = deepest(raw)
        if depth > MAX_DEPTH:
            raise BadRequest("the request body nests " + str(depth) + " levels deep; at most " + str(MAX_DEPTH))
    try:
        return json.loads(raw)
    except ValueError:
        raise BadRequest("the request body is not valid JSON")


MAX_DEPTH = 32  # as on every host server (serving.MAX_DEPTH)


def deepest(text):
    """How deep the arrays and objects in JSON `text` nest, counted without parsing it (over its
    bytes, as text_problem is)."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    depth = most = 0
    quoted = escaped = False
    for at in range(len(data)):
        byte = data[at]
        if quoted:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # the closing quote
                quoted = False
        elif byte == 0x22:
            quoted = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            most = max(most, depth)
        elif byte in (0x5D, 0x7D):  # ] }
            depth -= 1
    return most


def _describe(failure):
    text = str(failure)
    return type(failure).__name__ + (": " + text if text else "")


def error(status, message):
    return status, {"message": message}


JSON_MEDIA = "application/json"


def web_page_problem(content_type, origin):
    """(status, body) refusing what only a web page sends, or None.

    A page on any site can post a form or text/plain to the robot's address without
    asking first, and a page under a rebinding name can even read the answer (a /look's
    frame). Programs send no Origin, and a page cannot send JSON cross-site without the
    browser asking the robot first, which it never allows. The robot serves no page of
    its own, so every Origin is another site's.
    """
    if origin is not None:
        return error(
            403,
            "refused a request from the web page at "
            + repr(origin[:80])
            + ": the robot takes requests from programs only",
        )
    media = (content_type or "").split(";")[0].strip().lower()
    if media != JSON_MEDIA:
        sent = "not " + content_type[:60] if content_type else "no Content-Type was sent"
        return error(415, "send the body as JSON with Content-Type: application/json (" + sent + ")")
    return None


class Dispatcher:
    def __init__(self, device, token=None, on_error=None):
        self.device = device
        self.token = token or None
        # Called with (endpoint, exception) when the device itself failed: main shows it on screen.
        self.on_error = on_error

    def handle(self, endpoint, raw, authorization=None, trusted=False, content_type=JSON_MEDIA, origin=None):
        """Answer one request. `trusted` skips the token (the USB cable is physical access).

        Over Wi-Fi, `content_type` and `origin` are the request's headers: see web_page_problem.
        """
        if not trusted and not auth.bearer_ok(authorization, self.token):
            return error(401, "missing or wrong bearer token (send Authorization: Bearer <token>)")
        problem = None if trusted else web_page_problem(content_type, origin)
        if problem:
            return problem
        if endpoint not in ENDPOINTS:
            return error(404, "no such endpoint /" + str(endpoint) + "; this body has " + endpoint_list())
        try:
            payload = raw if isinstance(raw, dict) else parse_json(raw)
            return self.call(endpoint, validate(endpoint, payload))
        except BadRequest as problem:
            return error(400, str(problem))
        except Busy as problem:
            return error(503, str(problem))
        except Exception as failure:  # a sense broke: say so honestly, keep serving
            if self.on_error:
                self.on_error(endpoint, failure)
            return error(503, "/" + endpoint + " failed on the device: " + _describe(failure))

    def call(self, endpoint, request):
        device = self.device
        if endpoint == "status":
            return 200, {"online": bool(device.online())}
        if endpoint == "look":
            seen = device.look(request["question"])
            if isinstance(seen, ImageBody):
                return 200, seen
            return 200, {"text": str(seen)}
        if endpoint == "speak":
            device.speak(request["text"])
            return 200, {}
        device.express(request["emotion"])
        return 200, {}
