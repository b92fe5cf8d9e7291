const $ = (id) => document.getElementById(id);

async function refresh() {
  const s = await chrome.runtime.sendMessage({ type: "status" });
  $("state").textContent = s.link.state;
  $("state").className = `state ${s.link.state}`;
  $("port").textContent = s.link.port ? `127.0.0.1:${s.link.port}` : "";
  $("error").textContent = s.link.error || "";
  $("pairing").textContent = s.paired ? "" : "Not paired: run `bsk extension pair` in a "
    + "terminal, then enter its code in Settings.";
  $("instance").textContent = s.instance_id;
  const list = $("sessions");
  list.replaceChildren();
  const borrowedBy = {};
  for (const sid of Object.values(s.borrowed)) borrowedBy[sid] = (borrowedBy[sid] || 0) + 1;
  for (const [sid, a] of Object.entries(s.agent)) {
    const li = document.createElement("li");
    li.textContent = `${sid}${a.label ? ` (${a.label})` : ""} — window ${a.windowId}` +
      (borrowedBy[sid] ? `, ${borrowedBy[sid]} borrowed tab(s)` : "");
    list.append(li);
  }
  if (!list.children.length) list.append(Object.assign(document.createElement("li"), { textContent: "none" }));
}

$("reconnect").onclick = async () => { await chrome.runtime.sendMessage({ type: "reconnect" }); refresh(); };
refresh();
setInterval(refresh, 1000);
