// The flock's page, started here. First what the flock offers (/api/ui: its libraries, the Rive file,
// its event names (events.js) and token cookie), its crows and its nests; then the Markdown libraries and the
// crows' renderer; then the event stream (stream.js) into the page's state (board.js), so every
// event finds its renderer ready. A locked flock asks for its token first (unlock.js).
//
// Events go two ways: into the cards (lists.js, approvals.js) and, through FlockInputs (inputs.js),
// into state-machine inputs for the crow figures (Rive: the flock's own crows, or the owner's file with
// --rive; SVG without the runtime), and into the scene (scene.js), where crows fly to their lists.

import { Approvals } from "/web/approvals.js";
import { Board } from "/web/board.js";
import { $, showConnection } from "/web/dom.js";
import { learnEvents } from "/web/events.js";
import { SvgCrows } from "/web/figures.js";
import { listForm, offerNests } from "/web/form.js";
import { Ledger } from "/web/ledger.js";
import { Lists } from "/web/lists.js";
import { loadMarkdown } from "/web/markdown.js";
import { Nests } from "/web/nests.js";
import { startRive } from "/web/rive.js";
import { Scene } from "/web/scene.js";
import { follow } from "/web/stream.js";
import { askForToken } from "/web/unlock.js";

const RETRY_MS = 3000; // the flock was unreachable at start-up: ask it again this much later

async function json(url) {
  return (await fetch(url)).json();
}

// Rive (the owner's --rive file, else the flock's own crows) when the runtime is installed and the
// file has the crow machine; else the SVG figures, saying why.
async function drawCrows(ui, crows) {
  const perch = $("perch");
  const svg = new SvgCrows(perch);
  svg.draw(crows); // drawn at once; Rive replaces them when it is ready
  try {
    return await startRive(ui, perch, crows);
  } catch (error) {
    const note = $("renderer-note");
    note.textContent = `Drawing the crows in SVG: ${error.message}.`;
    note.hidden = false;
  }
  return svg;
}

// Said at open, before anything is posted: a flock without a model skips every list, and a demo's
// answers are canned (/api/ui's `mind`: none, demo or model).
function showMind(mind) {
  $("no-model").hidden = mind.kind !== "none";
  $("demo").hidden = mind.kind !== "demo";
}

async function start() {
  let ui, crows, nests;
  try {
    const answer = await fetch("/api/ui");
    if (answer.status === 401) {
      askForToken();
      return;
    }
    [ui, crows, nests] = await Promise.all([answer.json(), json("/api/crows"), json("/api/nests")]);
  } catch (error) {
    showConnection("down", `the flock is unreachable (${error.message}); reload when it is back`);
    setTimeout(start, RETRY_MS);
    return;
  }
  learnEvents(ui); // before anything handles an event: the modules name events as E.<declaration>
  showMind(ui.mind);
  offerNests($("list-form"), nests);
  new Nests($("nest-list"), ui, crows, (data) => offerNests($("list-form"), data)).show(nests);
  await loadMarkdown(ui.vendor);
  const ledger = new Ledger($("ledger"));
  const lists = new Lists($("lists"));
  $("earlier").addEventListener("toggle", () => { if ($("earlier").open) lists.showEarlier($("earlier-lists")); });
  const board = new Board({
    lists, approvals: new Approvals($("pending"), $("waiting-count")),
    renderer: await drawCrows(ui, crows), ledger, scene: new Scene($("perch"), $("roost")),
  });
  ledger.load();
  follow(ui.events, board);
}

listForm($("list-form"), $("form-answer"));
start();
