"""A protocol-true fake of the OpenAI Chat Completions API on loopback: what
Ollama, llama.cpp and vLLM serve. POST /v1/chat/completions (plain JSON, or
SSE chunks ending with `data: [DONE]` when `stream: true`, with a usage chunk
when `stream_options.include_usage`) and GET /v1/models.

Example (any async test; pytest-aiohttp runs it)::

    from soulstack.fakes.openai_api import FakeOpenAI, text, tool_call, error

    async def test_it():
        async with FakeOpenAI() as fake:
            fake.reply(error(500), tool_call("look", {"question": "who?"}), "I see you.")
            model = OpenAIModel("llama3.1", base_url=fake.base_url + "/v1")
            ...                                      # call the model three times
            assert fake.bodies[1]["tools"][0]["function"]["name"] == "look"
            assert fake.bodies[2]["messages"][-1]["role"] == "tool"
            assert fake.usages[2]["prompt_tokens"] > 0

Replies: a string (a text reply), `text(...)`, `tool_call(...)` / `completion(...)`
for several calls, `error(status)`, or a callable taking the request JSON and
returning one of those (sync or async). `FakeOpenAI(default=...)` answers once
the script is empty. `steered(reply, ...)` (host/fakes/scripted_server.py) paces,
holds or cuts a streamed reply. `fake.requests` holds `Recorded(method, path, headers, body, raw)`.
Note `base_url` is the server root; the SDKs want `base_url + "/v1"`.
Importing the `fake_openai` fixture into a test module gives a started fake.
"""

import itertools
import json
import math
import struct
import time

from aiohttp import web

from soulstack.audio import mono_wav
from soulstack.fakes.scripted_server import ScriptedServer, sse

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_api_key",
    404: "not_found_error",
    429: "rate_limit_exceeded",
    500: "server_error",
    503: "server_error",
}

_ids = itertools.count(1)


# --- reply builders ------------------------------------------------------
def completion(content=None, calls=(), *, finish_reason=None, usage=None, reasoning=None, top_logprobs=None):
    """A reply: some text and/or tool calls, each call a (name, arguments) pair
    or a dict {"id", "name", "arguments"} where arguments may be a raw string.
    `top_logprobs` [(token, logprob)] is sent for the first token when the request asks for logprobs."""
    tool_calls = []
    for call in calls:
        if not isinstance(call, dict):
            call = {"name": call[0], "arguments": call[1]}
        arguments = call["arguments"]
        tool_calls.append(
            {
                "id": call.get("id") or f"call_fake{next(_ids):04d}",
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                },
            }
        )
    return {
        "content": content,
        "tool_calls": tool_calls,
        "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
        "usage": usage or {},
        "reasoning": reasoning,
        "top_logprobs": top_logprobs,
    }


def text(words, *, finish_reason="stop", usage=None):
    return completion(words, finish_reason=finish_reason, usage=usage)


def tool_call(name, arguments=None, *, id=None, text=None, usage=None):
    return completion(text, [{"name": name, "arguments": arguments or {}, "id": id}], usage=usage)


def error(status, message=None, *, code=None, headers=None):
    """An error answer in OpenAI's shape: {"error": {"message", "type", "param", "code"}}."""
    return {
        "error_status": status,
        "message": message or f"fake error {status}",
        "code": code,
        "headers": headers or {},
    }


