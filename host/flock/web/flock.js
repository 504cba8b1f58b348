// The flock's page. It opens /api/events?recent=N: the server first replays every event of the
// last N lists and of every unfinished one (where all pending approvals live), then follows live,
// so the feed and "Waiting for you" are rebuilt from the server's log on every page load.
// EventSource reconnects by itself with Last-Event-ID (which wins over ?recent), so nothing is
// missed or shown twice. If the server refuses the stream (its data was wiped, say), the page
// starts over from a fresh view.
const RECENT_LISTS = 20;
const FEED_LINES = 500;
const EVENTS = ["list.started", "item.triaged", "crow.flying", "crow.landed", "item.answered",
  "verdict", "trust.changed", "item.skipped", "requester.pranked", "list.finished"];
const NO_MODEL = "no model configured"; // the item.skipped reason of a flock without a model
const feed = document.getElementById("feed");
const statusLine = document.getElementById("status");
const items = new Map(); // item_id -> its text, from list.started
const pending = new Map(); // "item_id target" -> {title, detail}; built only from events
const flights = new Map(); // crow -> Set of item_ids it is out on

function clip(text, n) { return text.length > n ? text.slice(0, n - 1) + "…" : text; }
function itemName(id) { return items.has(id) ? `${id} “${clip(items.get(id), 60)}”` : id; }

function line(text, cls) {
  const li = document.createElement("li");
  li.textContent = text;
  if (cls) li.className = cls;
  feed.prepend(li);
  while (feed.children.length > FEED_LINES) feed.lastChild.remove();
}

function describe(name, d) {
  const t = d.ts.slice(11, 19);
  switch (name) {
    case "list.started": return `${t} list ${d.list_id} from ${d.requester} (${d.items.length} items, nest ${d.nest_id})`;
    case "item.triaged": return `${t} Sentry: ${itemName(d.item_id)} is ${d.mode} ${d.task_type} — ${d.reason}`;
    case "crow.flying": return `${t} ${d.crow} takes off for ${d.item_id}${d.borrowed ? " (borrowed)" : ""}`;
    case "crow.landed": return `${t} ${d.crow} lands from ${d.item_id}: ${d.ok ? "ok" : "failed: " + d.error} (${d.tokens} tokens)`;
    case "item.answered": return `${t} answer for ${itemName(d.item_id)} by ${d.crows.join(", ")}:\n${d.answer}`;
    case "verdict": return `${t} ${d.target} verdict on ${d.item_id}: ${d.verdict}`;
    case "trust.changed": return `${t} trust: ${d.holder} on ${d.task_type} ${d.from} → ${d.to}`;
    case "item.skipped": return `${t} ${itemName(d.item_id)} skipped: ${d.reason}`;
    case "requester.pranked": return `${t} ${d.message} (cooldown ${d.cooldown_s} s)`;
    case "list.finished": return `${t} list ${d.list_id} done: ${d.tokens_used} of ${d.token_budget} tokens`;
  }
  return `${t} ${name}`;
}

// A target waits for its owner from an item.triaged/item.answered with needs_approval until its
// verdict (or the item's skip) arrives.
function track(name, d) {
  if (name === "list.started") for (const item of d.items) items.set(item.item_id, item.text);
  if (name === "item.triaged" && d.needs_approval) {
    pending.set(`${d.item_id} triage`, { title: `Triage of ${itemName(d.item_id)}`,
      detail: `Sentry: ${d.mode} ${d.task_type} — ${d.reason}` });
  }
  if (name === "item.answered" && d.needs_approval) {
    pending.set(`${d.item_id} output`, { title: `Answer for ${itemName(d.item_id)} by ${d.crows.join(", ")}`,
      detail: clip(d.answer, 600) });
  }
  if (name === "verdict") pending.delete(`${d.item_id} ${d.target}`);
  if (name === "item.skipped") { pending.delete(`${d.item_id} triage`); pending.delete(`${d.item_id} output`); }
  if (name === "crow.flying") fly(d.crow, d.item_id, true);
  if (name === "crow.landed") fly(d.crow, d.item_id, false);
  // An interrupted item's crows never land; they are not in the air any more either.
  if (name === "item.skipped") for (const crow of flights.keys()) fly(crow, d.item_id, false);
  if (name === "list.finished") {
    for (const crow of flights.keys()) for (const id of flights.get(crow)) if (id.startsWith(d.list_id + "-")) fly(crow, id, false);
  }
  // The notice follows the latest word: a skip for want of a model shows it, any triage hides it.
  if (name === "item.skipped" && d.reason === NO_MODEL) document.getElementById("no-model").hidden = false;
  if (name === "item.triaged") document.getElementById("no-model").hidden = true;
}

