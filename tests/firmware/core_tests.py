"""Tests of firmware/core that run unchanged under CPython (via pytest) and MicroPython (via run.py).

Plain functions named test_*, plain asserts, no pytest features: MicroPython
has no pytest. Time is always a number handed in, never a sleep.
"""

import asyncio
import binascii
import json

from core import auth, b64json, config, emotions, face, nudges, protocol, serial_frames, servo, wav
from core.balloon import Balloon, wrap
from core.clock import FakeClock, Monotonic, Rng
from core.speech import SpeechQueue

JPEG = b"\xff\xd8" + bytes(range(256)) * 7 + b"\xff\xd9"


def raises(kind, fn, *args):
    try:
        fn(*args)
    except kind as problem:
        return problem
    raise AssertionError("expected " + kind.__name__)


# --- auth ---


def test_same_secret():
    assert auth.same_secret("abc", "abc")
    assert not auth.same_secret("abd", "abc")
    assert not auth.same_secret("ab", "abc")
    assert not auth.same_secret("abcabc", "abc")
    assert not auth.same_secret("x", "")
    assert auth.same_secret("", "")


def test_bearer():
    assert auth.bearer_ok(None, None)
    assert auth.bearer_ok("Bearer t0k", "t0k")
    assert auth.bearer_ok("bearer t0k", "t0k")
    assert not auth.bearer_ok(None, "t0k")
    assert not auth.bearer_ok("Bearer nope", "t0k")
    assert not auth.bearer_ok("Basic t0k", "t0k")


# --- emotions ---


def test_emotions():
    assert emotions.nearest_face("happy") == "happy"
    assert emotions.nearest_face("Very TIRED!") == "sleepy"
    assert emotions.nearest_face("a bit unsure") == "doubtful"
    assert emotions.nearest_face("我很开心") == "happy"
    assert emotions.nearest_face("flabbergasted") == "neutral"
    assert emotions.nearest_face("") == "neutral"
    for name in emotions.FACES:
        assert emotions.nearest_face(name) == name


# --- protocol ---


class FakeDevice:
    def __init__(self, camera=True):
        self.camera = camera
        self.queue = SpeechQueue(limit=1)
        self.expressed = []

    def online(self):
        return True

    def look(self, question):
        return b64json.ImageBody(JPEG) if self.camera else "camera not ready"

    def speak(self, text):
        self.queue.put(text)

    def express(self, emotion):
        self.expressed.append(emotion)
        if emotion == "explode":
            raise OSError("servo bus jammed")


def test_dispatch_answers():
    errors = []
    d = protocol.Dispatcher(FakeDevice(), "tok", lambda where, e: errors.append(where))
    auth_ok = "Bearer tok"
    assert d.handle("status", b"{}", auth_ok) == (200, {"online": True})
    for empty in (b"", b"  \n", None, ""):  # an empty body is a 400, as on every host body (docs/body-protocol.md)
        assert d.handle("status", empty, auth_ok) == (400, {"message": protocol.NO_BODY})
    status, body = d.handle("look", b'{"question": "who?"}', auth_ok)
    assert status == 200 and isinstance(body, b64json.ImageBody)
    assert d.handle("speak", b'{"text": "hi"}', auth_ok) == (200, {})
    status, body = d.handle("speak", b'{"text": "again"}', auth_ok)
    assert status == 503 and "waiting" in body["message"]
    assert d.handle("express", {"emotion": "happy"}, auth_ok) == (200, {})
    status, body = d.handle("express", {"emotion": "explode"}, auth_ok)
    assert status == 503 and "servo bus jammed" in body["message"] and errors == ["express"]


