"""`soulstack tts --voice wyoming:`: against Home Assistant's real wyoming-piper (the same joe voice, on
loopback), and against a small Wyoming server of our own for what wyoming-piper never sends (another
rate, width and channel count; an error event)."""

import numpy as np
import pytest

from soulstack.tts.piper import VoiceProblem
from soulstack.tts.server import make_tts_app
from soulstack.tts.voices import open_voices
from tests.helpers import free_port
from tests.tts.helpers import needs_espeak, speech_like, wav_facts
from tests.voice_peers import piper_peer

THREE_SENTENCES = "It is three o'clock. Time for tea! Shall we have some biscuits with it?"


@needs_espeak
async def test_wyoming_piper_speaks_for_the_robot_and_its_going_down_is_a_503(tmp_path, aiohttp_client, caplog):
    async with piper_peer(tmp_path) as peer:
        voices = await open_voices(f"wyoming:{peer.uri}")
        assert f"voice wyoming {peer.uri}: piper " in voices.describe()  # what the server offers, in the start line
        client = await aiohttp_client(make_tts_app(voices=voices))
        response = await client.post("/tts", json={"text": "Hello, I am a small robot."})
        body = await response.read()
        assert response.status == 200 and int(response.headers["Content-Length"]) == len(body)
        speech_like(wav_facts(body), 1.0, 4.0)  # its 22050 Hz made the robot's 16 kHz
        response = await client.post("/tts", json={"text": THREE_SENTENCES})
        assert response.status == 200 and "Content-Length" not in response.headers  # streamed
        speech_like(wav_facts(await response.read()), 3.0, 9.0)
        # wyoming-piper fails on punctuation alone (it makes no samples, then cannot write the WAV):
        # the text has nothing to speak, a 400 as with Piper here, not a broken server's 502.
        for text in ("...", "— …"):  # the second reaches it, and it fails on it
            response = await client.post("/tts", json={"text": text})
            assert response.status == 400, text
            assert (await response.json())["message"].startswith('"text" has nothing to speak: wyoming ')
        response = await client.post("/tts", json={"text": "... Still here."})  # the sentence it says is said
        assert response.status == 200, await response.text()
        speech_like(wav_facts(await response.read()), 0.5, 3.0)
    response = await client.post("/tts", json={"text": "Are you there?"})
    assert response.status == 503
    assert f"the Wyoming voice server at {peer.uri} does not answer" in (await response.json())["message"]
    # The owner reads tts' log, not the robot's: its voice going away is a line there too.
    assert [r.message for r in caplog.records if r.levelname == "WARNING" and "does not answer" in r.message]


async def test_a_server_that_is_not_there_is_one_line_at_start():
    uri = f"tcp://127.0.0.1:{free_port()}"
    with pytest.raises(VoiceProblem, match=f"the Wyoming server at {uri} does not answer"):
        await open_voices(f"wyoming:{uri}")
    # A name that resolves to nothing is said so, not as the resolver's errno ("Unknown error -2").
    with pytest.raises(VoiceProblem, match=r"does not answer \(its host name does not resolve\)$"):
        await open_voices("wyoming:tcp://nohost.invalid:10200")


class Speaker:
    """A Wyoming TTS server of our own: `describe` -> one voice; `synthesize` -> a 1 kHz tone of
    0.5 s at 48 kHz, 32-bit stereo, in three chunks (or an `error` event, for the text "fail")."""

    def __init__(self):
        self.port = free_port()
        self.uri = f"tcp://127.0.0.1:{self.port}"

    async def __aenter__(self):
        from wyoming.server import AsyncTcpServer

        self.server = AsyncTcpServer("127.0.0.1", self.port)
        await self.server.start(self.handler)
        return self

    async def __aexit__(self, *exc):
        await self.server.stop()

    def handler(self, reader, writer):
        from wyoming.audio import AudioChunk, AudioStart, AudioStop
        from wyoming.error import Error
        from wyoming.info import Attribution, Describe, Info, TtsProgram, TtsVoice
        from wyoming.server import AsyncEventHandler
        from wyoming.tts import Synthesize

        class Handler(AsyncEventHandler):
            async def handle_event(self, event):
                if Describe.is_type(event.type):
                    about = {"attribution": Attribution("tests", ""), "installed": True, "version": "1"}
                    voice = TtsVoice(name="tone", description="a tone", languages=["en"], **about)
                    await self.write_event(
                        Info(tts=[TtsProgram(name="tone", description="", voices=[voice], **about)]).event()
                    )
                elif Synthesize.is_type(event.type):
                    if Synthesize.from_event(event).text == "fail.":
                        await self.write_event(Error(text="no such voice").event())
                        return False
                    wave = (0.5 * np.sin(2 * np.pi * 1000 * np.arange(24000) / 48000) * 2**31).astype("<i4")
                    stereo = np.column_stack([wave, wave]).ravel().tobytes()
                    await self.write_event(AudioStart(rate=48000, width=4, channels=2).event())
                    for part in range(3):
                        piece = stereo[part * len(stereo) // 3 : (part + 1) * len(stereo) // 3]
                        await self.write_event(AudioChunk(rate=48000, width=4, channels=2, audio=piece).event())
                    await self.write_event(AudioStop().event())
                return True

        return Handler(reader, writer)


async def test_any_rate_width_and_channels_become_16k_mono_and_an_error_event_is_a_502(aiohttp_client):
    async with Speaker() as speaker:
        voices = await open_voices(f"wyoming:{speaker.uri}")
        assert "tone 1 (1 voices listed)" in voices.describe()
        client = await aiohttp_client(make_tts_app(voices=voices))
        response = await client.post("/tts", json={"text": "Beep. Beep again."})
        facts = wav_facts(await response.read())
        assert (facts["rate"], facts["channels"], facts["width"]) == (16000, 1, 2)
        assert facts["seconds"] == 1.0  # two sentences, 0.5 s each, not a sample lost or made up
        spectrum = np.abs(np.fft.rfft(facts["samples"][:8000].astype(np.float64)))
        assert abs(np.argmax(spectrum) * 16000 / 8000 - 1000) < 3  # the tone kept its pitch
        response = await client.post("/tts", json={"text": "fail."})
        assert response.status == 502
        assert (await response.json())["message"] == f"the Wyoming server at {speaker.uri} said: no such voice"
