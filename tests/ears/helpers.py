"""What the ears tests share: the spoken utterance, a running `soulstack ears`, and the whole rig.

The rig is every real part on loopback: the firmware under MicroPython with the
fake HAL (its microphone hears the WAV the test plays into the room), a
`soulstack ears` process recognising with Whisper (its default), a soul (build_soul, in
this test's loop) whose model is the fake Messages API answering from a script,
and `soulstack tts` making the answer's speech for the robot's speaker.
"""

import asyncio
import itertools
import signal
import subprocess
import sys


from soulstack.fakes.anthropic_api import FakeAnthropic, message, tool_use
from soulstack.fakes.soul_body import RecordingBody
from soulstack.serving import listening
from soulstack.sim.runner import Simulator
from soulstack.tts.server import make_tts_app
from tests.helpers import free_port
from tests.helpers import poll, until
from tests.ears.speech import ANSWER, QUESTION, plain, speech_wav  # noqa: F401 (the tests take them from here)
from tests.soul.helpers import a_soul, Running


_replies = itertools.count(1)  # one tool_use id per reply, across the tests


def answer_then_sleep(words=ANSWER):
    """The fake model's reply for one waking: say `words`, then sleep."""
    sleep = {"type": "tool_use", "id": f"toolu_ears{next(_replies):04d}", "name": "sleep", "input": {"minutes": 60}}
    return message({"type": "text", "text": words}, sleep)


def answers(request_body):
    """The fake model: the answer when the person asked the time (whatever else woke it meanwhile), else sleep."""
    from tests.soul.helpers import texts_of

    if QUESTION in plain(texts_of(request_body["messages"][-1])):
        return answer_then_sleep()
    return tool_use("sleep", {"minutes": 60})


class EarsProcess:
    """`soulstack ears` as a real process (so a test can kill -9 it)."""

    def __init__(self, port, soul_url, body_url, extra=()):
        self.port = port
        self.argv = [
            sys.executable,
            "-m",
            "soulstack.cli",
            "ears",
            "--port",
            str(port),
            "--soul",
            soul_url,
            "--body",
            f"stackchan={body_url}",
            *extra,
        ]
        self.process = None

    async def start(self):
        self.process = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        await until(self.answers, "soulstack ears to listen", timeout=30)
        return self

    def answers(self):
        import socket

        if self.process.poll() is not None:
            raise AssertionError("soulstack ears stopped: " + self.process.stdout.read())
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                return True
        except OSError:
            return False

    def kill9(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class Rig:
    """Robot + ears + soul + tts, started together; `screen` holds every line the robot showed."""

    def __init__(self, tmp_path, listen=None, start_ears=True, robot_config=None, voices=None, ears_options=()):
        self.tmp_path = tmp_path
        self.listen = listen or {}
        self.robot_config = robot_config or {}  # more of the robot's config.json
        self.start_ears = start_ears
        self.voices = voices  # soulstack tts's voices (tts.voices.open_voices); espeak-ng alone by default
        self.ears_options = list(ears_options)  # more of `soulstack ears`' command line
        self.screen = []
        self.speaker_log = tmp_path / "speaker.log"
        self.speaker_pcm = tmp_path / "speaker.pcm"  # every sample the robot played

    async def __aenter__(self):
        self.body = await RecordingBody().__aenter__()
        self.fake = await FakeAnthropic(default=answers).__aenter__()
        self.soul = a_soul(self.tmp_path, self.body, self.fake)
        self.running = await Running(self.soul).__aenter__()
        await until(lambda: self.soul.wakings == 1 and self.soul.state == "asleep", "the soul's first sleep")
        self.tts = listening(make_tts_app(voices=self.voices), "127.0.0.1", 0)
        tts_port = await self.tts.__aenter__()
        self.sim_port = free_port()
        self.ears_port = free_port()
        self.robot = Simulator(
            self.sim_port,
            nudge_url=self.running.url + "/nudge",
            tts_url=f"http://127.0.0.1:{tts_port}/tts",
            show=self.screen.append,
            fake={"speaker_log": str(self.speaker_log), "speaker_pcm": str(self.speaker_pcm)},
            config={
                "ears_url": f"http://127.0.0.1:{self.ears_port}/utterance",
                "listen": dict({"silence_ms": 500}, **self.listen),
                **self.robot_config,
            },
        )
        body_url = f"http://127.0.0.1:{self.sim_port}"
        self.ears = EarsProcess(self.ears_port, self.running.url, body_url, self.ears_options)
        if self.start_ears:
            await self.ears.start()
        self.robot.start()
        assert await asyncio.to_thread(self.robot.wait_until_serving), self.robot.last_words
        self.robot.release()
        return self

    async def __aexit__(self, *exc):
        self.robot.stop()
        self.ears.stop()
        await self.tts.__aexit__(None, None, None)
        await self.running.__aexit__(None, None, None)
        await self.fake.__aexit__(None, None, None)
        await self.body.__aexit__(None, None, None)

    async def shows(self, line, after=0, timeout=20):
        """Wait until the robot's screen shows a line holding `line` (at or after index `after`); its index."""

        def found():
            for index in range(after, len(self.screen)):
                if line in self.screen[index]:
                    return index + 1
            return 0

        if await poll(found, timeout):
            return found() - 1
        raise AssertionError(f"timed out waiting for the robot to show {line!r}; it showed {self.screen[after:]}")

    def heard_by_soul(self):
        """The person's words as the soul's model was given them (every request's newest user message)."""
        from tests.soul.helpers import texts_of

        return [texts_of(body["messages"][-1]) for body in self.fake.bodies]

    async def quiet(self, utterances=2):
        """Until the speaker has begun `utterances` utterances and the last of its sound has played out."""
        import time

        def done():
            text = self.speaker_log.read_text() if self.speaker_log.exists() else ""
            ends = self.played_until()
            return text.count("start ") >= utterances and ends and ends[-1] < time.time() * 1000

        await until(done, f"{utterances} utterances played out", timeout=30)

    def played_until(self):
        """The speaker log's `until` figures (wall ms)."""
        if not self.speaker_log.exists():
            return []
        return [int(line.split()[1]) for line in self.speaker_log.read_text().split("\n") if line.startswith("until")]
