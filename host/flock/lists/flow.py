"""A list's life: Sentry triage, a verdict, crows flying, the Elder, the answer, a verdict.

Every step is saved on the item (`items.state`) before the next begins, so a
restart knows where each item stood:

    queued -> triaging -> awaiting_triage | approved -> flying -> awaiting_output | done
                                                              (any step) -> skipped

After a restart, `queued` and `approved` items carry on (nothing was in flight),
`awaiting_*` items keep waiting with their stored deadline, and `triaging` or
`flying` items are skipped as "interrupted": their model calls died with the
process, and we say so rather than pretend.

A storage fault (a full disk: soulstack.disk.storage) never kills a list. The step that failed is
retried, from what the store says, once the storage takes writes again: `queued`, `approved`
and `awaiting_*` items carry on as after a restart, and an item whose write failed mid-flight
is skipped as "storage failure" (its work was not kept). Meanwhile every approval the store
lists can be answered: the verdict waits for its item.

So that a retry repeats nothing, each step tells its event before it saves the state that follows
from it, and tells it once (`_emit_once` asks the store whether it was told already): a verdict, a
skip and `list.finished` are told once however often a step is retried; a verdict already recorded
is taken from the store, never asked again; trust counts each judgment once
(soulstack.flock.trust.TrustLedger.record).
"""

import asyncio
import logging
import secrets
from dataclasses import dataclass, replace

from soulstack.flock.lists import sentry
from soulstack.flock.lists.approvals import Approvals
from soulstack.flock.lists.banter import Banter
from soulstack.flock.payloads import CrowFlying, CrowLanded, ItemAnswered, ItemSkipped, ItemTriaged, ListEvent
from soulstack.flock.payloads import ListFinished, ListStarted, RequesterPranked, Skip, StartedItem, TrustChanged
from soulstack.flock.payloads import Verdict, VerdictGiven
from soulstack.flock.personas import BY_NAME, crow_system, elder_prompt, elder_system
from soulstack.flock.rows import ItemRow, ItemState, ListRow, NestRow, Triage
from soulstack.llm.providers import complete_with_retry
from soulstack.llm.types import Message, ModelError
from soulstack.disk.storage import storage_problem, through_storage_faults

log = logging.getLogger(__name__)

DONE_STATES = (ItemState.DONE, ItemState.SKIPPED)
IN_FLIGHT_STATES = (ItemState.TRIAGING, ItemState.FLYING)


@dataclass
class FlockConfig:
    token_budget: int = 100_000  # tokens per list, counted from model usage
    concurrency: int = 4  # items of one list doing model work at once
    max_model_calls: int = 16  # model calls in flight across the whole flock
    verdict_timeout_s: float = 600.0  # an unanswered approval counts as rejected after this
    lists_per_minute: int = 10  # per requester; one more is a strike
    heartbeat_s: float = 15.0  # SSE comment line interval
    crow_max_tokens: int = 1024
    model_attempts: int = 2  # tries per model call while the error is retryable
    model_backoff_s: float = 1.0


