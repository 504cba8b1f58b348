"""Body Protocol v1 in code: shapes, client, server helpers, nudges, the checker."""

from soulstack.protocol.shapes import (
    ENDPOINTS,
    REFERENCE_EMOTIONS,
    EmotionMap,
    ProtocolError,
    nearest_emotion,
)
from soulstack.protocol.client import BodyClient, BodyError

__all__ = [
    "ENDPOINTS",
    "REFERENCE_EMOTIONS",
    "EmotionMap",
    "ProtocolError",
    "nearest_emotion",
    "BodyClient",
    "BodyError",
]