# --- request validation --------------------------------------------------
def problem(body):
    """What an OpenAI-compatible server would reject in this request, or None."""
    if not isinstance(body, dict):
        return "request body must be a JSON object"
    if not body.get("model"):
        return "model is required"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages must be a non-empty array"
    pending = set()
    for index, msg in enumerate(messages):
        role = msg.get("role")
        if role not in ("system", "developer", "user", "assistant", "tool"):
            return f"messages[{index}].role: invalid role {role!r}"
        if role == "tool":
            if msg.get("tool_call_id") not in pending:
                return f"messages[{index}]: a tool message must answer a tool call of the assistant message before it"
            pending.discard(msg["tool_call_id"])
            if not isinstance(msg.get("content"), str):
                return f"messages[{index}].content: tool messages carry text only"
            continue
        if pending:
            return f"messages[{index}]: tool calls {sorted(pending)} have no tool message answering them"
        if role == "assistant":
            pending = {call["id"] for call in msg.get("tool_calls") or []}
            if msg.get("content") is None and not pending:
                return f"messages[{index}]: an assistant message needs content or tool_calls"
        content = msg.get("content")
        if isinstance(content, list):
            for j, part in enumerate(content):
                if part.get("type") == "image_url":
                    if role != "user":
                        return f"messages[{index}].content[{j}]: images belong to user messages"
                    if not str(part.get("image_url", {}).get("url", "")).startswith(("data:image/", "http")):
                        return f"messages[{index}].content[{j}].image_url.url: expected a data URL"
                elif part.get("type") != "text":
                    return f"messages[{index}].content[{j}].type: unsupported {part.get('type')!r}"
    top = body.get("top_logprobs")
    if top is not None:  # OpenAI's own limits: 0-20 alternatives, and only with logprobs
        if not isinstance(top, int) or isinstance(top, bool) or not 0 <= top <= 20:
            return "top_logprobs must be an integer between 0 and 20"
        if not body.get("logprobs"):
            return "logprobs must be set to true when top_logprobs is given"
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        names = {t["function"]["name"] for t in body.get("tools") or []}
        if choice.get("function", {}).get("name") not in names:
            return "tool_choice names a function that is not among the tools"
    return None


def estimate_tokens(value) -> int:
    return max(1, len(json.dumps(value, ensure_ascii=False)) // 4)


def tone_wav(seconds: float, rate: int = 22050) -> bytes:
    """A 440 Hz tone as a 16-bit mono WAV."""
    frames = b"".join(
        struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * i / rate))) for i in range(int(seconds * rate))
    )
    return mono_wav(frames, rate)