def test_dispatch_refusals():
    d = protocol.Dispatcher(FakeDevice(camera=False), "tok")
    assert d.handle("status", b"{}", None)[0] == 401
    assert d.handle("status", b"{}", "Bearer bad")[0] == 401
    assert d.handle("status", b"{}", None, trusted=True)[0] == 200
    assert d.handle("dance", b"{}", "Bearer tok")[0] == 404
    cases = (
        ("status", b"[]", "JSON object"),
        ("look", b'{"question": 7}', "must be a string"),
        ("look", b"{", "not valid JSON"),
        ("speak", b"{}", '"text"'),
        ("speak", b'{"text": "   "}', "empty"),
        ("speak", json.dumps({"text": "x" * 2001}).encode(), "at most 2000"),
        ("express", b'{"emotion": null}', "null"),
        ("look", json.dumps({"question": "x" * 1001}).encode(), "at most 1000"),
        ("express", json.dumps({"emotion": "x" * 101}).encode(), "at most 100"),
    )
    for endpoint, raw, words in cases:
        status, body = d.handle(endpoint, raw, "Bearer tok")
        assert status == 400, (endpoint, raw, status)
        assert words in body["message"], (words, body)
    assert d.handle("look", b'{"question": "x"}', "Bearer tok") == (200, {"text": "camera not ready"})


def test_dispatch_refuses_text_no_screen_or_voice_can_take():
    d = protocol.Dispatcher(FakeDevice(), "")
    for raw, said in (
        (b'{"text": "ESC \\u001b[2J red"}', "control character U+001B"),
        (b'{"text": "a\\u0000b"}', "control character U+0000"),
        (b'{"question": "\\u009b"}', "control character U+009B"),
        (b'{"text": "\\ud800"}', "lone surrogate (U+D800)"),
    ):
        endpoint = "look" if b"question" in raw else "speak"
        status, body = d.handle(endpoint, raw, None)
        assert status == 400 and said in body["message"], (raw, status, body)
    assert d.handle("speak", b'{"text": "tab\\tand\\nlines \\u4f60\\u597d"}', None) == (200, {})


def test_json_nested_deeper_than_32_is_a_400_naming_the_depth():
    assert protocol.deepest('{"a": [[{"b": "[[[["}]], 1]}') == 4
    d = protocol.Dispatcher(FakeDevice(), "")
    deep = b'{"text": "deep", "a": ' + b"[" * 1000 + b"]" * 1000 + b"}"  # a MemoryError at 256K, before
    status, body = d.handle("speak", deep, None)
    assert status == 400 and "nests 1001 levels deep; at most 32" in body["message"], (status, body)
    brackets = b'{"text": "' + b"[" * 40 + b'"}'  # inside a string they are words
    assert d.handle("speak", brackets, None) == (200, {})
    assert d.handle("status", b"{}", None) == (200, {"online": True})


def test_dispatch_refuses_what_only_a_web_page_sends():
    # No token: without these two rules any page on any site could make the robot speak.
    device = FakeDevice()
    d = protocol.Dispatcher(device, "")
    for media in ("text/plain", "application/x-www-form-urlencoded", None, ""):
        status, body = d.handle("speak", b'{"text": "hi"}', None, content_type=media)
        assert status == 415 and "application/json" in body["message"], (media, status, body)
    status, body = d.handle("speak", b'{"text": "hi"}', None, origin="http://evil.example")
    assert status == 403 and "evil.example" in body["message"], body
    assert d.handle("look", b'{"question": "x"}', None, origin="null")[0] == 403
    # The queue holds one: had a refused request been queued, this one would be a 503.
    assert d.handle("speak", b'{"text": "hi"}', None, content_type="application/json; charset=utf-8") == (200, {})
    # The USB cable carries no HTTP headers: physical access is trusted.
    assert d.handle("status", {}, None, trusted=True, content_type=None, origin="x")[0] == 200


# --- the /look writer ---


def test_b64_pieces_are_exact_and_small():
    image = b64json.ImageBody(JPEG)
    pieces = list(b64json.pieces(image))
    text = b"".join(pieces).decode()
    answer = json.loads(text)
    assert answer["mimeType"] == "image/jpeg"
    assert binascii.a2b_base64(answer["image"]) == JPEG
    assert max(len(p) for p in pieces) <= b64json.CHUNK * 4 // 3
    written = []
    total = b64json.write(written.append, image, chunk=300)
    assert total == len(text) and b"".join(written).decode() == text
    raises(ValueError, lambda: list(b64json.pieces(image, chunk=100)))


# --- serial frames ---


