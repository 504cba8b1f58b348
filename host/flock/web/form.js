// The list form: a list's text, who asks and the nest, POSTed to /api/lists; the line under it
// says the list's id, or why not (and the text stays, so nothing typed is lost).

import { send } from "/web/net.js";

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
      answer.textContent = `accepted as list ${result.body.list_id}`;
      form.elements.text.value = "";
    } else {
      answer.className = "error";
      answer.textContent = result.message;
    }
  });
}
