// The one small DOM helper the page's modules share.

// A new element with an optional class and text (text, never HTML: data from the flock is untrusted).
export function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}
