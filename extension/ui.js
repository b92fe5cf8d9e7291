// The in-page UI: the agent overlay (with its Stop button) and the borrow prompt, both
// from overlay.js, injected into the tab.

import { checkAllowed } from "./tabs.js";

export const prompts = new Map(); // prompt token -> {tabId, finish(answer)}

async function inject(tabId, config) {
  await chrome.scripting.executeScript({ target: { tabId }, files: ["overlay.js"] });
  return (await chrome.scripting.executeScript({
    target: { tabId }, func: (cfg) => globalThis.__bskOverlay.show(cfg), args: [config],
  }))[0]?.result;
}

export async function showOverlay(tabId, config) {
  try { await inject(tabId, config); } catch { /* a page we may not script: no overlay */ }
}

export async function hideOverlay(tabId) {
  try {
    await chrome.scripting.executeScript({
      target: { tabId }, func: () => globalThis.__bskOverlay?.hide(),
    });
  } catch { /* gone */ }
}

// Ask the user in the tab itself. Any answer but an explicit, trusted "approve" within the
// countdown is a deny: it fails closed.
export function askBorrow(tabId, sessionId, label, timeoutS) {
  const token = crypto.randomUUID();
  const seconds = Math.max(1, Math.min(300, Number(timeoutS) || 30));
  return new Promise((resolve) => {
    let done = false;
    const timer = setTimeout(() => finish({ approved: false, reason: "timeout" }), seconds * 1000);
    function finish(answer) {
      if (done) return;
      done = true;
      clearTimeout(timer);
      prompts.delete(token);
      hideOverlay(tabId);
      resolve(answer);
    }
    prompts.set(token, { tabId, finish });
    checkAllowed(tabId)
      .then(() => inject(tabId, { mode: "borrow", token, session_id: sessionId, label, seconds }))
      .catch((e) => finish({ approved: false, reason: e.code === "restricted" ? "restricted" : "no_prompt",
        message: String(e.message || e) }));
  });
}

