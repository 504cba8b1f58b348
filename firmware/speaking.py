"""The robot speaks: the speech task, playback of the TTS server's speech (or a mime), and a tap that cuts it off.

/speak queues its text (core/speech.py) and wakes the speech task at once: an
asyncio.Event (the same on MicroPython and CPython), so the speech begins the
moment it is asked instead of at the next look at the queue. An utterance counts
as heard only once its last sample has played. The speaker waits while the
microphone is live: on the CoreS3 they share one I2S bus (listening.py closes
the microphone as soon as it sees speech waiting, unless a person is still
speaking into it).
"""

import asyncio

from core import httpc, wav
from core.clock import sleep_ms
from core.face import audio_level
from core.log import log

PCM_CHUNK = 2048  # bytes of 16-bit audio per speaker write (64 ms at 16 kHz mono)
# The speaker's chunks are read into buffers made once at boot: a running 256K heap often had no free
# 2 KB run left for a fresh chunk (MemoryError mid-sentence, docs/firmware.md "Memory"). Four, because the
# UIFlow HAL keeps the last three referenced while M5's playRaw still plays them: the fourth is free to fill.
PCM_BUFFERS = 4
ROOM_BYTES = PCM_CHUNK * PCM_BUFFERS  # what speech takes of the body's audio room (Body.audio_room)
TALK_MS_PER_CHAR = 60  # how long the mouth moves for text spoken without a TTS server
BUS_WAIT_MS = 20  # how often the speaker looks whether the microphone let go of the bus
FAILED_PAUSE_MS = 100  # after a failure, before the next utterance (a broken speaker must not spin the loop)


class Speaking:
    def __init__(self, body):
        self.body = body
        self.queue = body.speech
        self.wake = asyncio.Event()  # set by ask(): something was queued
        self.cutting = False  # a tap cut the speech off: playback stops at the next chunk
        self.played = []  # the utterances of this stretch of speech heard in full (for the `heard` nudge)
        self.play_fraction = 0.0  # how much of the utterance being spoken has been played
        # Views into the body's audio room, shared with the microphone (one I2S bus: never both at once).
        room = body.audio_room
        self.pcm = [room[i * PCM_CHUNK : (i + 1) * PCM_CHUNK] for i in range(PCM_BUFFERS)] if room is not None else []
        self.turn = 0  # which of them the next chunk goes into

    def ask(self, text):
        """Queue `text` (Busy when the queue is full) and wake the speech task."""
        self.queue.put(text)
        self.wake.set()

    def interrupt(self):
        """A tap while the robot speaks: stop now, drop the queue, and tell the soul what was heard."""
        speaking = self.queue.speaking
        self.queue.drop()
        # Only a sentence being spoken is cut: a tap before the speech task took the queued text must not leave
        # the flag set, or the soul's next answer would be dropped without a sound.
        self.cutting = speaking is not None
        self.body.hal.play_stop()  # the speaker drops what it holds at once; the play loop stops at its next chunk
        heard = {"played": list(self.played)}
        if speaking is not None:
            heard["cut"] = speaking
            if self.play_fraction is not None:  # None: a streamed answer of unknown length (the part is unknown)
                heard["cut_fraction"] = round(min(1.0, self.play_fraction), 2)
        log("interrupted by a tap; heard:", heard)
        self.body.tell_soul({"reason": "someone tapped my screen while I was speaking, so I stopped", "heard": heard})

    # --- the task ---

    async def run(self):
        while True:
            try:
                await self.step()
            except Exception as failure:
                self.body.report("speech", failure)
                await sleep_ms(FAILED_PAUSE_MS)

    async def step(self):
        text = self.queue.take()
        if text is None:
            self.played = []  # a stretch of speech is over: the next `heard` starts afresh
            # No await between take() and here: nothing can have been queued since, so no wake-up is lost.
            self.wake.clear()
            await self.wake.wait()
            return
        body = self.body
        self.play_fraction = 0.0
        try:
            await self.say(text)
            if not self.cutting:
                self.played.append(text)
                if body.listening and not self.queue.items:
                    body.listening.spoke(body.clock.ms())
        finally:
            self.cutting = False
            self.queue.finished()

    async def say(self, text):
        body = self.body
        avatar = body.avatar
        avatar.say(text, body.clock.ms())
        try:
            if body.config["tts_url"] and not body.hal.speaker_problem():
                await self.play_tts(text)
            else:
                await self.mime(text)
        finally:
            avatar.done_speaking(body.clock.ms())

    async def mime(self, text):
        """No voice available: the mouth moves along with the balloon for a plausible while."""
        clock = self.body.clock
        began = clock.ms()
        end = began + min(15000, max(800, len(text) * TALK_MS_PER_CHAR))
        step = 0
        while clock.ms() < end and not self.cutting:
            self.play_fraction = (clock.ms() - began) / (end - began)
            self.body.avatar.set_mouth_level((0.2, 0.8, 0.5, 0.9, 0.1)[step % 5])
            step += 1
            await sleep_ms(120)
        self.body.avatar.set_mouth_level(0)

    async def bus_free(self):
        """Until the microphone is off: the speaker may not play while it holds the I2S bus."""
        listening = self.body.listening
        while listening and listening.live and not self.cutting:
            await sleep_ms(BUS_WAIT_MS)

    async def play_tts(self, text):
        body = self.body
        config = body.config
        response = await httpc.post_json(config["tts_url"], {"text": text}, config["tts_token"])
        hal, clock, avatar = body.hal, body.clock, body.avatar
        try:
            if response.status == 400:
                # The voice has nothing to say for it ("...", a symbol): the balloon shows it, the mouth mimes.
                log("the TTS server has no sound for this text; shown, not said")
                await self.mime(text)
                return
            if response.status != 200:
                raise httpc.HttpError("the TTS server answered " + str(response.status))
            rate, channels, _ = await wav.read_header(response.read_exactly)
            await self.bus_free()  # fetched while the microphone closes
            if self.cutting:
                return
            # The data's length, near enough for a fraction. `soulstack tts` streams a text of several
            # sentences as it makes them, with no Content-Length: how much was heard is then unknown.
            total = int(response.headers.get("content-length", "0")) - 44
            if total <= 0:
                self.play_fraction = None
            hal.play_start(rate, channels)
            bytes_per_ms = rate * channels * 2 / 1000
            ahead_ms = 0
            played = 0
            started = clock.ms()
            while True:
                buffer = self.pcm[self.turn]
                self.turn = (self.turn + 1) % PCM_BUFFERS
                got = await response.readinto(buffer)
                if not got or self.cutting:
                    break
                chunk = buffer if got == PCM_CHUNK else memoryview(buffer)[:got]
                avatar.set_mouth_level(audio_level(chunk))
                hal.play(chunk)
                played += len(chunk)
                if total > 0:
                    self.play_fraction = played / total
                ahead_ms += len(chunk) / bytes_per_ms
                # Stay at most ~2 chunks ahead of playback so the speaker's queue never blocks the loop.
                lead = ahead_ms - (clock.ms() - started)
                if lead > 150:
                    await sleep_ms(int(lead - 100))
            # Until the last sample is out: only then was it heard in full, and only then may the microphone
            # (on the same I2S bus) open.
            while hal.playing() and not self.cutting:
                await sleep_ms(20)
            hal.play_end()
        finally:
            avatar.set_mouth_level(0)
            await response.close()
