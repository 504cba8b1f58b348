// The nests with their core crows, and each nest's conversation. A conversation is offered when this
// flock serves nest messages (GET /api/nests/{id}/messages, as /api/ui reports); a flock without them
// shows the nests alone. An open conversation follows the nest's stream; closing its panel closes
// that stream (drawing the nests again closes every one), and opening it again catches up on what
// was said meanwhile (GET …/messages?after=N), so each message shows once, in the nest's order.
// A message the owner posts may address one crow (`to`); a new nest can be made here too.

import { send } from "/web/net.js";
import { el } from "/web/dom.js";
import { showLine } from "/web/markdown.js";

const NOT_ROSTER = new Set(["Sentry", "Elder"]); // they judge; they are no nest's core and take no messages

export class Nests {
  // `ui`: /api/ui's answer: `nest_messages` (conversations offered) and `nest_event` (the stream's event).
  // `crows`: GET /api/crows; `changed(data)`: called with GET /api/nests after a nest is made here.
  constructor(root, ui, crows = [], changed = () => {}) {
    this.root = root;
    this.ui = ui;
    this.roster = crows.map(c => c.name).filter(name => !NOT_ROSTER.has(name));
    this.changed = changed;
    this.talks = [];
  }

  // `data`: GET /api/nests.
  show(data) {
    this.close();
    this.talks = [];
    this.root.replaceChildren(...data.nests.map(nest => this.card(nest)), this.newNestForm());
  }

  // "A new nest": a name and its core crows, POSTed to /api/nests; the nests are drawn again.
  newNestForm() {
    const details = el("details", "new-nest");
    details.append(el("summary", "", "Make a new nest"));
    const form = el("form", "post");
    const name = el("input");
    Object.assign(name, { name: "name", placeholder: "its name", maxLength: 40, required: true });
    const picks = el("fieldset", "core-picks");
    picks.append(el("legend", "", "its core crows"));
    for (const crow of this.roster) {
      const label = el("label");
      const box = el("input");
      Object.assign(box, { type: "checkbox", name: "crows", value: crow });
      label.append(box, ` ${crow}`);
      picks.append(label);
    }
    const status = el("span", "reply");
    status.setAttribute("role", "status");
    form.append(name, picks, el("button", "", "Make the nest"), status);
    form.onsubmit = async (e) => {
      e.preventDefault();
      const crows = [...form.querySelectorAll("input[name=crows]:checked")].map(box => box.value);
      const result = await send("/api/nests", { name: name.value, crows });
      if (result.status !== 201) {
        status.className = "reply error";
        status.textContent = result.message;
        return;
      }
      try {
        const data = await (await fetch("/api/nests")).json();
        this.show(data);
        this.changed(data);
      } catch (error) {
        status.className = "reply error";
        status.textContent = `made, but the nests could not be read again (${error.message}); reload the page`;
      }
    };
    details.append(form);
    return details;
  }

  close() {
    for (const talk of this.talks) talk.close();
  }

  card(nest) {
    const card = el("div", "nest");
    card.dataset.nestId = nest.nest_id;
    card.append(el("h3", "", nest.name));
    const core = el("p", "crows");
    if (nest.crows.length) for (const crow of nest.crows) core.append(el("span", "chip", crow));
    else core.append(el("span", "quiet", "no core: crows come from the whole flock"));
    card.append(core);
    if (!this.ui.nest_messages) return card;
    const talk = new Conversation(nest.nest_id, this.ui.nest_event, nest.crows.length ? nest.crows : this.roster);
    this.talks.push(talk);
    card.append(talk.details);
    return card;
  }
}

const numberOf = (msgId) => Number(msgId.slice(msgId.lastIndexOf("-") + 1)); // "<nest_id>-<n>"

function showMessage(m) {
  const li = el("li", `message kind-${m.kind}`);
  li.dataset.msgId = m.msg_id;
  const head = el("p", "meta");
  head.append(el("strong", "", m.author), el("span", "chip", m.kind), el("span", "quiet", `tagged by ${m.tagged_by}`));
  if (m.to) head.append(el("span", "", `→ @${m.to}`));
  if (m.kind === "flag") head.append(el("span", "chip owner-question", "a question for you"));
  const text = el("div", "text");
  showLine(text, m.text); // Markdown, sanitized: a crow's "_(scripted offline answer)_" reads as intended
  li.append(head, text);
  if (m.kind === "flag") li.append(flagAnswer(m));
  return li;
}

