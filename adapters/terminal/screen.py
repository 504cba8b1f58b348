"""What the terminal body shows: its face, its last words, what the human typed.

Rendering is kept apart from HTTP so it can be tested by painting into any
writable stream. On a terminal (`live=True`) each change redraws the whole
screen in place; through a pipe or into a file it appends plain lines, one
small block per change, with no cursor tricks.
"""

from collections import deque
from dataclasses import dataclass, field

# Eyes and mouth per reference emotion, drawn inside a 9-column head.
FACES = {
    "neutral": ("o   o", "---"),
    "happy": ("^   ^", "\\_/"),
    "sad": (";   ;", "/-\\"),
    "angry": (">   <", "~~~"),
    "sleepy": ("-   -", "___"),
}
CLEAR = "\x1b[H\x1b[2J"


def face_lines(face: str) -> list[str]:
    eyes, mouth = FACES.get(face, FACES["neutral"])
    extra = "  z z" if face == "sleepy" else ""
    return [" .---------.", f" |  {eyes}  |{extra}", f" |   {mouth}   |", " '---------'"]


@dataclass
class Scene:
    """Everything on the screen, kept so /look can describe it."""

    face: str = "neutral"
    asked_emotion: str = "neutral"  # the word the soul used; `face` is what we can show for it
    words: str = ""
    typed: deque = field(default_factory=lambda: deque(maxlen=5))
    notice: str = ""
    looked_for: str = ""
    address: str = ""
    mind: str = ""  # whose mind the soul has now (the status line), when the body can tell
    state: str = ""  # what the soul is doing: thinking, or asleep until its alarm
    caption: str = ""  # a line that stays on screen (the demo says where the soul's log is)


def describe(scene: Scene) -> str:
    """The screen in words: what /look hands the soul."""
    feeling = (
        scene.face if scene.face == scene.asked_emotion else f'{scene.face} (you asked for "{scene.asked_emotion}")'
    )
    parts = [f"The terminal screen shows your face, looking {feeling}."]
    parts.append(f'Your last words on it: "{scene.words}".' if scene.words else "You have not said anything on it yet.")
    if scene.typed:
        parts.append("Your human recently typed: " + " / ".join(f'"{line}"' for line in scene.typed) + ".")
    else:
        parts.append("Your human has not typed anything yet.")
    if scene.notice:
        parts.append(f"A notice on the screen says: {scene.notice}.")
    if scene.looked_for:
        parts.append(
            f'You looked for "{scene.looked_for}"; a terminal has no camera, so this text is all there is to see.'
        )
    return " ".join(parts)


def frame(scene: Scene) -> str:
    """The whole screen, for redrawing in place."""
    head = face_lines(scene.face)
    head[1] += (
        f"   feeling {scene.face}"
        if scene.face == scene.asked_emotion
        else f"   feeling {scene.face} ({scene.asked_emotion})"
    )
    lines = ["", *head, ""]
    lines.append(f'  says: "{scene.words}"' if scene.words else "  (silent)")
    lines.append("")
    for line in scene.typed:
        lines.append(f"  you: {line}")
    if scene.notice:
        lines.append(f"  ! {scene.notice}")
    lines.append("")
    if scene.mind:
        lines.append(f"  mind: {scene.mind}")
    if scene.state:
        lines.append(f"  soul: {scene.state}")
    if scene.caption:
        lines.append(f"  {scene.caption}")
    lines.append(f"  terminal body at {scene.address} - type a line to nudge the soul, Ctrl+C to power off")
    return "\n".join(lines) + "\n> "


def change_lines(scene: Scene, change: str) -> list[str]:
    """The few plain lines that show one change, for a pipe or a file."""
    if change == "face":
        head = face_lines(scene.face)
        label = scene.face if scene.face == scene.asked_emotion else f"{scene.face} ({scene.asked_emotion})"
        return head[:1] + [head[1] + f"   feeling {label}"] + head[2:]
    if change == "words":
        return [f'says: "{scene.words}"']
    if change == "typed":
        return [f"you: {scene.typed[-1]}"] if scene.typed else []
    if change == "notice":
        return [f"! {scene.notice}"] if scene.notice else []
    if change == "look":
        return [
            f'(the soul looks at the screen, for "{scene.looked_for}")'
            if scene.looked_for
            else "(the soul looks at the screen)"
        ]
    if change == "mind":
        return [f"mind: {scene.mind}"] if scene.mind else []
    if change == "state":
        return [f"soul: {scene.state}"] if scene.state else []
    if change == "start":
        caption = [scene.caption] if scene.caption else []
        return [
            *face_lines(scene.face),
            *caption,
            f"terminal body at {scene.address} - type a line to nudge the soul, Ctrl+C to power off",
        ]
    return []


class Screen:
    """Paints scenes onto a stream; remembers when the stream stopped taking writes."""

    def __init__(self, stream, live: bool):
        self.stream = stream
        self.live = live
        self.broken: str = ""  # why painting stopped working, once it has

    def paint(self, scene: Scene, change: str) -> bool:
        """Show `change`; False when the screen can no longer be painted."""
        text = CLEAR + frame(scene) if self.live else "".join(line + "\n" for line in change_lines(scene, change))
        return self._write(text)

    def say(self, line: str) -> bool:
        """A line outside the scene (power off), written as is."""
        return self._write(("\n" if self.live else "") + line + "\n")

    def alive(self) -> bool:
        return self._write("")

    def _write(self, text: str) -> bool:
        if self.broken:
            return False
        try:
            if getattr(self.stream, "closed", False):
                raise ValueError("the screen's stream is closed")
            if text:
                self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError) as error:  # a closed pipe, a closed file
            self.broken = str(error) or type(error).__name__
            return False
        return True
