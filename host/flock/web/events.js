// The flock's event names as the server declares them (host/flock/payloads.py), learned from /api/ui's
// `names` before any event is handled: `E.ItemTriaged` is the wire's name of that event. The page
// names an event only through E, so no wire name is written here a second time; the fields each
// event has are /api/ui's `fields` (tests/flock/test_event_declarations.py checks that the scripts
// read only declared ones).

export const E = {};
export const V = {}; // the verdicts: V.APPROVED, V.REJECTED, V.AUTO, V.TIMEOUT (/api/ui's `verdicts`)

export function learnEvents(ui) {
  Object.assign(E, ui.names);
  Object.assign(V, ui.verdicts);
}
