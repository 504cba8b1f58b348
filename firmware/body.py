"""The body itself: the four senses behind the dispatcher, and the tasks that keep it alive.

main.py builds one Body from a HAL and a config and runs `Body.tasks()`. The
logic lives in core/ (pure, tested on both runtimes); this file connects it to
the hardware seams and to time. Speech is speaking.py's task, listening
listening.py's.
"""

import asyncio

from core import config as config_mod
from core import httpc, serial_frames
from core.b64json import ImageBody
from core.clock import sleep_ms
from core.emotions import nearest_face
from core.face import Avatar
from core.log import log
from core.nudges import Nudger
from core.protocol import Busy, Dispatcher
from core.servo import Axis, Head
from core.speech import SpeechQueue
import speaking as speaking_mod
from speaking import Speaking

FRAME_MS = 50  # ~20 fps face
HEARD_RETRY_MS = (2000, 10000, 30000)  # a failed `heard` nudge is tried again this long after each failure
# The `ready` frame is said at once, then repeated this often for a minute after boot or a Wi-Fi change:
# tools/flash reopens the USB port after a reset and may only be listening after the first one went by.
READY_REPEAT_MS = 5000
READY_REPEAT_FOR_MS = 60000
# A soul answers /nudge at once; one that does not (a laptop asleep, a wrong address that swallows
# packets) must not hold the nudge: after this long it goes up the cable or is reported.
NUDGE_TIMEOUT_S = 5


def audio_room(config, listening=None):
    """One block, made once at boot, for the speaker's chunks and the microphone's reads and pre-roll.

    The CoreS3's speaker and microphone share one I2S bus and never run at once, so neither needs a room
    of its own: 14.7 KB serves both, where apart they held 22.9 KB (8 KB of speech, 14.7 KB of listening)
    of a heap that had ~23 KB left free at 256K. None when the body neither speaks with a voice nor listens.
    """
    size = speaking_mod.ROOM_BYTES if config["tts_url"] else 0
    if listening:
        size = max(size, listening.ROOM_BYTES)
    return memoryview(bytearray(size)) if size else None


def _sendable(payload):
    out = {}
    for key in payload:
        if not key.startswith("_"):
            out[key] = payload[key]
    return out


