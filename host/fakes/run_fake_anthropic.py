"""Run the fake Anthropic Messages API as its own process, scripted from a JSON file.

For trying the soul by hand without a real model (docs/try-with-a-fake-model.md)::

    python -m soulstack.fakes.run_fake_anthropic --port 9290 --script replies.json --record requests.jsonl

(from the checkout's root; from anywhere else, give the file's path:
`.venv/bin/python host/fakes/run_fake_anthropic.py ...`).

The script is a JSON list, answered in order, one entry per model call:

- a string: a text reply (the turn ends; the soul then sleeps its default);
- {"tool": "look", "input": {"question": "..."}, "text": "optional words first"}: a tool call;
- {"error": 529, "message": "optional"}: an API error with that status.

`--default` gives the reply (same shapes) once the script is used up; without
it the fake answers 400 "the script has no reply left", as in the tests.

`--flock` needs no script: it answers the flock's Sentry, crows and Elder by
what each call asks (host/fakes/flock_brain.py; docs/try-the-flock-offline.md);
`--pace SECONDS` makes it answer each call after about that long, so a person sees crows fly.
Every request is appended to `--record` as one JSON line (image data cut to
its length, so the file stays readable) and summed up on stderr.
"""

import argparse
import asyncio
import json
import sys

from aiohttp import web

from soulstack.fakes.anthropic_api import FakeAnthropic, error, tool_use
from soulstack.private_files import open_private


def to_reply(entry, where):
    """One script entry -> a reply FakeAnthropic understands."""
    if isinstance(entry, str):
        return entry
    if isinstance(entry, dict) and isinstance(entry.get("tool"), str):
        return tool_use(entry["tool"], entry.get("input") or {}, text=entry.get("text"))
    if isinstance(entry, dict) and isinstance(entry.get("error"), int):
        return error(entry["error"], entry.get("message"))
    raise SystemExit(
        f'run_fake_anthropic: {where}: expected a string, {{"tool": ...}} or {{"error": status}}, not {entry!r}'
    )


def load_script(path):
    try:
        with open(path, encoding="utf-8") as f:
            entries = json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit(f"run_fake_anthropic: cannot read the script {path}: {e}") from None
    if not isinstance(entries, list):
        raise SystemExit(f"run_fake_anthropic: the script {path} must be a JSON list of replies")
    return [to_reply(entry, f"{path}[{i}]") for i, entry in enumerate(entries)]


def shorten_images(value):
    """A copy of a request body with base64 image data replaced by its length."""
    if isinstance(value, dict):
        if value.get("type") == "base64" and isinstance(value.get("data"), str):
            return dict(value, data=f"<{len(value['data'])} base64 chars>")
        return {k: shorten_images(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shorten_images(v) for v in value]
    return value


def count_images(value):
    if isinstance(value, dict):
        return (value.get("type") == "image") + sum(count_images(v) for v in value.values())
    if isinstance(value, list):
        return sum(count_images(v) for v in value)
    return 0


class RecordingFake(FakeAnthropic):
    """FakeAnthropic that also writes each request to a file and says what it answered.

    `flock`: the flock brain answers every call, so there is no script to count down."""

    def __init__(self, replies, *, default=None, record=None, flock=False):
        super().__init__(replies, default=default)
        self.record_path = record
        self.flock = flock

    async def record(self, request):
        # Number and body are taken here, before the reply is awaited: with --pace, calls overlap,
        # and by the time one is answered self.requests[-1] is some later call.
        entry = await super().record(request)
        request["fake_number"] = len(self.requests)
        if self.record_path:
            # The soul's prompts carry its person's words and its diary: private, as the soul's own files.
            with open_private(self.record_path, "a", encoding="utf-8") as f:  # noqa: ASYNC230 - a line a call
                f.write(json.dumps(shorten_images(entry.body), ensure_ascii=False) + "\n")
        return entry

    async def handle_messages(self, request):
        response = await super().handle_messages(request)
        body = self.requests[request["fake_number"] - 1].body
        messages = body.get("messages", []) if isinstance(body, dict) else []
        print(
            f"fake anthropic: request {request['fake_number']}: {len(messages)} messages,"
            f" {count_images(body)} image block(s) -> {response.status}, {self.what_is_left()}",
            file=sys.stderr,
            flush=True,
        )
        return response

    def what_is_left(self):
        if self.flock:
            return "answered by the flock brain"
        return f"{len(self.script)} scripted replies left"


async def serve(fake, host, port):
    app = web.Application(client_max_size=64 * 1024 * 1024)
    fake.routes(app)
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError as e:
        await runner.cleanup()
        raise SystemExit(f"run_fake_anthropic: cannot listen on {host}:{port}: {e.strerror}") from None
    print(
        f"fake anthropic: listening on http://{host}:{port} (POST /v1/messages), "
        + ("answering as the flock" if fake.flock else f"{len(fake.script)} scripted replies"),
        file=sys.stderr,
        flush=True,
    )
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m soulstack.fakes.run_fake_anthropic",
        description="The fake Anthropic Messages API, scripted from a JSON file.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=9290, help="port (default 9290)")
    parser.add_argument("--script", help="JSON list of replies, answered in order")
    parser.add_argument(
        "--flock", action="store_true", help="no script: answer the flock's Sentry, crows and Elder by what each asks"
    )
    parser.add_argument(
        "--pace",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="with --flock: answer each call after about this long, so flights and landings can be watched "
        "(default 0: at once)",
    )
    parser.add_argument(
        "--default",
        help='reply once the script is used up, as JSON (e.g. \'{"tool": "sleep", "input": {"minutes": 5}}\')',
    )
    parser.add_argument("--record", help="append every request here as one JSON line")
    args = parser.parse_args(argv)
    if bool(args.script) == args.flock:
        parser.error("give --script FILE, or --flock")
    if not 0 <= args.pace <= 3600 or (args.pace and not args.flock):
        parser.error("--pace takes 0-3600 seconds, and goes with --flock")
    default = None
    if args.default is not None:
        try:
            parsed = json.loads(args.default)
        except ValueError as e:
            raise SystemExit(f"run_fake_anthropic: --default is not JSON: {e}") from None
        to_reply(parsed, "--default")  # a mistake shows now, not at the first call
        default = lambda _body: to_reply(parsed, "--default")  # noqa: E731 - a fresh tool_use id each time
    if args.flock:
        from soulstack.fakes.flock_brain import answer, paced

        default = paced(args.pace) if args.pace else answer
    script = load_script(args.script) if args.script else []
    fake = RecordingFake(script, default=default, record=args.record, flock=args.flock)
    try:
        asyncio.run(serve(fake, args.host, args.port))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
