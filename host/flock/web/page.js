// The flock's page. It opens /api/events?recent=N: the server first replays every event of the
// last N lists and of every unfinished one (where all pending approvals live), then follows live,
// so everything here is rebuilt from the server's log on every load. EventSource reconnects by
// itself with Last-Event-ID, so nothing is missed or shown twice; if the server refuses the
// stream (its data was wiped, say) the page starts over from a fresh view.
//
// Events go two ways: into the cards (lists.js) and, through FlockInputs, into state-machine
// inputs for the crow figures (SVG by default, the user's Rive file with --rive).

import { FlockInputs } from "/web/inputs.js";
import { SvgCrows } from "/web/figures.js";
import { Lists } from "/web/lists.js";
import { loadMarkdown } from "/web/markdown.js";
import { Approvals } from "/web/approvals.js";
import { showLedger, showNests } from "/web/ledger.js";
import { startRive } from "/web/rive.js";
import { send } from "/web/net.js";

const RECENT_LISTS = 20;
const EVENTS = ["list.started", "item.triaged", "crow.flying", "crow.landed", "crow.banter", "item.answered",
  "verdict", "trust.changed", "item.skipped", "requester.pranked", "list.finished"];
const NO_MODEL = "no model configured"; // the item.skipped reason of a flock without a model

const $ = (id) => document.getElementById(id);
const conn = $("conn");
let inputs = new FlockInputs();
let renderer = null;
let crows = [];
const lists = new Lists($("lists"));
const approvals = new Approvals($("pending"), $("waiting-count"));

function connection(state, text) {
  conn.className = `conn ${state}`;
  conn.textContent = text;
}

function drive(records) {
  for (const record of records) renderer.input(record);
}

function onEvent(name, d) {
  lists.apply(name, d);
  approvals.apply(name, d, lists);
  drive(inputs.apply(name, d));
  // A judged verdict moves the ledger's streaks (a level change comes as trust.changed too).
  if (name === "verdict" && d.verdict !== "auto") refreshLedgerSoon();
  // The notice follows the latest word: a skip for want of a model shows it, any triage hides it.
  if (name === "item.skipped" && d.reason === NO_MODEL) $("no-model").hidden = false;
  if (name === "item.triaged") $("no-model").hidden = true;
}

function follow() {
  const source = new EventSource(`/api/events?recent=${RECENT_LISTS}`);
  source.onopen = () => connection("live", "live: following the flock");
  source.onerror = () => {
    if (source.readyState !== EventSource.CLOSED) {
      connection("down", "the flock is unreachable; reconnecting…");
      return;
    }
    connection("down", "the server refused the stream; starting over in 3 s…");
    setTimeout(startOver, 3000);
  };
  for (const name of EVENTS) {
    source.addEventListener(name, (e) => onEvent(name, JSON.parse(e.data)));
  }
}

function startOver() {
  lists.clear();
  approvals.clear();
  inputs = new FlockInputs();
  if (renderer instanceof SvgCrows) renderer.draw(crows);
  follow();
}

// One fetch for a burst of verdicts (an opening view replays many at once).
let ledgerTimer = null;
function refreshLedgerSoon() {
  clearTimeout(ledgerTimer);
  ledgerTimer = setTimeout(refreshLedger, 250);
}

async function refreshLedger() {
  try {
    showLedger($("ledger"), await (await fetch("/api/trust")).json());
  } catch (error) {
    $("ledger").textContent = `could not load the trust ledger: ${error.message}`;
  }
}

async function drawCrows(ui) {
  const perch = $("perch");
  const svg = new SvgCrows(perch);
  if (ui.rive) {
    try {
      renderer = await startRive(ui, perch, crows);
    } catch (error) {
      const note = $("renderer-note");
      note.textContent = `Drawing the crows in SVG: ${error.message}.`;
      note.hidden = false;
    }
  }
  if (!renderer) { svg.draw(crows); renderer = svg; }
}

// A locked flock (soulstack flock --token) answers /api/ with 401: ask for the token once and keep it
// in the cookie the server reads, which is how the event stream (no headers) carries it too.
const TOKEN_COOKIE = "soulstack_flock_token";

function askForToken(refused) {
  connection("down", "this flock is locked");
  const form = $("unlock");
  form.hidden = false;
  if (refused) $("unlock-answer").textContent = "that token was not accepted; try again";
  form.onsubmit = (e) => {
    e.preventDefault();
    const token = form.elements.token.value.trim();
    // The server compares the cookie's value as it is, so it must be a plain cookie value.
    if (!/^[A-Za-z0-9._~+\/=-]+$/.test(token)) {
      $("unlock-answer").textContent = "a page can keep only tokens of letters, digits and . _ ~ + / = -";
      return;
    }
    document.cookie = `${TOKEN_COOKIE}=${token}; path=/; SameSite=Strict`;
    location.reload();
  };
}

// Libraries and figures first, then the stream: every event finds its renderer ready.
async function start() {
  let ui = { vendor: {}, rive: null };
  try {
    const answer = await fetch("/api/ui");
    if (answer.status === 401) {
      askForToken(document.cookie.includes(`${TOKEN_COOKIE}=`));
      return;
    }
    [ui, crows] = await Promise.all([answer.json(), (await fetch("/api/crows")).json()]);
    const nests = await (await fetch("/api/nests")).json();
    $("nest-select").replaceChildren(...nests.nests.map(n => new Option(n.name, n.nest_id)));
    showNests($("nest-list"), nests, ui.nest_messages);
  } catch (error) {
    connection("down", `the flock is unreachable (${error.message}); reload when it is back`);
  }
  await loadMarkdown(ui.vendor);
  await drawCrows(ui);
  refreshLedger();
  follow();
}

$("list-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const form = e.target;
  const data = new FormData(form);
  const answer = $("form-answer");
  const button = form.querySelector("button");
  button.disabled = true;
  answer.className = "";
  answer.textContent = "sending…";
  const result = await send("/api/lists", { text: data.get("text"), requester: data.get("requester"),
    nest_id: data.get("nest_id") });
  button.disabled = false;
  if (result.status === 202) {
    answer.textContent = `accepted as list ${result.body.list_id}`;
    form.elements.text.value = "";
  } else {
    answer.className = "error";
    answer.textContent = result.message;
  }
});

start();
