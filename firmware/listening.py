"""The robot listens: when the microphone opens, where an utterance ends, and how it reaches `soulstack ears`.

When: a tap on the screen always (a second tap, or silence, ends it); in
conversation mode (config `listen.conversation`, on by default) also whenever a
face is in view, and for `listen.follow_s` after the soul spoke to one. Never
while the speaker plays: the CoreS3's speaker and microphone share one I2S bus,
so the speech queue goes first and the microphone opens once it is empty (a tap
while the robot speaks stops the speech first: Body.interrupt).

While the microphone is live the face shows the listening indicator. Speech is
found by core/vad.py's end-pointer; from its first voiced frame (with the
pre-roll before it) the audio is streamed to `ears_url` as a chunked HTTP POST
while the person still speaks (docs/ears.md, "The stream"). Then the face
thinks until the soul's answer arrives at /speak. An ears server that cannot be
reached, or that made out no words, is said honestly: a doubtful face and a
balloon, and (when the ears server could not tell the soul itself) a nudge.
"""

import asyncio
import gc
import json

from core import httpc
from core.clock import sleep_ms
from core.log import log
from core.vad import FRAME_BYTES, FRAME_MS, PREROLL_FRAMES, START_FRAMES, Endpointer

READ_FRAMES = 5  # frames the microphone hands over per read (100 ms)
READ_BYTES = READ_FRAMES * FRAME_BYTES
# The microphone's read buffer, then the end-pointer's pre-roll ring: the part of the body's audio room
# (Body.audio_room, made once at boot) listening uses while the microphone is live.
ROOM_BYTES = READ_BYTES + (PREROLL_FRAMES + START_FRAMES) * FRAME_BYTES
THINKING_MS = 20000  # the thinking face waits this long for the answer's first words
SEND_TIMEOUT_S = 3  # a piece of audio that cannot be handed to the network by then: the ears server is gone
ANSWER_TIMEOUT_S = 30  # recognition of 15 s of speech on a slow host, and then some
# Told the soul as the code `body_could_not_hear` (it says it in its own language), this reason beside it
# for a soul that knows no codes; the balloon speaks the soul's language, config.json's "lang".
COULD_NOT_HEAR = "someone spoke to me but I couldn't hear the words: "
CANT_HEAR_BALLOON = {"en": "I couldn't hear you", "zh": "我没听清"}


