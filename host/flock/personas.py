"""The ten crows, read from crows.json (the one file that holds their characters).

The roster is the eight working crows; the Sentry triages and the Elder merges
or judges. Their prompts are built here so a persona lives in one place.
"""

import json
from dataclasses import dataclass
from pathlib import Path

CROWS_FILE = Path(__file__).with_name("crows.json")


@dataclass(frozen=True)
class Crow:
    name: str
    epithet: str
    strength: str
    backstory: str
    prank: str  # a 429 message in this crow's voice; "{cooldown_s}" is filled in
    task_types: tuple = ()

    def public(self) -> dict:
        return {"name": self.name, "epithet": self.epithet, "strength": self.strength, "backstory": self.backstory}

    def prank_message(self, cooldown_s: int) -> str:
        said = self.prank.format(cooldown_s=cooldown_s)
        # Our crows' pranks open with their own name ("Hugin tilts his head."): named once, not "Hugin: Hugin ...".
        return said if said.startswith(self.name) else f"{self.name}: {said}"


def _crow(data: dict) -> Crow:
    return Crow(
        data["name"],
        data["epithet"],
        data["strength"],
        data["backstory"],
        data["prank"],
        tuple(data.get("task_types", ())),
    )


def load(path: Path = CROWS_FILE):
    """-> (roster of 8 Crows, Sentry, Elder, relationships {frozenset of two names: bond})."""
    data = json.loads(path.read_text(encoding="utf-8"))
    bonds = {frozenset(r["crows"]): r["bond"] for r in data.get("relationships", ())}
    return [_crow(c) for c in data["roster"]], _crow(data["sentry"]), _crow(data["elder"]), bonds


ROSTER, SENTRY, ELDER, BONDS = load()
ROSTER_NAMES = [crow.name for crow in ROSTER]
BY_NAME = {crow.name: crow for crow in [*ROSTER, SENTRY, ELDER]}


def relationship(a: str, b: str) -> str | None:
    """How two crows get on (docs/PERSONAS.md), or None when they have no particular history."""
    return BONDS.get(frozenset((a, b)))


def all_crows() -> list:
    return [crow.public() for crow in [*ROSTER, SENTRY, ELDER]]


def crow_system(crow: Crow) -> str:
    """The system prompt a working crow flies with."""
    return (
        f"You are {crow.name}, {crow.epithet}, one crow of a flock that works through people's todo lists. "
        f"Your strength: {crow.strength}. {crow.backstory}\n\n"
        "Do the task you are given and answer in plain text: the finished work itself, concise and useful. "
        "Stay in character only lightly; the answer matters more than the voice."
    )


def elder_system(job: str) -> str:
    """The Elder's system prompt; `job` is "merge" (split parts) or "judge" (rival attempts)."""
    if job == "merge":
        task = "Several crows each did one part of a task. Merge their parts into one coherent answer."
    else:
        task = (
            "Several crows each attempted the same task independently. Judge them and give the best answer, "
            "improving it with anything the others got right."
        )
    return f"You are the Elder, {ELDER.epithet}, of a flock of crows. {ELDER.backstory}\n\n{task} Answer in plain text."


def elder_prompt(task: str, mode: str, done: list) -> tuple[str, str]:
    """What the Elder is given for an item whose crows came back: `done` is [(job, (crow, text))].
    -> (its job, "merge" for a split item and "judge" for a murder's rival attempts; the prompt)."""
    if mode == "split":
        parts = [f"Part: {job}\nBy {crow}:\n{text}" for job, (crow, text) in done]
    else:
        parts = [f"Attempt by {crow}:\n{text}" for _, (crow, text) in done]
    return ("merge" if mode == "split" else "judge"), f"The task: {task}\n\n" + "\n\n".join(parts)