class Body:
    nudge_timeout_s = NUDGE_TIMEOUT_S

    def __init__(self, hal, config, serial_out=None, version=None):
        self.hal = hal
        self.version = version or serial_frames.VERSION  # the running set's (slots.py), said in `ready` frames
        self.config = config
        self.clock = hal.clock
        self.serial_out = serial_out  # a function writing a str line when serial mode is on
        now = self.clock.ms()
        self.avatar = Avatar(now)
        self.speech = SpeechQueue()
        debounce = config["debounce"]
        self.nudger = Nudger(config_mod.windows_ms(config), debounce["face_frames"], debounce["face_absent_frames"])
        servo = config["servo"]
        if servo["kind"] == "sg90":
            axes = (Axis("yaw", 10, 170, 90), Axis("pitch", 65, 100, 80))
        else:
            axes = (Axis("yaw", -60, 60, 0), Axis("pitch", 0, 90, 10))
        self.head = Head(axes, hal.servo_send, hal.servo_torque, servo["min_interval_ms"], servo["idle_off_ms"])
        self.dispatcher = Dispatcher(self, config["token"], self.report)
        self.wifi = (False, None, "not tried yet")
        self.errors = 0
        self.ready_line = None  # the latest `ready` frame, and when it changed
        self.ready_since = 0
        self.outbox = []  # nudges with more than a reason (what was heard, what could not be): sent first
        listening = None
        if config["ears_url"]:
            import listening  # only a robot with ears pays for the code
        self.audio_room = audio_room(config, listening)
        self.speaking = Speaking(self)  # the speech task: playback, and a tap that cuts it off
        self.listening = listening.Listening(self) if listening else None

    # --- the dispatcher's device interface ---

    def online(self):
        hal = self.hal
        if hal.display_problem():
            return False
        if hal.camera_expected and hal.camera_problem():
            return False
        if not self.serial_out and not self.wifi[0]:
            return False
        if self.config["tts_url"] and (hal.speaker_problem() or not self.wifi[0]):
            return False
        return True

    def look(self, question):
        problem = self.hal.camera_problem()
        if problem:
            return problem if self.hal.camera_expected else "this body has no camera (" + problem + ")"
        self.avatar.show_text(question, self.clock.ms())
        return ImageBody(self.hal.snapshot_jpeg(70), "image/jpeg")

    def speak(self, text):
        problem = self.hal.display_problem()
        if problem and (not self.config["tts_url"] or self.hal.speaker_problem()):
            raise Busy("cannot speak: " + problem)
        self.speaking.ask(text)  # queued, and the speech task woken at once

    def express(self, emotion):
        face = nearest_face(emotion)
        now = self.clock.ms()
        self.avatar.set_expression(face, now)
        self.head.gesture(face, now)

    # --- errors: on screen and in the log, and the body keeps going ---

    def report(self, where, failure):
        self.errors += 1
        text = str(where) + ": " + type(failure).__name__ + " " + str(failure)
        log("error in", text)
        try:
            import sys

            # A peer that is down or refuses is news, said in the line above; anything else is a bug: its trace.
            expected = isinstance(failure, (OSError, httpc.HttpError))
            if not expected and hasattr(sys, "print_exception"):
                sys.print_exception(failure)
        except Exception:  # logging must never take the body down
            pass
        try:
            self.hal.show_error(text)
        except Exception as again:
            log("could not show the error on screen:", again)

    # --- nudges ---

    def tell_soul(self, payload):
        """Queue a nudge that carries more than a reason (sent before the debounced ones; a few at most)."""
        if len(self.outbox) >= 4:
            self.outbox.pop(0)
        self.outbox.append(payload)

    async def deliver(self, kind, reason, payload=None):
        """Send one nudge where the soul is most likely to hear it; raise when it reached nowhere.

        nudge_url over Wi-Fi when there are both; otherwise, in serial mode, up the cable
        (the bridge forwards it to the soul). In serial mode a failed POST is reported and
        the nudge goes up the cable too, so it is never lost without a trace.
        """
        url = self.config["nudge_url"]
        payload = payload if payload is not None else {"reason": reason}
        if "nudge_id" not in payload:  # kept in the payload: a resend (or the cable) is the same nudge
            payload["nudge_id"] = self.nudger.ids.next()
        if url and (self.wifi[0] or not self.serial_out):
            try:
                await self.post_nudge(url, _sendable(payload))
                self.hal.note("nudge -> soul: " + reason)
                return True
            except httpc.Unreadable as failure:
                # The soul has the whole nudge and may have kept it. Our soul would count a resend once (its
                # nudge_id), but one from elsewhere may not know ids: sent again, it could be told twice.
                self.report("nudge to " + url + " (not sent again)", failure)
                return True
            except Exception as failure:
                if not self.serial_out:
                    if isinstance(failure, OSError):  # the soul is down or unreachable: say where it was sought
                        raise httpc.HttpError("the soul at " + url + " is unreachable (" + str(failure) + ")")
                    raise  # the sender reports it and leaves the window open for the next event
                self.report("nudge to " + url + " (sending it up the cable instead)", failure)
        elif url:
            log("Wi-Fi is down: nudge up the cable instead of to", url)
        if self.serial_out:
            self.serial_out(
                serial_frames.nudge(
                    reason, payload.get("heard"), payload.get("speaker"), payload["nudge_id"], payload.get("codes")
                )
            )
            self.hal.note("nudge -> cable: " + reason)
            return True
        log("nudge (nowhere to send it: no nudge_url):", reason)
        self.hal.note("nudge (nowhere to send it, no nudge_url): " + reason)
        return True

    async def post_nudge(self, url, payload):
        try:
            # Only the status is read: the soul's answer says nothing more a body needs, and reading it
            # could fail on a full heap after the soul had accepted the nudge.
            status = await asyncio.wait_for(
                httpc.post_status(url, payload, self.config["nudge_token"]), self.nudge_timeout_s
            )
        except asyncio.TimeoutError:
            raise httpc.HttpError("the soul did not answer within " + str(self.nudge_timeout_s) + " s")
        if not 200 <= status < 300:
            raise httpc.HttpError("the soul answered " + str(status))

    # --- the ready frame: how tools/flash learns the address ---

    def send_line(self, line):
        # In serial mode the link writes whole lines; otherwise stdout is the USB cable all the same.
        if self.serial_out:
            self.serial_out(line)
        else:
            print(line, end="")

    def announce(self, state):
        """Say `ready` for this Wi-Fi `state` now; ready_again repeats it for a while."""
        self.ready_line = serial_frames.ready(
            state[1], "connected" if state[0] else state[2], self.hal.name, self.version
        )
        self.ready_since = self.clock.ms()
        self.send_line(self.ready_line)

    def ready_again(self):
        """Repeat the latest `ready` frame while it is under a minute old; True when it was sent."""
        if self.ready_line is None or self.clock.ms() - self.ready_since >= READY_REPEAT_FOR_MS:
            return False
        self.send_line(self.ready_line)
        return True

    # --- the tasks ---

    def tasks(self):
        return [
            self.animate(),
            self.watch_faces(),
            self.speaking.run(),
            self.send_nudges(),
            self.keep_wifi(),
            self.repeat_ready(),
        ] + ([self.listening.run()] if self.listening else [])

    async def guarded(self, name, step, pause_ms):
        """Run `step` forever; an exception is shown and logged, then the loop goes on."""
        while True:
            try:
                await step()
            except Exception as failure:
                self.report(name, failure)
            await sleep_ms(pause_ms)

    async def animate(self):
        hal = self.hal
        hal.watchdog_start(10000)
        last_key = None
        imu_every = 0

        async def step():
            nonlocal last_key, imu_every
            now = self.clock.ms()
            hal.update()
            frame = self.avatar.update(now)
            key = frame.key()
            if key != last_key:
                hal.draw(frame)
                last_key = key
            self.head.tick(now)
            event = hal.poll_event()
            interrupted = event == "touch" and self.speech.busy()
            if interrupted:
                self.speaking.interrupt()  # its `heard` nudge says the tap: no second, ordinary touch nudge
            if event == "touch" and self.listening and self.listening.available():
                self.listening.touched()  # a tap is for talking: no "someone touched my face" nudge as well
            elif event and not interrupted:
                self.nudger.event(event, now)
            imu_every += 1
            if imu_every >= 2:
                imu_every = 0
                accel = hal.read_accel()
                if accel:
                    self.nudger.accel(accel[0], accel[1], accel[2], now)
            hal.watchdog_feed()

        await self.guarded("face animation", step, FRAME_MS)

    async def watch_faces(self):
        period = 1000 // self.config["face_detect_hz"]

        async def step():
            seen = self.hal.detect_face()
            if seen is not None:
                reason = self.nudger.face_seen(seen, self.clock.ms())
                if reason:
                    log("face appeared; nudging")

        await self.guarded("face detection", step, period)

    async def send_nudges(self):
        async def step():
            if self.outbox and self.outbox[0].get("_due", 0) <= self.clock.ms():
                payload = self.outbox.pop(0)
                try:
                    await self.deliver("heard", payload.get("reason"), payload)
                except Exception:
                    tries = payload.get("_tries", 0)
                    if tries < len(HEARD_RETRY_MS):  # a soul that is down a while gets it later; then it is reported
                        payload["_tries"] = tries + 1
                        payload["_due"] = self.clock.ms() + HEARD_RETRY_MS[tries]  # the loop goes on meanwhile
                        self.outbox.insert(0, payload)
                    raise
                return
            item = self.nudger.take()
            if item is None:
                return
            kind, reason, _ = item
            try:
                await self.deliver(kind, reason)
            except Exception:
                self.nudger.failed(kind)  # not delivered: the next event may try again
                raise

        await self.guarded("nudge", step, 200)

    async def keep_wifi(self):
        ssid = self.config["wifi"]["ssid"]
        hal = self.hal
        backoff_ms = 1000
        announced = None
        while True:
            try:
                state = hal.wifi_status()
                if not state[0] and ssid:
                    if self.wifi[0]:
                        self.wifi = state  # the link is gone now: /status must not say online while we rejoin
                    log("Wi-Fi:", state[2], "- connecting to", ssid)
                    hal.wifi_connect(ssid, self.config["wifi"]["password"])
                    waited = 0
                    # Until joined, or a failure the port calls final (a wrong password, no such network).
                    while waited < 10000 and not hal.wifi_status()[0] and not hal.wifi_failed():
                        await sleep_ms(250)
                        waited += 250
                    state = hal.wifi_status()
                elif not ssid and not state[0]:
                    state = (False, None, "no wifi.ssid in config.json")
                if state != self.wifi:
                    self.wifi = state  # kept only when it changed: no fresh long-lived tuple every 2 s
                if state != announced:
                    announced = state
                    self.announce(state)
                if state[0]:
                    backoff_ms = 1000
                    await sleep_ms(2000)
                else:
                    await sleep_ms(backoff_ms)
                    backoff_ms = min(60000, backoff_ms * 2)
            except Exception as failure:
                self.report("Wi-Fi", failure)
                await sleep_ms(backoff_ms)

    async def repeat_ready(self):
        async def step():
            self.ready_again()

        await sleep_ms(READY_REPEAT_MS)  # the first one was just said by announce()
        await self.guarded("ready", step, READY_REPEAT_MS)
