"""The real `soulstack tts` process: its start line, a bad --voice as one line and exit 2, and the GPL
piper-tts never imported into it even where it could be."""

import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from tests.helpers import free_port
from tests.helpers import ROOT, read_until
from tests.tts.helpers import needs_espeak, speech_like, wav_facts
from tests.voice_peers import PEERS

# Run `soulstack tts` with the voice peers' site-packages (where piper-tts is installed, for wyoming-piper)
# at the end of sys.path, so `import piper` would work in it; at exit, say which GPL modules it holds.
WATCHED = """
import atexit, importlib.util, sys
sys.path.append(sys.argv[1])
print("piper importable:", importlib.util.find_spec("piper") is not None, flush=True)
gpl = ("piper", "piper_phonemize", "espeakbridge")
atexit.register(lambda: print("gpl modules:", sorted(m for m in sys.modules if m.split(".")[0] in gpl), flush=True))
from soulstack.cli import main
sys.exit(main(sys.argv[2:]))
"""


def post(port: int, payload: dict) -> bytes:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/tts", json.dumps(payload).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        return answer.read()


@needs_espeak
def test_the_default_voice_speaks_and_piper_tts_is_never_imported():
    peers_site = next((PEERS.parent / "lib").glob("python3*/site-packages"))
    port = free_port()
    argv = [sys.executable, "-c", WATCHED, str(peers_site), "tts", "--port", str(port)]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    try:
        lines = read_until(process, "Chinese:", timeout_s=60)
        assert "piper importable: True" in lines[0]  # so the check below could fail
        assert "tts: voice piper en_US-joe-medium (en, 22050 Hz" in lines[-1]
        speech_like(wav_facts(post(port, {"text": "Hello, I am a small robot."})), 1.0, 4.0)
        speech_like(wav_facts(post(port, {"text": "One. Two. Three."})), 0.8, 5.0)
    finally:
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=30)
    assert process.returncode == 0
    assert "gpl modules: []" in out, out


@pytest.mark.parametrize(
    "voice, words",
    [
        ("bogus", "--voice bogus: say which voice as piper:NAME|PATH, wyoming:tcp://HOST:PORT or espeak[:VOICE]"),
        ("piper:no-such-voice", "no Piper voice no-such-voice: there is no "),
        ("piper:/nowhere/voice.onnx", "there is no Piper voice at /nowhere/voice.onnx"),
        ("wyoming:127.0.0.1:10200", "give the server as tcp://HOST:PORT"),
        ("wyoming:tcp://127.0.0.1:{port}", "the Wyoming server at tcp://127.0.0.1:{port} does not answer"),
        ("espeak:no-such-voice", 'espeak-ng has no voice "no-such-voice"'),
    ],
)
@needs_espeak
def test_a_voice_that_cannot_speak_is_one_line_and_exit_2(soulstack_cmd, tmp_path, voice, words):
    port = free_port()
    voice, words = voice.format(port=port), words.format(port=port)
    run = subprocess.run(
        [*soulstack_cmd, "tts", "--port", str(free_port()), "--voice", voice, "--voice-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.startswith("soulstack tts: ") and words in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr  # one line, never a traceback


def test_without_espeak_ng_it_starts_says_so_and_answers_503(tmp_path):
    # espeak-ng is a package that may come later (its phonemes are the Piper voice's): no reason to refuse
    # to start, and every request says what is missing. PATH: a folder where no espeak-ng can be found.
    port = free_port()
    argv = [sys.executable, "-m", "soulstack.cli", "tts", "--port", str(port), "--voice-dir", str(tmp_path)]
    env = {**os.environ, "PATH": str(tmp_path)}
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, env=env)
    try:
        line = read_until(process, "Chinese:", timeout_s=60)[-1]
        assert "its phonemes come from espeak-ng, which is not installed: sudo apt install espeak-ng" in line
        with pytest.raises(urllib.error.HTTPError) as refused:
            post(port, {"text": "Hello."})
        assert refused.value.code == 503 and "espeak-ng is not installed" in json.load(refused.value)["message"]
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)


@needs_espeak
def test_port_0_is_any_free_one_and_the_start_line_names_it():
    # As soul, body and ears take it: the start line says the port it got, and it answers there.
    argv = [sys.executable, "-m", "soulstack.cli", "tts", "--port", "0", "--voice", "espeak"]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    try:
        lines = read_until(process, "Chinese:", timeout_s=60)
        found = re.search(r"^tts: POST http://127\.0\.0\.1:(\d+)/tts ", lines[0])
        assert found and int(found[1]) != 0, lines
        speech_like(wav_facts(post(int(found[1]), {"text": "Hello."})), 0.3, 3.0)
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)
    assert process.returncode == 0


def test_a_port_out_of_range_is_one_line_and_exit_2():
    argv = [sys.executable, "-m", "soulstack.cli", "tts", "--port", "65536"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr == "soulstack tts: --port must be from 0 to 65535\n", done
