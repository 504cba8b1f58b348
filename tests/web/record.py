"""Record real event streams for the node tests of host/flock/web/inputs.js.

    .venv/bin/python -m tests.web.record

runs a flock on loopback with the fake model (tests/flock/helpers.py's Brain), sends the lists
below, approves what waits, and writes each list's SSE messages to tests/web/streams/<name>.json,
and the event names /api/ui serves (the page's E, host/flock/web/events.js) to tests/web/event-names.json.
Rerun it when the events change; the node tests read the files, so they need no Python.
"""

import asyncio
import json
import tempfile
from pathlib import Path

from soulstack.flock.lists.flow import FlockConfig
from soulstack.flock.payloads import catalogue
from tests.flock.helpers import Brain, Flock, start_fake_model

OUT = Path(__file__).with_name("streams")
NAMES = Path(__file__).with_name("event-names.json")
LISTS = {
    # name: (text, {(item number, target): approve}; a target not named is approved)
    "solo-and-split": ("research the tides\nsplit the garden chores", {}),
    "murder-rejected-answer": ("murder: name the cat", {(1, "output"): False}),
    "flaky-and-skipped": ("flaky research\nbadtriage this", {}),
}


async def record(flock, text, verdicts):
    list_id = await flock.new_list(text)
    async with flock.events(list_id) as stream:
        while True:
            message = await stream.next(timeout=10)
            name, d = message["event"], message["data"]
            if name in ("item.triaged", "item.answered") and d["needs_approval"]:
                target = "triage" if name == "item.triaged" else "output"
                n = int(d["item_id"].rsplit("-", 1)[1])
                await flock.verdict(d["item_id"], target, verdicts.get((n, target), True))
            if name == "list.finished":
                break
    return [{"event": m["event"], "data": m["data"]} for m in stream.events]


async def main():
    served = catalogue()
    NAMES.write_text(json.dumps({key: served[key] for key in ("names", "verdicts")}, indent=1) + "\n")
    fake, model = await start_fake_model(Brain())
    with tempfile.TemporaryDirectory() as data:
        flock = await Flock(Path(data), model=model, config=FlockConfig(heartbeat_s=1.0, model_backoff_s=0.01)).start()
        try:
            for name, (text, verdicts) in LISTS.items():
                events = await record(flock, text, verdicts)
                (OUT / f"{name}.json").write_text(json.dumps(events, indent=1, ensure_ascii=False) + "\n")
                print(f"{name}: {len(events)} events")
        finally:
            await flock.stop()
            await fake.stop()


if __name__ == "__main__":
    asyncio.run(main())
