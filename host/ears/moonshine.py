"""`--recogniser moonshine` (the default for English): Moonshine `base` run on onnxruntime in this process.

Moonshine is an encoder-decoder recogniser like Whisper, made by Moonshine AI
for live speech on small machines: it takes the audio as long as it is (Whisper
pads every clip to 30 s), and its English models are MIT-licensed. The model
comes from PyPI with soulstack: the `moonshine-cpp` wheel, published by Moonshine AI
itself, carries `base` for English (encoder and decoder in onnxruntime's own
format, ~63 MB, and its tokenizer). Only its model files are read here; the
wheel's C++ library is never loaded, and the onnxruntime that runs the model is
the one soulstack's voice already uses. Its decoder is converted once into the user
cache (moonshine_model.py: ~60 % of the memory, a third of the compute); where that
cannot be done the wheel's own files run, with a warning.

The model is loaded once and shared by every utterance and body (a session
keeps only its audio: recognise.WholeSession), so a stream cut off or refused
costs nothing. Silero VAD (the one inside faster-whisper's wheel) runs first:
audio with no speech never reaches the model. Decoding is greedy, the most
likely token each step, so the same audio always gives the same words; the
tokens are capped by the audio's length, so a model caught repeating itself
stops in time.
"""

import asyncio
import importlib.util
import logging
import threading
from pathlib import Path

from soulstack.ears import moonshine_model
from soulstack.ears.recognise import RATE, RecogniserError, WholeSession, cache_root, float_samples

log = logging.getLogger(__name__)

LAYERS, HEADS, HEAD_DIM = 8, 8, 52  # Moonshine base's decoder: its cache has this shape per layer
START_TOKEN, END_TOKEN = 1, 2
ENCODER, DECODER = "encoder_model.ort", "decoder_model_merged.ort"  # the wheel's files, in onnxruntime's format
TOKENS_PER_S = 8  # people say 2-4 words a second; more tokens than this is the model looping
SPACE = "\u2581".encode()  # the tokenizer's word boundary
# Quiet added after the speech: given the speech cut close (recognise.speech_end), Moonshine loses the
# last sound ("water the plan"). Noisy WER on bench-hearing's set: none 0.121, 0.3 s 0.103, 0.5 s 0.110,
# 1 s 0.109; 0.5 s is the middle of the flat stretch, not the best point on the bench's own clips.
QUIET_AFTER_S = 0.5


def model_dir() -> Path | None:
    """The folder of Moonshine base (English) inside the installed moonshine-cpp wheel, or None."""
    spec = importlib.util.find_spec("moonshine_cpp")  # found, not imported: importing loads its C++ library
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "models" / "base-en"
    return folder if (folder / "encoder_model.ort").exists() else None


def read_tokens(path: Path) -> list[bytes]:
    """The tokenizer's pieces in id order. Its file is each piece's bytes after their length: one byte,
    or two (seven bits each, low first) where the top bit of the first is set."""
    data, pieces, at = path.read_bytes(), [], 0
    while at < len(data):
        size = data[at]
        at += 1
        if size & 0x80:
            size = (size & 0x7F) | (data[at] << 7)
            at += 1
        pieces.append(data[at : at + size])
        at += size
    return pieces


def words_of(pieces: list[bytes], tokens: list[int]) -> str:
    """The text of `tokens`: pieces joined, each word-boundary mark a space. Ids 3-258 are the bytes
    themselves (byte fallback), so characters outside the vocabulary come through whole."""
    joined = b"".join(pieces[token] for token in tokens if token > END_TOKEN and token < len(pieces))
    return joined.replace(SPACE, b" ").decode("utf-8", "replace").strip()


