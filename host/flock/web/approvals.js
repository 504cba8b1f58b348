// "Waiting for you": a target waits for its owner from an item.triaged/item.answered with
// needs_approval until its verdict (or the item's skip) arrives. Each row keeps its own DOM, so
// a reply in progress (or its error) is not wiped by the next event; an answer is shown whole,
// rendered from Markdown and sanitized (markdown.js).

import { showAnswer } from "/web/markdown.js";
import { send } from "/web/net.js";
import { el } from "/web/dom.js";
import { E } from "/web/events.js";

export class Approvals {
  constructor(root, count) {
    this.root = root;
    this.count = count;
    this.rows = new Map(); // "item_id target" -> {what, node}
  }

  clear() {
    this.rows.clear();
    this.render();
  }

  apply(name, d, lists) {
    const item = d.item_id && lists.item(d.item_id);
    const title = item ? `“${item.text}”` : d.item_id;
    if (name === E.ItemTriaged && d.needs_approval) {
      const plan = d.mode === "split" ? `split into: ${d.subtasks.join(" · ")}` : d.mode === "murder"
        ? "a murder of three crows, each trying it" : "one crow";
      this.add(`${d.item_id} triage`, { kind: "Triage", title, detail: `${plan} (${d.task_type}) — ${d.reason}` });
    } else if (name === E.ItemAnswered && d.needs_approval) {
      this.add(`${d.item_id} output`, { kind: `Answer by ${d.crows.join(", ")}`, title, answer: d.answer });
    } else if (name === E.VerdictGiven) {
      this.remove(`${d.item_id} ${d.target}`);
    } else if (name === E.ItemSkipped) {
      this.remove(`${d.item_id} triage`);
      this.remove(`${d.item_id} output`);
    }
  }

  add(key, what) {
    if (this.rows.has(key)) return;
    this.rows.set(key, { what, node: null });
    this.render();
  }

  remove(key) {
    if (this.rows.delete(key)) this.render();
  }

  render() {
    this.count.textContent = this.rows.size ? `(${this.rows.size})` : "";
    if (!this.rows.size) {
      this.root.replaceChildren(el("p", "quiet empty", "nothing waits for you"));
      return;
    }
    this.root.replaceChildren(...[...this.rows].map(([key, row]) => (row.node ||= this.renderRow(key, row.what))));
  }

  renderRow(key, what) {
    const [itemId, target] = key.split(" ");
    const card = el("article", "approval");
    card.dataset.key = key;
    card.append(el("h3", "", `${what.kind}: ${what.title}`));
    if (what.answer !== undefined) {
      const answer = el("div", "answer");
      showAnswer(answer, what.answer);
      card.append(answer);
    } else {
      card.append(el("p", "detail", what.detail));
    }
    const buttons = el("div", "buttons");
    const status = el("span", "reply");
    status.setAttribute("role", "status");
    for (const approve of [true, false]) {
      const button = el("button", approve ? "approve" : "reject", approve ? "Approve" : "Reject");
      button.onclick = () => this.reply(itemId, target, approve, buttons, status);
      buttons.append(button);
    }
    buttons.append(status);
    card.append(buttons);
    return card;
  }

  async reply(itemId, target, approve, buttons, status) {
    for (const b of buttons.querySelectorAll("button")) b.disabled = true;
    status.className = "reply";
    status.textContent = "sending…";
    const result = await send("/api/verdicts", { item_id: itemId, target, approve });
    if (result.status === 204) {
      status.textContent = approve ? "approved; the flock carries on" : "rejected";
      return; // the verdict event takes the row away
    }
    status.className = "reply error";
    status.textContent = result.message;
    for (const b of buttons.querySelectorAll("button")) b.disabled = false;
  }
}
