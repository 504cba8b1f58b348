// Answers are model output: Markdown, and untrusted. They are rendered with marked and then
// sanitized with DOMPurify (both from npm, served by the flock from node_modules/). Where the
// libraries are not installed the answer is shown as plain text, and the page says why.

let libraries = null; // {marked, DOMPurify} once loaded; false when unavailable

export async function loadMarkdown(installed) {
  if (!installed["marked.js"] || !installed["purify.js"]) { libraries = false; return false; }
  try {
    const [{ marked }, purify] = await Promise.all([import("/vendor/marked.js"), import("/vendor/purify.js")]);
    libraries = { marked, DOMPurify: purify.default };
    // Links in answers open elsewhere and never hand this page to the target.
    libraries.DOMPurify.addHook("afterSanitizeAttributes", (node) => {
      if (node.tagName === "A" && node.hasAttribute("href")) {
        node.setAttribute("target", "_blank");
        node.setAttribute("rel", "noopener noreferrer");
      }
    });
    return true;
  } catch (error) {
    console.warn("markdown libraries failed to load; answers are plain text", error);
    libraries = false;
    return false;
  }
}

// Fill `container` with the answer: sanitized HTML, or plain text with a note.
export function showAnswer(container, text) {
  container.replaceChildren();
  if (libraries) {
    render(container, text);
    return;
  }
  const pre = document.createElement("pre");
  pre.textContent = text;
  const note = document.createElement("p");
  note.className = "note";
  note.textContent = "shown as plain text: the Markdown libraries are not installed (run npm ci in the soulstack checkout)";
  container.append(pre, note);
}

// A line of a nest's conversation: untrusted too, rendered the same way once the libraries are loaded;
// before then (or without them), its text as written, line breaks kept, with no note on every line.
export function showLine(container, text) {
  container.replaceChildren();
  if (libraries) {
    render(container, text);
    return;
  }
  container.textContent = text;
  container.classList.add("plain");
}

function render(container, text) {
  const html = libraries.DOMPurify.sanitize(libraries.marked.parse(text), { USE_PROFILES: { html: true } });
  container.innerHTML = html; // sanitized just above: no scripts, handlers or javascript: URLs survive
  container.classList.add("markdown");
}
