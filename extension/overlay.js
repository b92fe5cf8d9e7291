// The in-page UI, run in the extension's isolated world: the agent overlay (a stop
// button) and the borrow prompt (approve / deny with a countdown). It lives in a closed
// shadow root, so page scripts and BrowserSkill's own snapshots don't see into it, and it
// reacts only to trusted (real user) clicks.
(() => {
  if (globalThis.__bskOverlay) return;
  let host = null;
  let root = null;
  let countdown = null;

  const STYLE = `
    :host { all: initial; }
    .box { position: fixed; z-index: 2147483647; right: 12px; bottom: 12px; font: 13px/1.4 system-ui, sans-serif;
      background: #1f2937; color: #fff; border-radius: 8px; padding: 8px 10px; box-shadow: 0 2px 10px #0006;
      display: flex; gap: 8px; align-items: center; max-width: 360px; }
    .prompt { top: 12px; bottom: auto; right: 12px; flex-direction: column; align-items: stretch; }
    button { font: inherit; border: 0; border-radius: 6px; padding: 4px 10px; cursor: pointer; }
    .stop { background: #dc2626; color: #fff; }
    .approve { background: #16a34a; color: #fff; }
    .deny { background: #e5e7eb; color: #111; }
    .row { display: flex; gap: 8px; justify-content: flex-end; }`;

  function mount() {
    if (host && host.isConnected) return;
    host = document.createElement("bsk-overlay");
    root = host.attachShadow({ mode: "closed" });
    (document.documentElement || document).appendChild(host);
  }

  function render(html) {
    mount();
    root.innerHTML = `<style>${STYLE}</style>${html}`;
  }

  function onTrustedClick(selector, fn) {
    root.querySelector(selector).addEventListener("click", (e) => {
      if (e.isTrusted) fn();
    });
  }

  function text(s) {
    const d = document.createElement("div");
    d.textContent = s || "";
    return d.innerHTML;
  }

  function show(cfg) {
    clearInterval(countdown);
    if (cfg.mode === "borrow") {
      let left = cfg.seconds;
      render(`<div class="box prompt" role="alertdialog" aria-label="BrowserSkill borrow request">
        <div>An agent${cfg.label ? ` (<b>${text(cfg.label)}</b>)` : ""} asks to use this tab.
        It will move to the agent's window until it is returned.</div>
        <div class="row"><button class="deny" data-bsk="deny">Deny</button>
        <button class="approve" data-bsk="approve">Allow (<span class="left">${left}</span>s)</button></div></div>`);
      const answer = (approved) => {
        clearInterval(countdown);
        chrome.runtime.sendMessage({ type: "borrow_answer", token: cfg.token, approved });
      };
      onTrustedClick("[data-bsk=approve]", () => answer(true));
      onTrustedClick("[data-bsk=deny]", () => answer(false));
      countdown = setInterval(() => {
        left -= 1;
        const el = root.querySelector(".left");
        if (el) el.textContent = String(Math.max(0, left));
        if (left <= 0) clearInterval(countdown);
      }, 1000);
      return true;
    }
    if (cfg.mode === "help") {
      render(`<div class="box prompt" role="alertdialog" aria-label="BrowserSkill request for help">
        <div>The agent${cfg.label ? ` <b>${text(cfg.label)}</b>` : ""} asks for your help:
        <b>${text(cfg.reason)}</b></div>
        <div class="row"><button class="deny" data-bsk="decline">Decline</button>
        <button class="approve" data-bsk="done">Done</button></div></div>`);
      const answer = (what) => {
        chrome.runtime.sendMessage({ type: "help_answer", session_id: cfg.session_id, answer: what });
        render(`<div class="box" role="status"><span>Thank you: handed back to the agent.</span></div>`);
      };
      onTrustedClick("[data-bsk=done]", () => answer("done"));
      onTrustedClick("[data-bsk=decline]", () => answer("decline"));
      return true;
    }
    render(`<div class="box" role="status">
      <span>🤖 Agent${cfg.label ? ` <b>${text(cfg.label)}</b>` : ""} at work</span>
      <button class="stop" data-bsk="stop" title="Stop the agent and take over">Stop</button></div>`);
    onTrustedClick("[data-bsk=stop]", () => {
      chrome.runtime.sendMessage({ type: "stop", session_id: cfg.session_id });
      render(`<div class="box" role="status"><span>Agent stopped: you have the tab.</span></div>`);
    });
    return true;
  }

  function hide() {
    clearInterval(countdown);
    if (host) host.remove();
    host = null;
  }

  globalThis.__bskOverlay = { show, hide };
})();
