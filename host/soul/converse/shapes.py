"""OpenAI's chat-completion response shapes, as the converse endpoint answers in them.

`usage` is an estimate, not a bill (`estimate_tokens`): the soul reads only
the last user message and speaks only the reply; what its own model spent is
in the soul's cost log.
"""

import math
import time
import uuid

from soulstack.cjk import CJK_PUNCTUATION, HAN, KANA, count


def estimate_tokens(text: str) -> int:
    """A rough count: one per CJK character, one per four other characters."""
    cjk = count(text, HAN + CJK_PUNCTUATION + KANA)
    return cjk + math.ceil((len(text) - cjk) / 4)


class Shape:
    """OpenAI's response shapes for one request."""

    def __init__(self, model: str, prompt_tokens: int):
        self.id = "chatcmpl-" + uuid.uuid4().hex
        self.created = int(time.time())
        self.model = model
        self.prompt_tokens = prompt_tokens

    def usage(self, answer: str) -> dict:
        completion = estimate_tokens(answer)
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": completion,
            "total_tokens": self.prompt_tokens + completion,
        }

    def completion(self, answer: str) -> dict:
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": answer},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": self.usage(answer),
        }

    def chunk(self, delta: dict, finish_reason, include_usage: bool) -> dict:
        chunk = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        }
        if include_usage:
            chunk["usage"] = None
        return chunk

    def usage_chunk(self, answer: str) -> dict:
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [],
            "usage": self.usage(answer),
        }
