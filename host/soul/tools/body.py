"""body_status, look, speak, express: the soul's senses, through host/body's client.

Only endpoints listed in body.endpoints become tools. Every failure of the body
(no answer, a non-2xx, a wrong shape) reaches the soul as "your body did not
respond" with the reason — never as success (a fake success makes a soul
repeat itself).
"""

from soulstack.protocol.client import BodyError
from soulstack.protocol.shapes import ENDPOINTS, ProtocolError, validate_request
from soulstack.llm.types import ImageBlock, TextBlock
from soulstack.soul.tools import Outcome, SoulTool


def _failed(soul, act: str, error: BodyError) -> Outcome:
    T = soul.T.TEXT
    return Outcome.text(T["body_failed"].format(reason=error.message or str(error), act=T[f"act_{act}"]), ok=False)


def _refused(soul, endpoint: str, request: dict) -> Outcome | None:
    """The protocol's own rules (empty, too long) checked before asking the body; None when it may go."""
    try:
        validate_request(endpoint, request)
    except ProtocolError as problem:
        return Outcome.text(soul.T.TEXT["bad_input"].format(problem=str(problem)), ok=False)
    return None


async def body_status(soul) -> Outcome:
    try:
        answer = await soul.body.status()
    except BodyError as error:
        return _failed(soul, "status", error)
    return Outcome.text(soul.T.TEXT["body_online" if answer["online"] else "body_offline"])


async def look(soul, question: str = "") -> Outcome:
    refused = _refused(soul, "look", {"question": question})
    if refused:
        return refused
    try:
        answer = await soul.body.look(question)
    except BodyError as error:
        return _failed(soul, "look", error)
    T = soul.T.TEXT
    if "image" in answer:
        return Outcome([TextBlock(T["saw_image"]), ImageBlock(answer["image"], answer["mimeType"])])
    return Outcome.text(T["saw_text"].format(text=answer["text"]))


async def speak(soul, text: str) -> Outcome:
    T = soul.T.TEXT
    refused = _refused(soul, "speak", {"text": text})
    if refused:
        return refused
    try:
        await soul.body.speak(text)
    except BodyError as error:
        return _failed(soul, "speak", error)
    return Outcome.text(T["spoke"])


async def express(soul, emotion: str) -> Outcome:
    T = soul.T.TEXT
    refused = _refused(soul, "express", {"emotion": emotion})
    if refused:
        return refused
    try:
        await soul.body.express(emotion)
    except BodyError as error:
        return _failed(soul, "express", error)
    return Outcome.text(T["expressed"].format(emotion=emotion))


def body_tools(endpoints: dict) -> list:
    """The tools for the endpoints this body has, in a fixed order."""
    string = {"type": "string"}
    tools = {
        "status": SoulTool("body_status", "Feel whether your body is there and able to act right now.", {}, body_status),
        "look": SoulTool("look", "Look through your body's eyes. You see what it sees (an image, or the body's own words).",
                         {"question": {**string, "description": "what you are looking for"}}, look),
        "speak": SoulTool("speak", "Say something aloud through your body. Short and spoken, like a person.",
                          {"text": {**string, "description": "the words to say"}}, speak, ["text"], informs=False),
        "express": SoulTool("express", "Show a feeling on your body's face: happy, sad, angry, sleepy, neutral, or any word.",
                            {"emotion": {**string, "description": "the feeling to show"}}, express, ["emotion"], informs=False),
    }
    return [tools[name] for name in ENDPOINTS if endpoints.get(name)]
