"""Body Protocol v1 shapes for the host: requests by the firmware's rules, answers checked here.

What a valid request is — the endpoint names, each request's field, its cap —
is written once, in the firmware's core (`soulstack.firmware.core.protocol`,
MicroPython-subset code the robot runs too); this module re-exports it and adds
what only the host needs: validating answers, and `ProtocolError`, whose message
names what is wrong, ready to be sent back as `{"message": ...}`. Every body,
the bridge, the adapters, the soul and the checker validate through here.
"""

import base64
import binascii

from soulstack.firmware.core import emotions as _emotions
from soulstack.firmware.core import protocol as _rules

ENDPOINTS = _rules.ENDPOINTS
MAX_SPEAK_CHARS = _rules.MAX_SPEAK_CHARS
MAX_QUESTION_CHARS = _rules.MAX_QUESTION_CHARS
MAX_EMOTION_CHARS = _rules.MAX_EMOTION_CHARS
IMAGE_TYPES = ("image/jpeg", "image/png")
JPEG_SOI = b"\xff\xd8"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class ProtocolError(ValueError):
    """A request or response that does not have the shape Body Protocol v1 asks for."""


def _require_object(payload, what):
    if not isinstance(payload, dict):
        raise ProtocolError(f"{what} must be a JSON object")
    return payload


def _require_string(payload, key, what):
    if key not in payload:
        raise ProtocolError(f'{what} needs "{key}" (a string)')
    value = payload[key]
    if not isinstance(value, str):
        raise ProtocolError(f'"{key}" must be a string, not {type(value).__name__}')
    return value


# --- requests -----------------------------------------------------------------


def validate_request(endpoint, payload):
    """Validate the JSON body sent to `endpoint` by the firmware's rules; returns the clean request."""
    try:
        return _rules.validate(endpoint, payload)
    except _rules.BadRequest as problem:
        raise ProtocolError(str(problem)) from None


# --- responses ----------------------------------------------------------------


def validate_status_response(payload):
    """`{"online": bool}`, and our addition: a "reason" string saying why a body is offline, kept when given."""
    _require_object(payload, "the /status answer")
    online = payload.get("online")
    if not isinstance(online, bool):
        raise ProtocolError('the /status answer needs "online" as true or false')
    reason = payload.get("reason")
    return {"online": online, "reason": reason} if isinstance(reason, str) else {"online": online}


def image_signature_problem(data: bytes, mime_type: str):
    """Why these bytes are not an image of `mime_type`, or None when they are."""
    if mime_type == "image/jpeg" and not data.startswith(JPEG_SOI):
        return "the image is labelled image/jpeg but does not start with the JPEG SOI marker"
    if mime_type == "image/png" and not data.startswith(PNG_SIGNATURE):
        return "the image is labelled image/png but does not start with the PNG signature"
    return None


def validate_look_response(payload):
    """Exactly one of `{"image", "mimeType"}` (real pixels) or `{"text"}`."""
    _require_object(payload, "the /look answer")
    has_image = "image" in payload
    has_text = "text" in payload
    if has_image == has_text:
        raise ProtocolError('the /look answer must carry exactly one of "image" (with "mimeType") or "text"')
    if has_text:
        return {"text": _require_string(payload, "text", "the /look answer")}
    mime_type = payload.get("mimeType")
    if mime_type not in IMAGE_TYPES:
        raise ProtocolError(f'"mimeType" must be one of {", ".join(IMAGE_TYPES)}, not {mime_type!r}')
    encoded = _require_string(payload, "image", "the /look answer")
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise ProtocolError('"image" is not valid base64') from None
    if not data:
        raise ProtocolError('"image" is empty')
    problem = image_signature_problem(data, mime_type)
    if problem:
        raise ProtocolError(problem)
    return {"image": encoded, "mimeType": mime_type}


def validate_ack_response(payload, endpoint="speak"):
    """/speak and /express answer a JSON object (normally `{}`)."""
    return _require_object(payload, f"the /{endpoint} answer")


RESPONSE_VALIDATORS = {
    "status": validate_status_response,
    "look": validate_look_response,
    "speak": lambda payload: validate_ack_response(payload, "speak"),
    "express": lambda payload: validate_ack_response(payload, "express"),
}


def validate_response(endpoint, payload):
    return RESPONSE_VALIDATORS[endpoint](payload)


# --- emotions -----------------------------------------------------------------

REFERENCE_EMOTIONS = _emotions.REFERENCE
# The one word list (face -> words), for bodies that build a map of their own faces on it.
EMOTION_SYNONYMS = _emotions.WORDS


class EmotionMap:
    """Maps a free-form emotion onto the faces a body can show, by the firmware's one word list.

    `faces` are the names a body can display; a word meaning a face it lacks goes
    to the nearest face it has (core/emotions.py's NEAREST). A body with faces of
    its own passes `words` (face -> words) for them, or extends a map:
    `EmotionMap.reference().extended("wink", ["cheeky"])`.
    """

    def __init__(self, faces, words=None, fallback=_emotions.FALLBACK):
        self.faces = tuple(faces)
        self.fallback = fallback
        self.words = {face: tuple(found) for face, found in (_emotions.WORDS if words is None else words).items()}
        self._lookup = _emotions.table(self.faces, self.words, fallback)

    @classmethod
    def reference(cls):
        """The five faces every body can be asked for: happy, sad, angry, sleepy, neutral."""
        return cls(REFERENCE_EMOTIONS)

    @classmethod
    def robot(cls):
        """The StackChan firmware's faces: the reference five and doubtful."""
        return cls(_emotions.FACES)

    def extended(self, face, words=()):
        merged = dict(self.words)
        merged[face] = tuple(merged.get(face, ())) + tuple(words)
        return EmotionMap(self.faces + (face,), merged, self.fallback)

    def nearest(self, emotion: str) -> str:
        """The face closest to `emotion`: exact word, then any known word inside it, else the fallback."""
        return _emotions.match(self._lookup, emotion, self.fallback)


_REFERENCE_MAP = EmotionMap.reference()


def nearest_emotion(emotion: str) -> str:
    """The reference emotion (happy, sad, angry, sleepy, neutral) nearest to a free-form one."""
    return _REFERENCE_MAP.nearest(emotion)
