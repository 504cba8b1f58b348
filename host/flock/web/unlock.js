// A locked flock (soulstack flock --token) answers /api/ with 401. The page asks for the token, tries
// it on /api/ui as a bearer header and keeps it in the cookie that answer names (`token_cookie`), which
// is how the event stream (no headers) carries it too; then it loads again, unlocked. The cookie's name
// is remembered, so a later load refused with that cookie (the token changed) says it was not accepted.

import { $, showConnection } from "/web/dom.js";

const REMEMBERED = "soulstack.flock.token_cookie"; // localStorage: the name of the token's cookie
const NOT_ACCEPTED = "that token was not accepted; try again";

function remembered() {
  try { return localStorage.getItem(REMEMBERED); } catch { return null; }
}

function remember(name) {
  try { localStorage.setItem(REMEMBERED, name); } catch { /* only the note on a refused load is lost */ }
}

function sentBefore() {
  const name = remembered();
  return Boolean(name) && document.cookie.split("; ").some(cookie => cookie.startsWith(`${name}=`));
}

export function askForToken() {
  showConnection("down", "this flock is locked");
  const form = $("unlock");
  const answer = $("unlock-answer");
  form.hidden = false;
  if (sentBefore()) answer.textContent = NOT_ACCEPTED;
  form.onsubmit = async (e) => {
    e.preventDefault();
    const field = form.elements.token;
    const token = field.value.trim();
    // The server compares the cookie's value as it is, so it must be a plain cookie value.
    if (!/^[A-Za-z0-9._~+\/=-]+$/.test(token)) {
      answer.textContent = "a page can keep only tokens of letters, digits and . _ ~ + / = -";
      return;
    }
    let response;
    try {
      response = await fetch("/api/ui", { headers: { Authorization: `Bearer ${token}` } });
    } catch (error) {
      answer.textContent = `could not reach the flock (${error.message}); try again when it is back`;
      return;
    }
    if (!response.ok) {
      answer.textContent = response.status === 401 ? NOT_ACCEPTED : `the flock answered HTTP ${response.status}`;
      field.value = "";
      return;
    }
    const name = (await response.json()).token_cookie;
    remember(name);
    document.cookie = `${name}=${token}; path=/; SameSite=Strict`;
    location.reload();
  };
}
