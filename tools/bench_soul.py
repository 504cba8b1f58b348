"""The soul the voice benches talk to (tools/bench-voice, tools/bench-ears): a real soul (build_soul,
every part attached) on the fake Messages API and a recording body, awake once and asleep, its
converse URL known."""

import asyncio
import contextlib

from soulstack.soul import config
from soulstack.soul.run import build_soul, serve_and_live


@contextlib.asynccontextmanager
async def awake_soul(soul_dir: str, body, fake, hooks_on_waking_end=()):
    """(soul, its URL) once its first waking is over and it sleeps; it stops when the block ends.
    `body` is a started RecordingBody, `fake` a started FakeAnthropic."""
    cfg, _warnings = config.from_dict(
        {
            "soulDir": soul_dir,
            "timezone": "UTC",
            "model": {"provider": "anthropic", "id": "claude-sonnet-5-5", "keepWarm": False},
            "body": {"name": "the desk robot", "endpoints": body.endpoints()},
            "persona": {"name": "Pip", "human": "Ana"},
            "nudge": {"port": 0},
            "budget": {"maxWakesPerDay": 100000},
        }
    )
    soul = build_soul(cfg, env={"ANTHROPIC_API_KEY": "bench", "ANTHROPIC_BASE_URL": fake.base_url})
    soul.hooks.on_waking_end.extend(hooks_on_waking_end)
    lines = []
    living = asyncio.create_task(serve_and_live(soul, announce=lines.append))
    try:
        while not (lines and soul.wakings == 1 and soul.state == "asleep"):
            if living.done():
                living.result()  # a soul that could not start says why
            await asyncio.sleep(0.01)
        yield soul, next(word for word in lines[0].split() if word.startswith("http"))
    finally:
        living.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await living
