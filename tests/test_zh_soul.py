"""A Chinese soul, a Chinese person: nothing that reaches the person is in English.

Every real part on loopback: the firmware under MicroPython with the fake HAL, its config's `lang`
"zh" (the soul's language), as the soul's body; `soulstack ears` as a process whose recogniser (an
OpenAI-compatible transcription fake, tests/ears/fakes.py) fails; a soul on its brainstem (no
model: the soul's own words are the only words) living in Chinese; and the flock's voice
(SoulVoice, the nudge contract's real sender) asking the person's OK over HTTP.

Ears and the flock send codes beside their plain English reasons (soulstack.protocol.nudges'
CODES); the soul tells them in its own language, and the robot's balloon speaks the soul's
language. What the person sees and hears is every `says:` line the robot shows: none holds a
Latin letter.
"""

import asyncio
import re


from soulstack.protocol.shapes import ENDPOINTS
from soulstack.sim.runner import Simulator
from soulstack.soul.prompts import texts
from tests.helpers import free_port
from tests.ears.fakes import FakeTranscriber
from tests.ears.helpers import EarsProcess, speech_wav
from tests.helpers import until
from tests.soul.helpers import Running, fell_asleep
from tests.soul.test_brainstem_flock import Flock, brainstem_soul

ZH = texts("zh").TEXT
LATIN = re.compile(r"[A-Za-z]")


class RobotBody:
    """The soul's body config for the simulated robot: its Body Protocol endpoints."""

    def __init__(self, port):
        self.base_url = f"http://127.0.0.1:{port}"

    def endpoints(self):
        return {name: f"{self.base_url}/{name}" for name in ENDPOINTS}


async def test_a_chinese_soul_through_an_ears_failure_and_a_flock_ask_reaches_its_person_in_chinese(tmp_path):
    screen = []
    sim_port, ears_port = free_port(), free_port()
    robot_body = RobotBody(sim_port)
    soul = brainstem_soul(tmp_path, robot_body, persona={"language": "zh", "human": "小明"})
    async with FakeTranscriber(status=500) as whisper, Running(soul) as running, Flock(running.url) as flock:
        await fell_asleep(soul, 1)
        robot = Simulator(
            sim_port,
            nudge_url=running.url + "/nudge",
            show=screen.append,
            config={
                "lang": "zh",
                "ears_url": f"http://127.0.0.1:{ears_port}/utterance",
                "listen": {"conversation": False, "silence_ms": 500},
            },
        )
        recogniser = ("--recogniser", "openai", "--openai-base-url", whisper.base_url + "/v1", "--openai-key", "k")
        ears = EarsProcess(ears_port, running.url, robot_body.base_url, (*recogniser, "--language", "zh"))
        try:
            await ears.start()
            robot.start()
            assert await asyncio.to_thread(robot.wait_until_serving), robot.last_words
            robot.release()
            robot.touch()  # touch to talk
            await asyncio.sleep(0.15)
            robot.touch(down=False)
            await until(lambda: "mic: live" in screen, "the microphone to open", 20)
            robot.play_into_room(speech_wav())
            await until(lambda: 'says: "我没听清"' in screen, "the robot saying it could not hear", 30)
            diary = tmp_path / "soul" / "DIARY.md"
            told = ZH["nudge"]["recogniser_failed"].split("{why}")[0].format(body="stackchan")
            await until(lambda: diary.exists() and told in diary.read_text(), "the soul told of it in Chinese", 20)

            flock.needs_ok("5-1", "写周报")  # the Sentry asks the person's OK
            ask = ZH["brainstem"]["flock_ask"].format(ask="哨兵要你同意，才能开始做“写周报”（第5-1项）")
            await until(lambda: f'says: "{ask}"' in screen, "the soul saying the flock's ask", 30)
        finally:
            robot.stop()
            ears.stop()
    said = [line.removeprefix("says: ") for line in screen if line.startswith("says: ")]
    assert len(said) >= 2 and not [words for words in said if LATIN.search(words)], said