// The owner's answer to a Sentry flag: uphold it (the crow stays quarantined) or release the crow.
// The page cannot tell from the history whether it was answered already: the server says so (404).
function flagAnswer(m) {
  const buttons = el("p", "buttons");
  const status = el("span", "reply");
  for (const [approve, label] of [[true, "Uphold"], [false, "Release"]]) {
    const button = el("button", approve ? "reject" : "approve", label);
    button.onclick = async () => {
      for (const b of buttons.querySelectorAll("button")) b.disabled = true;
      status.className = "reply";
      status.textContent = "sending…";
      const result = await send("/api/verdicts", { item_id: m.msg_id, target: "flag", approve });
      if (result.status === 204) {
        status.textContent = approve ? `upheld: ${m.to} stays quarantined` : `released: ${m.to} may talk again`;
        return;
      }
      status.className = "reply error";
      status.textContent = result.message;
      for (const b of buttons.querySelectorAll("button")) b.disabled = result.status === 404; // nothing waits: done
    };
    buttons.append(button);
  }
  buttons.append(status);
  return buttons;
}

// One nest's conversation: a <details> panel, its messages and a form to post to it.
class Conversation {
  // `crows`: who a message may be addressed to (the nest's core, else the whole roster).
  constructor(nestId, eventName, crows) {
    this.crows = crows;
    this.path = `/api/nests/${encodeURIComponent(nestId)}/messages`;
    this.streamUrl = `/api/events?nest_id=${encodeURIComponent(nestId)}`;
    this.eventName = eventName;
    this.state = "new"; // "new", "loading", "ready" (shown) or "failed" (its error shown, not retried)
    this.stream = null; // the EventSource while the panel is open
    this.shown = new Map(); // message number -> its <li>
    this.through = 0; // every message up to this number has been fetched
    this.ol = el("ol", "messages");
    this.details = el("details", "conversation");
    this.details.append(el("summary", "", "conversation"));
    this.details.addEventListener("toggle", () => (this.details.open ? this.open() : this.close()));
  }

  async open() {
    if (this.state === "failed" || this.stream) return;
    // The stream first, so a message posted while the history loads comes one way or the other.
    const stream = new EventSource(this.streamUrl);
    this.stream = stream;
    stream.addEventListener(this.eventName, (e) => this.add(JSON.parse(e.data)));
    stream.onopen = () => { if (this.state === "ready") this.catchUp(); }; // also after a reconnect
    if (this.state !== "new") return;
    this.state = "loading";
    try {
      this.take(await this.fetchAfter(0));
    } catch (error) {
      this.state = "failed";
      this.close();
      this.details.append(el("p", "error", `could not load the conversation (${error.message})`));
      return;
    }
    this.state = "ready";
    this.details.append(this.ol, this.postForm());
    if (this.stream?.readyState === EventSource.OPEN) this.catchUp(); // it opened while the history loaded
  }

  close() {
    if (!this.stream) return;
    this.stream.close();
    this.stream = null;
  }

  async fetchAfter(n) {
    const response = await fetch(n ? `${this.path}?after=${n}` : this.path);
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const answer = await response.json();
    return answer.messages || answer;
  }

  // What was said since the last fetch (while the panel was closed, or the stream was reconnecting).
  async catchUp() {
    try {
      this.take(await this.fetchAfter(this.through));
    } catch (error) {
      console.warn("could not catch up on the nest's conversation; opening it again tries again", error);
    }
  }

  take(messages) {
    for (const m of messages) {
      this.add(m);
      this.through = Math.max(this.through, numberOf(m.msg_id));
    }
  }

  add(m) {
    const n = numberOf(m.msg_id);
    if (this.shown.has(n)) return;
    const li = showMessage(m);
    const next = Math.min(...[...this.shown.keys()].filter(k => k > n)); // Infinity when it is the latest
    this.ol.insertBefore(li, this.shown.get(next) || null);
    this.shown.set(n, li);
  }

  postForm() {
    const form = el("form", "post");
    const text = el("input");
    text.name = "text";
    text.placeholder = "say something to the nest";
    const to = el("select");
    to.name = "to";
    to.append(new Option("to the whole nest", ""), ...this.crows.map(crow => new Option(`to @${crow}`, crow)));
    const status = el("span", "reply");
    form.append(to, text, el("button", "", "Post"), status);
    form.onsubmit = async (e) => {
      e.preventDefault();
      const result = await send(this.path, { author: "owner", text: text.value, to: to.value });
      status.className = result.status === 201 ? "reply" : "reply error";
      status.textContent = result.status === 201 ? "" : result.message;
      if (result.status === 201) text.value = "";
    };
    return form;
  }
}