class Listening:
    def __init__(self, body):
        self.body = body
        self.hal = body.hal
        config = body.config
        listen = config["listen"]
        self.url = config["ears_url"]
        self.token = config["ears_token"]
        self.name = config["name"]
        self.conversation = listen["conversation"]
        self.follow_ms = listen["follow_s"] * 1000
        # The audio room is the speaker's too: they share one I2S bus and never run at once (the microphone
        # opens only once no speech is waiting or playing; speech fills its buffers only once it is closed).
        room = body.audio_room if body.audio_room is not None else memoryview(bytearray(ROOM_BYTES))
        self.vad = Endpointer(
            end_frames=listen["silence_ms"] // FRAME_MS,
            max_frames=listen["max_s"] * 1000 // FRAME_MS,
            wait_frames=listen["wait_s"] * 1000 // FRAME_MS,
            room=room[READ_BYTES:ROOM_BYTES],
        )
        self.asked = False  # a tap asked to listen
        self.tapped_again = False  # ... and a second tap ends it
        self.live = False
        self.by_touch = False
        self.follow_until = 0
        self.thinking_until = 0
        self.face_before_doubt = None  # the face a "could not hear" replaced, shown again once it is heard
        self.session = "%08x" % (body.avatar.rng.next32() ^ body.clock.ms())  # this boot's utterance ids
        # Made once, at boot, while the heap is whole: 100 ms of audio per read from the microphone.
        self.view = room[:READ_BYTES]
        self.buffer = self.view
        # ... and a view of each 20 ms frame in it, made once too: no fresh view per frame while streaming.
        self.frames = [self.view[at : at + FRAME_BYTES] for at in range(0, len(self.buffer), FRAME_BYTES)]
        self.count = 0

    def available(self):
        return bool(self.url) and getattr(self.hal, "mic_problem", None) is not None and not self.hal.mic_problem()

    def touched(self):
        """A tap: listen (or, when a tap started this listening, stop it)."""
        if self.live and self.by_touch:
            self.tapped_again = True
        else:
            self.asked = True

    def spoke(self, now):
        """The robot finished saying something: a face in view may answer without a touch."""
        if self.body.nudger.face.present:
            self.follow_until = now + self.follow_ms

    def wanted(self, now):
        if self.asked:
            return True
        if not self.conversation or self.thinking_until:
            return False
        return self.body.nudger.face.present or now < self.follow_until

    # --- the task ---

    async def run(self):
        while True:
            try:
                await self.step()
            except Exception as failure:
                self.close_mic()
                self.body.report("listening", failure)
            await sleep_ms(40)

    async def step(self):
        body = self.body
        if not self.available():
            self.asked = False
            return
        now = body.clock.ms()
        if self.thinking_until and (body.speech.busy() or now >= self.thinking_until):
            self.thinking_until = 0
            body.avatar.set_indicator(None)
        if body.speech.busy() or not self.wanted(now):
            return
        self.by_touch = self.asked
        self.asked = self.tapped_again = False
        await self.listen_once()

    def close_mic(self):
        if self.live:
            self.live = False
            self.hal.mic_stop()
            self.body.avatar.set_indicator(None)

    async def listen_once(self):
        body, hal = self.body, self.hal
        self.vad.reset(wait=self.by_touch)
        hal.mic_start()
        self.live = True
        self.undoubt()  # listening again: the doubt was about the last utterance, not this one
        body.avatar.set_indicator("listening")
        # Now, so the utterance starts with the garbage gone. The small collections core/heap.py asks for go on while
        # it streams (one every ~2 reads: ~0.1 ms each on the unix port, not measured on a robot, whose microphone
        # records into its buffer meanwhile); pausing them cost the largest free block ~8 KB per utterance.
        gc.collect()
        log("listening (heap free " + str(gc.mem_free()) + ")")
        upload = None
        failed = None
        reason = None
        buffer = self.buffer
        try:
            while reason is None:
                got = hal.mic_read(buffer)
                if self.tapped_again:
                    reason = "tap"
                elif not got:
                    if upload is None and not self.by_touch and not self.wanted(body.clock.ms()):
                        reason = "gone"  # the face left: conversation mode closes the microphone
                    elif upload is None and body.speech.busy():
                        reason = "speech"  # something to say came first: the speaker needs the bus
                    else:
                        await sleep_ms(FRAME_MS)
                    continue
                frames = self.frames
                audio_from = -1  # where this read's audio to send begins (-1: none of it is speech)
                at = 0
                index = 0
                while at + FRAME_BYTES <= got:
                    event = self.vad.feed(frames[index])
                    if event == "end":
                        reason = self.vad.reason
                        break
                    if event == "start":
                        self.count += 1
                        upload = httpc.Upload(
                            self.url,
                            "audio/L16; rate=16000; channels=1",
                            self.token,
                            {"X-Soulstack-Body": self.name, "X-Utterance-Id": self.session + "-" + str(self.count)},
                        )
                        for piece in self.vad.preroll.pieces():  # the pre-roll first: the first syllable
                            failed = failed or await self._send(upload, piece)
                    elif event == "audio" and audio_from < 0:
                        audio_from = at  # speech goes on to the end of the read (or to its end, "end")
                    at += FRAME_BYTES
                    index += 1
                if audio_from >= 0 and not failed:
                    # One chunk for the whole read: each send costs the heap a task and its coroutines.
                    failed = await self._send(upload, self._span(audio_from, at))
        finally:
            self.close_mic()
        if upload is None:
            return  # nobody spoke
        await self.answer(upload, failed)

    def _span(self, begin, end):
        """The buffer's bytes begin..end, as a view; a whole read is sent as the view made at boot."""
        if begin == 0 and end == len(self.buffer):
            return self.view
        return self.view[begin:end]

    async def _send(self, upload, data):
        """Send (opening the stream first when needed); the failure as a sentence, None when it went."""
        try:
            await asyncio.wait_for(self._put(upload, data), SEND_TIMEOUT_S)
            return None
        except Exception as problem:
            log("ears stream failed:", problem)
            await upload.abandon()
            why = str(problem) or type(problem).__name__
            return "my ears server (" + self.url + ") could not be reached: " + why

    async def _put(self, upload, data):
        if upload.writer is None:
            await upload.open()
        await upload.send(data)

    async def answer(self, upload, failed):
        """After the person stopped: what ears made of it, shown honestly."""
        body = self.body
        body.avatar.set_indicator("thinking")
        self.thinking_until = body.clock.ms() + THINKING_MS
        if not failed:
            try:
                await asyncio.wait_for(upload.end(), SEND_TIMEOUT_S)
            except Exception as problem:
                failed = "my ears server (" + self.url + ") could not be reached: " + (str(problem) or "timed out")
        if failed:
            await upload.abandon()
            return self.could_not_hear(failed, tell_soul=True)
        # From here ears has the whole utterance. Its answer is read in small pieces (core/httpc.py), after a
        # collection: the stream left garbage, and the heap is at its most fragmented now.
        gc.collect()
        try:
            status, said = await self._read_answer(upload)
        except Exception as problem:
            await upload.abandon()
            if isinstance(problem, asyncio.TimeoutError):
                why = "stopped answering: no answer within " + str(ANSWER_TIMEOUT_S) + " s of the whole utterance"
            else:
                why = "got the whole utterance, but I could not read its answer: " + _told(problem)
            return self.could_not_hear("my ears server (" + self.url + ") " + why, tell_soul=True)
        if status == 200:
            # 200: ears made out words and gives them to the soul itself, whether they were read here or not.
            log("ears heard:", said.get("heard") if said else "(its answer could not be read)")
            return None
        if said is not None and said.get("speech") is False:
            return self.nobody_spoke(said.get("message") or "no speech")
        # ears tells the soul itself when it heard audio but made out no words (it says so in soul_told);
        # an answer that could not be read is taken at its status: ears tells the soul of a 422 and a 502.
        if said is None:
            why = "my ears server answered " + str(status) + " (the rest of its answer could not be read)"
            return self.could_not_hear(why, tell_soul=status not in (422, 502))
        why = said.get("message") or ("my ears server answered " + str(status))
        return self.could_not_hear(why, tell_soul=not said.get("soul_told"))

    async def _read_answer(self, upload):
        """(status, ears' JSON object: {} when it is not one, None when it could not be read)."""
        try:
            response = await asyncio.wait_for(upload.response(), ANSWER_TIMEOUT_S)
        except httpc.Unreadable as problem:
            if problem.status is None:
                raise
            log("ears' answer could not be read:", problem)
            return problem.status, None
        try:
            answer = await response.body()
        except Exception as problem:
            log("ears' answer (" + str(response.status) + ") could not be read:", _told(problem))
            return response.status, None
        finally:
            await response.close()
        try:
            said = json.loads(answer)
        except ValueError:
            said = {}
        return response.status, said if isinstance(said, dict) else {}

    def nobody_spoke(self, why):
        """ears found no voice in the stream at all (silence, a steady hum): nobody is told anyone spoke."""
        self.thinking_until = 0
        self.body.avatar.set_indicator(None)
        log("ears heard no speech:", why)
        return None

    def undoubt(self):
        """The face from before a "could not hear", unless the soul has chosen another since."""
        frame = self.body.avatar.frame
        if self.face_before_doubt is not None and frame.expression == "doubtful":
            self.body.avatar.set_expression(self.face_before_doubt, self.body.clock.ms())
        self.face_before_doubt = None

    def could_not_hear(self, why, tell_soul):
        body = self.body
        now = body.clock.ms()
        self.thinking_until = 0
        body.avatar.set_indicator(None)
        if body.avatar.frame.expression != "doubtful":
            self.face_before_doubt = body.avatar.frame.expression
        body.avatar.set_expression("doubtful", now)
        body.avatar.say(CANT_HEAR_BALLOON[body.config["lang"]], now)
        body.avatar.done_speaking(now)
        log("could not hear:", why)
        if tell_soul:
            body.tell_soul(
                {"reason": COULD_NOT_HEAR + why, "codes": [{"code": "body_could_not_hear", "about": {"why": why}}]}
            )
        return why


def _told(problem):
    return type(problem).__name__ + (" " + str(problem) if str(problem) else "")