def test_serial_frames():
    line = serial_frames.reply(17, 200, {"text": "héllo\nthere"})
    assert line.startswith(serial_frames.MARKER) and line.endswith("\n") and line.count("\n") == 1
    assert serial_frames.decode(line) == {"id": 17, "status": 200, "body": {"text": "héllo\nthere"}}
    assert serial_frames.decode(line.encode()) == serial_frames.decode(line)
    assert serial_frames.decode("MicroPython v1.24 on ESP32S3\r\n") is None
    assert serial_frames.decode("@ss1 {broken") is None
    assert serial_frames.decode("@ss1 [1, 2]") is None
    assert serial_frames.decode(b"@ss1 \xff\xfe") is None
    request = serial_frames.decode(serial_frames.request("a-1", "look", {"question": "?"}))
    assert serial_frames.is_request(request) and request["id"] == "a-1"
    assert not serial_frames.is_request(serial_frames.decode(serial_frames.nudge("hi")))
    streamed = serial_frames.reply_head(5, 200) + '{"image":"AAAA","mimeType":"image/jpeg"}' + serial_frames.REPLY_TAIL
    assert serial_frames.decode(streamed)["body"]["image"] == "AAAA"
    ready = serial_frames.decode(serial_frames.ready(None, "no network", "generic"))
    assert ready == {"ready": {"ip": None, "wifi": "no network", "version": serial_frames.VERSION, "hal": "generic"}}


def test_serial_lines_hold_at_most_the_limit():
    lines = serial_frames.Lines(limit=100)
    assert lines.feed(b"one\ntw") == [(b"one", None)]
    assert lines.feed(b"o\n\n") == [(b"two", None), (b"", None)]
    # Written as the host writes it, id first (MicroPython's own dicts keep no order).
    request = (serial_frames.MARKER + '{"id":42,"ep":"look","body":{"question":"' + "x" * 500 + '"}}\n').encode()
    done = []
    for start in range(0, len(request), 37):  # arriving in pieces, as from the cable
        done += lines.feed(request[start : start + 37])
        assert sum(len(part) for part in lines._parts) <= 100  # never more of it held than the limit
    assert len(done) == 1
    head, size = done[0]
    assert size == len(request) - 1 and len(head) == serial_frames.HEAD_BYTES
    assert serial_frames.peek_id(head) == 42
    assert lines.feed(b"after\n") == [(b"after", None)]  # the next line is whole again


def test_a_frame_too_long_for_its_endpoint_is_cut_at_its_head():
    lines = serial_frames.Lines(limit_of=serial_frames.line_limit)
    look_limit = 4 * protocol.MAX_QUESTION_CHARS + serial_frames.FRAME_OVERHEAD_BYTES
    fits = (serial_frames.MARKER + '{"id":1,"ep":"look","body":{"question":"' + "开" * 1000 + '"}}\n').encode()
    assert len(fits) < look_limit and lines.feed(fits)[0][1] is None  # the longest valid question, in UTF-8
    too_long = (serial_frames.MARKER + '{"id":2,"ep":"look","body":{"question":"' + "x" * 7000 + '"}}\n').encode()
    ((head, size),) = lines.feed(too_long)
    assert size == len(too_long) - 1 and serial_frames.line_limit(head) == look_limit < serial_frames.MAX_LINE_BYTES
    answer = serial_frames.decode(serial_frames.too_long(head, size))
    assert answer["id"] == 2 and answer["status"] == 413
    assert str(size) in answer["body"]["message"] and "at most 1000 characters" in answer["body"]["message"]
    assert serial_frames.too_long(b"noise without an id", 99999) is None
    # The host writes text as UTF-8 (MicroPython's json always does), so the limits hold.
    assert "开" in serial_frames.request(3, "speak", {"text": "开"})


def test_peek_id():
    assert serial_frames.peek_id(b'@ss1 {"id":"a-1","ep":"speak","body":{}}') == "a-1"
    assert serial_frames.peek_id(b'@ss1 {"id":7,"ep":"spe') == 7
    for head in (b"noise", b'@ss1 {"id":', b'@ss1 {"id":[1],', b'@ss1 {"id":true,', b'@ss1 {"ep":"x","id":1}'):
        assert serial_frames.peek_id(head) is None, head


# --- balloon ---


def test_wrap():
    assert wrap("hello there my friend", 11) == ["hello there", "my friend"]
    assert wrap("abcdefghijkl", 5) == ["abcde", "fghij", "kl"]
    assert wrap("你好世界今天", 6) == ["你好世", "界今天"]
    assert wrap("one\ntwo", 10) == ["one", "two"]
    for line in wrap("a somewhat longer sentence with quite a few words in it", 9):
        assert len(line) <= 9


