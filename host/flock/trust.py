"""The trust ledger: how far the owner trusts each holder with each task type.

Holders are "flock" (for the Sentry's triage calls) and each crow (for the
answers it brings back). Levels: 0 stranger, 1 regular, 2 trusted.
Promotion: PROMOTE_AFTER approvals in a row move a holder up one level.
Demotion: one rejection (a timeout counts as one) moves it down one level and
clears the streak. Trusted holders skip approval: the verdict is `auto`, and an
`auto` verdict leaves the ledger as it is (nobody judged anything).
"""

LEVELS = {0: "stranger", 1: "regular", 2: "trusted"}
TRUSTED = 2
PROMOTE_AFTER = 3


class TrustLedger:
    def __init__(self, store):
        self.store = store
        self.entries = {(h, t): [level, streak] for h, t, level, streak in store.trust_rows()}

    def level(self, holder: str, task_type: str) -> int:
        return self.entries.get((holder, task_type), [0, 0])[0]

    def trusted(self, holders: list, task_type: str) -> bool:
        return bool(holders) and all(self.level(h, task_type) >= TRUSTED for h in holders)

    def record(self, holder: str, task_type: str, approved: bool, judgment: str) -> tuple | None:
        """Count one human judgment (`judgment` names it: "<item_id>/<target>") once, however often a
        retry after a storage fault asks; -> (from, to) when it moved the level, else None."""
        counted = self.store.judgment(judgment, holder)
        if counted is None:
            level, streak = self.entries.get((holder, task_type), [0, 0])
            before = level
            if approved:
                streak += 1
                if streak >= PROMOTE_AFTER and level < TRUSTED:
                    level, streak = level + 1, 0
            else:
                level, streak = max(0, level - 1), 0
            counted = (before, level)
            self.store.count_judgment(judgment, holder, task_type, counted, streak)
            self.entries[(holder, task_type)] = [level, streak]  # only once the store kept it
        return counted if counted[0] != counted[1] else None

    def set_level(self, holder: str, task_type: str, level: int) -> None:
        """Set a level outright (used to seed a ledger, e.g. by tools/bench-flock)."""
        self.entries[(holder, task_type)] = [level, 0]
        self.store.set_trust(holder, task_type, level, 0)

    def to_json(self) -> list:
        return [
            {"holder": h, "task_type": t, "level": level, "name": LEVELS[level], "streak": streak}
            for (h, t), (level, streak) in sorted(self.entries.items())
        ]
