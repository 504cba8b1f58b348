"""Body Protocol v1 in code: shapes, client, server helpers, nudges, the checker."""

from host.body.protocol import (
    ENDPOINTS,
    REFERENCE_EMOTIONS,
    EmotionMap,
    ProtocolError,
    nearest_emotion,
)
from host.body.client import BodyClient, BodyError

__all__ = [
    "ENDPOINTS",
    "REFERENCE_EMOTIONS",
    "EmotionMap",
    "ProtocolError",
    "nearest_emotion",
    "BodyClient",
    "BodyError",
]
