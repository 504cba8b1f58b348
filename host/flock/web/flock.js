// The flock's page: follows /api/events (every list) and shows what happens.
// EventSource reconnects by itself and sends Last-Event-ID, so nothing is missed.
const EVENTS = ["list.started", "item.triaged", "crow.flying", "crow.landed", "item.answered",
  "verdict", "trust.changed", "item.skipped", "requester.pranked", "list.finished"];
const feed = document.getElementById("feed");
const pending = new Map(); // "item_id target" -> description

function line(text, cls) {
  const li = document.createElement("li");
  li.textContent = text;
  if (cls) li.className = cls;
  feed.prepend(li);
  while (feed.children.length > 300) feed.lastChild.remove();
}

function describe(name, d) {
  const t = d.ts.slice(11, 19);
  switch (name) {
    case "list.started": return `${t} list ${d.list_id} from ${d.requester} (${d.items.length} items, nest ${d.nest_id})`;
    case "item.triaged": return `${t} Sentry: ${d.item_id} is ${d.mode} ${d.task_type} — ${d.reason}`;
    case "crow.flying": return `${t} ${d.crow} takes off for ${d.item_id}${d.borrowed ? " (borrowed)" : ""}`;
    case "crow.landed": return `${t} ${d.crow} lands from ${d.item_id}: ${d.ok ? "ok" : "failed: " + d.error} (${d.tokens} tokens)`;
    case "item.answered": return `${t} answer for ${d.item_id} by ${d.crows.join(", ")}:\n${d.answer}`;
    case "verdict": return `${t} ${d.target} verdict on ${d.item_id}: ${d.verdict}`;
    case "trust.changed": return `${t} trust: ${d.holder} on ${d.task_type} ${d.from} → ${d.to}`;
    case "item.skipped": return `${t} ${d.item_id} skipped: ${d.reason}`;
    case "requester.pranked": return `${t} ${d.message} (cooldown ${d.cooldown_s} s)`;
    case "list.finished": return `${t} list ${d.list_id} done: ${d.tokens_used} of ${d.token_budget} tokens`;
  }
  return `${t} ${name}`;
}

function showPending() {
  const ul = document.getElementById("pending");
  ul.replaceChildren();
  if (!pending.size) { ul.innerHTML = '<li class="quiet">nothing yet</li>'; return; }
  for (const [key, text] of pending) {
    const [itemId, target] = key.split(" ");
    const li = document.createElement("li");
    li.textContent = text + " ";
    for (const approve of [true, false]) {
      const b = document.createElement("button");
      b.textContent = approve ? "approve" : "reject";
      b.onclick = async () => {
        await fetch("/api/verdicts", { method: "POST", headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ item_id: itemId, target, approve }) });
      };
      li.append(b);
    }
    ul.append(li);
  }
}

function crowState(name, flying) {
  const li = document.querySelector(`#crows li[data-name="${name}"]`);
  if (li) li.classList.toggle("flying", flying);
}

async function loadCrowsAndNests() {
  const crows = await (await fetch("/api/crows")).json();
  document.getElementById("crows").replaceChildren(...crows.map(c => {
    const li = document.createElement("li");
    li.dataset.name = c.name;
    li.title = c.backstory;
    li.textContent = `${c.name}, ${c.epithet} — ${c.strength}`;
    return li;
  }));
  const nests = await (await fetch("/api/nests")).json();
  document.getElementById("nest-select").replaceChildren(...nests.nests.map(n => new Option(n.name, n.nest_id)));
}

function follow() {
  const source = new EventSource("/api/events");
  const status = document.getElementById("status");
  source.onopen = () => { status.textContent = "following the flock live"; };
  source.onerror = () => { status.textContent = "connection lost; reconnecting…"; };
  for (const name of EVENTS) {
    source.addEventListener(name, (e) => {
      const d = JSON.parse(e.data);
      const cls = name === "item.skipped" ? "skipped" : name === "item.answered" ? "answered" : "";
      line(describe(name, d), cls);
      if (name === "crow.flying") crowState(d.crow, true);
      if (name === "crow.landed") crowState(d.crow, false);
      if (name === "item.triaged" && d.needs_approval) pending.set(`${d.item_id} triage`, `triage of ${d.item_id}: ${d.mode} ${d.task_type}`);
      if (name === "item.answered" && d.needs_approval) pending.set(`${d.item_id} output`, `answer for ${d.item_id}`);
      if (name === "verdict") pending.delete(`${d.item_id} ${d.target}`);
      if (name === "item.skipped") { pending.delete(`${d.item_id} triage`); pending.delete(`${d.item_id} output`); }
      showPending();
    });
  }
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
