"""Claude on Amazon Bedrock through the real anthropic SDK, against a fake Bedrock runtime on loopback."""

import json

import pytest

from soulstack.llm.bedrock import BedrockModel
from soulstack.llm.prices import price_for
from soulstack.llm.providers import make_model
from soulstack.llm.streaming import BlockDone, TextDelta
from soulstack.llm.types import Message, TextBlock
from soulstack.fakes.anthropic_api import FakeBedrock, text

AWS = {
    "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
    "AWS_REGION": "us-east-1",
}


@pytest.fixture(autouse=True)
def aws_credentials(monkeypatch, tmp_path):
    # The standard AWS chain reads these; a home without ~/.aws keeps the machine's own out.
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION", "ANTHROPIC_BEDROCK_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in AWS.items():
        monkeypatch.setenv(name, value)


async def test_a_signed_invoke_with_the_prompt_cache_and_usage():
    async with FakeBedrock([text("hello from Bedrock")]) as fake:
        model = make_model(
            "amazon-bedrock", "global.anthropic.claude-sonnet-5", base_url=fake.base_url, region="eu-west-1"
        )
        try:
            reply = await model.complete("You are Pip.", [Message("user", [TextBlock("hi")])], cache=True)
        finally:
            await model.aclose()
    assert reply.message.content[0].text == "hello from Bedrock"
    assert fake.regions == ["eu-west-1"]  # the config's region wins over AWS_REGION
    sent = fake.bodies[0]
    assert (
        fake.requests[0].path == "/model/global.anthropic.claude-sonnet-5/invoke-with-response-stream"
    )  # calls stream
    assert sent["anthropic_version"] and "model" not in json.loads(fake.requests[0].raw)  # the path names it
    assert any("cache_control" in block for block in sent["system"])  # caching as on the Anthropic API
    assert reply.usage.cache_write_tokens > 0
    assert price_for("global.anthropic.claude-sonnet-5") is not None


async def test_the_region_comes_from_the_environment_and_is_required(monkeypatch):
    async with FakeBedrock([text("ok")]) as fake:
        model = BedrockModel("global.anthropic.claude-sonnet-5", base_url=fake.base_url)
        try:
            await model.complete("s", [Message("user", [TextBlock("hi")])])
        finally:
            await model.aclose()
    assert fake.regions == ["us-east-1"]
    monkeypatch.delenv("AWS_REGION")
    with pytest.raises(ValueError, match="AWS_REGION"):
        BedrockModel("global.anthropic.claude-sonnet-5")


async def test_the_reply_streams_through_bedrocks_event_stream():
    async with FakeBedrock([text("Hello there. How are you?")]) as fake:
        model = BedrockModel("global.anthropic.claude-sonnet-5", base_url=fake.base_url)
        heard = []
        try:
            reply = await model.complete("s", [Message("user", [TextBlock("hi")])], on_stream=heard.append)
        finally:
            await model.aclose()
    deltas = [event.text for event in heard if isinstance(event, TextDelta)]
    assert len(deltas) > 1 and "".join(deltas) == "Hello there. How are you?"
    assert heard[-1] == BlockDone(0, TextBlock("Hello there. How are you?"))
    assert reply.message.content == [TextBlock("Hello there. How are you?")] and reply.usage.output_tokens > 0


async def test_no_aws_credentials_is_a_model_error_saying_what_to_set(monkeypatch, tmp_path):
    """A trial's moved soul logged a RuntimeError traceback each waking and never fell back to its brainstem."""
    from soulstack.llm.types import ModelError

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance role to ask, here
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    async with FakeBedrock([text("never")]) as fake:
        # A region of its own: the SDK keeps one AWS session per (region, profile, keys), with the
        # credentials it found, and the other tests' sessions have theirs.
        model = BedrockModel("global.anthropic.claude-sonnet-5", base_url=fake.base_url, region="sa-east-1")
        try:
            with pytest.raises(ModelError) as failed:
                await model.complete("s", [Message("user", [TextBlock("hi")])])
        finally:
            await model.aclose()
    assert str(failed.value).startswith("amazon-bedrock: no AWS credentials were found: set AWS_ACCESS_KEY_ID")
    assert not failed.value.retryable and fake.requests == []
