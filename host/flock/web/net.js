// One way to POST JSON to the flock: every failure comes back as a message a person can read,
// including the server being unreachable (fetch rejects) and answers that are not JSON.

export async function send(url, body) {
  let response;
  try {
    response = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body) });
  } catch (error) {
    return { status: 0, body: null, message: `could not reach the flock (${error.message}); try again when it is back` };
  }
  const text = await response.text();
  let parsed = null;
  try { parsed = text ? JSON.parse(text) : null; } catch { parsed = null; }
  const message = (parsed && parsed.message) || `the flock answered HTTP ${response.status}`;
  return { status: response.status, body: parsed, message };
}
