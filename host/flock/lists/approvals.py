"""Approvals a person still owes: one future per (item, target), with its deadline on the clock seam.

The pending row in the store outlives a crash (`Flock.resume` asks `expect_stored`), and what
the store lists is always answerable, also while the item's task waits for the storage to come
back (host/flock/lists/flow.py): the verdict is kept until its item asks for it. Once the verdict
is recorded (its `verdict` event), the store lists it no more and `settle` removes the row: an
approval answered is never asked again, even when a storage fault came between the two.
"""

import asyncio

from soulstack.flock.payloads import Verdict


class Approvals:
    """Futures for verdicts a human still owes, with deadlines on the clock seam."""

    def __init__(self, store, clock):
        self.store = store
        self.clock = clock
        self.waiting = {}  # (item_id, target) -> Future

    async def wait(self, item_id: str, target: str, deadline: float) -> Verdict:
        """-> approved, rejected or timeout. The pending row outlives a crash."""
        key = (item_id, target)
        future = self.waiting.get(key) or asyncio.get_running_loop().create_future()
        self.waiting[key] = future
        self.store.add_pending(item_id, target, deadline)
        timer = asyncio.ensure_future(self.clock.sleep_until(deadline))
        try:
            await asyncio.wait({future, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
        # The future stays until `settle`: if recording the verdict fails, the retry gets it again.
        return future.result() if future.done() else Verdict.TIMEOUT

    def settle(self, item_id: str, target: str) -> None:
        """The verdict is recorded: forget the pending row and its future."""
        self.store.remove_pending(item_id, target)
        self.waiting.pop((item_id, target), None)

    def expect_stored(self) -> None:
        """After a restart, accept verdicts for stored pending approvals at once, before their items resume."""
        loop = asyncio.get_running_loop()
        for item_id, target, _deadline in self.store.all_pending():
            self.waiting.setdefault((item_id, target), loop.create_future())

    def answer(self, item_id: str, target: str, approve: bool) -> bool:
        """Record a human's verdict; False when nothing is waiting (so the caller says 404).

        What the store lists as pending is always answerable, also while its item's task waits
        for the storage to come back: the verdict is kept until the item asks for it."""
        key = (item_id, target)
        future = self.waiting.get(key)  # `wait` removes it; a done one means "answered"
        if future is None and self.store.pending_deadline(item_id, target) is not None:
            future = self.waiting[key] = asyncio.get_running_loop().create_future()
        if future is None or future.done():
            return False
        future.set_result(Verdict.of_answer(approve))
        return True
