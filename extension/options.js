import { DEFAULT_PORT, validPort } from "./lib.js";

const $ = (id) => document.getElementById(id);
const s = await chrome.storage.local.get(["port", "label"]);
$("port").value = validPort(s.port) || DEFAULT_PORT;
$("label").value = s.label || "";

async function showPaired() {
  const status = await chrome.runtime.sendMessage({ type: "status" });
  $("paired").textContent = status.paired
    ? `paired with the daemon on 127.0.0.1:${status.link.port} (${status.link.state})`
    : `not paired with the daemon on 127.0.0.1:${status.link.port}`;
}

// The port and label as entered, saved; null (and said why) when the port is wrong.
async function saveSettings(said) {
  const port = validPort($("port").value);
  if (!port) { said.textContent = "port must be 1-65535"; return null; }
  await chrome.storage.local.set({ port, label: $("label").value.trim().slice(0, 64) });
  return port;
}

$("save").onclick = async () => {
  if (await saveSettings($("saved"))) $("saved").textContent = "saved: reconnecting";
};

$("pair").onclick = async () => {
  const out = $("pair-result");
  out.className = "";
  out.textContent = "pairing…";
  $("pair").disabled = true;
  try {
    const port = await saveSettings(out);
    if (!port) return;
    let got;
    try {
      got = await chrome.runtime.sendMessage({ type: "pair", code: $("code").value });
    } catch (e) { // the worker went away mid-way (an extension reload, say)
      got = { ok: false, reason: String(e.message || e) };
    }
    out.className = got.ok ? "ok" : "bad";
    out.textContent = got.ok ? `paired with the daemon on 127.0.0.1:${got.port}` : `not paired: ${got.reason}`;
    if (got.ok) $("code").value = "";
  } finally {
    $("pair").disabled = false;
    showPaired();
  }
};
showPaired();