# --- the server ----------------------------------------------------------
class FakeOpenAI(ScriptedServer):
    """Fake Chat Completions. `cached_tokens` (int or callable(body) -> int)
    is reported as prompt_tokens_details.cached_tokens."""

    def __init__(
        self,
        replies=(),
        *,
        default=None,
        models=("llama3.1",),
        cached_tokens=0,
        reasoning_models=("o1", "o3", "o4", "gpt-5"),
        refuses_stream_options=False,
    ):
        super().__init__(replies, default=default)
        # A server that knows no stream_options and says so (Groq's words) instead of ignoring it.
        self.refuses_stream_options = refuses_stream_options
        self.reasoning_models = tuple(reasoning_models)  # ids refusing max_tokens, as OpenAI's do
        self.models = list(models)
        self.cached_tokens = cached_tokens
        self.usages = []

    def routes(self, app):
        app.router.add_post("/v1/chat/completions", self.handle_completions)
        app.router.add_get("/v1/models", self.handle_models)
        app.router.add_post("/v1/audio/speech", self.handle_speech)

    def error_response(self, status, msg, code=None, headers=None):
        kind = ERROR_TYPES.get(status, "server_error")
        body = {"error": {"message": msg, "type": kind, "param": None, "code": code or kind}}
        return web.json_response(body, status=status, headers=headers)

    async def handle_models(self, request):
        await self.record(request)
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in self.models]
        return web.json_response({"object": "list", "data": data})

    async def handle_speech(self, request):
        """Text to speech as OpenAI's /v1/audio/speech: model, input and voice required; a WAV
        (22.05 kHz mono, a tone 0.06 s per character of input) when response_format is "wav"."""
        entry = await self.record(request)
        body = entry.body if isinstance(entry.body, dict) else {}
        for field in ("model", "input", "voice"):
            if not isinstance(body.get(field), str) or not body[field]:
                return self.error_response(400, f"you must provide a {field} parameter")
        if body.get("response_format", "mp3") != "wav":
            return self.error_response(400, "fake openai: only response_format wav is spoken here")
        return web.Response(body=tone_wav(0.06 * len(body["input"])), content_type="audio/wav")

    async def handle_completions(self, request):
        entry = await self.record(request)
        if why := problem(entry.body):
            self.usages.append(None)
            return self.error_response(400, why)
        if "max_tokens" in entry.body and str(entry.body["model"]).startswith(self.reasoning_models):
            self.usages.append(None)
            why = "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."
            return self.error_response(400, why, "unsupported_parameter")
        if self.refuses_stream_options and "stream_options" in entry.body:
            self.usages.append(None)
            return self.error_response(400, "property 'stream_options' is unsupported, did you mean 'stream'?")
        spec = await self.next_reply(entry.body)
        if spec is None:
            self.usages.append(None)
            return self.error_response(400, "fake openai: the script has no reply left")
        if isinstance(spec, str):
            spec = text(spec)
        if "error_status" in spec:
            self.usages.append(None)
            return self.error_response(spec["error_status"], spec["message"], spec["code"], spec.get("headers"))
        body = entry.body
        cached = self.cached_tokens(body) if callable(self.cached_tokens) else self.cached_tokens
        prompt = estimate_tokens(body["messages"]) + (estimate_tokens(body["tools"]) if body.get("tools") else 0)
        output = estimate_tokens([spec["content"], spec["tool_calls"]])
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": output,
            "total_tokens": prompt + output,
            "prompt_tokens_details": {"cached_tokens": min(cached, prompt)},
        }
        usage.update(spec["usage"])
        self.usages.append(usage)
        base = {
            "id": f"chatcmpl-fake{next(_ids):05d}",
            "created": int(time.time()),
            "model": body["model"],
            "system_fingerprint": "fp_fake",
        }
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            chunks = [(None, c) for c in stream_chunks(base, spec, usage if include_usage else None)]
            return await sse(request, chunks, after_event=spec.get("after_event"), cut_after=spec.get("cut_after"))
        message = {"role": "assistant", "content": spec["content"], "refusal": None}
        if spec["tool_calls"]:
            message["tool_calls"] = spec["tool_calls"]
        if spec["reasoning"]:
            message["reasoning_content"] = spec["reasoning"]  # what vLLM / DeepSeek-style servers add
        choice = {
            "index": 0,
            "message": message,
            "logprobs": logprobs(body, spec),
            "finish_reason": spec["finish_reason"],
        }
        return web.json_response(dict(base, object="chat.completion", choices=[choice], usage=usage))


def logprobs(body, spec):
    """Chat Completions' logprobs object, only when asked for (as real servers do), capped at top_logprobs."""
    if not body.get("logprobs") or not spec.get("top_logprobs"):
        return None
    top = [{"token": token, "logprob": value, "bytes": list(token.encode())} for token, value in spec["top_logprobs"]]
    top = top[: body.get("top_logprobs") or 0]
    first = top[0] if top else {"token": spec["content"] or "", "logprob": 0.0, "bytes": []}
    return {"content": [{**first, "top_logprobs": top}], "refusal": None}


def stream_chunks(base, spec, usage):
    """The chunk sequence of a streamed completion, as JSON strings, then [DONE]."""
    base = dict(base, object="chat.completion.chunk")

    def chunk(delta, finish=None):
        return json.dumps(dict(base, choices=[{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]))

    out = [chunk({"role": "assistant", "content": ""})]
    for i in range(0, len(spec["reasoning"] or ""), 8):
        out.append(chunk({"reasoning_content": spec["reasoning"][i : i + 8]}))  # vLLM / DeepSeek-style servers
    for i in range(0, len(spec["content"] or ""), 8):
        out.append(chunk({"content": spec["content"][i : i + 8]}))
    for index, call in enumerate(spec["tool_calls"]):
        head = {
            "index": index,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["function"]["name"], "arguments": ""},
        }
        out.append(chunk({"tool_calls": [head]}))
        arguments = call["function"]["arguments"]
        for i in range(0, len(arguments), 8):
            out.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[i : i + 8]}}]}))
    out.append(chunk({}, spec["finish_reason"]))
    if usage is not None:
        out.append(json.dumps(dict(base, choices=[], usage=usage)))
    out.append("[DONE]")
    return out
