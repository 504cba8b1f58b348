"""`soulstack ears` as a command: the URLs it is given, as a person writes them."""

import asyncio
import os
import re
import subprocess
import sys

import aiohttp

from soulstack.fakes.soul_body import RecordingBody
from tests.helpers import free_port
from tests.ears.fakes import FakeSoul
from tests.ears.helpers import EarsProcess
from tests.ears.speech import plain, speech_wav
from tests.helpers import until_real


async def test_a_soul_url_with_a_trailing_slash_still_reaches_the_soul():
    async with FakeSoul(default="Hello.") as soul, RecordingBody() as body:
        ears = await EarsProcess(free_port(), soul.base_url + "/", body.base_url + "/").start()
        try:
            headers = {"Content-Type": "audio/L16; rate=16000; channels=1", "X-Soulstack-Body": "stackchan"}
            async with aiohttp.ClientSession() as http:
                url = f"http://127.0.0.1:{ears.port}/utterance"
                async with http.post(url, data=bytes(32000), headers=headers) as response:  # a second of silence
                    silence = await response.json()
                async with http.post(url, data=speech_wav()[44:], headers=headers) as response:
                    heard = await response.json()
            assert response.status == 200 and plain(heard["heard"]) == "what time is it", heard
            await until_real(lambda: soul.bodies, "the words at the soul")  # converse, at the URL given
            assert soul.bodies[0]["messages"][-1]["content"] == heard["heard"]
        finally:
            ears.stop()
        assert silence["soul_told"] is False and silence["message"].startswith("I heard no speech"), silence
        # What the utterance came to is a log line, in the one format of every long-running command.
        said = ears.process.stdout.read()
        assert re.search(r"^\d\d:\d\d:\d\d ears\.server: stackchan sent 1\.0 s with no speech in it", said, re.M), said
        assert re.search(r"^\d\d:\d\d:\d\d ears\.server: stackchan heard: ", said, re.M), said


def test_a_body_named_twice_is_one_line_to_fix():
    argv = [sys.executable, "-m", "soulstack.cli", "ears", "--body", "a=http://127.0.0.1:1", "--body"]
    done = subprocess.run([*argv, "a=http://127.0.0.1:2"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == "", done
    assert done.stderr.strip().splitlines() == [
        "soulstack ears: --body a=http://127.0.0.1:2: body a is named twice (first as http://127.0.0.1:1); "
        "give each body one --body"
    ], done.stderr


def test_the_help_names_moonshine_as_the_default_for_english():
    done = subprocess.run([sys.executable, "-m", "soulstack.cli", "ears", "--help"], capture_output=True, text=True)
    description = " ".join(done.stdout.split("options:")[0].split())
    assert "offline by default: Moonshine for English where its wheel has a build, else Whisper" in description
    assert "Whisper offline by default" not in description


def test_a_soul_that_is_not_a_url_is_one_line_to_fix():
    argv = [sys.executable, "-m", "soulstack.cli", "ears", "--soul", "127.0.0.1:9202", "--body", "s=http://h"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "--soul must look like http://127.0.0.1:9202" in done.stderr and "Traceback" not in done.stderr


async def test_the_start_line_says_which_recogniser_model_and_language_hear():
    async with FakeSoul(default="Hello.") as soul, RecordingBody() as body:
        ears = await EarsProcess(free_port(), soul.base_url, body.base_url).start()
        try:
            # The start line; on a machine's first start Moonshine's conversion is logged before it.
            first = next(line for line in iter(ears.process.stdout.readline, "") if line.startswith("ears: "))
        finally:
            ears.stop()
    from soulstack.ears.moonshine import model_dir

    if model_dir() is not None:  # Moonshine's wheel has a build for this machine
        # Its decoder converted into the user cache, or (a cache not writable) the wheel's files as they are.
        expected = (
            r"-> moonshine base \(English, bundled(; decoder converted once into \S+)?\), float32 on 2 CPU threads"
        )
    else:
        expected = r"-> whisper tiny.en \(bundled\), language en, int8 on 2 CPU threads"
    assert re.search(expected + r" \(the soul's language\) ->", first), first


async def test_a_chinese_soul_with_an_english_only_model_is_one_line_to_fix():
    async with FakeSoul(default="你好。", language="zh") as soul:
        argv = [sys.executable, "-m", "soulstack.cli", "ears", "--soul", soul.base_url, "--body", "s=http://h"]
        argv += ["--whisper-model", "tiny.en"]  # asked for by name: without it, soulstack[zh]'s base if installed
        process = await asyncio.create_subprocess_exec(*argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 2, (out, err)
    said = err.decode()
    assert "tiny.en hears English only; for --language zh" in said and "Traceback" not in said, said


def test_a_model_that_is_not_here_is_one_line_to_fix_and_nothing_is_fetched_in_tests(tmp_path):
    # HF_HUB_OFFLINE: the hub may not be asked (nothing downloads at test time); a person would see it fetched.
    argv = [sys.executable, "-m", "soulstack.cli", "ears", "--whisper-model", "small", "--language", "en"]
    argv += ["--soul", "http://127.0.0.1:9", "--body", "s=http://127.0.0.1:9"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}  # an empty cache
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 2, done
    assert "the Whisper model 'small' is not here and could not be fetched" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "--whisper-model DIR" in done.stderr


def test_a_taken_port_is_one_line_and_no_start_line():
    """The start line says ears serves: only once its port is bound (it used to come first, then the error)."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        argv = [sys.executable, "-m", "soulstack.cli", "ears", "--port", str(port), "--language", "en"]
        argv += ["--recogniser", "pocketsphinx", "--soul", "http://127.0.0.1:9", "--body", "s=http://127.0.0.1:9"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in done.stderr, done
    assert "ears: POST" not in done.stdout, done.stdout
