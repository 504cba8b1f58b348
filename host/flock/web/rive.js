// The Rive renderer: a .riv draws each crow with the official runtime, @rive-app/canvas, served by
// the flock from node_modules/ (never a CDN: the wasm URL is pinned to ours and the CDN fallback is
// switched off). The file is the flock's own (host/flock/rive/, ten artboards named after the
// crows) unless the owner gave `soulstack flock --rive FILE`. A crow whose name is one of the
// file's artboards is drawn with that artboard, any other with the file's first one.
//
// Every artboard used must have a state machine named "crow" with the inputs of MACHINES.crow
// (names and types, docs/ui-inputs.md). `startRive` resolves to a renderer, or throws an Error
// whose message says what is missing; the page then draws SVG and shows that message.

import { mismatch } from "/web/inputs.js";
import { bubble, say } from "/web/bubble.js";
import { el } from "/web/dom.js";

const MACHINE = "crow";
const TRIGGER_MS = 1400; // how long a trigger's class stays on the figure (as the SVG figures do)
const KINDS = { 56: "number", 58: "trigger", 59: "boolean" }; // rive.StateMachineInputType
const TRUST_NAMES = ["stranger", "regular", "trusted"];
// Reduced motion (docs/rive-crows.md): the runtime stops rendering, so the canvas holds a still
// pose; a state change draws the new pose once now and once more when the longest of the crow's
// transitions (the droop, 2.5 s) is over, and stops again.
const REDUCED = "(prefers-reduced-motion: reduce)";
const SETTLE_MS = 2600;

function loadScript(src) {
  return new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = src;
    script.onload = resolve;
    script.onerror = () => reject(new Error(`could not load ${src}`));
    document.head.append(script);
  });
}

function loadOne(rive, buffer, name, canvas, artboard, machine) {
  return new Promise((resolve, reject) => {
    const anim = new rive.Rive({
      buffer: buffer.slice(0), canvas, artboard, autoplay: false, ...(machine ? { stateMachine: machine } : {}),
      onLoad: () => resolve(anim),
      onLoadError: event => reject(Object.assign(new Error(`${name} is not a Rive file this runtime can read`),
        { noMachine: /State Machine with name/.test(String(event?.data)) })),
    });
  });
}

// Naming the machine keeps the runtime from instancing the first linear animation (and warning
// "No `stateMachine` was specified"); it starts only once startRive has checked its inputs. A file
// without it is loaded again unnamed, so that startRive can say which machines it has.
async function loadCrow(rive, buffer, name, canvas, artboard) {
  try {
    return await loadOne(rive, buffer, name, canvas, artboard, MACHINE);
  } catch (error) {
    if (!error.noMachine) throw error;
    return loadOne(rive, buffer, name, canvas, artboard, null);
  }
}

async function fetchFile(info) {
  const answer = await fetch(info.rive.url);
  if (!answer.ok) throw new Error(`the Rive file ${info.rive.name} could not be fetched (${answer.status})`);
  return answer.arrayBuffer();
}

export async function startRive(info, perch, crows) {
  if (!info.vendor["rive.js"] || !info.vendor["rive.wasm"]) {
    throw new Error("the Rive runtime (@rive-app/canvas) is not installed; run npm ci");
  }
  if (!info.rive.exists) throw new Error(`the Rive file ${info.rive.name} was not found`);
  const buffer = await fetchFile(info);
  await loadScript("/vendor/rive.js");
  const rive = window.rive;
  // Rive now prefers data binding, but state-machine inputs are this contract (docs/ui-inputs.md).
  rive.Rive.suppressDeprecationWarnings = ["state-machine-inputs"];
  rive.RuntimeLoader.setWasmUrl("/vendor/rive.wasm");
  rive.RuntimeLoader.setWasmFallbackUrl(null);
  const figures = new Map();
  const made = [];
  let artboards = null; // the file's artboard names, read from the first instance
  try {
    for (const crow of crows) {
      const canvas = document.createElement("canvas");
      canvas.width = canvas.height = 240; // drawn at 2x for sharp edges; CSS sizes it
      canvas.setAttribute("aria-hidden", "true"); // the caption names the crow
      let anim = await loadCrow(rive, buffer, info.rive.name, canvas, artboards?.includes(crow.name) ? crow.name : undefined);
      made.push(anim);
      if (artboards === null) {
        artboards = (anim.contents.artboards || []).map(a => a.name);
        if (artboards.includes(crow.name) && anim.activeArtboard !== crow.name) {
          anim.cleanup();
          anim = await loadCrow(rive, buffer, info.rive.name, canvas, crow.name);
          made.push(anim);
        }
      }
      const machines = anim.stateMachineNames;
      const where = artboards.includes(crow.name) ? ` (artboard ${crow.name})` : "";
      if (!machines.includes(MACHINE)) {
        throw new Error(`${info.rive.name}${where} has no state machine named "${MACHINE}" (it has: ${machines.join(", ") || "none"})`);
      }
      anim.play(MACHINE);
      const inputs = anim.stateMachineInputs(MACHINE) || [];
      const wrong = mismatch(MACHINE, inputs.map(i => ({ name: i.name, type: KINDS[i.type] || String(i.type) })));
      if (wrong) throw new Error(`${info.rive.name}${where}: state machine "${MACHINE}": ${wrong}`);
      figures.set(crow.name, { crow, canvas, anim, inputs: new Map(inputs.map(i => [i.name, i])) });
    }
  } catch (error) {
    for (const anim of made) anim.cleanup();
    throw error;
  }
  // Only now, with every crow's machine in hand, do the figures replace whatever the perch held.
  perch.replaceChildren();
  for (const [name, f] of figures) {
    f.figure = el("figure", "crow rive");
    f.figure.dataset.name = name;
    f.figure.dataset.trust = "0";
    f.figure.title = `${name}, ${f.crow.epithet}: ${f.crow.backstory}`;
    f.bubble = bubble();
    f.badge = el("span", "trust-badge", TRUST_NAMES[0]);
    const caption = el("figcaption");
    caption.append(el("strong", "", name), el("span", "epithet", f.crow.epithet), f.badge);
    f.figure.append(f.bubble, f.canvas, caption);
    perch.append(f.figure);
  }
  return new RiveCrows(figures);
}

