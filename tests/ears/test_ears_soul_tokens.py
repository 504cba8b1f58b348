"""Ears against a real soul whose two doors have tokens of their own (docs/converse.md's example:
`nudge.token` for /nudge and /health, `converse.token` for /v1): both reach it, and what ears learns
at start (the soul's language) says why when it could not be asked."""

import asyncio

from soulstack.ears.commands import soul_language
from soulstack.ears.soul import Soul
from soulstack.fakes.anthropic_api import FakeAnthropic, text
from soulstack.fakes.soul_body import RecordingBody
from tests.helpers import free_port, until
from tests.soul.helpers import Running, a_soul, fell_asleep, requests_hearing, sleep_long

TOKENS = {"nudge": {"token": "nudge-secret"}, "converse": {"token": "talk-secret"}}


async def test_ears_asks_with_the_converse_token_and_tells_with_the_nudge_token(tmp_path):
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        living = a_soul(tmp_path, body, fake, **TOKENS)
        async with Running(living) as running:
            await fell_asleep(living)
            soul = Soul(running.url, "nudge-secret", converse_token="talk-secret")
            try:
                fake.reply(text("I hear you."))
                said = [piece async for piece in soul.answer("are you there?", "the test body")]
                assert "".join(said) == "I hear you."
                assert soul.tell("answer_unspoken", body="the test body", error="its speaker is off")
                sending = asyncio.ensure_future(soul.run())
                try:
                    told = "but it could not speak: its speaker is off"
                    await until(lambda: requests_hearing(fake, told), "the soul's model to be shown the nudge")
                    assert soul.sender.waiting == []
                finally:
                    sending.cancel()
            finally:
                await soul.close()


async def test_the_souls_language_says_why_it_could_not_be_asked(tmp_path):
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        living = a_soul(tmp_path, body, fake, **TOKENS)
        async with Running(living) as running:
            await fell_asleep(living)
            assert await soul_language(running.url, "nudge-secret") == ("en", "the soul's language")
            language, why = await soul_language(running.url, None)
            assert language is None and why == (
                f"the soul refused the token at {running.url}/health (401): give --soul-token, its nudge.token"
            )
            language, why = await soul_language(running.url, "talk-secret")  # /health is the nudge door
            assert language is None and "(401)" in why
    nowhere = f"http://127.0.0.1:{free_port()}"
    language, why = await soul_language(nowhere, None)
    assert language is None and why == f"the soul could not be asked at {nowhere}/health: Connection refused", why