function fly(crow, itemId, out) {
  const away = flights.get(crow) || new Set();
  if (out) away.add(itemId); else away.delete(itemId);
  flights.set(crow, away);
  const li = document.querySelector(`#crows li[data-name="${crow}"]`);
  if (li) li.classList.toggle("flying", away.size > 0);
}

function showPending() {
  const ul = document.getElementById("pending");
  ul.replaceChildren();
  if (!pending.size) { ul.innerHTML = '<li class="quiet">nothing yet</li>'; return; }
  for (const [key, what] of pending) {
    const [itemId, target] = key.split(" ");
    const li = document.createElement("li");
    li.dataset.key = key;
    const title = document.createElement("div");
    title.textContent = what.title;
    const detail = document.createElement("div");
    detail.className = "detail";
    detail.textContent = what.detail;
    const answer = document.createElement("span");
    answer.className = "quiet";
    li.append(title, detail);
    for (const approve of [true, false]) {
      const b = document.createElement("button");
      b.textContent = approve ? "approve" : "reject";
      b.onclick = () => sendVerdict(itemId, target, approve, li, answer);
      li.append(b);
    }
    li.append(answer);
    ul.append(li);
  }
}

async function sendVerdict(itemId, target, approve, li, answer) {
  for (const b of li.querySelectorAll("button")) b.disabled = true;
  answer.textContent = " sending…";
  const response = await fetch("/api/verdicts", { method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ item_id: itemId, target, approve }) });
  // 204: the verdict event will take the row away. Otherwise say why (e.g. it already timed out).
  if (response.status !== 204) {
    const body = await response.json().catch(() => ({ message: `HTTP ${response.status}` }));
    answer.textContent = " " + body.message;
    for (const b of li.querySelectorAll("button")) b.disabled = false;
  }
}

async function loadCrowsAndNests() {
  const crows = await (await fetch("/api/crows")).json();
  document.getElementById("crows").replaceChildren(...crows.map(c => {
    const li = document.createElement("li");
    li.dataset.name = c.name;
    li.title = c.backstory;
    li.textContent = `${c.name}, ${c.epithet} — ${c.strength}`;
    li.classList.toggle("flying", (flights.get(c.name) || new Set()).size > 0);
    return li;
  }));
  const nests = await (await fetch("/api/nests")).json();
  document.getElementById("nest-select").replaceChildren(...nests.nests.map(n => new Option(n.name, n.nest_id)));
}

function follow() {
  const source = new EventSource(`/api/events?recent=${RECENT_LISTS}`);
  source.onopen = () => {
    statusLine.textContent = `following the flock live (after the last ${RECENT_LISTS} lists and any unfinished)`;
  };
  source.onerror = () => {
    if (source.readyState !== EventSource.CLOSED) { statusLine.textContent = "connection lost; reconnecting…"; return; }
    statusLine.textContent = "the server refused the stream; starting over in 3 s…";
    setTimeout(startOver, 3000);
  };
  for (const name of EVENTS) {
    source.addEventListener(name, (e) => {
      const d = JSON.parse(e.data);
      const cls = name === "item.skipped" ? "skipped" : name === "item.answered" ? "answered" : "";
      track(name, d);
      line(describe(name, d), cls);
      showPending();
    });
  }
}

function startOver() {
  feed.replaceChildren();
  items.clear();
  pending.clear();
  for (const crow of [...flights.keys()]) for (const id of [...flights.get(crow)]) fly(crow, id, false);
  showPending();
  follow();
}

document.getElementById("list-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const form = new FormData(e.target);
  const answer = document.getElementById("form-answer");
  const response = await fetch("/api/lists", { method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ text: form.get("text"), requester: form.get("requester"), nest_id: form.get("nest_id") }) });
  const body = await response.json();
  answer.textContent = response.status === 202 ? `accepted as ${body.list_id}` : body.message;
});

loadCrowsAndNests();
follow();
