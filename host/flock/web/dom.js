// The small DOM helpers the page's modules share.

// A new element with an optional class and text (text, never HTML: data from the flock is untrusted).
export function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

// An element of index.html by its id.
export const $ = (id) => document.getElementById(id);

// The header's status line (#conn): how the page stands with the flock ("connecting", "live", "down").
export function showConnection(state, text) {
  const conn = $("conn");
  conn.className = `conn ${state}`;
  conn.textContent = text;
}
