"""Body Protocol v1 shapes and the emotion mapping (host/protocol/shapes.py)."""

import base64

import pytest

from soulstack.protocol import shapes as protocol
from soulstack.protocol.shapes import EmotionMap, ProtocolError, nearest_emotion

JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 16
PNG = protocol.PNG_SIGNATURE + b"\x00" * 16


@pytest.mark.parametrize(
    "word, face",
    [
        ("joyful", "happy"),
        ("glad", "happy"),
        ("tired", "sleepy"),
        ("drowsy", "sleepy"),
        ("furious", "angry"),
        ("annoyed", "angry"),
        ("unhappy", "sad"),
        ("lonely", "sad"),
        ("Very HAPPY!", "happy"),
        ("a bit tired", "sleepy"),
        ("xyzzy", "neutral"),
        ("", "neutral"),
        ("neutral", "neutral"),
    ],
)
def test_nearest_emotion(word, face):
    assert nearest_emotion(word) == face


def test_a_body_can_show_more_faces():
    faces = EmotionMap.reference().extended("doubtful", ["unsure", "confused"])
    assert faces.nearest("confused") == "doubtful"
    assert faces.nearest("doubtful") == "doubtful"
    assert faces.nearest("glad") == "happy"
    assert nearest_emotion("confused") == "neutral"  # the reference map is untouched


@pytest.mark.parametrize(
    "endpoint, payload, fragment",
    [
        ("look", {}, '"question"'),
        ("look", {"question": 3}, "must be a string"),
        ("speak", {"text": ""}, "must not be empty"),
        ("speak", {"text": "   "}, "must not be empty"),
        ("speak", {"text": "x" * 2001}, "at most 2000"),
        ("speak", [], "JSON object"),
        ("express", {"emotion": None}, "must be a string"),
        ("status", "hello", "JSON object"),
        ("dance", {}, "unknown endpoint"),
    ],
)
def test_bad_requests_name_what_is_wrong(endpoint, payload, fragment):
    with pytest.raises(ProtocolError, match=fragment):
        protocol.validate_request(endpoint, payload)


def test_good_requests_come_back_clean():
    assert protocol.validate_request("status", {"extra": 1}) == {}
    assert protocol.validate_request("speak", {"text": "x" * 2000}) == {"text": "x" * 2000}
    assert protocol.validate_request("express", {"emotion": "doubtful"}) == {"emotion": "doubtful"}


def test_look_answers_carry_exactly_one_shape():
    jpeg = base64.b64encode(JPEG).decode()
    assert protocol.validate_look_response({"image": jpeg, "mimeType": "image/jpeg"})["mimeType"] == "image/jpeg"
    assert protocol.validate_look_response({"text": "camera not ready"}) == {"text": "camera not ready"}
    png = base64.b64encode(PNG).decode()
    assert protocol.validate_look_response({"image": png, "mimeType": "image/png"})["image"] == png
    for bad, fragment in [
        ({"image": jpeg, "mimeType": "image/jpeg", "text": "x"}, "exactly one"),
        ({}, "exactly one"),
        ({"image": jpeg, "mimeType": "image/gif"}, "mimeType"),
        ({"image": "not base64!", "mimeType": "image/jpeg"}, "base64"),
        ({"image": png, "mimeType": "image/jpeg"}, "SOI"),
        ({"image": jpeg, "mimeType": "image/png"}, "PNG signature"),
    ]:
        with pytest.raises(ProtocolError, match=fragment):
            protocol.validate_look_response(bad)


def test_status_answer_needs_a_real_boolean():
    assert protocol.validate_status_response({"online": False}) == {"online": False}
    said = {"online": False, "reason": "the robot is not connected over USB"}
    assert protocol.validate_status_response(said) == said  # our addition: why, kept
    assert protocol.validate_status_response({"online": True, "reason": 3}) == {"online": True}
    for bad in [{}, {"online": "yes"}, {"online": 1}, []]:
        with pytest.raises(ProtocolError):
            protocol.validate_status_response(bad)
