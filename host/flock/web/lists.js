// The list cards: each list a card with its items' stages, subtasks, the crows on each item
// (borrowed ones marked), banter, and tokens against the budget. A finished list folds away.

import { el } from "/web/dom.js";
import { STAGE, TRACK } from "/web/stages.js";

// "me" and "you" are the owner asking from this page (the form's default is "me"): "your list";
// anyone else's is theirs ("Ada's list").
const OWNER_WORDS = new Set(["me", "you", "i", "myself"]);

export function listTitle(requester) {
  const who = String(requester || "").trim();
  if (!who || OWNER_WORDS.has(who.toLowerCase())) return "your list";
  return `${who}’s list`;
}

export class Lists {
  constructor(root) {
    this.root = root;
    this.lists = new Map(); // list_id -> {requester, nest_id, items: Map, tokens, budget, finished, card}
  }

  clear() {
    this.lists.clear();
    this.root.replaceChildren(el("p", "quiet empty", "no lists yet"));
  }

  item(itemId) {
    const list = this.lists.get(itemId.slice(0, itemId.lastIndexOf("-")));
    return list && list.items.get(itemId);
  }

  apply(name, d) {
    if (name === "list.started") this.start(d);
    const list = this.lists.get(d.list_id);
    if (!list) return; // an event of a list outside the opening view
    const item = d.item_id && list.items.get(d.item_id);
    switch (name) {
      case "item.triaged":
        Object.assign(item, { stage: STAGE.triaged, mode: d.mode, task_type: d.task_type, subtasks: d.subtasks, reason: d.reason });
        break;
      case "crow.flying":
        if (d.crow === "Sentry") break;
        item.stage = STAGE.flying;
        if (!item.crows.has(d.crow)) item.crows.set(d.crow, { borrowed: d.borrowed, state: "flying" });
        item.crows.get(d.crow).state = "flying";
        break;
      case "crow.landed":
        list.tokens += d.tokens || 0;
        if (d.crow === "Sentry") break;
        item.stage = Math.max(item.stage, STAGE.landed);
        item.crows.get(d.crow).state = d.ok ? "landed" : "failed";
        break;
      case "crow.banter":
        item.banter.push(d);
        break;
      case "item.answered":
        Object.assign(item, { stage: STAGE.answered, answered: true });
        break;
      case "verdict":
        item.verdicts[d.target] = d.verdict;
        if (d.target === "output") item.stage = STAGE.verdict;
        break;
      case "item.skipped":
        item.skipped = d.reason;
        break;
      case "requester.pranked":
        list.pranked = d.message;
        break;
      case "list.finished":
        Object.assign(list, { finished: true, tokens: d.tokens_used, budget: d.token_budget });
        list.card.open = false; // fold away; a click opens it again
        break;
    }
    this.render(list);
  }

  start(d) {
    if (this.lists.has(d.list_id)) return;
    const card = el("details", "list-card");
    card.open = true;
    card.dataset.listId = d.list_id;
    const items = new Map(d.items.map((item, n) => [item.item_id, {
      n: n + 1, text: item.text, stage: STAGE.queued, crows: new Map(), banter: [], verdicts: {}, subtasks: [],
    }]));
    this.lists.set(d.list_id, { requester: d.requester, nest_id: d.nest_id, items, tokens: 0,
      budget: d.token_budget, finished: false, card });
    this.root.querySelector(".empty")?.remove();
    this.root.prepend(card);
  }

  render(list) {
    const items = [...list.items.values()];
    const settled = items.filter(i => i.skipped || i.stage === STAGE.verdict).length;
    const summary = el("summary");
    summary.append(
      el("span", "who", listTitle(list.requester)),
      el("span", "chip", list.nest_id || "todo"),
      el("span", "progress", list.finished ? "finished" : `${settled} of ${items.length} done`),
      this.tokens(list),
    );
    const ol = el("ol", "items");
    for (const item of items) ol.append(this.renderItem(item));
    const parts = [summary, ol];
    if (list.pranked) parts.push(el("p", "pranked", list.pranked));
    list.card.classList.toggle("finished", list.finished);
    list.card.replaceChildren(...parts);
  }

  tokens(list) {
    const wrap = el("span", "tokens");
    const meter = document.createElement("meter");
    meter.min = 0;
    meter.max = list.budget || 1;
    meter.value = Math.min(list.tokens, meter.max);
    meter.high = meter.max * 0.8;
    const label = list.budget ? `${list.tokens.toLocaleString()} / ${list.budget.toLocaleString()} tokens`
      : `${list.tokens.toLocaleString()} tokens`;
    wrap.append(meter, el("span", "", label));
    return wrap;
  }

  renderItem(item) {
    const li = el("li", item.skipped ? "item skipped" : "item");
    li.append(el("p", "text", item.text));
    const track = el("ol", "track");
    for (const { stage, label } of TRACK) {
      track.append(el("li", stage < item.stage ? "done" : stage === item.stage ? "now" : "", label));
    }
    li.append(track);
    if (item.mode) li.append(el("p", "triage", `${item.mode} · ${item.task_type} — ${item.reason}`));
    if (item.subtasks && item.subtasks.length) {
      const subtasks = el("ul", "subtasks");
      for (const subtask of item.subtasks) subtasks.append(el("li", "", subtask));
      li.append(subtasks);
    }
    if (item.crows.size) {
      const crows = el("p", "crows");
      for (const [name, crow] of item.crows) {
        const chip = el("span", `chip crow-chip ${crow.state}`, name);
        if (crow.borrowed) { chip.classList.add("borrowed"); chip.title = "borrowed from outside the nest's core"; }
        crows.append(chip);
      }
      li.append(crows);
    }
    for (const b of item.banter) li.append(el("p", "banter", `${b.crow} → ${b.to}: “${b.text}”`));
    const verdicts = Object.entries(item.verdicts).map(([target, verdict]) => `${target} ${verdict}`);
    if (verdicts.length) li.append(el("p", "verdicts", verdicts.join(" · ")));
    if (item.skipped) li.append(el("p", "skip", `skipped: ${item.skipped}`));
    return li;
  }
}
