"""What travels on a xiaozhi WebSocket: audio framing, JSON messages, emotion names.

Facts from xiaozhi-esp32 (the device firmware), in our words:

- Text frames are JSON objects with a "type" ("hello", "listen", "stt", "llm",
  "tts", "mcp", "abort", ...).
- Binary frames carry Opus audio. The `Protocol-Version` header (1, 2 or 3)
  says how: version 1 sends the bare Opus packet; version 2 prefixes a 16-byte
  big-endian header (version u16, type u16 = 0 for Opus, reserved u32,
  timestamp u32 in ms, payload size u32); version 3 a 4-byte one (type u8,
  reserved u8, payload size u16 big-endian).
- The device decodes downlink audio at the sample rate and frame duration the
  server's hello named. xiaozhi-server's hello echoes the device's own
  `audio_params` (16 kHz; 60 ms frames from the firmware, 20 ms from
  py-xiaozhi); 24 kHz and 60 ms are only for a server whose hello names none.
"""

import json
import struct

from soulstack.protocol.shapes import EMOTION_SYNONYMS, EmotionMap

HEADER_V2 = struct.Struct(">HHIII")
HEADER_V3 = struct.Struct(">BBH")
OPUS = 0

# The device's downlink defaults when the server's hello has no audio_params.
DEFAULT_DOWNLINK = {"sample_rate": 24000, "frame_duration": 60}


class FrameError(ValueError):
    """A frame that is not what the protocol says it should be."""


def protocol_version(value) -> int:
    """The binary framing version from a `Protocol-Version` header or hello; 1 when absent or odd."""
    try:
        version = int(value)
    except (TypeError, ValueError):
        return 1
    return version if version in (1, 2, 3) else 1


def wrap_audio(version: int, packet: bytes, timestamp_ms: int = 0) -> bytes:
    """One Opus packet as the binary frame a device speaking `version` expects."""
    if version == 2:
        return HEADER_V2.pack(2, OPUS, 0, timestamp_ms & 0xFFFFFFFF, len(packet)) + packet
    if version == 3:
        return HEADER_V3.pack(OPUS, 0, len(packet)) + packet
    return packet


def unwrap_audio(version: int, frame: bytes) -> bytes:
    """The Opus packet inside a binary frame (the reverse of `wrap_audio`)."""
    header = HEADER_V2 if version == 2 else HEADER_V3 if version == 3 else None
    if header is None:
        return frame
    if len(frame) < header.size:
        raise FrameError(f"a version {version} audio frame needs a {header.size}-byte header; got {len(frame)} bytes")
    size = header.unpack_from(frame)[-1]
    payload = frame[header.size : header.size + size]
    if len(payload) != size:
        raise FrameError(f"the frame header promises {size} bytes of audio; {len(payload)} follow")
    return payload


def parse_message(text: str) -> dict:
    """A text frame as a JSON object with a string "type", or FrameError saying what is wrong."""
    try:
        message = json.loads(text)
    except ValueError as error:
        raise FrameError(f"not JSON ({error})") from None
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise FrameError('not a JSON object with a string "type"')
    return message


def downlink_params(server_hello: dict) -> dict:
    """The sample rate and frame duration the device will decode our audio at."""
    params = dict(DEFAULT_DOWNLINK)
    given = server_hello.get("audio_params")
    if isinstance(given, dict):
        for key in params:
            value = given.get(key)
            if isinstance(value, int) and value > 0:
                params[key] = value
    return params


# --- emotions -------------------------------------------------------------------

# The faces xiaozhi devices know, with the emoji xiaozhi-server sends alongside each.
XIAOZHI_EMOJI = {
    "neutral": "😶",
    "happy": "🙂",
    "laughing": "😆",
    "funny": "😂",
    "sad": "😔",
    "angry": "😠",
    "crying": "😭",
    "loving": "😍",
    "embarrassed": "😳",
    "surprised": "😲",
    "shocked": "😱",
    "thinking": "🤔",
    "winking": "😉",
    "cool": "😎",
    "relaxed": "😌",
    "delicious": "🤤",
    "kissy": "😘",
    "confident": "😏",
    "sleepy": "😴",
    "silly": "😜",
    "confused": "🙄",
}

# Words a soul may use for the faces beyond the reference five; these win over the reference synonyms.
_MORE_SYNONYMS = {
    "laughing": ("laugh", "amused", "giggling", "大笑"),
    "funny": ("hilarious", "joking"),
    "crying": ("cry", "tearful", "sobbing", "哭"),
    "loving": ("love", "loving", "affectionate", "adoring", "爱"),
    "embarrassed": ("shy", "ashamed", "bashful", "害羞"),
    "surprised": ("surprise", "amazed", "astonished", "wow", "惊讶"),
    "shocked": ("scared", "afraid", "fear", "frightened", "terrified", "害怕"),
    "thinking": ("pensive", "thoughtful", "curious", "wondering", "pondering", "思考"),
    "winking": ("wink", "cheeky"),
    "cool": ("chill",),
    "relaxed": ("calm", "peaceful", "serene", "relieved", "content", "放松"),
    "delicious": ("hungry", "yummy", "tasty"),
    "kissy": ("kiss", "kissing"),
    "confident": ("proud", "smug", "determined", "自信"),
    "silly": ("playful", "goofy", "mischievous", "调皮"),
    "confused": ("doubtful", "unsure", "puzzled", "uncertain", "疑惑"),
}

XIAOZHI_EMOTIONS = EmotionMap(
    tuple(XIAOZHI_EMOJI),
    {**{face: words for face, words in EMOTION_SYNONYMS.items()}, **_MORE_SYNONYMS},
)