def test_wrapping_text_keeps_none_of_its_characters():
    # Iterating a MicroPython str interns each character as a qstr, never freed: the balloon kept
    # heap for every distinct character the robot had ever said (1,120 bytes for these 300).
    import gc

    if not hasattr(gc, "mem_free"):  # CPython: no heap to measure
        return
    utf8 = b""
    for code in range(0x4E00, 0x4E00 + 300):  # built as bytes: chr() would intern them itself
        utf8 += bytes((0xE0 | code >> 12, 0x80 | (code >> 6) & 0x3F, 0x80 | code & 0x3F))
    text = utf8.decode()
    gc.collect()
    before = gc.mem_free()
    lines = wrap(text, 24)
    assert len(lines) == 25 and lines[0] == text[:12] and lines[-1] == text[-12:]
    lines = None
    gc.collect()
    kept = before - gc.mem_free()
    assert kept < 512, kept


def test_balloon_scrolls_then_hides():
    b = Balloon(columns=10, rows=2)
    b.show("one two three four five six seven eight", 0)
    assert b.lines == ["one two", "three four", "five six", "seven", "eight"]
    assert b.visible(0) == ["one two", "three four"]
    assert b.visible(1500) == ["three four", "five six"]
    assert b.visible(4500) == ["seven", "eight"]
    assert b.visible(60000) == ["seven", "eight"]  # still speaking: stays
    b.done_speaking(60000)
    assert b.visible(62999) == ["seven", "eight"]
    assert b.visible(63000) == []


# --- face animation ---


def test_blinks_follow_the_conventions():
    avatar = face.Avatar(now_ms=0, seed=3)
    changes = []
    was_open = True
    for t in range(0, 120000, 10):
        is_open = avatar.update(t).eyes_open > 0
        if is_open != was_open:
            changes.append((t, is_open))
            was_open = is_open
    assert len(changes) > 40
    for i in range(1, len(changes)):
        span = changes[i][0] - changes[i - 1][0]
        if changes[i][1]:  # eyes reopened: they were closed this long
            assert 300 <= span <= 510, span
        else:
            assert 2500 <= span <= 4510, span


def test_saccades_breathing_blend_mouth():
    avatar = face.Avatar(now_ms=0, seed=5)
    gazes = set()
    for t in range(0, 30000, 50):
        frame = avatar.update(t)
        assert -1.0 <= frame.breath <= 1.0
        gazes.add((frame.gaze_x, frame.gaze_y))
    assert 12 <= len(gazes) <= 61  # every 0.5-2.5 s for 30 s
    avatar.set_expression("angry", 30000)
    assert avatar.update(30000).blend == 0.0
    assert 0.4 < avatar.update(30150).blend < 0.6
    frame = avatar.update(30300)
    assert frame.blend == 1.0 and frame.expression == "angry" and frame.previous == "neutral"
    avatar.set_expression("unknown-face", 31000)
    assert avatar.frame.expression == "neutral"
    avatar.set_mouth_level(1.0)
    first = avatar.update(31050).mouth
    second = avatar.update(31100).mouth
    assert 0 < first < second <= 1.0
    avatar.set_mouth_level(0.0)
    opened = second
    closing = avatar.update(31150).mouth
    assert 0 < closing < opened  # closes more slowly than it opened
    for t in range(31200, 33000, 50):
        avatar.update(t)
    assert avatar.frame.mouth == 0.0


def test_frame_carries_the_whole_text_and_whether_it_is_speech_or_a_caption():
    avatar = face.Avatar(now_ms=0)
    avatar.say("hello there, this is more than one line of the balloon", 0)
    frame = avatar.update(50)
    assert frame.text == "hello there, this is more than one line of the balloon" and not frame.caption
    assert frame.balloon == ["hello there, this is", "more than one line of"]  # what a screen draws: two rows
    avatar.show_text("who is there?", 100)
    frame = avatar.update(150)
    assert frame.text == "who is there?" and frame.caption and frame.balloon == ["who is there?"]
    frame = avatar.update(2100)  # a caption lingers two seconds, then the balloon and its text are gone
    assert frame.balloon == [] and frame.text == "" and not frame.caption


