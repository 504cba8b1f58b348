// The speech bubble over a crow, for either renderer (figures.js, rive.js): a crow.banter line
// ("@to text") shown for a while, the timer restarting when the crow speaks again. A line belongs
// to its moment: the scene hushes it when the crow goes home, flies to another list, or the list
// it was said at finishes (scene.js), so an old line never hangs over the sky or a list's marker.

import { el } from "/web/dom.js";

const BUBBLE_MS = 9000;
const hiding = new WeakMap(); // bubble -> its timer

// A hidden bubble, to go before the crow's drawing in its figure.
export function bubble() {
  const node = el("p", "bubble");
  node.hidden = true;
  return node;
}

export function say(node, text, to) {
  node.textContent = to ? `@${to} ${text}` : text;
  node.hidden = false;
  // A crow near the right edge speaks leftward, so its line stays on the page.
  const figure = node.parentElement;
  node.classList.toggle("leftward", Boolean(figure) && figure.getBoundingClientRect().left > window.innerWidth / 2);
  clearTimeout(hiding.get(node));
  hiding.set(node, setTimeout(() => { node.hidden = true; }, BUBBLE_MS));
}

export function hush(node) {
  clearTimeout(hiding.get(node));
  node.hidden = true;
}
