"""The terminal body: the terminal is its face and voice, the keyboard nudges the soul.

/express paints a face, /speak paints the words, /look describes the screen,
/status says whether the screen can still be painted. Every line typed on
stdin becomes a nudge carrying the line once, as our nudge contract's `words`
(the soul renders its reason, "your human typed: <line>"); debounced, never
merged with another line, and kept until the soul takes it. Stdin may be a
pipe or reach EOF; the body keeps serving.
"""

import asyncio
import logging
import sys
import threading

from soulstack.adapters.terminal.mind import watch_mind
from soulstack.adapters.terminal.screen import Scene, Screen, describe
from soulstack.protocol.nudge_sender import Debouncer, NudgeEvent, NudgeSender
from soulstack.protocol.shapes import EmotionMap
from soulstack.protocol.body_app import BodyUnavailable, make_body_app
from soulstack.serving import listening

# A human types on purpose, so repeats collapse only briefly and lines go out quickly.
TYPED_SAME_WINDOW_S = 10.0
TYPED_MIN_INTERVAL_S = 2.0


class TerminalBody:
    def __init__(self, screen: Screen, sender: NudgeSender | None = None, emotions: EmotionMap | None = None):
        self.screen = screen
        self.sender = sender
        self.emotions = emotions or EmotionMap.reference()
        self.scene = Scene()
        if sender is not None:
            sender.listener = self.on_nudge_event

    def handlers(self) -> dict:
        return {"status": self.status, "look": self.look, "speak": self.speak, "express": self.express}

    def _paint(self, change: str):
        if not self.screen.paint(self.scene, change):
            raise BodyUnavailable(f"the terminal can no longer be painted ({self.screen.broken})")

    # --- Body Protocol handlers -------------------------------------------

    async def status(self, request: dict) -> dict:
        return {"online": self.screen.alive()}

    async def look(self, request: dict) -> dict:
        self.scene.looked_for = request["question"].strip()
        self._paint("look")
        return {"text": describe(self.scene)}

    async def speak(self, request: dict) -> dict:
        self.scene.words = request["text"].strip()
        self._paint("words")
        return {}

    async def express(self, request: dict) -> dict:
        self.scene.asked_emotion = request["emotion"].strip()
        self.scene.face = self.emotions.nearest(self.scene.asked_emotion)
        self._paint("face")
        return {}

    # --- the keyboard -----------------------------------------------------

    def typed(self, line: str):
        line = line.strip()
        if not line:
            return
        self.scene.typed.append(line)
        self.screen.paint(self.scene, "typed")
        if self.sender is None:
            self._notice("nudges are off (no --nudge-url); the soul will not hear this")
        else:
            self.sender.nudge(words=line)

    def stdin_closed(self):
        self._notice("stdin is closed; the body keeps serving its face and voice")

    def on_nudge_event(self, event: NudgeEvent):
        waiting = len(self.sender.waiting) if self.sender else 0
        if event.kind == "delivered":
            self._notice(f"the soul got it: {'; '.join(event.reasons)}")
        elif event.kind == "retrying":
            self._notice(
                f"the soul is unreachable ({event.detail}); keeping {waiting} line(s), next try in {event.retry_in_s:g} s"
            )
        elif event.kind == "rejected":
            # The status leads the detail ("401 {...}"): a 401 is the token, a 404 the URL's path.
            fix = {"401": "check --nudge-token", "404": "check --nudge-url (the soul's is http://HOST:9202/nudge)"}
            hint = fix.get(event.detail[:3], "the soul's answer says why")
            self._notice(
                f"the soul refused the nudge (it answered {event.detail}); {hint}. "
                f"Not delivered: {'; '.join(event.reasons)}"
            )
        elif event.kind == "collapsed":
            self._notice("you just typed that; the soul was already nudged with it")

    def show_mind(self, line: str, state: str = ""):
        """Paint what changed: whose mind it has, and what it is doing (thinking, asleep until ...)."""
        changed = [
            name
            for name, now, was in (("mind", line, self.scene.mind), ("state", state, self.scene.state))
            if now != was
        ]
        self.scene.mind, self.scene.state = line, state
        for change in changed:
            self.screen.paint(self.scene, change)

    def _notice(self, text: str):
        self.scene.notice = text
        self.screen.paint(self.scene, "notice")


def read_lines(loop: asyncio.AbstractEventLoop, body: TerminalBody, stdin=None):
    """Read stdin on a daemon thread, so Ctrl+C never waits for a line; hand each line to the loop."""
    stdin = stdin or sys.stdin

    def pump():
        try:
            for line in stdin:
                loop.call_soon_threadsafe(body.typed, line)
        except (OSError, ValueError):
            pass
        finally:
            try:
                loop.call_soon_threadsafe(body.stdin_closed)
            except RuntimeError:  # the loop already ended
                pass

    threading.Thread(target=pump, name="terminal-stdin", daemon=True).start()


async def run_terminal_body(
    host,
    port,
    token=None,
    nudge_url=None,
    nudge_token=None,
    stream=None,
    stdin=None,
    caption="",
    insecure_no_token=False,
):
    """Serve the terminal body until cancelled, painting onto `stream` (stdout by default).

    With a nudge URL it also shows whose mind the soul has (the soul's /health, beside /nudge)."""
    stream = stream or sys.stdout
    live = stream.isatty() and not stdin_is_pipe(stdin)
    screen = Screen(stream, live=live)
    sender = None
    if nudge_url:
        debouncer = Debouncer(same_reason_window_s=TYPED_SAME_WINDOW_S, min_interval_s=TYPED_MIN_INTERVAL_S)
        sender = NudgeSender(nudge_url, token=nudge_token, debouncer=debouncer)
        # The screen already says when the soul is down; only a refusal also goes to the log.
        logging.getLogger("soulstack.protocol.nudge_sender").setLevel(logging.ERROR)
    body = TerminalBody(screen, sender)
    body.scene.caption = caption
    app = make_body_app(body.handlers(), token=token)
    async with listening(app, host, port, insecure_no_token=insecure_no_token) as bound:
        body.scene.address = f"http://{host}:{bound}" + (" (token required)" if token else "")
        screen.paint(body.scene, "start")
        tasks = (
            [asyncio.create_task(sender.run()), asyncio.create_task(watch_mind(nudge_url, nudge_token, body.show_mind))]
            if sender
            else []
        )
        read_lines(asyncio.get_running_loop(), body, stdin)
        try:
            await asyncio.Event().wait()
        finally:
            for task in tasks:
                task.cancel()
            lost = sender.waiting if sender else []
            if lost:
                screen.say(f"{len(lost)} line(s) never reached the soul: {'; '.join(lost)}")
            screen.say("the terminal body powers off.")


def stdin_is_pipe(stdin) -> bool:
    stdin = stdin or sys.stdin
    try:
        return not stdin.isatty()
    except (AttributeError, ValueError):
        return True
