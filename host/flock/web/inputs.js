// The flock's events as state-machine inputs: the one contract between the flock and any renderer
// (the SVG figures in figures.js, a user's Rive file in rive.js). docs/ui-inputs.md is the table.
//
// `new FlockInputs().apply(name, data)` takes one SSE event and returns the inputs it sets, in order:
//   {machine: "crow"|"list"|"item", target: <crow name | list_id | item_id>, input, type, value}
// type is "trigger" (fire once; value true), "boolean" or "number". A crow.banter's line rides along
// as `text` on the speaker's `talk` trigger (Rive has no text input; renderers draw the bubble).
// The class remembers only what later events need (who is in the air, an item's crows, counts).

import { STAGE, STAGES } from "./stages.js";
import { E, V } from "./events.js";

export const MACHINES = {
  crow: { takeoff: "trigger", land: "trigger", fail: "trigger", talk: "trigger", listen: "trigger",
          celebrate: "trigger", flying: "boolean", borrowed: "boolean", trust: "number" },
  list: { pranked: "trigger", waiting: "boolean", finished: "boolean",
          items: "number", done: "number", progress: "number", tokens: "number", budget: "number" },
  item: { skipped: "trigger", waiting: "boolean", stage: "number" },
};

// item.stage values, in the order an item lives them (stages.js, shared with the cards).
export { STAGES };
const HOLDER_FIGURE = { flock: "Sentry" }; // the flock's own trust (triage calls) belongs to the Sentry

// What a renderer's state machine lacks: `found` is [{name, type}] (type "trigger"/"boolean"/"number").
// -> one sentence naming each missing or mistyped input, or "" when it has them all.
export function mismatch(machine, found) {
  const have = new Map(found.map(input => [input.name, input.type]));
  const problems = [];
  for (const [name, type] of Object.entries(MACHINES[machine])) {
    if (!have.has(name)) problems.push(`${name} (${type}) is missing`);
    else if (have.get(name) !== type) problems.push(`${name} is a ${have.get(name)}, not a ${type}`);
  }
  return problems.join("; ");
}

function listOf(itemId) { return itemId.slice(0, itemId.lastIndexOf("-")); }

export class FlockInputs {
  constructor() {
    this.away = new Map(); // crow -> Set of item_ids it is out on
    this.lists = new Map(); // list_id -> {items: Set, done: Set, waiting: Set of "item target", tokens}
    this.crowsOf = new Map(); // item_id -> the crows that answered it
  }

  apply(name, d) {
    const out = [];
    const set = (machine, target, input, value) => out.push({ machine, target, input, type: MACHINES[machine][input], value });
    const fire = (machine, target, input, extra) => out.push({ machine, target, input, type: "trigger", value: true, ...extra });
    const list = this.lists.get(d.list_id) || this._list(d.list_id);
    const progress = () => {
      set("list", d.list_id, "done", list.done.size);
      set("list", d.list_id, "progress", list.items.size ? Math.round((100 * list.done.size) / list.items.size) : 0);
    };
    const waiting = (itemId, target, on) => {
      const key = `${itemId} ${target}`;
      if (on) list.waiting.add(key); else list.waiting.delete(key);
      set("item", itemId, "waiting", [...list.waiting].some(k => k.startsWith(itemId + " ")));
      set("list", d.list_id, "waiting", list.waiting.size > 0);
    };
    const flying = (crow, itemId, out_) => {
      const away = this.away.get(crow) || new Set();
      const before = away.size > 0;
      if (out_) away.add(itemId); else away.delete(itemId);
      this.away.set(crow, away);
      if (before !== away.size > 0 || out_) set("crow", crow, "flying", away.size > 0);
    };
    const groundAll = (test) => {
      for (const [crow, away] of this.away) for (const id of [...away]) if (test(id)) flying(crow, id, false);
    };

    switch (name) {
      case E.ListStarted:
        for (const item of d.items) { list.items.add(item.item_id); set("item", item.item_id, "stage", STAGE.queued); }
        set("list", d.list_id, "items", d.items.length);
        if (d.token_budget !== undefined) set("list", d.list_id, "budget", d.token_budget);
        set("list", d.list_id, "tokens", list.tokens);
        set("list", d.list_id, "finished", false);
        progress();
        break;
      case E.ItemTriaged:
        set("item", d.item_id, "stage", STAGE.triaged);
        if (d.needs_approval) waiting(d.item_id, "triage", true);
        break;
      case E.CrowFlying:
        if (d.crow !== "Sentry") set("item", d.item_id, "stage", STAGE.flying);
        set("crow", d.crow, "borrowed", Boolean(d.borrowed));
        fire("crow", d.crow, "takeoff");
        flying(d.crow, d.item_id, true);
        break;
      case E.CrowLanded:
        fire("crow", d.crow, d.ok ? "land" : "fail");
        flying(d.crow, d.item_id, false);
        if (d.crow !== "Sentry") set("item", d.item_id, "stage", STAGE.landed);
        list.tokens += d.tokens || 0;
        set("list", d.list_id, "tokens", list.tokens);
        break;
      case E.CrowBanter:
        fire("crow", d.crow, "talk", { text: d.text, to: d.to });
        fire("crow", d.to, "listen");
        break;
      case E.ItemAnswered:
        this.crowsOf.set(d.item_id, d.crows);
        set("item", d.item_id, "stage", STAGE.answered);
        if (d.needs_approval) waiting(d.item_id, "output", true);
        break;
      case E.VerdictGiven:
        waiting(d.item_id, d.target, false);
        if (d.target === "output") {
          set("item", d.item_id, "stage", STAGE.verdict);
          list.done.add(d.item_id);
          progress();
          if (d.verdict === V.APPROVED || d.verdict === V.AUTO) {
            for (const crow of this.crowsOf.get(d.item_id) || []) fire("crow", crow, "celebrate");
          }
        }
        break;
      case E.TrustChanged: {
        const crow = HOLDER_FIGURE[d.holder] || d.holder;
        set("crow", crow, "trust", d.to);
        if (d.to > d.from) fire("crow", crow, "celebrate");
        break;
      }
      case E.ItemSkipped:
        waiting(d.item_id, "triage", false);
        waiting(d.item_id, "output", false);
        fire("item", d.item_id, "skipped");
        groundAll(id => id === d.item_id); // an interrupted item's crows never land; they are not out any more
        list.done.add(d.item_id);
        progress();
        break;
      case E.RequesterPranked:
        fire("list", d.list_id, "pranked");
        break;
      case E.ListFinished:
        groundAll(id => listOf(id) === d.list_id);
        list.tokens = d.tokens_used;
        set("list", d.list_id, "tokens", d.tokens_used);
        set("list", d.list_id, "budget", d.token_budget);
        set("list", d.list_id, "finished", true);
        for (const itemId of list.items) this.crowsOf.delete(itemId);
        this.lists.delete(d.list_id);
        break;
    }
    return out;
  }

  _list(listId) {
    const list = { items: new Set(), done: new Set(), waiting: new Set(), tokens: 0 };
    this.lists.set(listId, list);
    return list;
  }
}
