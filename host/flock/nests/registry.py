"""Nests: rooms where a team of crows works together, and how crows are picked.

A nest has a core of roster crows. Jobs take core crows first (rotating within
the core), then borrow from the rest of the roster (rotating). The default nest
`todo` has an empty core: its crows come from the whole roster and are never
"borrowed". Nests live in SQLite and are mirrored to `<data>/nests.json`
(written atomically) so a person can read them.
"""

import json
import re

from soulstack.flock.personas import ROSTER_NAMES
from soulstack.flock.rows import NestRow
from soulstack.private_files import write_atomically
from soulstack.serving import BadRequest

DEFAULT_NEST = "todo"
MAX_NESTS = 20  # counting `todo`
NAME_MAX = 40
MAX_CORE = 8


def slugify(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def validate(body: dict) -> tuple:
    """-> (name, crows) from a POST /api/nests body, or BadRequest (400)."""
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    name = body.get("name")
    if not isinstance(name, str) or not (1 <= len(name.strip()) <= NAME_MAX):
        raise BadRequest(f"name must be a string of 1-{NAME_MAX} characters after trimming")
    name = name.strip()
    if not any(character.isalnum() for character in name):  # any script's letters: 发布文案 is a name
        raise BadRequest("name needs at least one letter or digit")
    crows = body.get("crows")
    if not isinstance(crows, list) or not (1 <= len(crows) <= MAX_CORE):
        raise BadRequest(f"crows must be a list of 1-{MAX_CORE} crow names")
    for crow in crows:
        if crow not in ROSTER_NAMES:
            raise BadRequest(f"crows: {str(crow)[:40]!r} is not a roster crow ({', '.join(ROSTER_NAMES)})")
    if len(set(crows)) != len(crows):
        raise BadRequest("crows must not name a crow twice")
    return name, crows


class Nests:
    def __init__(self, store):
        self.store = store
        self.nests = {DEFAULT_NEST: NestRow(nest_id=DEFAULT_NEST, name="Todo", crows=[])}
        for nest_id, name, crows in store.nest_rows():
            self.nests[nest_id] = NestRow(nest_id=nest_id, name=name, crows=json.loads(crows))
        self.rotation = {}  # nest_id -> [next core index, next borrowed index]
        self._mirror()

    def get(self, nest_id: str) -> NestRow | None:
        return self.nests.get(nest_id)

    def to_json(self) -> dict:
        return {"roster": list(ROSTER_NAMES), "nests": [nest.wire() for nest in self.nests.values()]}

    def create(self, body: dict) -> NestRow:
        name, crows = validate(body)
        nest_id = slugify(name) or self._numbered_id()  # ids are ASCII: they go into every msg_id and URL
        if nest_id in self.nests:
            raise BadRequest(f"a nest with id {nest_id!r} already exists; choose another name", status=409)
        if len(self.nests) >= MAX_NESTS:
            raise BadRequest(f"the flock already has {MAX_NESTS} nests, the most it keeps")
        self.store.add_nest(nest_id, name, crows)
        nest = NestRow(nest_id=nest_id, name=name, crows=crows)
        self.nests[nest_id] = nest
        self._mirror()
        return nest

    def _numbered_id(self) -> str:
        """The id of a nest whose name has no ASCII letter or digit: nest-1, nest-2, ..."""
        return next(f"nest-{n}" for n in range(1, MAX_NESTS + 2) if f"nest-{n}" not in self.nests)

    def _mirror(self) -> None:
        # Atomic, and 0600 like everything in the data folder (soulstack.private_files).
        write_atomically(self.store.data_dir / "nests.json", (json.dumps(self.to_json(), indent=2) + "\n").encode())

    def pick(self, nest_id: str, count: int, exclude=()) -> list:
        """Up to `count` distinct crows for one item: [(name, borrowed)], core first, rotating."""
        core = self.nests[nest_id].crows if nest_id in self.nests else []
        if core:
            others = [name for name in ROSTER_NAMES if name not in core]
        else:
            core, others = list(ROSTER_NAMES), []  # `todo`: the whole roster is home
        turn = self.rotation.setdefault(nest_id, [0, 0])
        chosen: list[tuple[str, bool]] = []
        for slot, pool, borrowed in ((0, core, False), (1, others, True)):
            for _ in range(len(pool)):
                if len(chosen) >= count:
                    break
                name = pool[turn[slot] % len(pool)]
                turn[slot] += 1
                if name not in exclude and name not in [c for c, _ in chosen]:
                    chosen.append((name, borrowed))
        return chosen
