// The trust ledger: holder × task type, levels by name, from GET /api/trust. A judged verdict moves
// its streaks, so the page asks for it again after a burst of verdicts (one fetch for the burst).

import { el } from "/web/dom.js";

const SOON_MS = 250;

function showLedger(root, ledger) {
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

export class Ledger {
  constructor(root) {
    this.root = root;
    this.timer = null;
  }

  async load() {
    try {
      showLedger(this.root, await (await fetch("/api/trust")).json());
    } catch (error) {
      this.root.textContent = `could not load the trust ledger: ${error.message}`;
    }
  }

  // One fetch for a burst of verdicts (an opening view replays many at once).
  loadSoon() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.load(), SOON_MS);
  }
}
