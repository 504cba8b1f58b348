"""One Body Protocol source: the host and the firmware agree on every endpoint, rule and emotion word.

The rules live once, in firmware/core (protocol.py, emotions.py). This walks every
emotion word (alone and inside a phrase) and a corpus of requests for every
endpoint through the host's side (soulstack.protocol.shapes, the terminal body's
map) and through the firmware's core under real MicroPython, and compares.
"""

import json

from soulstack.adapters.terminal.screen import FACES as TERMINAL_FACES
from soulstack.firmware.core import emotions, protocol as rules
from soulstack.flash.provision import body_section
from soulstack.protocol import shapes
from soulstack.protocol.shapes import EmotionMap, ProtocolError
from soulstack.config_checks import spec_of
from soulstack.soul.config import SoulConfig, starter
from soulstack.soul.tools.body import body_tools
from tests.firmware.helpers import TESTS, micropython

ROBOT, REFERENCE = EmotionMap.robot(), EmotionMap.reference()


def every_word():
    """Each known word, and each inside a phrase the soul might write."""
    words = []
    for word in emotions.all_words():
        words += [word, word.upper(), "a bit " + word + "!", "feeling " + word + " today"]
        if not word.isascii():
            words.append("我很" + word)
    return words + ["", "   ", "flabbergasted", "我很困惑", "very calm happy"]


def request_corpus():
    """For every endpoint: good requests, each way its field can be wrong, and the cap's both sides."""
    corpus = [("dance", {}), ("status", {}), ("status", {"extra": 1}), ("status", []), ("status", "hi")]
    for endpoint, (key, cap, _may_be_blank) in rules.FIELDS.items():
        corpus += [(endpoint, {}), (endpoint, [key]), (endpoint, {key: "fine", "extra": True})]
        corpus += [(endpoint, {key: bad}) for bad in (3, 2.5, None, True, [], {}, "", "  \n")]
        corpus += [(endpoint, {key: "x" * cap}), (endpoint, {key: "x" * (cap + 1)})]
        corpus += [(endpoint, {key: "开" * cap}), (endpoint, {key: "开" * (cap + 1)})]
    return corpus


def host_verdict(endpoint, payload):
    try:
        return ["ok", shapes.validate_request(endpoint, payload)]
    except ProtocolError as problem:
        return ["bad", str(problem)]


def test_the_words_the_two_copies_once_read_differently():
    assert ROBOT.nearest("wistful") == REFERENCE.nearest("wistful") == "sad"
    assert ROBOT.nearest("calm happy") == REFERENCE.nearest("calm happy") == "happy"
    assert ROBOT.nearest("a bit unsure") == "doubtful" and REFERENCE.nearest("a bit unsure") == "neutral"
    assert ROBOT.nearest("我很困惑") == "doubtful" and ROBOT.nearest("我很困") == "sleepy"


def test_no_word_means_two_faces():
    owner = {}
    for face, words in emotions.WORDS.items():
        for word in words:
            assert word not in owner, f"{word!r} is listed for {owner.get(word)} and {face}"
            owner[word] = face
    assert set(emotions.WORDS) == set(emotions.FACES) and set(emotions.REFERENCE) <= set(emotions.FACES)


def test_a_body_without_a_face_shows_the_nearest_it_has():
    for word in every_word():
        robot_face = ROBOT.nearest(word)
        assert REFERENCE.nearest(word) == emotions.NEAREST.get(robot_face, robot_face), word
    assert set(TERMINAL_FACES) == set(shapes.REFERENCE_EMOTIONS)  # the terminal draws every reference face


def test_every_endpoint_list_is_the_firmwares():
    assert shapes.ENDPOINTS == rules.ENDPOINTS == ("status", "look", "speak", "express")
    assert tuple(body_section("http://robot", "t")["body"]["endpoints"]) == rules.ENDPOINTS
    assert tuple(spec_of(SoulConfig)["body"]["endpoints"]) == tuple(starter()["body"]["endpoints"]) == rules.ENDPOINTS
    everything = dict.fromkeys(rules.ENDPOINTS, "http://body")
    assert [tool.name for tool in body_tools(everything)] == ["body_status", "look", "speak", "express"]


def test_host_and_firmware_under_micropython_agree_on_every_word_and_request(tmp_path):
    words = every_word()
    corpus = request_corpus()
    path = tmp_path / "corpus.json"
    path.write_text(json.dumps({"words": words, "requests": [[e, json.dumps(p)] for e, p in corpus]}))
    result = micropython(TESTS / "agreement.py", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    device = json.loads(result.stdout)
    assert tuple(device["endpoints"]) == shapes.ENDPOINTS
    for word, robot_face, reference_face in zip(words, device["robot"], device["reference"], strict=True):
        assert (ROBOT.nearest(word), REFERENCE.nearest(word)) == (robot_face, reference_face), word
    for (endpoint, payload), verdict in zip(corpus, device["requests"], strict=True):
        assert host_verdict(endpoint, payload) == verdict, (endpoint, str(payload)[:60])
    refused = sum(1 for verdict in device["requests"] if verdict[0] == "bad")
    assert 0 < refused < len(corpus)  # the corpus exercises both sides of every rule
