"""Whose turn it is at a xiaozhi robot: the person's, or the robot's to speak.

Facts from the devices (py-xiaozhi's state machine, xiaozhi-esp32), in our words:

- In auto mode (py-xiaozhi's auto conversation, the firmware's auto-stop and
  realtime modes) the device goes back to listening by itself as soon as a
  `tts stop` reaches it, and says so with `listen start` (mode "auto" or
  "realtime"), before anything else. No person did anything: speech of ours
  that starts meanwhile is not cut off, and what the person heard so far is
  still what they heard. A manual `listen start` is never automatic.
- A person cuts in with `abort` (the button while it speaks), `listen detect`
  (its wake word, or typed text) or a `listen start` of their own (push-to-talk,
  a touch, the button, right after a wake word).
- A device that listens to a person sends their voice until it stops: push-to-talk
  let go (`listen stop`), the server heard them out (`stt`), or the server
  starts its answer (`tts start`, which takes the device from listening to
  speaking). A `tts start` of ours while the person talks does the same, and
  the device's own gate then drops the rest of their sentence: so ours waits
  for `floor`, set while no person has the robot listening.
"""

import asyncio

AUTOMATIC_MODES = ("auto", "realtime")


class Turns:
    def __init__(self):
        self.floor = asyncio.Event()  # set while no person has the robot listening: ours may speak
        self.floor.set()
        self._relisten_due = False  # a tts stop reached the robot after speech nobody cut: it may listen by itself
        self._cut_in = False  # the person acted since the robot's current speech began

    @property
    def person_listening(self) -> bool:
        return not self.floor.is_set()

    def from_robot(self, message: dict) -> str | None:
        """Note a text frame from the robot; why it cuts our speech off (the person acted), or None."""
        kind, state = message.get("type"), message.get("state")
        if kind == "abort":
            return self._person("abort")
        if kind != "listen":
            return None
        if state == "start":
            if self._relisten_due and message.get("mode") in AUTOMATIC_MODES:
                self._relisten_due = False  # the device's own re-listen after the tts stop
                return None
            self.floor.clear()  # the person's turn, until listen stop, stt or the server's answer
            return self._person("listen start")
        if state == "detect":
            return self._person("listen detect")
        if state == "stop":
            self._relisten_due = False
            self.floor.set()
        return None

    def _person(self, why: str) -> str:
        self._relisten_due = False  # what the robot says next is the person's doing, not the device's own
        self._cut_in = True
        return why

    def from_upstream(self, message: dict):
        """Note a text frame from upstream before it is relayed (so a re-listen it causes finds us ready)."""
        kind, state = message.get("type"), message.get("state")
        if kind == "stt":
            self.floor.set()  # the server heard the person out
        elif kind == "tts" and state == "start":
            self.floor.set()  # the server answers: the device stops listening to play it
            self.speech_starts()
        elif kind == "tts" and state == "stop":
            self.speech_stops()

    def speech_starts(self):
        """A `tts start` is about to reach the robot (ours or upstream's)."""
        self._cut_in = False

    def speech_stops(self):
        """A `tts stop` is about to reach the robot: unless the person cut that speech off, the device may
        now listen again by itself."""
        self._relisten_due = not self._cut_in

    def end(self):
        """The conversation is over: nobody holds the robot, so speech still waiting finds the link gone."""
        self.floor.set()
