// The list form: a list's text, who asks and the nest, POSTed to /api/lists; the line under it
// says it went (for a few seconds; the new list's id is its data-list-id), or why not (and the
// text stays, so nothing typed is lost).

import { listTitle } from "/web/lists.js";
import { send } from "/web/net.js";

const SENT_SHOWN_MS = 6000;

// The nests a list may go to (GET /api/nests), as the form's choices.
export function offerNests(form, data) {
  form.elements.nest_id.replaceChildren(...data.nests.map(n => new Option(n.name, n.nest_id)));
}

export function listForm(form, answer) {
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const data = new FormData(form);
    const button = form.querySelector("button");
    button.disabled = true;
    answer.className = "";
    answer.textContent = "sending…";
    const result = await send("/api/lists", { text: data.get("text"), requester: data.get("requester"),
      nest_id: data.get("nest_id") });
    button.disabled = false;
    if (result.status === 202) {
      // A word that it went, for a while; the list's card above is what lasts.
      answer.dataset.listId = result.body.list_id;
      answer.textContent = `sent: ${listTitle(data.get("requester"))} is with the flock`;
      form.elements.text.value = "";
      clearTimeout(answer._fade);
      answer._fade = setTimeout(() => { answer.textContent = ""; }, SENT_SHOWN_MS);
    } else {
      clearTimeout(answer._fade);
      answer.className = "error";
      answer.textContent = result.message;
    }
  });
}
