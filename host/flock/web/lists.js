// The list cards: each list a card with its items' stages, subtasks, the crows on each item
// (borrowed ones marked), banter, tokens against the budget, and each answer (rendered from
// Markdown and sanitized, markdown.js, with a button to copy it). A finished list folds away,
// marked as one to open; its answers are then read from the flock's store (GET /api/lists/{id},
// docs/flock-api.md), which also serves the lists older than the stream's opening view.

import { el } from "/web/dom.js";
import { showAnswer } from "/web/markdown.js";
import { STAGE, TRACK } from "/web/stages.js";
import { E } from "/web/events.js";

const STORED_STAGE = { queued: STAGE.queued, triaging: STAGE.queued, awaiting_triage: STAGE.queued,
  approved: STAGE.triaged, flying: STAGE.flying, awaiting_output: STAGE.answered, done: STAGE.verdict,
  skipped: STAGE.queued };

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
    if (name === E.ListStarted) this.start(d);
    const list = this.lists.get(d.list_id);
    if (!list) return; // an event of a list outside the opening view
    const item = d.item_id && list.items.get(d.item_id);
    switch (name) {
      case E.ItemTriaged:
        Object.assign(item, { stage: STAGE.triaged, mode: d.mode, task_type: d.task_type, subtasks: d.subtasks, reason: d.reason });
        break;
      case E.CrowFlying:
        if (d.crow === "Sentry") break;
        item.stage = STAGE.flying;
        if (!item.crows.has(d.crow)) item.crows.set(d.crow, { borrowed: d.borrowed, state: "flying" });
        item.crows.get(d.crow).state = "flying";
        break;
      case E.CrowLanded:
        list.tokens += d.tokens || 0;
        if (d.crow === "Sentry") break;
        item.stage = Math.max(item.stage, STAGE.landed);
        item.crows.get(d.crow).state = d.ok ? "landed" : "failed";
        break;
      case E.CrowBanter:
        item.banter.push(d);
        break;
      case E.ItemAnswered:
        Object.assign(item, { stage: STAGE.answered, answered: true, answer: d.answer });
        break;
      case E.VerdictGiven:
        item.verdicts[d.target] = d.verdict;
        if (d.target === "output") item.stage = STAGE.verdict;
        break;
      case E.ItemSkipped:
        item.skipped = d.reason;
        break;
      case E.RequesterPranked:
        list.pranked = d.message;
        break;
      case E.ListFinished:
        Object.assign(list, { finished: true, tokens: d.tokens_used, budget: d.token_budget });
        list.card.open = false; // fold away; a click opens it again
        this.readStored(d.list_id, list);
        break;
    }
    this.render(list);
  }

  // The finished list as the flock stored it: its answers as kept (docs/flock-api.md).
  async readStored(listId, list) {
    let stored;
    try {
      const answer = await fetch(`/api/lists/${encodeURIComponent(listId)}`);
      if (!answer.ok) throw new Error(`HTTP ${answer.status}`);
      stored = await answer.json();
    } catch (error) {
      console.warn(`could not read list ${listId} back; its card shows what the stream said`, error);
      return;
    }
    for (const kept of stored.items) {
      const item = list.items.get(kept.item_id);
      if (item && kept.answer !== null) item.answer = kept.answer;
    }
    this.render(list);
  }

  // "Earlier lists": the stored lists this page has no card for (older than the opening view).
  async showEarlier(root) {
    root.replaceChildren(el("p", "quiet", "loading…"));
    let stored;
    try {
      const answer = await fetch("/api/lists");
      if (!answer.ok) throw new Error(`HTTP ${answer.status}`);
      stored = (await answer.json()).lists.filter(l => !this.lists.has(l.list_id));
    } catch (error) {
      root.replaceChildren(el("p", "error", `could not read the earlier lists (${error.message})`));
      return;
    }
    if (!stored.length) {
      root.replaceChildren(el("p", "quiet", "no earlier lists: every list is above"));
      return;
    }
    root.replaceChildren();
    for (const summary of stored) {
      const card = el("details", "list-card finished earlier");
      card.dataset.listId = summary.list_id;
      const list = { requester: summary.owner, nest_id: summary.nest_id, items: new Map(), tokens: summary.tokens_used,
        budget: summary.token_budget, finished: summary.state === "finished", card, stored: summary };
      card.addEventListener("toggle", () => { if (card.open && !list.loading) this.openStored(list); });
      root.append(card);
      this.render(list);
    }
  }

  async openStored(list) {
    list.loading = true; // read once; its card keeps what it read
    try {
      const answer = await fetch(`/api/lists/${encodeURIComponent(list.stored.list_id)}`);
      if (!answer.ok) throw new Error(`HTTP ${answer.status}`);
      const stored = await answer.json();
      stored.items.forEach((kept, n) => list.items.set(kept.item_id, {
        n: n + 1, text: kept.text, stage: STORED_STAGE[kept.stage] ?? STAGE.queued, answer: kept.answer ?? undefined,
        crows: new Map((kept.crows || []).map(name => [name, { borrowed: false, state: "landed" }])), banter: [],
        verdicts: Object.fromEntries(kept.verdicts.map(v => [v.kind, v.verdict])), subtasks: [],
        skipped: kept.stage === "skipped" ? kept.skipped_reason || "skipped" : undefined,
        mode: kept.mode || undefined, task_type: kept.task_type, reason: "",
      }));
    } catch (error) {
      list.card.append(el("p", "error", `could not read this list (${error.message})`));
      return;
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
    if (list.finished) summary.append(el("span", "opens", "open to read the answers ▸"));
    if (list.stored && !items.length) {
      const count = list.stored.item_count;
      summary.append(el("span", "quiet", `“${list.stored.title}” · ${count} item${count === 1 ? "" : "s"}`));
    }
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
    if (item.mode) li.append(el("p", "triage", `${item.mode} · ${item.task_type}${item.reason ? ` — ${item.reason}` : ""}`));
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
    if (item.answer && item.verdicts.output) li.append(this.renderAnswer(item));
    return li;
  }

  // A judged answer, rendered and sanitized, with a button that copies its Markdown.
  renderAnswer(item) {
    const wrap = el("div", "kept-answer");
    const body = el("div", "answer");
    showAnswer(body, item.answer);
    const copy = el("button", "copy", "Copy the answer");
    copy.type = "button";
    const status = el("span", "reply");
    status.setAttribute("role", "status");
    copy.onclick = async () => {
      try {
        await navigator.clipboard.writeText(item.answer);
        status.textContent = "copied";
      } catch (error) {
        window.getSelection().selectAllChildren(body); // no clipboard here: select it for the person to copy
        status.textContent = "selected: copy it with your keyboard";
      }
    };
    wrap.append(body, copy, status);
    return wrap;
  }
}
