// The Rive renderer: the user's .riv (`soulstack flock --rive FILE`) draws each crow with the
// official runtime, @rive-app/canvas, served by the flock from node_modules/ (never a CDN: the
// wasm URL is pinned to ours and the CDN fallback is switched off).
//
// The file must have a state machine named "crow" with the inputs of MACHINES.crow (names and
// types, docs/ui-inputs.md). `startRive` resolves to a renderer, or throws an Error whose message
// says what is missing; the page then draws SVG and shows that message.

import { mismatch } from "/web/inputs.js";
import { bubble, say } from "/web/bubble.js";

const MACHINE = "crow";

function loadScript(src) {
  return new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = src;
    script.onload = resolve;
    script.onerror = () => reject(new Error(`could not load ${src}`));
    document.head.append(script);
  });
}

function loadOne(rive, src, name, canvas) {
  return new Promise((resolve, reject) => {
    const anim = new rive.Rive({
      src, canvas, autoplay: false, // the machine is started once we know the file has it
      onLoad: () => resolve(anim),
      onLoadError: () => reject(new Error(`${name} is not a Rive file this runtime can read`)),
    });
  });
}

export async function startRive(info, perch, crows) {
  if (!info.vendor["rive.js"] || !info.vendor["rive.wasm"]) {
    throw new Error("the Rive runtime (@rive-app/canvas) is not installed; run npm ci");
  }
  if (!info.rive.exists) throw new Error(`the Rive file ${info.rive.name} was not found`);
  await loadScript("/vendor/rive.js");
  const rive = window.rive;
  // Rive now prefers data binding, but state-machine inputs are this contract (docs/ui-inputs.md).
  rive.Rive.suppressDeprecationWarnings = ["state-machine-inputs"];
  rive.RuntimeLoader.setWasmUrl("/vendor/rive.wasm");
  rive.RuntimeLoader.setWasmFallbackUrl(null);
  const figures = new Map();
  perch.replaceChildren();
  for (const crow of crows) {
    const figure = document.createElement("figure");
    figure.className = "crow rive";
    figure.dataset.name = crow.name;
    const canvas = document.createElement("canvas");
    canvas.width = 120;
    canvas.height = 120;
    const caption = document.createElement("figcaption");
    caption.textContent = crow.name;
    const speech = bubble();
    figure.append(speech, canvas, caption);
    perch.append(figure);
    const anim = await loadOne(rive, info.rive.url, info.rive.name, canvas);
    if (!anim.stateMachineNames.includes(MACHINE)) {
      throw new Error(`${info.rive.name} has no state machine named "${MACHINE}" (it has: ${anim.stateMachineNames.join(", ") || "none"})`);
    }
    anim.play(MACHINE);
    const inputs = anim.stateMachineInputs(MACHINE) || [];
    const kinds = { 56: "number", 58: "trigger", 59: "boolean" }; // rive.StateMachineInputType
    const wrong = mismatch(MACHINE, inputs.map(i => ({ name: i.name, type: kinds[i.type] || String(i.type) })));
    if (wrong) throw new Error(`${info.rive.name}: state machine "${MACHINE}": ${wrong}`);
    figures.set(crow.name, { inputs: new Map(inputs.map(i => [i.name, i])), bubble: speech, figure });
  }
  return {
    input(rec) {
      const crow = rec.machine === MACHINE && figures.get(rec.target);
      const input = crow && crow.inputs.get(rec.input);
      if (!input) return;
      if (rec.type === "trigger") input.fire(); else input.value = rec.value;
      // The figure shows what the runtime now holds (a boolean as a class, like the SVG figures).
      if (rec.type === "boolean") crow.figure.classList.toggle(rec.input, Boolean(input.value));
      if (rec.type === "number") crow.figure.dataset[rec.input] = String(input.value);
      if (rec.input === "talk") say(crow.bubble, rec.text, rec.to);
    },
  };
}
