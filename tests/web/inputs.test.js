// The event -> state-machine input mapping (host/flock/web/inputs.js), with node's own test
// runner, against event streams recorded from a real flock (tests/web/record.py).
//     node --test tests/web/

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { FlockInputs, MACHINES, STAGES, mismatch } from "../../host/flock/web/inputs.js";
import { learnEvents } from "../../host/flock/web/events.js";

// The event names as /api/ui serves them (event-names.json: tests/flock/test_event_declarations.py
// keeps it equal to the declarations, and tests/web/record.py writes it).
learnEvents(JSON.parse(readFileSync(new URL("./event-names.json", import.meta.url))));

const stream = (name) => JSON.parse(readFileSync(new URL(`./streams/${name}.json`, import.meta.url)));
const STREAMS = ["solo-and-split", "murder-rejected-answer", "flaky-and-skipped"];

function play(events) {
  const inputs = new FlockInputs();
  return events.flatMap(({ event, data }) => inputs.apply(event, data).map(rec => ({ ...rec, event })));
}

// The last value each (machine, target, input) was set to.
function finalValues(records) {
  const last = new Map();
  for (const r of records) if (r.type !== "trigger") last.set(`${r.machine} ${r.target} ${r.input}`, r.value);
  return last;
}

const fired = (records, input, target) => records.filter(r => r.input === input && r.type === "trigger"
  && (target === undefined || r.target === target));

for (const name of STREAMS) {
  test(`${name}: every input is one docs/ui-inputs.md names, with its type`, () => {
    for (const r of play(stream(name))) {
      assert.ok(MACHINES[r.machine], `unknown machine ${r.machine}`);
      assert.equal(r.type, MACHINES[r.machine][r.input], `${r.machine}.${r.input} from ${r.event}`);
      if (r.type === "number") assert.equal(typeof r.value, "number");
      if (r.type === "boolean") assert.equal(typeof r.value, "boolean");
    }
  });

  test(`${name}: at the end every crow is down, the list finished and its numbers add up`, () => {
    const events = stream(name);
    const records = play(events);
    const last = finalValues(records);
    const listId = events[0].data.list_id;
    const finished = events.at(-1).data;
    for (const [key, value] of last) if (key.startsWith("crow ") && key.endsWith(" flying")) assert.equal(value, false, key);
    assert.equal(last.get(`list ${listId} finished`), true);
    assert.equal(last.get(`list ${listId} waiting`), false);
    assert.equal(last.get(`list ${listId} progress`), 100);
    assert.equal(last.get(`list ${listId} tokens`), finished.tokens_used);
    assert.equal(last.get(`list ${listId} budget`), finished.token_budget);
    // Every take-off is one trigger; every landing is a land or a fail.
    const flights = events.filter(e => e.event === "crow.flying").length;
    const landings = events.filter(e => e.event === "crow.landed").length;
    assert.equal(fired(records, "takeoff").length, flights);
    assert.equal(fired(records, "land").length + fired(records, "fail").length, landings);
  });
}

test("solo-and-split: stages, borrowed, banter and celebration", () => {
  const events = stream("solo-and-split");
  const records = play(events);
  const split = events[0].data.items[1].item_id;
  const stages = records.filter(r => r.target === split && r.input === "stage").map(r => STAGES[r.value]);
  assert.deepEqual([...new Set(stages)], ["queued", "triaged", "flying", "landed", "answered", "verdict"]);
  const banter = events.find(e => e.event === "crow.banter").data;
  const [talk] = fired(records, "talk");
  assert.deepEqual([talk.target, talk.to, talk.text], [banter.crow, banter.to, banter.text]);
  assert.equal(fired(records, "listen", banter.to).length, 1);
  // Approved answers: every crow that worked on them celebrates once per item.
  const workers = events.filter(e => e.event === "item.answered").flatMap(e => e.data.crows);
  assert.deepEqual(fired(records, "celebrate").map(r => r.target).sort(), workers.sort());
  for (const r of records.filter(r => r.input === "borrowed")) assert.equal(r.value, false); // the todo nest never borrows
});

test("murder-rejected-answer: a rejected answer is no celebration; the flock's trust is the Sentry's", () => {
  const events = stream("murder-rejected-answer");
  const records = play(events);
  const change = events.find(e => e.event === "trust.changed").data;
  assert.equal(change.holder, "flock");
  const trust = records.filter(r => r.input === "trust");
  assert.deepEqual(trust.map(r => [r.target, r.value]), [["Sentry", change.to]]);
  assert.deepEqual(fired(records, "celebrate").map(r => r.target), ["Sentry"]); // its level went up
});

test("flaky-and-skipped: the failed crow fails, the skipped item is skipped and counts as done", () => {
  const events = stream("flaky-and-skipped");
  const records = play(events);
  const failed = events.find(e => e.event === "crow.landed" && !e.data.ok && e.data.crow !== "Sentry").data;
  assert.equal(fired(records, "fail", failed.crow).length, 1);
  const skipped = events.find(e => e.event === "item.skipped").data;
  assert.equal(fired(records, "skipped", skipped.item_id).length, 1);
  const progress = records.filter(r => r.input === "progress").map(r => r.value);
  assert.deepEqual(progress, [0, 50, 100]);
});

test("a crow still out when its item is skipped (interrupted) or its list ends is brought down", () => {
  const inputs = new FlockInputs();
  const t = "2026-11-30T20:00:00.000Z";
  inputs.apply("list.started", { list_id: "ab", ts: t, items: [{ item_id: "ab-1", text: "x" }, { item_id: "ab-2", text: "y" }] });
  inputs.apply("crow.flying", { list_id: "ab", ts: t, item_id: "ab-1", crow: "Soot", borrowed: true });
  inputs.apply("crow.flying", { list_id: "ab", ts: t, item_id: "ab-2", crow: "Soot", borrowed: false });
  const skip = inputs.apply("item.skipped", { list_id: "ab", ts: t, item_id: "ab-1", reason: "interrupted" });
  assert.ok(!skip.some(r => r.input === "flying"), "still out on ab-2");
  const end = inputs.apply("list.finished", { list_id: "ab", ts: t, tokens_used: 5, token_budget: 100 });
  assert.deepEqual(end.filter(r => r.input === "flying").map(r => [r.target, r.value]), [["Soot", false]]);
});

test("a renderer's machine is checked input by input, by name and kind", () => {
  const all = Object.entries(MACHINES.crow).map(([name, type]) => ({ name, type }));
  assert.equal(mismatch("crow", all), "");
  assert.equal(mismatch("crow", [...all, { name: "extra", type: "number" }]), ""); // more is fine
  const wrong = all.filter(i => i.name !== "talk").map(i => (i.name === "trust" ? { name: "trust", type: "boolean" } : i));
  assert.equal(mismatch("crow", wrong), "talk (trigger) is missing; trust is a boolean, not a number");
});
