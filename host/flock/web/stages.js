// An item's stages, in the order it lives them: one encoding for the item machine's `stage` input
// (inputs.js; docs/ui-inputs.md: 0 queued … 5 verdict) and the track on the item's card (lists.js).
// Imported relatively by inputs.js, so node's tests load it from the file as the browser does.

export const STAGES = ["queued", "triaged", "flying", "landed", "answered", "verdict"];
export const STAGE = Object.fromEntries(STAGES.map((name, n) => [name, n]));

// What the card's track calls each stage after queued (queued is no step on it).
const SAID = { flying: "crows flying" };
export const TRACK = STAGES.slice(STAGE.triaged).map(name => ({ stage: STAGE[name], label: SAID[name] || name }));
