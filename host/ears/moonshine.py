"""`--recogniser moonshine` (the default for English): Moonshine `base` run on onnxruntime in this process.

Moonshine is an encoder-decoder recogniser like Whisper, made by Moonshine AI
for live speech on small machines: it takes the audio as long as it is (Whisper
pads every clip to 30 s), and its English models are MIT-licensed. The model
comes from PyPI with soulstack: the `moonshine-cpp` wheel, published by Moonshine AI
itself, carries `base` for English (encoder and decoder in onnxruntime's own
format, ~63 MB, and its tokenizer). Only its model files are read here; the
wheel's C++ library is never loaded, and the onnxruntime that runs the model is
the one soulstack's voice already uses.

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
import threading
from pathlib import Path

from soulstack.ears.recognise import RATE, RecogniserError, WholeSession, float_samples

LAYERS, HEADS, HEAD_DIM = 8, 8, 52  # Moonshine base's decoder: its cache has this shape per layer
START_TOKEN, END_TOKEN = 1, 2
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

    def __init__(self, threads: int = 2):
        self.folder = model_dir()
        if self.folder is None:
            raise RecogniserError(
                "Moonshine's model is not installed (it comes with soulstack: pip install moonshine-cpp); "
                "or use --recogniser whisper"
            )
        self.threads = threads
        self.model = None
        self.loading = threading.Lock()

    def describe(self) -> str:
        return f"moonshine base (English, bundled), float32 on {self.threads} CPU threads"

    async def warm(self):
        """Load the model now (once per process), so the first utterance does not wait for it."""
        await asyncio.to_thread(self._load)

    def _load(self):
        with self.loading:
            if self.model is None:
                self.model = self._open()
            return self.model

    def _open(self):
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        try:
            encoder, decoder = (
                onnxruntime.InferenceSession(str(self.folder / name), options, providers=["CPUExecutionProvider"])
                for name in ("encoder_model.ort", "decoder_model_merged.ort")
            )
            pieces = read_tokens(self.folder / "tokenizer.bin")
        except Exception as error:  # a damaged or half-installed wheel
            raise RecogniserError(f"Moonshine's model in {self.folder} could not be loaded: {error}") from None
        return encoder, decoder, pieces

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
