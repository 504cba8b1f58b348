"""`--recogniser pocketsphinx`: the zero-model fallback. Offline, English only, its model in its own wheel.

A decoder takes ~0.4 s to load, so each is loaded once and kept in a pool; a
session decodes while the audio arrives, so most of the work is done before
the person stops. pocketsphinx normalises its features as it goes, so what it
hears depends on how the audio was cut into `process_raw` calls: the session
hands it fixed blocks of `BLOCK` bytes counted from the first sample (the last
part at the end), never the chunks as they happened to arrive. It also carries
its normalisation from one utterance into the next, so each utterance starts
from the model's own initial estimate (`set_cmn`). The same audio gives the
same words.

A session cut off mid-utterance gives its decoder back to the pool once the
block it is working on is done: an abandoned stream never costs a reload.
"""

import asyncio
from typing import Any

from soulstack.ears.recognise import RATE, RecogniserError

BLOCK = 8192  # bytes per process_raw call (0.256 s of audio)


class PocketSphinx:
    name = "pocketsphinx"

    def __init__(self):
        self.idle = []  # loaded decoders not in use
        self.loaded = 0  # decoders loaded by this process (a pool that grows means reloads)
        self.recycling = set()  # abandoned sessions giving their decoder back
        self.initial_cmn = None  # the model's own normalisation estimate, each utterance's start

    def describe(self) -> str:
        return "pocketsphinx (English, its own model; the zero-model fallback)"

    async def warm(self):
        """Load one decoder now, so the first utterance does not wait for it."""
        self.idle.append(await asyncio.to_thread(self._load))

    def _load(self):
        try:
            from pocketsphinx import Decoder
        except ImportError as error:
            raise RecogniserError(f"pocketsphinx is not installed ({error}); pip install pocketsphinx") from None
        self.loaded += 1
        decoder = Decoder(samprate=RATE, loglevel="FATAL")
        self.initial_cmn = self.initial_cmn or decoder.get_cmn()  # the same model: the same estimate
        return decoder

    async def decoder(self):
        """A decoder ready for a new utterance: started, its normalisation as when it was loaded."""
        if not self.idle and self.recycling:  # one is on its way back from an abandoned stream: wait for it
            await asyncio.wait(set(self.recycling), return_when=asyncio.FIRST_COMPLETED)
        decoder = self.idle.pop() if self.idle else await asyncio.to_thread(self._load)
        decoder.set_cmn(self.initial_cmn)
        decoder.start_utt()
        return decoder

    def session(self):
        return _SphinxSession(self)


class _SphinxSession:
    def __init__(self, owner: PocketSphinx):
        self.owner = owner
        self.decoder: Any = None  # a pocketsphinx Decoder (untyped) while this session holds one
        self.pending = b""  # audio not yet handed over: less than a block
        self.work = asyncio.Lock()  # one decoder call at a time
        self.busy = None  # the decoder call in its thread: it runs on even when its awaiter is cancelled

    async def feed(self, pcm: bytes):
        self.pending += pcm
        async with self.work:
            if self.decoder is None:
                self.decoder = await self.owner.decoder()
            while len(self.pending) >= BLOCK:
                block, self.pending = self.pending[:BLOCK], self.pending[BLOCK:]
                await self._run(self.decoder.process_raw, block, False, False)

    async def finish(self) -> str:
        async with self.work:
            if self.decoder is None and not self.pending:
                return ""
            if self.decoder is None:
                self.decoder = await self.owner.decoder()
            last, self.pending = self.pending[: len(self.pending) & ~1], b""
            decoder, self.decoder = self.decoder, None
            try:
                if last:
                    await self._run(decoder.process_raw, last, False, False)
                await self._run(decoder.end_utt)
                hypothesis = decoder.hyp()
            except RuntimeError as error:
                raise RecogniserError(f"pocketsphinx failed: {error}") from None
            self.owner.idle.append(decoder)
            return hypothesis.hypstr.strip() if hypothesis else ""

    async def _run(self, call, *args):
        self.busy = asyncio.ensure_future(asyncio.to_thread(call, *args))
        return await asyncio.shield(self.busy)

    def abandon(self):
        self.pending = b""
        if self.decoder is not None:
            task = asyncio.get_running_loop().create_task(self._give_back())
            self.owner.recycling.add(task)
            task.add_done_callback(self.owner.recycling.discard)

    async def _give_back(self):
        """Once the block in hand is decoded, end the utterance and return the decoder to the pool."""
        async with self.work:
            if self.busy is not None:  # a block still being decoded in its thread
                await asyncio.gather(self.busy, return_exceptions=True)
            decoder, self.decoder = self.decoder, None
            if decoder is None:
                return
            try:
                await asyncio.to_thread(decoder.end_utt)
            except RuntimeError:
                return  # a decoder in a bad state is dropped; the pool loads another when it runs short
            self.owner.idle.append(decoder)
