import { DEFAULT_PORT, validPort } from "./lib.js";

const $ = (id) => document.getElementById(id);
const s = await chrome.storage.local.get(["port", "label"]);
$("port").value = validPort(s.port) || DEFAULT_PORT;
$("label").value = s.label || "";
$("save").onclick = async () => {
  const port = validPort($("port").value);
  if (!port) { $("saved").textContent = "port must be 1-65535"; return; }
  await chrome.storage.local.set({ port, label: $("label").value.trim().slice(0, 64) });
  $("saved").textContent = "saved: reconnecting";
};
