// The trust ledger: holder × task type, each level by name with its streak's progress to the
// next, from GET /api/trust. A judged verdict moves
// its streaks, so the page asks for it again after a burst of verdicts (one fetch for the burst).

import { el } from "/web/dom.js";

const SOON_MS = 250;

// One holder's standing in one kind of task: its level, and how far its streak of approvals is
// towards the next one (`levels` names them; the last level has no next).
function trustCell(entry, ledger) {
  const cell = el("td", `level-${entry.level}`);
  const next = ledger.levels[String(entry.level + 1)];
  cell.append(el("span", "level", entry.name));
  if (next) {
    const bar = document.createElement("progress");
    bar.max = ledger.promote_after;
    bar.value = Math.min(entry.streak, ledger.promote_after);
    const words = `${bar.value} of ${ledger.promote_after} approvals in a row to ${next}`;
    bar.title = words;
    bar.setAttribute("aria-label", words);
    cell.append(bar, el("span", "streak", `${bar.value}/${ledger.promote_after}`));
    cell.title = words;
  } else {
    cell.title = `${entry.streak} approvals in a row`;
  }
  return cell;
}

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
      row.append(entry ? trustCell(entry, ledger) : el("td"));
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
