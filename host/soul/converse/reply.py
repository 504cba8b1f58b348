"""Turning what a voice stack sends into an utterance, and what the soul thinks
into the words a voice stack should speak.

Three pieces, no HTTP here (that is `endpoint.py`):

- `utterance_from_chat(body)`: the human's words out of an OpenAI chat body
  (`speaker_from_chat`: who spoke them; `heard_by_from_chat`: which body heard them).
- `spoken_reply(text)` (from `first_words.py`): assistant text with its inner
  monologue removed.
- `ReplyCatcher` / `ReplyCatchers`: how the soul finds the answer to one
  utterance among the assistant messages and `speak` calls that follow it.
"""

import asyncio
import json

from soulstack.llm.streaming import BlockDone, StreamBroken, TextDelta
from soulstack.llm.types import Message, TextBlock, ToolCall
from soulstack.protocol.nudges import MAX_SPEAKER_CHARS, MAX_WORDS_CHARS, quoted
from soulstack.soul.converse.first_words import FirstWords, spoken_reply


class BadChatBody(ValueError):
    """The request body is not a chat we can answer; the message says why."""


# --- the human's words ------------------------------------------------------


def utterance_from_chat(body) -> str:
    """The text of the last user message in an OpenAI chat-completions body.

    Content may be a string or a list of content parts (text parts joined,
    others ignored). Some voice stacks send the words wrapped as JSON, e.g.
    `{"speaker": "Ana", "content": "hello"}`; the inner `content` is used.
    At most MAX_WORDS_CHARS, as a nudge's words. Raises BadChatBody naming what is wrong.
    """
    if not isinstance(body, dict):
        raise BadChatBody("the body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadChatBody("'messages' must be a non-empty list")
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if not isinstance(message, dict):
            raise BadChatBody(f"messages[{index}] must be an object")
        if message.get("role") == "user":
            text = _unwrap_json(_content_text(message.get("content"), index)).strip()
            if not text:
                raise BadChatBody(f"messages[{index}] (the last user message) has no text")
            if len(text) > MAX_WORDS_CHARS:  # as /nudge's words: a person's utterance, not a document
                raise BadChatBody(
                    f"messages[{index}] (the last user message) is {len(text)} characters; at most {MAX_WORDS_CHARS}"
                )
            return text
    raise BadChatBody("'messages' holds no message with role 'user'")


def speaker_from_chat(body: dict) -> str | None:
    """Who spoke the last user message, when the voice stack knows: the `speaker` of xiaozhi-server's
    voiceprint wrapper (`{"speaker": "Ana", "content": "..."}`), else OpenAI's own `user` field.
    None when neither names anyone (the soul's human, as always). Call after `utterance_from_chat`."""
    user = body.get("user")
    if user is not None and not isinstance(user, str):
        raise BadChatBody("'user' must be a string: the name of who is speaking")
    message = next(m for m in reversed(body["messages"]) if isinstance(m, dict) and m.get("role") == "user")
    wrapped = _wrapper(_content_text(message.get("content"), 0))
    named = wrapped.get("speaker") if wrapped else None
    for name in (named, user):
        if isinstance(name, str) and name.strip():
            return quoted(name)[:MAX_SPEAKER_CHARS]  # a name, never a phrasing of a person's words
    return None


def heard_by_from_chat(body: dict) -> str | None:
    """The body whose microphone heard the words, when the voice stack names it (OpenAI's `metadata`,
    `{"heard_by": "<body name>"}`, as ears sends it); None when it names none. The echo guard asks
    whether that body may hear itself (host/soul/converse/echo.py), and the soul is told which body
    heard the words (its snapshot and its session: TEXT["heard_by"])."""
    metadata = body.get("metadata")
    if metadata is None:
        return None
    if not isinstance(metadata, dict) or not isinstance(metadata.get("heard_by", ""), str):
        raise BadChatBody("'metadata' must be an object, and its 'heard_by' the name of the body that heard the words")
    return metadata.get("heard_by") or None


def _content_text(content, index: int) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, dict):
                raise BadChatBody(f"messages[{index}].content parts must be objects")
            if part.get("type") == "text":
                if not isinstance(part.get("text"), str):
                    raise BadChatBody(f"messages[{index}].content has a text part without a string 'text'")
                texts.append(part["text"])
        return " ".join(texts)
    raise BadChatBody(f"messages[{index}].content must be a string or a list of content parts")


