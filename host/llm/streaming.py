"""What a streamed model call tells its listener while the reply forms.

Both providers stream every call (the SDKs' streaming APIs) and build the
same `Reply` as before from the finished stream. A caller that wants the
words as they form passes `on_stream` to `complete`; it is called, in the
order the model wrote them, with:

- `TextDelta(index, text)`: more text of the reply's block `index`;
- `BlockDone(index, block)`: block `index` is complete (a `TextBlock`, or a
  `ToolCall` whose input has streamed in full). Thinking is never relayed;
- `StreamBroken(error)`: the stream died after the listener had heard part
  of it. The call then fails without a retry: a second try would tell the
  listener the same words again (see `Relay.broken`).
"""

from dataclasses import dataclass

import httpx2

from soulstack.llm.types import ModelError

# What the SDKs' HTTP layer raises when a streamed body ends early: the SDKs wrap errors
# raised while connecting, not those raised while reading the stream.
STREAM_BROKE = (httpx2.HTTPError, OSError)


@dataclass
class TextDelta:
    index: int
    text: str


@dataclass
class BlockDone:
    index: int
    block: object  # TextBlock | ToolCall


@dataclass
class StreamBroken:
    error: str


class Relay:
    """Passes one call's stream events to its listener (if any) and remembers whether it passed any."""

    def __init__(self, listener=None):
        self.listener = listener
        self.told = False

    def __call__(self, event) -> None:
        if self.listener is not None:
            self.told = True
            self.listener(event)

    def broken(self, error: ModelError) -> ModelError:
        """The error to raise for a failed call: as it came when the listener heard nothing yet
        (it is retried or falls back as usual), else final, after telling the listener."""
        if not self.told:
            return error
        self.listener(StreamBroken(str(error)))
        return ModelError(f"{error} (the reply broke off midway)", error.status, retryable=False)