class Moonshine:
    name = "moonshine"
    speculate = True  # local and free: recognising in the quiet before the stream ends only costs CPU

    def __init__(self, threads: int = 2, cache: Path | None = None):
        self.folder = model_dir()
        if self.folder is None:
            raise RecogniserError(
                "Moonshine's model is not installed (it comes with soulstack: pip install moonshine-cpp); "
                "or use --recogniser whisper"
            )
        self.threads = threads
        self.cache = cache  # soulstack's folder in the user cache when None (recognise.cache_root)
        self.converted: Path | None = None  # the converted decoder, once it is the one running
        self.model = None
        self.loading = threading.Lock()

    def describe(self) -> str:
        where = ""
        if self.converted is not None:
            root = cache_root(self.cache)
            shown = f"~/{root.relative_to(Path.home())}" if root.is_relative_to(Path.home()) else str(root)
            where = f"; decoder converted once into {shown}"
        return f"moonshine base (English, bundled{where}), float32 on {self.threads} CPU threads"

    async def warm(self):
        """Load the model now (once per process), so the first utterance does not wait for it."""
        await asyncio.to_thread(self._load)

    def _load(self):
        with self.loading:
            if self.model is None:
                self.model = self._open()
            return self.model

    def _open(self):
        options = self._options()
        decoder = self._converted_decoder()
        if decoder is None:
            # The wheel's files as they are. Without the memory pattern onnxruntime plans no arena block
            # for each step's dequantized weights, which it would keep for the process's life.
            options.enable_mem_pattern = False
        else:
            options.enable_cpu_mem_arena = False  # the encoder's buffers go back as each clip ends
        try:
            encoder = self._session(self.folder / ENCODER, options)
            if decoder is None:
                decoder = self._session(self.folder / DECODER, options)
            pieces = read_tokens(self.folder / "tokenizer.bin")
        except Exception as error:  # a damaged or half-installed wheel
            raise RecogniserError(f"Moonshine's model in {self.folder} could not be loaded: {error}") from None
        return encoder, decoder, pieces

    def _converted_decoder(self):
        """The decoder converted once into the cache (moonshine_model.py), or None, with a warning, where it
        cannot be: a cache folder not writable or full, a wheel laid out anew. Never a reason not to hear."""
        options = self._options()
        # Prepacking would copy each folded weight once more into its own layout, for no speed measured here.
        options.add_session_config_entry("session.disable_prepacking", "1")
        try:
            path = moonshine_model.converted_decoder(self.folder / DECODER, self.cache)
            try:
                decoder = self._session(path, options)
            except Exception:  # a file at the cached name that is not the model (damaged since): make it anew
                path = moonshine_model.converted_decoder(self.folder / DECODER, self.cache, again=True)
                decoder = self._session(path, options)
        except Exception as error:
            why = (error.strerror or str(error)) if isinstance(error, OSError) else str(error).splitlines()[0]
            log.warning(
                "could not convert Moonshine's decoder into %s (%s): running the wheel's own files, "
                "with more memory and slower",
                cache_root(self.cache),
                why,
            )
            return None
        self.converted = path
        return decoder

    def _options(self):
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        return options

    def _session(self, path: Path, options):
        import onnxruntime

        return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def session(self):
        return WholeSession(self)

    async def transcribe(self, pcm: bytes) -> str:
        return await asyncio.to_thread(self._transcribe, pcm)

    def _transcribe(self, pcm: bytes) -> str:
        import numpy

        encoder, decoder, pieces = self._load()
        audio = float_samples(pcm)
        if len(audio) < RATE // 10 or not has_speech(audio):
            return ""
        audio = numpy.concatenate([audio, numpy.zeros(int(QUIET_AFTER_S * RATE), numpy.float32)])
        try:
            tokens = greedy(encoder, decoder, audio, 10 + int(TOKENS_PER_S * len(audio) / RATE))
        except Exception as error:  # onnxruntime raises its own errors for a model gone wrong
            raise RecogniserError(f"Moonshine failed: {error}") from None
        return words_of(pieces, tokens)


def has_speech(audio) -> bool:
    """Whether Silero VAD hears any speech in `audio` (float32 at 16 kHz)."""
    from faster_whisper.vad import get_speech_timestamps

    return bool(get_speech_timestamps(audio))


def greedy(encoder, decoder, audio, most: int) -> list[int]:
    """The model's tokens for `audio`, the likeliest at each step, at most `most` of them. The decoder
    keeps a cache per layer: its self-attention grows a step at a time, its attention on the audio is
    computed on the first step and kept."""
    import numpy

    hidden = encoder.run(None, {"input_values": audio[None, :]})[0]
    cache = {
        f"past_key_values.{layer}.{side}.{part}": numpy.zeros((0, HEADS, 1, HEAD_DIM), numpy.float32)
        for layer in range(LAYERS)
        for side in ("decoder", "encoder")
        for part in ("key", "value")
    }
    names = list(cache)
    tokens = [START_TOKEN]
    for step in range(most):
        inputs = {
            "input_ids": numpy.array([[tokens[-1]]], numpy.int64),
            "encoder_hidden_states": hidden,
            "use_cache_branch": numpy.array([step > 0]),
            **cache,
        }
        logits, *present = decoder.run(None, inputs)
        token = int(logits[0, -1].argmax())
        if token == END_TOKEN:
            break
        tokens.append(token)
        for name, value in zip(names, present, strict=True):
            if step == 0 or ".decoder." in name:
                cache[name] = value
    return tokens[1:]
