"""Body Protocol v1 shapes: what each endpoint accepts and answers.

Every body, the bridge, the adapters, the soul and the checker validate through
these functions, so "what is a valid /speak" has exactly one answer. A
validation failure raises `ProtocolError` whose message names what is wrong,
ready to be sent back as `{"message": ...}`.
"""

import base64
import binascii

ENDPOINTS = ("status", "look", "speak", "express")
MAX_SPEAK_CHARS = 2000
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


def validate_status_request(payload):
    """/status takes `{}`; extra fields are ignored so future clients keep working."""
    _require_object(payload, "the /status body")
    return {}


def validate_look_request(payload):
    _require_object(payload, "the /look body")
    return {"question": _require_string(payload, "question", "/look")}


def validate_speak_request(payload):
    _require_object(payload, "the /speak body")
    text = _require_string(payload, "text", "/speak")
    if not text.strip():
        raise ProtocolError('"text" must not be empty')
    if len(text) > MAX_SPEAK_CHARS:
        raise ProtocolError(f'"text" is {len(text)} characters; at most {MAX_SPEAK_CHARS}')
    return {"text": text}


def validate_express_request(payload):
    _require_object(payload, "the /express body")
    emotion = _require_string(payload, "emotion", "/express")
    if not emotion.strip():
        raise ProtocolError('"emotion" must not be empty')
    return {"emotion": emotion}


REQUEST_VALIDATORS = {
    "status": validate_status_request,
    "look": validate_look_request,
    "speak": validate_speak_request,
    "express": validate_express_request,
}


def validate_request(endpoint, payload):
    """Validate the JSON body sent to `endpoint`; returns the clean request."""
    if endpoint not in REQUEST_VALIDATORS:
        raise ProtocolError(f"unknown endpoint {endpoint!r}; Body Protocol v1 has {', '.join(ENDPOINTS)}")
    return REQUEST_VALIDATORS[endpoint](payload)


# --- responses ----------------------------------------------------------------


def validate_status_response(payload):
    _require_object(payload, "the /status answer")
    online = payload.get("online")
    if not isinstance(online, bool):
        raise ProtocolError('the /status answer needs "online" as true or false')
    return {"online": online}


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

REFERENCE_EMOTIONS = ("happy", "sad", "angry", "sleepy", "neutral")

# Free-form words a soul tends to use, mapped to the reference face nearest in feeling.
EMOTION_SYNONYMS = {
    "happy": (
        "joy", "joyful", "glad", "cheerful", "content", "delighted", "excited", "pleased",
        "smile", "smiling", "grateful", "amused", "playful", "proud", "love", "loving",
        "warm", "elated", "hopeful", "calm happy", "开心", "高兴", "快乐", "喜悦",
    ),
    "sad": (
        "unhappy", "lonely", "down", "blue", "gloomy", "sorrow", "sorrowful", "melancholy",
        "hurt", "disappointed", "crying", "grief", "miserable", "homesick", "伤心", "难过",
        "孤独", "悲伤",
    ),
    "angry": (
        "furious", "annoyed", "irritated", "mad", "frustrated", "cross", "grumpy", "rage",
        "outraged", "upset", "生气", "愤怒", "烦",
    ),
    "sleepy": (
        "tired", "drowsy", "sleeping", "asleep", "exhausted", "yawning", "weary", "bored",
        "困", "累", "困倦", "睡",
    ),
    "neutral": ("calm", "okay", "ok", "fine", "plain", "idle", "平静"),
}


class EmotionMap:
    """Maps a free-form emotion onto the faces a body can show.

    `faces` are the names a body can display; `synonyms` maps each face to the
    words that mean it. A body that shows more than the reference set extends
    the map: `EmotionMap.reference().extended("doubtful", ["unsure", "confused"])`.
    """

    def __init__(self, faces, synonyms, fallback="neutral"):
        self.faces = tuple(faces)
        self.fallback = fallback
        self._lookup = {}
        for face in self.faces:
            self._lookup[face] = face
            for word in synonyms.get(face, ()):
                self._lookup[word.lower()] = face

    @classmethod
    def reference(cls):
        return cls(REFERENCE_EMOTIONS, EMOTION_SYNONYMS)

    def extended(self, face, words=()):
        synonyms = {f: [w for w, target in self._lookup.items() if target == f] for f in self.faces}
        synonyms[face] = list(words)
        return EmotionMap(self.faces + (face,), synonyms, self.fallback)

    def nearest(self, emotion: str) -> str:
        """The face closest to `emotion`: exact word, then any known word inside it, else the fallback."""
        word = (emotion or "").strip().lower()
        if word in self._lookup:
            return self._lookup[word]
        # "very happy", "a bit tired", "happy!": look for a known word inside the phrase.
        for token in word.replace("-", " ").replace("_", " ").split():
            token = token.strip(".,!?;:'\"()")
            if token in self._lookup:
                return self._lookup[token]
        for known, face in self._lookup.items():
            if not known.isascii() and known in word:
                return face
        return self.fallback


_REFERENCE_MAP = EmotionMap.reference()


def nearest_emotion(emotion: str) -> str:
    """The reference emotion (happy, sad, angry, sleepy, neutral) nearest to a free-form one."""
    return _REFERENCE_MAP.nearest(emotion)