def test_audio_level():
    import struct

    silence = bytes(2048)
    loud = struct.pack("<" + "h" * 1024, *([20000, -20000] * 512))
    assert face.audio_level(silence) == 0.0
    assert face.audio_level(loud) == 1.0
    quiet = struct.pack("<" + "h" * 1024, *([2000, -2000] * 512))
    assert 0.2 < face.audio_level(quiet) < 0.3


# --- servos ---


def test_easing():
    assert servo.ease_in_out(0) == 0.0 and servo.ease_in_out(1) == 1.0
    assert abs(servo.ease_in_out(0.5) - 0.5) < 1e-9
    assert servo.ease_in_out(0.1) < 0.1 and servo.ease_in_out(0.9) > 0.9


def test_head_rate_limit_and_torque_off():
    sent = []
    torque = []
    head = servo.Head(
        (servo.Axis("yaw", -60, 60, 0), servo.Axis("pitch", 0, 90, 10)),
        lambda axis, deg: sent.append((now[0], axis, deg)),
        torque.append,
        min_interval_ms=100,
        idle_ms=3000,
    )
    now = [0]
    head.gesture("angry", 0)
    for t in range(0, 10000, 10):
        now[0] = t
        head.tick(t)
    times = sorted(set(t for t, _, _ in sent))
    for i in range(1, len(times)):
        assert times[i] - times[i - 1] >= 100
    yaws = [deg for _, axis, deg in sent if axis == "yaw"]
    assert min(yaws) <= -9 and max(yaws) >= 9 and yaws[-1] == 0
    assert torque[0] is True and torque[-1] is False and not head.torque_on
    assert now[0] - sent[-1][0] >= 3000  # quiet once limp
    head.gesture("sleepy", 10000)
    head.tick(10000)
    head.tick(10800)
    assert head.torque_on and sent[-1][1] == "pitch" and sent[-1][2] > 10
    axis = servo.Axis("pitch", 0, 90, 10)
    axis.move(500, 0, 100)
    assert axis.target == 90


# --- nudges ---


def run_face(pattern_ms, minutes, frames=3, absent=10, hz=5, window_ms=600000):
    """Simulate a face that is present when pattern_ms(t) is true, sampled at `hz`."""
    nudger = nudges.Nudger({"face": window_ms}, frames, absent)
    sent = []
    step = 1000 // hz
    for t in range(0, minutes * 60000, step):
        reason = nudger.face_seen(pattern_ms(t), t)
        if reason:
            sent.append((t, reason))
    return sent


