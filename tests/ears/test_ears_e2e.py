"""The robot hears you, end to end with real parts (tests/ears/helpers.py's Rig): speech in the room, the
firmware under MicroPython streams it, ears' default recogniser (Moonshine, for English) makes out the words,
the soul answers, the robot speaks.
The fake HAL refuses to play while its microphone is live (an `error:` line): none may appear."""

import asyncio
import re

from soulstack.ears.whisper import Whisper
from soulstack.tts.voices import DEFAULT_VOICE, open_voices
from tests.ears.helpers import ANSWER, QUESTION, Rig, plain, speech_wav
from tests.ears.speech import spoken_by
from tests.helpers import until
from tests.voice_peers import faster_whisper_peer, piper_peer

# A bound, not a speed: on a loaded 2-core machine a Whisper in another process (the Wyoming peer) and the
# simulator's MicroPython share the CPU with other tests, and words that came in 1 s alone took over 10.
WORDS_WAIT_S = 60


def no_errors(rig):
    assert not [line for line in rig.screen if line.startswith("error")], rig.screen


async def tap(rig):
    rig.robot.touch()
    await asyncio.sleep(0.15)  # the face loop looks at the screen every 50 ms
    rig.robot.touch(down=False)
    await asyncio.sleep(0.1)


async def test_touch_to_talk_reaches_the_soul_and_the_answer_plays(tmp_path):
    async with Rig(tmp_path, listen={"conversation": False}) as rig:
        await tap(rig)
        live = await rig.shows("mic: live")
        await tap(rig)  # a second tap ends it: nobody spoke, nothing is sent
        after_second = await rig.shows("mic: off", after=live)
        await tap(rig)
        live = await rig.shows("mic: live", after=after_second)
        rig.robot.play_into_room(speech_wav())
        off = await rig.shows("mic: off", after=live)  # silence ended it
        words = await until(
            lambda: [s for s in rig.heard_by_soul() if QUESTION in plain(s)], "the words, at the soul", WORDS_WAIT_S
        )
        assert re.search(r"“what time is it\??”", words[0], re.I), words  # as a person's words
        said = await rig.shows('says: "It is three', after=off)
        assert "face: thinking" in rig.screen[off:said]
        await rig.shows('says: "Time for tea!"', after=said)  # sentence by sentence
        await until(rig.played_until, "the answer to play", WORDS_WAIT_S)
        await asyncio.sleep(0.5)
        assert "mic: live" not in rig.screen[off:]  # conversation mode is off: no listening without a tap
        no_errors(rig)


async def test_an_unreachable_or_killed_ears_is_said_honestly_and_loses_only_that_utterance(tmp_path):
    async with Rig(tmp_path, start_ears=False, listen={"conversation": False}) as rig:
        await tap(rig)
        live = await rig.shows("mic: live")
        rig.robot.play_into_room(speech_wav())
        face = await rig.shows("face: doubtful", after=live)
        await rig.shows('says: "I couldn\'t hear you"', after=face - 2)
        await until(
            lambda: [s for s in rig.heard_by_soul() if "could not be reached" in s], "the nudge that says so", 20
        )
        await rig.ears.start()  # ears comes up; it is killed (-9) while the person speaks
        mark = len(rig.screen)
        await tap(rig)
        live = await rig.shows("mic: live", after=mark)
        rig.robot.play_into_room(speech_wav())
        await asyncio.sleep(0.6)  # the stream is open: the speech goes on for another half second
        rig.ears.kill9()
        # The same words as the first time, maybe still on screen: the robot's log says this one was lost.
        await rig.shows("could not hear: my ears server", after=live)
        await rig.ears.start()  # back again: the next utterance is heard and answered
        mark = len(rig.screen)
        await tap(rig)
        await rig.shows("mic: live", after=mark)
        await rig.shows("face: neutral", after=mark)  # the doubt was about the lost utterance: gone as it listens
        rig.robot.play_into_room(speech_wav())
        await rig.shows('says: "It is three', after=mark)

        def lost():  # how often the soul was told an utterance was lost (the soul may merge nudges into one turn)
            said = "\n".join(set(rig.heard_by_soul()))
            return said.count("couldn't hear the words: my ears server")

        await until(lambda: lost() >= 2, "the soul told of both utterances lost with ears", 20)
        no_errors(rig)


async def test_conversation_mode_listens_to_a_face_without_a_tap(tmp_path):
    # face_detect_hz 10 (config.json's highest; 3 by default): the face is found, and found gone, 3x sooner.
    async with Rig(tmp_path, listen={"follow_s": 1}, robot_config={"face_detect_hz": 10}) as rig:
        rig.robot.face_file.touch()  # someone sits down in front of it
        live = await rig.shows("mic: live", timeout=10)
        rig.robot.play_into_room(speech_wav())
        said = await rig.shows('says: "It is three', after=live)
        assert "mic: off" in rig.screen[live:said]  # the speaker had the bus to itself
        again = await rig.shows("mic: live", after=said)  # the face is still there: it listens for the answer
        rig.robot.face_file.unlink()  # they leave
        await rig.shows("mic: off", after=again, timeout=15)
        no_errors(rig)


async def a_question_heard_and_answered_aloud(rig, question_wav):
    """A tap, the question played into the room; returns what the robot's speaker said, as Whisper hears it."""
    await tap(rig)
    live = await rig.shows("mic: live")
    rig.robot.play_into_room(question_wav)
    words = await until(
        lambda: [s for s in rig.heard_by_soul() if QUESTION in plain(s)], "the words, at the soul", WORDS_WAIT_S
    )
    assert re.search(r"“what time is it\??”", words[0], re.I), words  # as a person's words
    said = await rig.shows('says: "Time for tea!"', after=live)
    await rig.quiet(utterances=2)  # "It is three o'clock." and "Time for tea!", each its own /speak
    no_errors(rig)
    assert "mic: live" not in rig.screen[said:]  # conversation mode is off
    played = rig.speaker_pcm.read_bytes()
    assert len(played) > 16000 * 2  # more than a second of speech
    return plain(await Whisper().transcribe(played))


async def test_a_person_speaking_in_a_neural_voice_is_heard_by_ears_default_and_answered_in_one(tmp_path):
    # The defaults: ears' own recogniser for English (Moonshine base, in its process) and tts' Piper voice
    # (en_US-joe-medium, in-process).
    voices = await open_voices(DEFAULT_VOICE)
    question = await spoken_by(voices, "What time is it?")
    async with Rig(tmp_path, listen={"conversation": False}, voices=voices) as rig:
        heard_back = await a_question_heard_and_answered_aloud(rig, question)
    assert "time for tea" in heard_back and re.search(r"\b(three|3)\b", heard_back), (heard_back, ANSWER)


async def test_home_assistants_wyoming_servers_hear_the_person_and_say_the_answer(tmp_path):
    # wyoming-faster-whisper behind `soulstack ears --recogniser wyoming`, wyoming-piper behind `--voice wyoming:`.
    question = await spoken_by(await open_voices(DEFAULT_VOICE), "What time is it?")
    async with faster_whisper_peer(tmp_path) as asr, piper_peer(tmp_path) as speech:
        voices = await open_voices(f"wyoming:{speech.uri}")
        options = ["--recogniser", "wyoming", "--wyoming-url", asr.uri]
        async with Rig(tmp_path, listen={"conversation": False}, voices=voices, ears_options=options) as rig:
            heard_back = await a_question_heard_and_answered_aloud(rig, question)
    assert "time for tea" in heard_back, heard_back
