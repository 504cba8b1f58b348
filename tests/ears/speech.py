"""The utterance the ears tests speak into the robot's room, made by espeak-ng (no soul needed to import it)."""

import re
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

from soulstack.audio import little_endian, mono_samples, mono_wav

# espeak-ng's en-us+f2 voice at 160 words a minute is one pocketsphinx's English model makes out.
VOICE = ["-v", "en-us+f2", "-s", "160"]
QUESTION = "what time is it"
ANSWER = "It is three o'clock. Time for tea!"


@lru_cache
def speech_wav(words=QUESTION) -> bytes:
    """`words` spoken by espeak-ng, as the 16 kHz mono WAV a robot's microphone would catch."""
    with tempfile.TemporaryDirectory() as folder:
        raw = Path(folder) / "speech.wav"
        subprocess.run(["espeak-ng", *VOICE, "-w", str(raw), words], check=True)
        pcm = little_endian(mono_samples(raw.read_bytes(), 16000))
    return mono_wav(pcm, 16000)


def plain(text: str) -> str:
    """`text` as words only: lower case, no punctuation (Whisper writes "What time is it?")."""
    return " ".join(re.sub(r"[^\w\s']", " ", text.lower()).split())


async def spoken_by(voices, words: str) -> bytes:
    """`words` said by `soulstack tts`'s voice (tts.voices.open_voices) as a 16 kHz mono WAV."""
    choice = await voices.choose(words, None)
    return mono_wav(await choice.synthesize(words), 16000)