def test_face_flicker_at_5hz_never_nudges():
    # Detection alternates present/absent every 100 ms (5 Hz), sampled at 10 Hz: never 3 in a row.
    sent = run_face(lambda t: (t // 100) % 2 == 0, 10, hz=10)
    assert sent == []


def test_face_present_with_dropouts_nudges_once():
    # A face stays but detection misses 2 of every 5 frames: one nudge, after the 3rd straight hit.
    sent = run_face(lambda t: (t // 200) % 5 < 3, 10)
    assert [t for t, _ in sent] == [400]
    assert sent[0][1] == "someone's face appeared in front of me"


def test_face_comes_and_goes_respects_window():
    # Present 5 s, gone 5 s, for 20 minutes: 120 arrivals, but at most one nudge per 10 minutes.
    # The arrival at exactly 600 000 ms is seen on its 3rd frame (600 400 ms), a full window later.
    sent = run_face(lambda t: (t // 5000) % 2 == 0, 20)
    assert [t for t, _ in sent] == [400, 600400]
    # The same for 10 minutes only: exactly one.
    assert len(run_face(lambda t: (t // 5000) % 2 == 0, 10)) == 1


def test_windows_per_kind_and_failed_delivery():
    nudger = nudges.Nudger({"touch": 60000, "button": 30000})
    assert nudger.event("touch", 0) == "someone touched my face"
    assert nudger.event("touch", 59999) is None
    assert nudger.event("button", 100) == "someone pressed my button"
    assert nudger.event("touch", 60000) == "someone touched my face"
    assert [kind for kind, _, _ in nudger.pending] == ["touch", "button", "touch"]
    kind, reason, at = nudger.take()
    nudger.failed(kind)
    assert nudger.event("touch", 60001) is not None  # a failed send does not hold the window


def test_pickup():
    nudger = nudges.Nudger()
    assert nudger.accel(0, 0, 1.0, 0) is None
    assert nudger.accel(0.9, 0.2, 1.3, 10) is None
    assert nudger.accel(0.9, 0.2, 1.3, 20) is None
    assert nudger.accel(0.9, 0.2, 1.3, 30) == "someone picked me up"
    assert nudger.accel(0.9, 0.2, 1.3, 40) is None


# --- config ---


def test_config_defaults_and_warnings():
    cfg, warnings = config.parse('{"wifi": {"ssid": "home", "password": "pw"}, "token": "t", "colour": "red"}')
    assert cfg["port"] == 80 and cfg["servo"]["kind"] == "none" and cfg["debounce"]["face_min_interval_s"] == 600
    assert cfg["nudge_url"] is None
    assert warnings == ['unknown key "colour" ignored']
    cfg, warnings = config.parse("")
    assert "serial" in warnings[0]
    assert config.windows_ms(cfg)["face"] == 600000


def test_config_errors_name_every_problem():
    problem = raises(
        config.ConfigError,
        config.parse,
        '{"wifi": {"ssid": 5}, "nudge_url": "https://x", "servo": {"kind": "sg90", "pan_pin": 99}, "debounce": {"face_frames": 0}}',
    )
    text = str(problem)
    for words in (
        '"wifi.ssid" must be text',
        '"nudge_url" must be an http:// URL',
        '"servo.pan_pin"',
        '"servo.tilt_pin"',
        '"debounce.face_frames"',
    ):
        assert words in text, words
    for url in ("notaurl", "ftp://x", "http://", "http://a host/"):
        assert '"tts_url" must be an http:// URL' in str(
            raises(config.ConfigError, config.parse, json.dumps({"tts_url": url}))
        )
    assert "not valid JSON" in str(raises(config.ConfigError, config.parse, "{oops"))
    assert "one JSON object" in str(raises(config.ConfigError, config.parse, "[]"))


# --- speech queue, WAV header, clock ---


def test_speech_queue_is_bounded():
    queue = SpeechQueue(limit=2)
    queue.put("a")
    queue.put("b")
    raises(protocol.Busy, queue.put, "c")
    assert queue.take() == "a" and queue.busy()
    queue.put("c")
    queue.finished()
    assert queue.take() == "b"


def test_wav_header():
    import struct

    fmt = struct.pack("<HHIIHH", 1, 1, 16000, 32000, 2, 16)
    data = (
        b"RIFF"
        + struct.pack("<I", 100)
        + b"WAVE"
        + b"LIST"
        + struct.pack("<I", 3)
        + b"abc\x00"
        + b"fmt "
        + struct.pack("<I", len(fmt))
        + fmt
        + b"data"
        + struct.pack("<I", 4)
        + b"\x01\x00\x02\x00"
    )
    position = [0]

    async def read_exactly(n):
        chunk = data[position[0] : position[0] + n]
        position[0] += n
        return chunk

    assert asyncio.run(wav.read_header(read_exactly)) == (16000, 1, 16)
    assert data[position[0] :] == b"\x01\x00\x02\x00"
    position[0] = 0
    data = b"RIFX" + data[4:]
    raises(wav.WavError, lambda: asyncio.run(wav.read_header(read_exactly)))


def test_monotonic_unwraps_ticks():
    period = 1 << 30
    ticks = [period - 100]

    def diff(a, b):
        return ((a - b + period // 2) % period) - period // 2

    clock = Monotonic(lambda: ticks[0], diff)
    ticks[0] = (period - 100 + 250) % period  # wrapped
    assert clock.ms() == 250
    fake = FakeClock(5)
    fake.advance(10)
    assert fake.ms() == 15


def test_rng_is_deterministic():
    a, b = Rng(42), Rng(42)
    values = [a.between(1, 6) for _ in range(50)]
    assert values == [b.between(1, 6) for _ in range(50)]
    assert min(values) >= 1 and max(values) <= 6 and len(set(values)) == 6
