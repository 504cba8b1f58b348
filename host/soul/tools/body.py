"""body_status, look, speak, express: the soul's senses, through the body client (host/protocol/client.py).

Only endpoints listed in body.endpoints become tools. Every failure of the body
(no answer, a non-2xx, a wrong shape) reaches the soul as "your body did not
respond" with the reason — never as success (a fake success makes a soul
repeat itself). A request the protocol forbids (an empty `speak`, one over the
cap) is refused by the client before it is sent, the soul's one check: it
reaches the soul as a call not understood.
"""

from soulstack.protocol.client import BodyError
from soulstack.protocol.shapes import ENDPOINTS, ProtocolError
from soulstack.llm.types import ImageBlock, TextBlock
from soulstack.soul.tools import SPEAKS, Outcome, SoulTool


async def _ask(soul, act: str, asking) -> dict | Outcome:
    """The body's answer to `asking` (a client call), or the failed Outcome that says why there is none."""
    text = soul.lang.TEXT
    try:
        return await asking
    except ProtocolError as problem:  # refused by the client, before it was sent
        return Outcome.text(text["bad_input"].format(problem=str(problem)), ok=False)
    except BodyError as error:
        failed = text["body_failed"].format(reason=error.message or str(error), act=text[f"act_{act}"])
        return Outcome.text(failed, ok=False)


async def body_status(soul) -> Outcome:
    answer = await _ask(soul, "status", soul.body.status())
    if isinstance(answer, Outcome):
        return answer
    return Outcome.text(soul.lang.TEXT["body_online" if answer["online"] else "body_offline"])


async def look(soul, question: str = "") -> Outcome:
    answer = await _ask(soul, "look", soul.body.look(question))
    if isinstance(answer, Outcome):
        return answer
    text = soul.lang.TEXT
    if "image" in answer:
        return Outcome([TextBlock(text["saw_image"]), ImageBlock(answer["image"], answer["mimeType"])])
    return Outcome.text(text["saw_text"].format(text=answer["text"]))


async def speak(soul, text: str) -> Outcome:
    answer = await _ask(soul, "speak", soul.body.speak(text))
    return answer if isinstance(answer, Outcome) else Outcome.text(soul.lang.TEXT["spoke"])


async def express(soul, emotion: str) -> Outcome:
    answer = await _ask(soul, "express", soul.body.express(emotion))
    return answer if isinstance(answer, Outcome) else Outcome.text(soul.lang.TEXT["expressed"].format(emotion=emotion))


def body_tools(endpoints: dict) -> list:
    """The tools for the endpoints this body has, in a fixed order."""
    string = {"type": "string"}
    tools = {
        "status": SoulTool(
            "body_status", "Feel whether your body is there and able to act right now.", {}, body_status, routine=True
        ),
        "look": SoulTool(
            "look",
            "Look through your body's eyes. You see what it sees (an image, or the body's own words).",
            {"question": {**string, "description": "what you are looking for"}},
            look,
        ),
        "speak": SoulTool(
            "speak",
            "Say something aloud through your body. Short and spoken, like a person.",
            {"text": {**string, "description": "the words to say"}},
            speak,
            ["text"],
            informs=False,
            role=SPEAKS,
            gist="text",
        ),
        "express": SoulTool(
            "express",
            "Show a feeling on your body's face: happy, sad, angry, sleepy, neutral, or any word.",
            {"emotion": {**string, "description": "the feeling to show"}},
            express,
            ["emotion"],
            informs=False,
            routine=True,
        ),
    }
    return [tools[name] for name in ENDPOINTS if endpoints.get(name)]