def _wrapper(text: str) -> dict | None:
    """The JSON object some voice stacks wrap the words in, when they did."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return None
    try:
        data = json.loads(stripped)
    except ValueError:
        return None
    return data if isinstance(data, dict) and isinstance(data.get("content"), str) else None


def _unwrap_json(text: str) -> str:
    wrapped = _wrapper(text)
    return wrapped["content"] if wrapped else text


def normalize(utterance: str) -> str:
    """The dedup key: the same words, however the whitespace came through."""
    return " ".join(utterance.split())


# --- catching the answer ----------------------------------------------------


class ReplyCatcher:
    """Finds the answer to one utterance and hands it to whoever waits for it, as it forms.

    The soul shows it, in order, what its model writes after the utterance
    entered the model's context: the stream of each model call (`stream`)
    and every finished assistant message (`feed`; a message already seen as
    a stream is not looked at twice). The answer is the first spoken-style
    text, in the order the model wrote it: the text of a `speak` call once its
    input is complete, or a text block that still says something once
    `spoken_reply` has removed the monologue. A text block is said sentence
    by sentence as it streams (`pieces` grows; `news()` wakes whoever waits),
    and its end ends the answer. `end()` at the end of the turn settles an
    uncaught utterance with what was said, "" when nothing was (the soul chose
    silence); `fail()` with an error. The answer is always `"".join(pieces)`.

    The converse endpoint counts the requests waiting on this answer. A
    `speak` call that became the answer while one waits is delivered by the
    voice stack, so the soul must not make its body say it too
    (`answered_by(call)`), nor a later `speak` repeating it once a request was
    given the whole answer (`voiced`); once every waiting request was given a
    filler, no one would say it, so the body does.
    """

    def __init__(self, utterance: str):
        self.utterance = utterance
        self.waiting = 0  # requests waiting on this answer (kept by the endpoint)
        self.voiced = False  # a request was given the whole answer (set by the endpoint)
        self.pieces: list[str] = []  # what has been said so far, sentence by sentence
        self._future = asyncio.get_running_loop().create_future()
        self._news = asyncio.Event()
        self._speak_ids: set[str] = set()  # speak calls the voice stack delivers
        self._streamed = False  # the message now forming was seen as a stream
        self._block, self._words = None, FirstWords()  # the text block streaming now

    @property
    def done(self) -> bool:
        return self._future.done()

    @property
    def reply(self) -> str | None:
        """The caught answer, or None while none is caught (or it failed)."""
        if self._future.done() and not self._future.cancelled() and self._future.exception() is None:
            return self._future.result()
        return None

    async def wait(self) -> str:
        return await asyncio.shield(self._future)

    async def news(self) -> None:
        """Returns once more was said or the answer is settled."""
        await self._news.wait()

    # --- what the model writes --------------------------------------------

    def stream(self, event, spoken) -> None:
        """One event of a model call's stream (soulstack.llm.streaming). `spoken(call)`: the words a
        call says aloud, None for a call that does not speak (Toolbox.spoken)."""
        if isinstance(event, StreamBroken):
            self._streamed, self._block = False, None
            if self.pieces and not self.done:  # words were said and the rest will never come
                self.fail(RuntimeError(f"the model's reply broke off after {''.join(self.pieces)!r}: {event.error}"))
            return
        self._streamed = True
        if isinstance(event, BlockDone) and isinstance(event.block, ToolCall):
            words = spoken(event.block)
            if words is not None:
                self.feed_speak(event.block, words)
            return
        if self.done:
            return
        if event.index != self._block:
            self._block, self._words = event.index, FirstWords()
        if isinstance(event, TextDelta):
            self._say(self._words.add(event.text))
        elif isinstance(event, BlockDone) and isinstance(event.block, TextBlock):
            self._say(self._words.finish(event.block.text))
            self._block = None
            if self.pieces:  # the end of the first spoken text ends the answer
                self._settle()

    def feed(self, message: Message, spoken) -> None:
        """Look at one finished assistant message for the answer (unless its stream was seen);
        `spoken` as for `stream`."""
        if message.role != "assistant":
            return
        if self._streamed:
            self._streamed = False
            return
        for block in message.content:
            if isinstance(block, ToolCall) and (words := spoken(block)) is not None:
                self.feed_speak(block, words)
            elif isinstance(block, TextBlock) and not self.done:
                self._say(spoken_reply(block.text))
                if self.pieces:
                    self._settle()

    def feed_speak(self, call: ToolCall, words: str) -> bool:
        """Look at one call that speaks (`speak`) the `words`; True when the voice stack will say them."""
        said = spoken_reply(words)
        if not said:
            return False
        if not self.done:
            self._say(said)
            self._settle()
        elif said != self.reply:
            return False
        # Caught now, or repeating the answer already caught: say it once.
        if self.waiting > 0 or self.voiced:
            self._speak_ids.add(call.id)
            return True
        return False

    def answered_by(self, call: ToolCall) -> bool:
        """True when `call` is this utterance's spoken answer, so the body is spared."""
        return call.id in self._speak_ids

    def end(self) -> None:
        """The turn is over: what was said is the answer; nothing said means silence ("")."""
        if not self.done:
            self._settle()

    def fail(self, error: BaseException) -> None:
        if not self.done:
            self._future.set_exception(error)
            self._future.exception()  # retrieved: no "never retrieved" warning
            self._tell()

    def _say(self, piece: str) -> None:
        if piece:
            self.pieces.append(piece)
            self._tell()

    def _settle(self) -> None:
        self._future.set_result("".join(self.pieces))
        self._tell()

    def _tell(self) -> None:
        self._news.set()
        self._news = asyncio.Event()


class ReplyCatchers:
    """The catchers of one soul turn: what the soul's loop holds and calls.

    `arm(c)` when the utterance enters the model's context (the snapshot of a
    waking, or the incoming queue drained before a model step); `stream(e)`
    on every event of a model call's stream; `feed(m)` on every assistant message; `answered_by(call)` before making the body speak;
    `end_turn()` when the turn ends. `spoken(call)`: the words a call says aloud, None for a call
    that does not speak (the soul's Toolbox.spoken: which tool speaks is a fact of the tool).
    """

    def __init__(self, spoken):
        self.spoken = spoken
        self._armed: list[ReplyCatcher] = []

    def arm(self, catcher: ReplyCatcher) -> None:
        self._armed.append(catcher)

    def feed(self, message: Message) -> None:
        for catcher in self._armed:
            catcher.feed(message, self.spoken)

    def stream(self, event) -> None:
        for catcher in self._armed:
            catcher.stream(event, self.spoken)

    def answered_by(self, call: ToolCall) -> bool:
        return any(catcher.answered_by(call) for catcher in self._armed)

    def end_turn(self, error: BaseException | None = None) -> None:
        """The turn is over. After a failed turn an uncaught answer fails with `error`."""
        for catcher in self._armed:
            if error is not None:
                catcher.fail(error)
            catcher.end()
        self._armed.clear()
