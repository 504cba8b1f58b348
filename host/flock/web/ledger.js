// The trust ledger (holder × task type, levels by name) and the nests with their core crows.
// A nest's conversation is offered when this flock serves nest messages (GET /api/nests/{id}/messages,
// as /api/ui reports); a flock without them shows the nests alone.

import { send } from "/web/net.js";
import { el } from "/web/dom.js";

export function showLedger(root, ledger) {
  if (!ledger.trust.length) {
    root.replaceChildren(el("p", "quiet", `everyone starts a stranger; ${ledger.promote_after} approvals in a row raise a level`));
    return;
  }
  const holders = [...new Set(ledger.trust.map(t => t.holder))].sort();
  const types = [...new Set(ledger.trust.map(t => t.task_type))].sort();
  const table = el("table", "ledger");
  const head = el("tr");
  head.append(el("th", "", "holder"), ...types.map(t => el("th", "", t)));
  table.append(head);
  for (const holder of holders) {
    const row = el("tr");
    row.append(el("th", "", holder));
    for (const type of types) {
      const entry = ledger.trust.find(t => t.holder === holder && t.task_type === type);
      const cell = el("td", entry ? `level-${entry.level}` : "", entry ? entry.name : "");
      if (entry) cell.title = `${entry.streak} approvals in a row`;
      row.append(cell);
    }
    table.append(row);
  }
  root.replaceChildren(table);
}

// `conversations`: whether this flock serves nest messages (/api/ui says).
export function showNests(root, data, conversations) {
  root.replaceChildren(...data.nests.map(nest => {
    const card = el("div", "nest");
    card.dataset.nestId = nest.nest_id;
    card.append(el("h3", "", nest.name));
    const core = el("p", "crows");
    if (nest.crows.length) for (const crow of nest.crows) core.append(el("span", "chip", crow));
    else core.append(el("span", "quiet", "no core: crows come from the whole flock"));
    card.append(core);
    if (!conversations) return card;
    const talk = el("details", "conversation");
    talk.append(el("summary", "", "conversation"));
    talk.addEventListener("toggle", () => { if (talk.open && !talk.dataset.loaded) openConversation(talk, nest.nest_id); });
    card.append(talk);
    return card;
  }));
}

function showMessage(ol, m) {
  const li = el("li", `message kind-${m.kind}`);
  const head = el("p", "meta");
  head.append(el("strong", "", m.author), el("span", "chip", m.kind), el("span", "quiet", `tagged by ${m.tagged_by}`));
  if (m.to) head.append(el("span", "", `→ @${m.to}`));
  if (m.kind === "flag") head.append(el("span", "chip owner-question", "a question for you"));
  li.append(head, el("p", "", m.text));
  ol.append(li);
}

async function openConversation(talk, nestId) {
  talk.dataset.loaded = "yes";
  const path = `/api/nests/${encodeURIComponent(nestId)}/messages`;
  let messages;
  try {
    const response = await fetch(path);
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    messages = await response.json();
  } catch (error) {
    talk.append(el("p", "error", `could not load the conversation (${error.message})`));
    return;
  }
  const ol = el("ol", "messages");
  for (const m of messages.messages || messages) showMessage(ol, m);
  const form = el("form", "post");
  const text = el("input");
  text.name = "text";
  text.placeholder = "say something to the nest";
  const status = el("span", "reply");
  form.append(text, el("button", "", "Post"), status);
  form.onsubmit = async (e) => {
    e.preventDefault();
    const result = await send(path, { author: "owner", text: text.value });
    status.className = result.status === 201 ? "reply" : "reply error";
    status.textContent = result.status === 201 ? "" : result.message;
    if (result.status === 201) text.value = "";
  };
  talk.append(ol, form);
  const seen = new Set([...(messages.messages || messages)].map(m => m.msg_id));
  const stream = new EventSource(`/api/events?nest_id=${encodeURIComponent(nestId)}`);
  stream.addEventListener("nest.message", (e) => {
    const m = JSON.parse(e.data);
    if (!seen.has(m.msg_id)) { seen.add(m.msg_id); showMessage(ol, m); }
  });
}