class RiveCrows {
  constructor(figures) {
    this.figures = figures;
    this.kind = "rive";
    const query = matchMedia(REDUCED);
    query.addEventListener("change", () => this.motion(query.matches)); // followed while the page is open
    this.motion(query.matches);
  }

  // Live: the runtime renders every frame (breathing, blinking, flapping). Reduced: a still pose.
  motion(reduced) {
    this.reduced = reduced;
    for (const crow of this.figures.values()) {
      if (reduced) {
        this.settle(crow);
      } else {
        clearTimeout(crow.settling);
        crow.anim.startRendering();
        crow.figure.dataset.motion = "live";
      }
    }
  }

  // Under reduced motion, show the pose a state change leads to without animating the way there.
  // data-motion says "settling" until the last still frame is drawn, then "still" (for the tests).
  settle(crow) {
    if (!this.reduced) return;
    clearTimeout(crow.settling);
    crow.figure.dataset.motion = "settling";
    this.drawOnce(crow, false);
    crow.settling = setTimeout(() => this.drawOnce(crow, true), SETTLE_MS);
  }

  // One frame, then no more. stopRendering keeps the machine playing, so the frame startRendering
  // draws has advanced by all the time since the last one: the pose the machine is in by now, not
  // a replay of the way there. Stopping at the next animation frame lets that frame be drawn first.
  drawOnce(crow, last) {
    crow.anim.startRendering();
    requestAnimationFrame(() => {
      if (!this.reduced) return; // live again meanwhile: keep rendering
      crow.anim.stopRendering();
      if (last) crow.figure.dataset.motion = "still";
    });
  }

  input(rec) {
    const crow = rec.machine === MACHINE && this.figures.get(rec.target);
    const input = crow && crow.inputs.get(rec.input);
    if (!input) return;
    if (rec.type === "trigger") input.fire(); else input.value = rec.value;
    // The figure also shows what the runtime now holds, as the SVG figures do (a boolean as a
    // class, a number as data, a trigger as a class for a moment): for the caption and the tests.
    const { figure } = crow;
    if (rec.type === "boolean") figure.classList.toggle(rec.input, Boolean(input.value));
    if (rec.type === "number") {
      figure.dataset[rec.input] = String(input.value);
      if (rec.input === "trust") crow.badge.textContent = TRUST_NAMES[input.value] || "";
    }
    if (rec.type === "trigger") {
      figure.classList.add(rec.input);
      clearTimeout(figure[`_${rec.input}`]);
      figure[`_${rec.input}`] = setTimeout(() => figure.classList.remove(rec.input), TRIGGER_MS);
    }
    if (rec.input === "talk") say(crow.bubble, rec.text, rec.to);
    this.settle(crow);
  }

  // A fresh view (the stream started over): nobody is out any more; trust is sent again.
  reset() {
    for (const crow of this.figures.values()) {
      for (const name of ["flying", "borrowed"]) {
        crow.inputs.get(name).value = false;
        crow.figure.classList.remove(name);
      }
      this.settle(crow);
    }
  }
}
