// The page's state: what the event stream builds, and where each event goes. The list cards
// (lists.js), the approvals waiting for you (approvals.js) and, through FlockInputs (inputs.js),
// the crows' state-machine inputs for the renderer (the SVG figures, or the user's Rive file).
// All of it is rebuilt from the stream; `startOver` empties it for a fresh view.

import { FlockInputs } from "/web/inputs.js";
import { E, V } from "/web/events.js";

export class Board {
  // `ledger`: the trust ledger (ledger.js); `scene`: the sky where crows fly to their lists (scene.js).
  // (Whether a model thinks here the page says at open, from /api/ui: page.js.)
  constructor({ lists, approvals, renderer, ledger, scene }) {
    Object.assign(this, { lists, approvals, renderer, ledger, scene });
    this.inputs = new FlockInputs();
  }

  apply(name, d) {
    this.lists.apply(name, d);
    this.approvals.apply(name, d, this.lists);
    for (const record of this.inputs.apply(name, d)) this.renderer.input(record);
    this.scene.apply(name, d);
    // A judged verdict moves the ledger's streaks (a level change comes as trust.changed too).
    if (name === E.VerdictGiven && d.verdict !== V.AUTO) this.ledger.loadSoon();
  }

  startOver() {
    this.lists.clear();
    this.approvals.clear();
    this.inputs = new FlockInputs();
    this.scene.clear();
    this.renderer.reset?.(); // the SVG figures are drawn afresh; a Rive file keeps its machines
  }
}
