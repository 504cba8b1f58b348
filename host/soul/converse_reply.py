"""Turning what a voice stack sends into an utterance, and what the soul thinks
into the words a voice stack should speak.

Three pieces, no HTTP here (that is `converse.py`):

- `utterance_from_chat(body)`: the human's words out of an OpenAI chat body.
- `spoken_reply(text)`: assistant text with its inner monologue removed.
- `ReplyCatcher` / `ReplyCatchers`: how the soul finds the answer to one
  utterance among the assistant messages and `speak` calls that follow it.
"""

import asyncio
import json
import re

from soulstack.llm.types import Message, TextBlock, ToolCall

SPEAK_TOOL = "speak"

_OPENERS = "(（"
_CLOSERS = ")）"
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([,.!?;:，。！？；：、])")


class BadChatBody(ValueError):
    """The request body is not a chat we can answer; the message says why."""


# --- the human's words ------------------------------------------------------


def utterance_from_chat(body) -> str:
    """The text of the last user message in an OpenAI chat-completions body.

    Content may be a string or a list of content parts (text parts joined,
    others ignored). Some voice stacks send the words wrapped as JSON, e.g.
    `{"speaker": "Ana", "content": "hello"}`; the inner `content` is used.
    Raises BadChatBody naming what is wrong.
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
            return text
    raise BadChatBody("'messages' holds no message with role 'user'")


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


def _unwrap_json(text: str) -> str:
    stripped = text.strip()
    if not stripped.startswith("{"):
        return text
    try:
        data = json.loads(stripped)
    except ValueError:
        return text
    if isinstance(data, dict) and isinstance(data.get("content"), str):
        return data["content"]
    return text


def normalize(utterance: str) -> str:
    """The dedup key: the same words, however the whitespace came through."""
    return " ".join(utterance.split())


def is_chinese(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


# --- the soul's words -------------------------------------------------------


def spoken_reply(text: str) -> str:
    """What should be said aloud: `text` without its parenthetical monologue.

    Balanced ASCII (...) and full-width （...） spans are removed, nested ones
    too, and the two kinds may close each other (models mix them). A bracket
    with no partner is kept as written: dropping everything after a stray "("
    could swallow the whole answer. Whitespace is collapsed.
    """
    drop = [False] * len(text)
    open_at = []
    for i, ch in enumerate(text):
        if ch in _OPENERS:
            open_at.append(i)
        elif ch in _CLOSERS and open_at:
            start = open_at.pop()
            if not open_at:  # outermost span closed: everything inside goes
                for j in range(start, i + 1):
                    drop[j] = True
    kept = "".join(ch for ch, gone in zip(text, drop) if not gone)
    return _SPACE_BEFORE_PUNCT.sub(r"\1", " ".join(kept.split()))


# --- catching the answer ----------------------------------------------------


class ReplyCatcher:
    """Finds the answer to one utterance and hands it to whoever waits for it.

    The soul feeds it, in order, every assistant message that comes after the
    utterance entered the model's context. The answer is the first one of:
    the text of a `speak` call, or assistant text that still says something
    once `spoken_reply` has removed the monologue. Within one message a
    `speak` call wins over that message's text, which is usually narration
    around the call. `end()` at the end of the turn settles an uncaught
    utterance with "" (the soul chose silence); `fail()` with an error.

    The converse endpoint counts the requests waiting on this answer. A
    `speak` call that became the answer while one waits is delivered by the
    voice stack, so the soul must not make its body say it too
    (`answered_by(call)`); once every waiting request was given a filler, no
    one would say it, so the body does.
    """

    def __init__(self, utterance: str):
        self.utterance = utterance
        self.waiting = 0  # requests waiting on this answer (kept by the endpoint)
        self._future = asyncio.get_running_loop().create_future()
        self._speak_ids = set()  # speak calls the voice stack delivers

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

    def feed(self, message: Message) -> None:
        """Look at one assistant message for the answer."""
        if message.role != "assistant":
            return
        for block in message.content:
            if isinstance(block, ToolCall) and block.name == SPEAK_TOOL:
                self.feed_speak(block)
        if self.done:
            return
        said = spoken_reply("\n".join(b.text for b in message.content if isinstance(b, TextBlock)))
        if said:
            self._future.set_result(said)

    def feed_speak(self, call: ToolCall) -> bool:
        """Look at one `speak` call; True when the voice stack will say it."""
        said = spoken_reply(str(call.input.get("text", "")))
        if not said:
            return False
        if not self.done:
            self._future.set_result(said)
        elif said != self.reply:
            return False
        # Caught now, or repeating the answer already caught: say it once.
        if self.waiting > 0:
            self._speak_ids.add(call.id)
            return True
        return False

    def answered_by(self, call: ToolCall) -> bool:
        """True when `call` is this utterance's spoken answer, so the body is spared."""
        return call.id in self._speak_ids

    def end(self) -> None:
        """The turn is over: nothing said means the soul chose silence ("")."""
        if not self.done:
            self._future.set_result("")

    def fail(self, error: BaseException) -> None:
        if not self.done:
            self._future.set_exception(error)
            self._future.exception()  # retrieved: no "never retrieved" warning


class ReplyCatchers:
    """The catchers of one soul turn: what the soul's loop holds and calls.

    `arm(c)` when the utterance enters the model's context (the snapshot of a
    waking, or the incoming queue drained before a model step); `feed(m)` on
    every assistant message; `answered_by(call)` before making the body speak;
    `end_turn()` when the turn ends.
    """

    def __init__(self):
        self._armed: list[ReplyCatcher] = []

    def arm(self, catcher: ReplyCatcher) -> None:
        self._armed.append(catcher)

    def feed(self, message: Message) -> None:
        for catcher in self._armed:
            catcher.feed(message)

    def answered_by(self, call: ToolCall) -> bool:
        return any(catcher.answered_by(call) for catcher in self._armed)

    def end_turn(self, error: BaseException | None = None) -> None:
        """The turn is over. After a failed turn an uncaught answer fails with `error`."""
        for catcher in self._armed:
            if error is not None:
                catcher.fail(error)
            catcher.end()
        self._armed.clear()
