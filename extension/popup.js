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
  renderApprovals(s.approvals || []);
}

// Held operations of this browser's sessions (docs/safety.md, Approvals), updated in
// place so a button under the pointer stays the same element between refreshes.
function renderApprovals(pending) {
  const list = $("approvals");
  $("approvals-box").hidden = pending.length === 0;
  const keep = new Set(pending.map((p) => p.op_id));
  for (const li of [...list.children]) if (!keep.has(li.dataset.op)) li.remove();
  for (const p of pending) {
    if (list.querySelector(`[data-op="${CSS.escape(p.op_id)}"]`)) continue;
    const li = Object.assign(document.createElement("li"), { className: "approval" });
    li.dataset.op = p.op_id;
    const what = Object.assign(document.createElement("div"), { textContent: `${p.session_id}: ${p.what}` });
    const why = Object.assign(document.createElement("small"), { textContent: p.why });
    const answer = (a) => async () => {
      const r = await chrome.runtime.sendMessage({ type: "approval_answer", op_id: p.op_id, answer: a });
      $("approval-msg").textContent = r && r.ok ? "" : (r && r.reason) || "not sent";
    };
    const ok = Object.assign(document.createElement("button"), { textContent: "Approve" });
    ok.dataset.approve = p.op_id; ok.onclick = answer("approve");
    const no = Object.assign(document.createElement("button"), { textContent: "Deny" });
    no.dataset.deny = p.op_id; no.onclick = answer("deny");
    li.append(what, why, document.createElement("br"), ok, " ", no);
    list.append(li);
  }
}

$("reconnect").onclick = async () => { await chrome.runtime.sendMessage({ type: "reconnect" }); refresh(); };
refresh();
setInterval(refresh, 1000);
