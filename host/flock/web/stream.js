// The flock's event stream. The page opens /api/events?recent=N: the server first replays every
// event of the last N lists and of every unfinished one (where all pending approvals live), then
// follows live, so the page is rebuilt from the server's log on every load. EventSource reconnects
// by itself with Last-Event-ID, so nothing is missed or shown twice; if the server refuses the
// stream (its data was wiped, say) the page starts over from a fresh view.

import { showConnection } from "/web/dom.js";

const RECENT_LISTS = 20;
const START_OVER_MS = 3000;

// `events`: the stream's event names (/api/ui serves them); `board`: where each one goes (board.js).
export function follow(events, board) {
  const source = new EventSource(`/api/events?recent=${RECENT_LISTS}`);
  source.onopen = () => showConnection("live", "live: following the flock");
  source.onerror = () => {
    if (source.readyState !== EventSource.CLOSED) {
      showConnection("down", "the flock is unreachable; reconnecting…");
      return;
    }
    showConnection("down", "the server refused the stream; starting over in 3 s…");
    setTimeout(() => {
      board.startOver();
      follow(events, board);
    }, START_OVER_MS);
  };
  for (const name of events) {
    source.addEventListener(name, (e) => board.apply(name, JSON.parse(e.data)));
  }
}
