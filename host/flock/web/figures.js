// The default renderer: each crow an inline SVG figure on the perch, animated with CSS.
// It implements the crow machine of docs/ui-inputs.md: booleans and numbers become classes and
// data attributes; a trigger adds a class for one animation; `talk` shows the line in a bubble.

import { el } from "/web/dom.js";
import { bubble, say } from "/web/bubble.js";

const SVG = "http://www.w3.org/2000/svg";
const TRIGGER_MS = 1400;
const TRUST_NAMES = ["stranger", "regular", "trusted"];

// One crow, facing right: tail, body, wing (flaps in flight), head, eye, beak, legs.
const CROW = `
  <path class="tail" d="M14 44 L2 38 L6 50 Z"/>
  <ellipse class="body" cx="28" cy="44" rx="17" ry="12"/>
  <path class="wing" d="M20 40 Q32 26 44 40 Q32 46 20 40 Z"/>
  <circle class="head" cx="46" cy="28" r="10"/>
  <circle class="eye" cx="49" cy="26" r="2.2"/>
  <path class="beak" d="M55 26 L66 30 L55 33 Z"/>
  <path class="legs" d="M24 55 L22 64 M32 55 L34 64"/>`;

export class SvgCrows {
  constructor(perch) {
    this.perch = perch;
    this.figures = new Map(); // name -> {figure, bubble, badge}
    this.crows = [];
  }

  // `crows`: [{name, epithet, strength, backstory}] from /api/crows.
  draw(crows) {
    this.crows = crows;
    this.perch.replaceChildren();
    for (const crow of crows) {
      const figure = el("figure", "crow");
      figure.dataset.name = crow.name;
      figure.title = `${crow.name}, ${crow.epithet}: ${crow.backstory}`;
      const svg = document.createElementNS(SVG, "svg");
      svg.setAttribute("viewBox", "0 0 70 68");
      svg.setAttribute("aria-hidden", "true");
      svg.innerHTML = CROW; // our own constant markup, no data in it
      const speech = bubble();
      const badge = el("span", "trust-badge", "");
      const caption = el("figcaption");
      caption.append(el("strong", "", crow.name), el("span", "epithet", crow.epithet), badge);
      figure.append(speech, svg, caption);
      this.perch.append(figure);
      this.figures.set(crow.name, { figure, bubble: speech, badge });
    }
  }

  // The page starts over from a fresh view: the same crows, as they were drawn first.
  reset() {
    this.draw(this.crows);
  }

  // One input record from FlockInputs.apply (machine "crow" only; lists and items are the cards' job).
  input(rec) {
    if (rec.machine !== "crow") return;
    const crow = this.figures.get(rec.target);
    if (!crow) return;
    const { figure } = crow;
    if (rec.type === "boolean") figure.classList.toggle(rec.input, Boolean(rec.value));
    else if (rec.input === "trust") {
      figure.dataset.trust = rec.value;
      crow.badge.textContent = TRUST_NAMES[rec.value] || "";
    } else if (rec.type === "trigger") {
      this.flash(figure, rec.input);
      if (rec.input === "talk") say(crow.bubble, rec.text, rec.to);
    }
  }

  flash(figure, name) {
    figure.classList.remove(name);
    void figure.offsetWidth; // restart the animation when the same trigger fires twice in a row
    figure.classList.add(name);
    clearTimeout(figure[`_${name}`]);
    figure[`_${name}`] = setTimeout(() => figure.classList.remove(name), TRIGGER_MS);
  }
}
