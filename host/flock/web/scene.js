// The scene: the sky over the perch, where each list being worked has a marker, and a crow that
// sets off on an item flies there and back. It moves the crow's whole figure (its drawing, SVG or
// Rive, with its bubble), so it works for either renderer; the renderer draws the pose (wings,
// landing, falling) from the state-machine inputs.
//
// The flock may answer in milliseconds (a fake model, a cached answer): a crow stays out at least
// AWAY_MS so a person sees it go.

import { hush } from "/web/bubble.js";
import { el } from "/web/dom.js";
import { listTitle } from "/web/lists.js";
import { E } from "/web/events.js";

const AWAY_MS = 2600;
const BURST_MS = 100; // a trip this short ended by its list's end was replayed, not lived
const FINISHED_MARK_MS = 15000; // a finished list's marker stays this long, faded
const MARKS_KEPT = 4; // markers shown at once; the oldest finished one goes first
const SPREAD_PX = 96; // crows at one list stand apart by this much (a figure is 104 px wide)
const BELOW_PX = 105; // they hover just under the marker (its flag is their goal)

export class Scene {
  constructor(perch, roost) {
    this.perch = perch;
    this.roost = roost;
    this.out = new Map(); // crow -> {list, items: Set, since, timer}
    this.said = new Map(); // crow -> the list its bubble's line was said at
    window.addEventListener("resize", () => this.place()); // the perch reflows: crows out follow their marker
  }

  clear() {
    for (const name of [...this.out.keys()]) this.home(name);
    for (const name of [...this.said.keys()]) this.hushed(name);
    this.roost.replaceChildren();
  }

  apply(name, d) {
    switch (name) {
      case E.ListStarted:
        this.mark(d);
        break;
      case E.CrowFlying:
        this.go(d.crow, d.list_id, d.item_id);
        break;
      case E.CrowLanded:
        this.back(d.crow, d.item_id);
        break;
      case E.CrowBanter:
        this.said.set(d.crow, d.list_id); // the renderer shows the line; its moment is this list's
        break;
      case E.ItemSkipped:
        for (const [crow, trip] of this.out) if (trip.items.has(d.item_id)) this.back(crow, d.item_id);
        break;
      case E.ListFinished: {
        // A list replayed whole by the opening view starts and finishes in one burst: its crows
        // are home at once, and its marker goes soon. A live one's crows finish their trip.
        const burst = (trip) => performance.now() - trip.since < BURST_MS;
        for (const [crow, trip] of this.out) {
          if (trip.list !== d.list_id) continue;
          if (burst(trip)) this.home(crow); else for (const id of [...trip.items]) this.back(crow, id);
        }
        for (const [crow, listId] of this.said) if (listId === d.list_id) this.hushed(crow);
        const mark = this.markOf(d.list_id);
        if (mark) {
          mark.classList.add("finished");
          setTimeout(() => mark.remove(), FINISHED_MARK_MS);
        }
        break;
      }
    }
  }

  mark(d) {
    if (this.markOf(d.list_id)) return;
    const mark = el("div", "list-mark");
    mark.dataset.listId = d.list_id;
    mark.append(el("span", "flag", ""), el("span", "label", listTitle(d.requester)),
      el("span", "count", `${d.items.length} item${d.items.length === 1 ? "" : "s"}`));
    this.roost.append(mark);
    const marks = [...this.roost.children];
    while (marks.length > MARKS_KEPT) {
      const old = marks.find(m => m.classList.contains("finished")) || marks[0];
      marks.splice(marks.indexOf(old), 1);
      old.remove();
    }
  }

  markOf(listId) {
    return [...this.roost.children].find(m => m.dataset.listId === listId);
  }

  figure(name) {
    return [...this.perch.querySelectorAll("figure.crow")].find(f => f.dataset.name === name);
  }

  go(name, listId, itemId) {
    if (this.said.has(name) && this.said.get(name) !== listId) this.hushed(name); // a new moment elsewhere
    const trip = this.out.get(name) || { list: listId, items: new Set() };
    clearTimeout(trip.timer);
    trip.items.add(itemId);
    trip.list = listId;
    trip.since = performance.now();
    this.out.set(name, trip);
    this.place();
  }

  back(name, itemId) {
    const trip = this.out.get(name);
    if (!trip) return;
    trip.items.delete(itemId);
    if (trip.items.size) return;
    clearTimeout(trip.timer);
    const wait = Math.max(0, AWAY_MS - (performance.now() - trip.since));
    trip.timer = setTimeout(() => this.home(name), wait);
  }

  home(name) {
    clearTimeout(this.out.get(name)?.timer);
    this.out.delete(name);
    this.hushed(name);
    const figure = this.figure(name);
    if (figure) {
      figure.style.transform = "";
      figure.classList.remove("away");
    }
    this.place();
  }

  // The crow's line is over: its bubble goes (whichever renderer drew the figure, the bubble is in it).
  hushed(name) {
    this.said.delete(name);
    const bubble = this.figure(name)?.querySelector(".bubble");
    if (bubble) hush(bubble);
  }

  // Every crow that is out stands at its list's marker, side by side. Positions are offsets within
  // the sky (#sky is the one positioned box around both), which a transform in flight never moves.
  place() {
    const atList = new Map();
    for (const [name, trip] of this.out) atList.set(trip.list, [...(atList.get(trip.list) || []), name]);
    for (const [listId, names] of atList) {
      const mark = this.markOf(listId);
      if (!mark) continue;
      const [markX, markY] = centre(mark);
      names.forEach((name, n) => {
        const figure = this.figure(name);
        if (!figure) return;
        const [homeX, homeY] = centre(figure);
        const x = markX + (n - (names.length - 1) / 2) * SPREAD_PX - homeX;
        const y = markY + BELOW_PX - homeY;
        figure.style.transform = `translate(${Math.round(x)}px, ${Math.round(y)}px)`;
        figure.classList.add("away");
      });
    }
  }
}

function centre(node) {
  return [node.offsetLeft + node.offsetWidth / 2, node.offsetTop + node.offsetHeight / 2];
}