class Flock:
    def __init__(self, store, events, nests, trust, pranks, model, clock, config: FlockConfig):
        self.store, self.events, self.nests, self.trust, self.pranks = store, events, nests, trust, pranks
        self.model, self.clock, self.config = model, clock, config
        self.approvals = Approvals(store, clock)
        self.calls = asyncio.Semaphore(config.max_model_calls)
        self.used: dict[str, int] = {}  # list_id -> tokens spent so far
        self.tasks: set = set()
        self.banter = Banter(store, events, clock, self._banter_call, self._spend, self._budget_left)

    # --- lists -----------------------------------------------------------
    def submit(self, requester: str, nest_id: str, texts: list) -> str:
        list_id = secrets.token_hex(4)
        while self.store.list_exists(list_id):
            list_id = secrets.token_hex(4)
        self.store.create_list(list_id, requester, nest_id, self.config.token_budget, self.clock.time(), texts)
        try:
            self._started(self.store.get_list(list_id))
        except Exception as error:  # the list is kept; its task says it started once the storage can
            if storage_problem(error) is None:
                raise
            log.warning("list %s is kept, its start not yet told: %s", list_id, storage_problem(error))
        self.spawn(self._run_list(list_id))
        return list_id

    def _started(self, lst: ListRow) -> None:
        items = [StartedItem(item_id=item.item_id, text=item.text) for item in self.store.items(lst.list_id)]
        self.events.emit(
            ListStarted(
                list_id=lst.list_id,
                items=items,
                requester=lst.requester,
                nest_id=lst.nest_id,
                token_budget=lst.token_budget,
            )
        )

    def resume(self) -> None:
        """After a restart: carry on every list that had not finished."""
        self.approvals.expect_stored()
        for list_id in self.store.unfinished_lists():
            self.spawn(self._run_list(list_id))

    def prank(self, requester: str, message: str, cooldown_s: int) -> None:
        for list_id in self.store.flying_lists_of(requester):
            self.events.emit(RequesterPranked(list_id=list_id, message=message, cooldown_s=cooldown_s))

    def spawn(self, coroutine) -> None:
        """Run `coroutine` as one of the flock's tasks: `stop` ends it."""
        task = asyncio.ensure_future(coroutine)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def stop(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.banter.stop()

    async def _run_list(self, list_id: str) -> None:
        await self._through_storage_faults(f"list {list_id}", lambda: self._run_list_once(list_id))

    async def _run_list_once(self, list_id: str) -> None:
        """One go at a list from what the store says; run again after a storage fault."""
        lst = self.store.get_list(list_id)
        if lst.finished:
            return
        if not self.store.has_event(list_id, ListStarted.NAME):
            self._started(lst)  # its start could not be written when it came
        self.used[list_id] = lst.tokens_used
        work = asyncio.Semaphore(self.config.concurrency)
        items = [item for item in self.store.items(list_id) if item.state not in DONE_STATES]
        await asyncio.gather(*(self._run_item_safely(lst, item, work) for item in items))
        await self.banter.settle(list_id)
        self._emit_once(ListFinished(list_id=list_id, tokens_used=self.used[list_id], token_budget=lst.token_budget))
        self.store.finish_list(list_id)
        self.used.pop(list_id, None)

    async def _run_item_safely(self, lst: ListRow, item: ItemRow, work) -> None:
        item_id = item.item_id
        tries = 0

        async def once():
            nonlocal item, tries
            if tries:  # after a storage fault: carry on from what the store kept
                item = self.store.item(item_id)
            tries += 1
            try:
                await self._run_item(lst, item, work, cut_short=Skip.STORAGE_FAILURE if tries > 1 else Skip.INTERRUPTED)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                if storage_problem(error):
                    raise
                log.exception("item %s failed unexpectedly", item_id)  # a bug must not stop the other items
                self._skip(lst, item_id, Skip.FAILURE)

        await self._through_storage_faults(f"item {item_id}", once)

    async def _through_storage_faults(self, what: str, attempt) -> None:
        await through_storage_faults(what, attempt, self.clock.sleep, before_retry=self.store.give_back_space)

    # --- one item --------------------------------------------------------
    async def _run_item(self, lst: ListRow, item: ItemRow, work, cut_short: Skip = Skip.INTERRUPTED) -> None:
        """Carry `item` on from its stored state; one found mid-flight is skipped as `cut_short`."""
        item_id, state, triage = item.item_id, item.state, item.triage
        if state in IN_FLIGHT_STATES:
            self._skip(lst, item_id, cut_short)
            return None
        if state == ItemState.QUEUED:
            async with work:
                triage = await self._triage(lst, item)
            if triage is None:
                return
            state = ItemState.AWAITING_TRIAGE if triage.needs_approval else ItemState.APPROVED
        assert triage is not None, item_id  # past `queued`, the Sentry's call is stored with the item
        if state == ItemState.AWAITING_TRIAGE:
            if not self._can_work(lst, item_id):  # the budget went on triage: no person is asked for work
                return None  # that could not be done once approved (skipped, "budget")
            verdict = await self._verdict(lst, item_id, "triage", ["flock"], triage.task_type)
            if not verdict.approves:
                self._skip(lst, item_id, Skip.of_triage(verdict))
                return None
            self.store.set_item(item_id, ItemState.APPROVED)
            state = ItemState.APPROVED
        crows = item.crows
        if state == ItemState.APPROVED:
            async with work:
                answered = await self._fly(lst, item, triage)
            if answered is None:
                return
            crows, needs_approval = answered
            state = ItemState.AWAITING_OUTPUT if needs_approval else ItemState.DONE
        if state == ItemState.AWAITING_OUTPUT:
            await self._verdict(lst, item_id, "output", crows, triage.task_type)
        self.store.set_item(item_id, ItemState.DONE)

    async def _triage(self, lst: ListRow, item: ItemRow) -> Triage | None:
        """The Sentry's flight. -> the triage (with needs_approval), or None when the item was skipped."""
        item_id = item.item_id
        if not self._can_work(lst, item_id):
            return None
        self.store.set_item(item_id, ItemState.TRIAGING)
        self.events.emit(CrowFlying(list_id=lst.list_id, item_id=item_id, crow="Sentry", borrowed=False))

        async def complete(system, messages, tools, tool_choice):
            return await self._call(lst, system, messages, tools, tool_choice=tool_choice, max_tokens=1024)

        try:
            call, tokens, trouble = await sentry.ask_sentry(complete, item.text)
        except ModelError as error:
            self._landed(lst, item_id, "Sentry", 0, str(error))
            self._skip(lst, item_id, Skip.FAILURE)
            return None
        self._landed(lst, item_id, "Sentry", tokens, trouble)
        if call is None:
            self._skip(lst, item_id, Skip.FAILURE)
            return None
        triage = Triage.of(call)
        abusive = triage.task_type == "abuse"
        triage = replace(triage, needs_approval=not abusive and not self.trust.trusted(["flock"], triage.task_type))
        self.events.emit(ItemTriaged(list_id=lst.list_id, item_id=item_id, **triage.fields()))
        if abusive:
            self.prank(lst.requester, *self.pranks.strike(lst.requester))
            self._skip(lst, item_id, Skip.ABUSIVE)
            return None
        if not triage.needs_approval:
            self._emit_once(VerdictGiven(list_id=lst.list_id, item_id=item_id, target="triage", verdict=Verdict.AUTO))
        state = ItemState.AWAITING_TRIAGE if triage.needs_approval else ItemState.APPROVED
        self.store.set_item(item_id, state, triage=triage)
        return triage

    async def _fly(self, lst: ListRow, item: ItemRow, triage: Triage) -> tuple | None:
        """Crows do the work, the Elder merges or judges. -> (crows, needs_approval) or None if skipped."""
        item_id, mode = item.item_id, triage.mode
        if not self._can_work(lst, item_id):
            return None
        self.store.set_item(item_id, ItemState.FLYING)
        jobs = {"solo": [item.text], "split": triage.subtasks, "murder": [item.text] * sentry.MURDER_SIZE}[mode]
        picks = self.nests.pick(lst.nest_id, len(jobs))
        used = {name for name, _ in picks}
        results = await asyncio.gather(
            *(self._job(lst, item_id, job, pick, used) for job, pick in zip(jobs, picks, strict=True))
        )
        done = [(job, result) for job, result in zip(jobs, results, strict=True) if result is not None]
        if not done:
            self._skip(lst, item_id, Skip.FAILURE)
            return None
        crows = [crow for _, (crow, _) in done]
        self.banter.start(lst, item_id, item.text, crows)  # an aside: nothing waits for it
        if mode == "solo":
            answer = done[0][1][1]
        else:
            answer = await self._elder(lst, item, mode, done)
            if answer is None:
                self._skip(lst, item_id, Skip.FAILURE if self._budget_left(lst) else Skip.BUDGET)
                return None
        needs_approval = not self.trust.trusted(crows, triage.task_type)
        self.events.emit(
            ItemAnswered(
                list_id=lst.list_id, item_id=item_id, answer=answer, crows=crows, needs_approval=needs_approval
            )
        )
        if not needs_approval:
            self._emit_once(VerdictGiven(list_id=lst.list_id, item_id=item_id, target="output", verdict=Verdict.AUTO))
        state = ItemState.AWAITING_OUTPUT if needs_approval else ItemState.DONE
        self.store.set_item(item_id, state, answer=answer, crows=crows)
        return crows, needs_approval

    async def _job(self, lst, item_id, job, pick, used) -> tuple | None:
        """One crow on one job; if it fails, one other crow tries once. -> (crow, text) or None."""
        crow, borrowed = pick
        text = await self._flight(lst, item_id, crow, borrowed, crow_system(BY_NAME[crow]), job)
        if text is not None:
            return crow, text
        if not self._budget_left(lst):
            return None
        spare = self.nests.pick(lst.nest_id, 1, exclude=used) or self.nests.pick(lst.nest_id, 1, exclude={crow})
        if not spare:
            return None
        crow, borrowed = spare[0]
        used.add(crow)
        text = await self._flight(lst, item_id, crow, borrowed, crow_system(BY_NAME[crow]), job)
        return (crow, text) if text is not None else None

    async def _elder(self, lst, item, mode, done) -> str | None:
        if not self._budget_left(lst):
            return None
        job, prompt = elder_prompt(item.text, mode, done)
        return await self._flight(lst, item.item_id, "Elder", False, elder_system(job), prompt)

    async def _flight(self, lst, item_id, crow, borrowed, system, prompt) -> str | None:
        """crow.flying, one model call, crow.landed. -> the crow's text, or None when it failed."""
        self.events.emit(CrowFlying(list_id=lst.list_id, item_id=item_id, crow=crow, borrowed=borrowed))
        try:
            reply = await self._call(lst, system, [Message.user(prompt)], max_tokens=self.config.crow_max_tokens)
        except ModelError as error:
            self._landed(lst, item_id, crow, 0, str(error))
            return None
        text = reply.message.text().strip()
        self._landed(lst, item_id, crow, reply.usage.total, None if text else "the crow came back with no words")
        return text or None

    # --- verdicts --------------------------------------------------------
    async def _verdict(self, lst: ListRow, item_id, target, holders, task_type) -> Verdict:
        """Wait for the human's verdict (or the deadline), record it, move trust. -> the verdict.
        Run again after a storage fault, it takes the verdict already recorded and asks no one."""
        list_id = lst.list_id
        recorded = self.store.verdict_of(item_id, target)
        if recorded is None:
            deadline = self.store.pending_deadline(item_id, target)
            if deadline is None:
                deadline = self.clock.time() + self.config.verdict_timeout_s
            verdict = await self.approvals.wait(item_id, target, deadline)
            self.events.emit(VerdictGiven(list_id=list_id, item_id=item_id, target=target, verdict=verdict))
        else:
            verdict = Verdict(recorded)
        self.approvals.settle(item_id, target)
        for holder in holders:
            moved = self.trust.record(holder, task_type, verdict.approves, judgment=f"{item_id}/{target}")
            if moved:
                changed = TrustChanged(
                    list_id=list_id, item_id=item_id, holder=holder, task_type=task_type, from_=moved[0], to=moved[1]
                )
                self._emit_once(changed)
        return verdict

    # --- what the nests' harness uses (soulstack.flock.nests.harness.FlockForNests) ---
    @property
    def has_model(self) -> bool:
        return self.model is not None

    def nest(self, nest_id: str) -> NestRow | None:
        return self.nests.get(nest_id)

    def pick_crows(self, nest_id: str, count: int, exclude=()) -> list:
        """[(name, borrowed)]: up to `count` crows of the nest, core first (soulstack.flock.nests.registry.Nests.pick)."""
        return self.nests.pick(nest_id, count, exclude=exclude)

    async def complete(self, system, messages, tools=None, **options):
        """The flock's one model call, for a list's crows and a nest's alike: in one of the
        `max_model_calls` slots, retried while the error is retryable (`model_attempts`)."""
        async with self.calls:
            return await complete_with_retry(
                self.model,
                system,
                messages,
                tools,
                attempts=self.config.model_attempts,
                backoff_s=self.config.model_backoff_s,
                **options,
            )

    async def triage_request(self, text: str) -> dict | None:
        """The Sentry's call on a nest's request (outside any list: no budget counts it).
        -> the triage, or None when the Sentry gave no valid one; a ModelError propagates."""

        async def complete(system, messages, tools, tool_choice):
            return await self.complete(system, messages, tools, tool_choice=tool_choice, max_tokens=1024)

        triage, _tokens, _trouble = await sentry.ask_sentry(complete, text)
        return triage

    # --- helpers ---------------------------------------------------------
    async def _call(self, lst: ListRow, system, messages, tools=None, **options):
        reply = await self.complete(system, messages, tools, **options)
        self._spend(lst.list_id, reply.usage.total)
        return reply

    async def _banter_call(self, system, messages, max_tokens):
        # One try, outside the call slots: banter is optional and must never hold up work.
        return await complete_with_retry(self.model, system, messages, attempts=1, max_tokens=max_tokens)

    def _spend(self, list_id, tokens) -> None:
        self.used[list_id] = self.used.get(list_id, 0) + tokens
        self.store.add_tokens(list_id, tokens)

    def _can_work(self, lst: ListRow, item_id) -> bool:
        if self.model is None:
            self._skip(lst, item_id, Skip.NO_MODEL)
            return False
        if not self._budget_left(lst):
            self._skip(lst, item_id, Skip.BUDGET)
            return False
        return True

    def _budget_left(self, lst: ListRow) -> bool:
        return self.used.get(lst.list_id, 0) < lst.token_budget

    def _landed(self, lst: ListRow, item_id, crow, tokens, error) -> None:
        landed = CrowLanded(
            list_id=lst.list_id, item_id=item_id, crow=crow, ok=error is None, tokens=tokens, error=error
        )
        self.events.emit(landed)

    def _skip(self, lst: ListRow, item_id, reason: Skip) -> None:
        self._emit_once(ItemSkipped(list_id=lst.list_id, item_id=item_id, reason=reason))
        self.store.set_item(item_id, ItemState.SKIPPED)

    def _emit_once(self, event: ListEvent) -> None:
        """Emit `event` unless its list has one like it already (its declaration's ONCE_BY fields
        say which): a retry after a storage fault, where the first try told it, then failed to save
        what followed."""
        if not self.store.has_event(event.list_id, event.NAME, **event.once_by()):
            self.events.emit(event)
