// What an action changed in one frame's document, watched from BrowserSkill's isolated
// world (docs/outcomes.md, "Effects"). One MutationObserver per document, made on first
// use and kept: `begin` opens a window (baselines: the held refs' states, focus, scroll),
// `settle` resolves once no mutation came for the quiet window (or the budget ran out) and
// then reports the window's net changes, compactly. Page scripts can't see or change any
// of it (another world); the DOM, layout and innerText are the page's own.
//
// Net, not raw: a node added and removed again within the window is no change, nor is one
// taken out and put back where it was, nor an attribute or text set back to what it was.
// Mutations inside the element being typed into (`editing`) are what the input itself
// does, not an effect. Only what could be seen is told: nothing inside what is not drawn
// or is aria-hidden, nothing taken from what came into the page in the same window.
(() => {
  if (globalThis.__bskFx) return globalThis.__bskFx;
  const MAX_NODES = 5000;  // past this many tracked nodes only counting goes on
  const MAX_REFS = 500;  // held refs whose state is compared
  const MAX_NAMED = 30;  // elements named (role, name, ref) per report
  const MAX_TEXT = 120;
  let st = null;
  const now = () => performance.now();
  const clip = (s) => { s = (s || "").replace(/\s+/g, " ").trim();
                        return s.length > MAX_TEXT ? s.slice(0, MAX_TEXT) + "…" : s; };

  function deepActive() {
    // Into closed shadow roots too, those a snapshot found (snapshot.js: `closed`).
    const closed = globalThis.__bsk && globalThis.__bsk.closed;
    const rootOf = el => el.shadowRoot || (closed && closed.get(el));
    let el = document.activeElement;
    while (el && rootOf(el) && rootOf(el).activeElement) el = rootOf(el).activeElement;
    return el;
  }
  const closedRoots = () => globalThis.__bsk && globalThis.__bsk.closed;
  const NO_FOCUS = new Set(["body", "html", "iframe", "frame"]);

  // aria-checked and aria-pressed: on, off, or the page's own word ("mixed").
  const tristate = (v) => v === "true" ? true : v === "false" ? false : v;
  function stateOf(el) {
    const s = {};
    const attr = (n) => el.getAttribute && el.getAttribute(n);
    if (el.localName === "input" && (el.type === "checkbox" || el.type === "radio")) {
      s.checked = el.checked;
    } else if (attr("aria-checked") !== null) s.checked = tristate(attr("aria-checked"));
    if (attr("aria-expanded") !== null) s.expanded = attr("aria-expanded") === "true";
    else if (el.localName === "details") s.expanded = el.open;
    if (el.localName === "option") s.selected = el.selected;
    else if (attr("aria-selected") !== null) s.selected = attr("aria-selected") === "true";
    if (attr("aria-pressed") !== null) s.pressed = tristate(attr("aria-pressed"));
    if (attr("aria-sort") !== null) s.sort = attr("aria-sort");
    s.disabled = !!el.disabled || attr("aria-disabled") === "true";
    if (el.localName === "select") {
      // What a person sees it set to, as the snapshot shows it (flatpickr's month: its
      // option "March", not the option's value "2").
      s.value = [...el.selectedOptions].map(o => o.textContent.replace(/\s+/g, " ").trim())
        .join(", ").slice(0, 200);
    } else if (["input", "textarea"].includes(el.localName) && el.type !== "checkbox" &&
        el.type !== "radio" && el.type !== "file") {
      s.value = el.type === "password" ? (el.value ? "•".repeat(8) : "") : el.value.slice(0, 200);
    }
    return s;
  }

  function note(records) {
    if (!st) return;
    for (const r of records) {
      if (st.editing && st.target && st.target.contains(r.target)) continue;
      st.last = now();
      st.raw++;
      // A changed web component animates in its shadow root, which the document's
      // getAnimations() does not list (Shoelace's dialog fades out once `open` is gone).
      const inner = r.target.shadowRoot || (closedRoots() && closedRoots().get(r.target));
      if (inner && st.shadows.size < 50) st.shadows.add(inner);
      if (r.type === "childList") {
        r.removedNodes.forEach((n, i) => {
          if (st.added.has(n)) st.added.delete(n);
          else if (st.removed.size < MAX_NODES) {
            st.removed.add(n);
            // Where it was, to tell a node put back in its place from one moved.
            const last = r.removedNodes.length - 1;
            if (!st.origin.has(n))
              st.origin.set(n, [r.target, i ? r.removedNodes[i - 1] : r.previousSibling,
                                i < last ? r.removedNodes[i + 1] : r.nextSibling]);
          } else st.overflow = true;
        });
        for (const n of r.addedNodes) {
          if (st.removed.has(n)) { st.removed.delete(n); st.moved.add(n); }  // moved, not new
          else if (st.added.size < MAX_NODES) st.added.add(n);
          else st.overflow = true;
        }
      } else if (r.type === "attributes") {
        let m = st.attrs.get(r.target);
        if (!m) { if (st.attrs.size >= MAX_NODES) { st.overflow = true; continue; }
                  st.attrs.set(r.target, m = new Map()); }
        if (!m.has(r.attributeName)) m.set(r.attributeName, r.oldValue);
      } else if (r.type === "characterData") {
        if (!st.texts.has(r.target)) {
          if (st.texts.size >= MAX_NODES) { st.overflow = true; continue; }
          st.texts.set(r.target, r.oldValue);
        }
      }
    }
  }
  const observer = new MutationObserver(note);
  observer.observe(document, {childList: true, subtree: true, attributes: true,
                              characterData: true, attributeOldValue: true,
                              characterDataOldValue: true});
  document.addEventListener("scroll", (e) => {
    if (st && e.target !== document && st.scrolled.size < 50)
      st.scrolled.add(e.target);
  }, true);

  function begin(opts) {
    const bsk = globalThis.__bsk;
    let target = null;
    if (opts.targetRef && bsk) target = bsk.refs.get(opts.targetRef) || null;
    if (opts.targetFocused) {
      const el = deepActive();
      if (el && !NO_FOCUS.has(el.localName)) target = el;
    }
    const states = new Map(), shownBefore = new Set();
    if (bsk) {
      for (const [ref, el] of bsk.refs) {
        if (states.size >= MAX_REFS) break;
        if (!el.isConnected) continue;
        states.set(ref, [el, stateOf(el)]);
        if (shown(el)) shownBefore.add(el);  // a toggle that gains `show` did not appear
      }
    }
    observer.takeRecords();  // what came before the window is not its doing
    // Only an editable target's own changes are the input's doing: a key pressed on a
    // focused modal (Escape) that closes it is an effect.
    const editable = target && (["input", "textarea", "select"].includes(target.localName) ||
                                target.isContentEditable);
    st = {t0: now(), last: 0, raw: 0, target, editing: !!opts.editing && !!editable,
          added: new Set(), removed: new Set(), moved: new Set(), origin: new Map(),
          shadows: new Set(), attrs: new Map(), texts: new Map(),
          scrolled: new Set(), overflow: false, states, shownBefore, focus: deepActive(),
          scroll: [scrollX, scrollY]};
    return {has_snap: !!globalThis.__bskSnap};
  }

  // Roots only: a node whose parent is in the same set is part of its parent's subtree.
  function roots(set) {
    const out = [];
    for (const n of set) {
      let p = n.parentNode, inner = false;
      while (p) { if (set.has(p)) { inner = true; break; } p = p.parentNode; }
      if (!inner) out.push(n);
    }
    return out;
  }
  // A box-less element (`display: contents`, as web components' hosts often are:
  // Shoelace's dialog) is shown when something it holds is.
  const shown = (el) => el.isConnected && !!el.checkVisibility && (el.checkVisibility() ||
    (getComputedStyle(el).display === "contents" &&
     [...(el.shadowRoot || el).children].some(shown)));
  // Whether what a node holds can be seen: an element shown, a shadow root whose host is.
  const drawn = (parent) => !parent || (parent.nodeType === 1 ? shown(parent)
    : parent.nodeType === 11 ? !!parent.host && shown(parent.host) : true);
  function visibleText(n) {
    if (n.nodeType === 3) {
      const parent = n.parentElement;
      return parent && !shown(parent) ? "" : clip(n.data);
    }
    if (n.nodeType !== 1 || SILENT.has(n.localName)) return "";
    return n.isConnected ? (shown(n) ? clip(n.innerText) : "") : spacedText(n);
  }
  // The text of what is no longer drawn (removed, or hidden), which has no innerText to
  // lay it out: its pieces apart, as they were seen, not glued ("PrevNextNovember 2016",
  // a calendar's days "262728…", from textContent).
  function spacedText(n) {
    const pieces = [], walker = document.createTreeWalker(n, NodeFilter.SHOW_TEXT);
    for (let t, length = 0; (t = walker.nextNode()) && length <= MAX_TEXT;) {
      if (SILENT.has(t.parentNode && t.parentNode.localName)) continue;
      pieces.push(t.data);
      length += t.data.length + 1;
    }
    return clip(pieces.join(" "));
  }
  // The text an added element brought: not the text nodes it only took in from where
  // they were (an editor wrapping the selected words in <strong> to bold them, Quill's),
  // which were on the page before.
  function newText(n, s) {
    if (n.nodeType !== 1) return visibleText(n);
    const walker = document.createTreeWalker(n, NodeFilter.SHOW_TEXT);
    const fresh = [];
    let moved = false;
    for (let t; (t = walker.nextNode());) {
      if (s.moved.has(t) || s.removed.has(t)) moved = true;
      else fresh.push(t.data);
    }
    if (!moved) return visibleText(n);
    return shown(n) ? clip(fresh.join(" ")) : "";
  }
  // The added texts that together are what a text node lost from its start or end, or
  // null (then it is a change of text like any other).
  function splitFrom(old, now, fresh) {
    if (!old || old.length <= now.length) return null;
    const rest = old.startsWith(now) ? old.slice(now.length)
      : old.endsWith(now) ? old.slice(0, old.length - now.length) : null;
    const bare = (t) => t.replace(/\s+/g, "");
    if (rest === null || !bare(rest)) return null;
    const parts = [...fresh.values()].filter(t => t && bare(rest).includes(bare(t)));
    return parts.length && parts.reduce((a, t) => a + bare(t).length, 0) === bare(rest).length
      ? parts : null;
  }
  // Libraries show a popup by a class word (Bootstrap's `show` on a menu or a modal,
  // `open`, `is-visible`) or by taking one away (`d-none`, `hidden`): the styles that
  // hid it before are not there to ask, the words are.
  const SHOWS = new Set(["show", "shown", "open", "opened", "in", "visible", "is-open",
                         "is-visible", "is-shown", "is-active", "expanded"]);
  const HIDES = new Set(["hidden", "hide", "d-none", "is-hidden", "invisible", "closed",
                         "collapsed", "is-closed", "sr-only", "visually-hidden"]);
  function classShows(before, after) {
    const was = new Set((before || "").split(/\s+/)), now = new Set((after || "").split(/\s+/));
    for (const w of now) if (SHOWS.has(w) && !was.has(w)) return true;
    for (const w of was) if (HIDES.has(w) && !now.has(w)) return true;
    return false;
  }
  // An animation that takes an element out of sight (not a colour or shadow transition).
  const HIDING = new Set(["opacity", "transform", "scale", "translate", "visibility",
                          "display", "clipPath", "height", "maxHeight"]);
  const hides = (a) => a.playState === "running" && !!a.effect &&
    a.effect.getKeyframes().some(k => Object.keys(k).some(p => HIDING.has(p)));
  // The elements an effect names (the snapshot gives them a role and often a name).
  const NAMEABLE = "[role], a, button, input, select, textarea, h1, h2, h3, h4, h5, h6, " +
    "img, dialog, summary, option, li, label";
  const MOVABLE = NAMEABLE + ", tr";  // a sorted table's rows move
  const MAX_MOVED = 5;
  const MAX_FLAGGED = 5;
  const FLAGS = {"aria-selected": "selected", "aria-expanded": "expanded",
                 "aria-checked": "checked", "aria-pressed": "pressed", "aria-sort": "sort"};
  const SILENT = new Set(["script", "style", "template", "noscript", "link", "meta"]);
  const countNodes = (n) => n.nodeType === 1 ? 1 + n.getElementsByTagName("*").length : 1;

  function report(opts) {
    if (!st) return {no_window: true};
    note(observer.takeRecords());
    const s = st;
    const addedRoots = roots(new Set([...s.added].filter(n => n.isConnected)));
    const removedRoots = [...s.removed].filter(n => !n.isConnected);
    let attributes = 0;
    const shownNow = [], hiddenNow = [];
    for (const [el, m] of s.attrs) {
      if (!el.isConnected) continue;
      for (const [name, old] of m) {
        if (el.getAttribute(name) === old) continue;
        attributes++;
        // Shown or hidden by an attribute (hidden, open, style, class, aria-hidden).
        if (["hidden", "open", "style", "class", "aria-hidden"].includes(name)) {
          // `open` and `hidden` say it themselves: a closing dialog that animates out
          // (Shoelace's) is still drawn when the watch ends, yet closed.
          const showing = name === "open" ? el.hasAttribute("open")
            : name === "hidden" ? !el.hasAttribute("hidden") : shown(el);
          (showing ? shownNow : hiddenNow).push([el, name, old]);
        }
      }
    }
    let text = 0;
    const textAppeared = [], textGone = [];
    const fresh = new Map(addedRoots.map(n => [n, newText(n, s)]));
    const splitOff = new Set();  // added texts that are only a text node's split-off end
    for (const [node, old] of s.texts) {
      if (!node.isConnected || node.data === old) continue;
      text++;
      if (!drawn(node.parentNode)) continue;  // a hidden counter's digit: nobody saw it
      // An editor formatting words splits the text node and moves the words into a new
      // element (Quill's <strong>): the text is where it was, in two pieces.
      const parts = splitFrom(old, node.data, fresh);
      if (parts) { parts.forEach(t => splitOff.add(t)); continue; }
      textAppeared.push(clip(node.data));
      if (old) textGone.push(clip(old));
    }
    // Which elements appeared or went away, to name: roots and what is inside them.
    const appeared = [], gone = [];
    // `keep`: whether an element found there counts (a host shown by an attribute holds
    // controls that were shown before: they did not appear).
    const pick = (root, into, visible, keep = () => true) => {
      if (root.nodeType !== 1 || into.length >= MAX_NAMED) return;
      // What appears must be something a snapshot shows: not inside aria-hidden
      // (CodeMirror's gutter), as the accessibility tree leaves that out.
      const seen = (el) => shown(el) && !el.closest('[aria-hidden="true"]');
      if ((!visible || seen(root)) && keep(root)) into.push(root);
      // A web component's dialog or controls live in its shadow root (Shoelace's
      // `<sl-dialog open>`): looked for there too.
      const inside = [...root.querySelectorAll("*")];
      if (root.shadowRoot) inside.unshift(...root.shadowRoot.querySelectorAll("*"));
      for (const el of inside) {
        if (into.length >= MAX_NAMED) break;
        if (el.matches(NAMEABLE)) {
          if ((!visible || seen(el)) && keep(el)) into.push(el);
        }
      }
    };
    for (const n of addedRoots) {
      pick(n, appeared, true);
      const t = fresh.get(n);
      if (t && !splitOff.has(t)) textAppeared.push(t);
    }
    // Moved (a list reordered by a drag, a table sorted): the elements now elsewhere, each
    // with where it is now among what its parent shows ([position, of how many]).
    const movedEls = [], movedAt = [];
    // Put back in its place: under the same parent, beside a neighbour it had when it
    // was taken out (a list re-rendered in its order takes its items out one by one, each
    // then first; put back, each follows the one before again).
    const inPlace = (n) => {
      const o = s.origin.get(n);
      return !!o && n.parentNode === o[0] && (n.previousSibling === o[1] ||
                                               n.nextSibling === o[2]);
    };
    const movedRoots = roots(new Set([...s.moved].filter(n => n.nodeType === 1 && shown(n) &&
                                                          !inPlace(n))));
    for (const n of movedRoots) {
      const el = n.matches(MOVABLE) ? n : n.querySelector(MOVABLE);
      if (!el || movedEls.length >= MAX_MOVED) continue;
      const siblings = [...n.parentNode.children].filter(shown);
      movedEls.push(el);
      movedAt.push([siblings.indexOf(n) + 1, siblings.length]);
    }
    const cameIn = (node) => {
      for (let a = node; a; a = a.parentNode || a.host) if (s.added.has(a)) return true;
      return false;
    };
    for (const n of removedRoots) {
      // Taken from inside something not drawn now, and still there: it was out of sight.
      // Or from inside what came into the page in this window (Select2 attaches its
      // dropdown, then empties the old list in it): it was not on the page before.
      const from = s.origin.get(n);
      if (from && from[0].isConnected && (!drawn(from[0]) || cameIn(from[0]))) continue;
      pick(n, gone, false);
      const t = visibleText(n);
      if (t) textGone.push(t);
    }
    // An attribute that showed an element (a menu's `hidden` removed): it appeared.
    const shownEls = [];
    for (const [el, name, old] of shownNow) {
      const wasHidden = name === "hidden" ? old !== null : name === "aria-hidden" ? old === "true"
        : name === "open" ? old === null : name === "style" ? /display\s*:\s*none|visibility\s*:\s*hidden/.test(old || "")
        : name === "class" ? classShows(old, el.getAttribute("class")) : false;
      if (wasHidden && !s.shownBefore.has(el)) {
        shownEls.push(el);
        pick(el, appeared, true, (inner) => !s.shownBefore.has(inner));
        textAppeared.push(visibleText(el));
      }
    }
    for (const [el, name, old] of hiddenNow) {
      const nowHidden = name === "hidden" ? el.hasAttribute("hidden") : name === "open" ? !el.hasAttribute("open") : name === "aria-hidden" ? el.getAttribute("aria-hidden") === "true" : !el.checkVisibility();
      // Inside something not drawn, its own change hid nothing: it was out of sight
      // already (Quill marks the chosen item of its closed picker), or what holds it
      // went away and is named for itself.
      const up = el.parentElement || (el.parentNode && el.parentNode.host);
      if (up && !shown(up)) continue;
      if (nowHidden && old !== el.getAttribute(name)) {
        // What is still drawn inside, and not fading or moving out within a part around
        // it (a closing dialog's panel), is still there: a select's own field as its list
        // closes. Each element on the way up is asked for its own animations (a shadow
        // root's getAnimations() is every one in its tree; the document's, none of them).
        const leaving = (inner) => {
          for (let n = inner; n && n !== el; n = n.assignedSlot || n.parentNode || n.host)
            if (n.nodeType === 1 && n.getAnimations().some(hides)) return true;
          return false;
        };
        pick(el, gone, false, (inner) => inner === el || !shown(inner) || leaving(inner));
        textGone.push(spacedText(el));
      }
    }
    const focusNow = deepActive();
    const out = {
      counts: {added: addedRoots.reduce((a, n) => a + countNodes(n), 0),
               removed: removedRoots.reduce((a, n) => a + countNodes(n), 0),
               moved: movedRoots.length, text, attributes},
      text_appeared: [...new Set(textAppeared.filter(Boolean))].slice(0, 10),
      text_gone: [...new Set(textGone.filter(Boolean))].slice(0, 10),
      overflow: s.overflow, raw: s.raw,
      quiet: opts.quiet,
      watched_ms: Math.round(now() - s.t0),
      url: location.href,
    };
    const bsk = globalThis.__bsk;
    const states = [];
    for (const [ref, [el, before]] of s.states) {
      const after = el.isConnected ? stateOf(el) : null;
      if (after === null) continue;
      const changed = {};
      for (const k of new Set([...Object.keys(before), ...Object.keys(after)])) {
        // A flag taken away is off (Tom Select drops aria-selected from the option it
        // leaves): `selected true → false`, as the snapshot shows it, not `→ null`.
        const flag = typeof before[k] === "boolean" || typeof after[k] === "boolean";
        const [a, b] = flag ? [before[k] ?? false, after[k] ?? false]
                            : [before[k] ?? null, after[k] ?? null];
        if (a !== b) changed[k] = [a, b];
      }
      if (Object.keys(changed).length) states.push({ref, changed, target: el === s.target});
    }
    out.states = states;
    // The same flags on elements no ref is held for (a grid's row selected by a click on
    // its cell, an option highlighted in a list never snapshotted): named below.
    const held = new Set([...s.states.values()].map(([el]) => el));
    const flagged = [], flags = [];
    for (const [el, m] of s.attrs) {
      if (flagged.length >= MAX_FLAGGED) break;
      if (held.has(el) || !el.isConnected) continue;
      const changed = {};
      for (const [name, old] of m) {
        const key = FLAGS[name], now = el.getAttribute(name);
        if (!key || now === old) continue;
        // As stateOf reads them: selected and expanded are on or off, checked and
        // pressed on, off or "mixed", sort the page's word ("ascending").
        const [a, b] = key === "selected" || key === "expanded"
          ? [old === "true", now === "true"]
          : key === "sort" ? [old, now] : [tristate(old), tristate(now)];
        if (a !== b) changed[key] = [a, b];
      }
      if (Object.keys(changed).length && shown(el) &&
          ![...addedRoots, ...shownEls].some(r => r.contains(el))) {  // appeared: no before
        flagged.push(el);
        flags.push(changed);
      }
    }
    const focused = focusNow !== s.focus && focusNow && !NO_FOCUS.has(focusNow.localName) &&
      focusNow !== s.target ? [focusNow] : [];
    const [x0, y0] = s.scroll;
    if (scrollX !== x0 || scrollY !== y0) out.scrolled = {dx: scrollX - x0, dy: scrollY - y0};
    if (s.scrolled.size) out.scrolled_elements = s.scrolled.size;
    // Name them as the snapshot does (role, accessible name, ref); new actionable ones
    // get a ref, bound by the daemon like a snapshot's.
    const snap = globalThis.__bskSnap;
    const toName = appeared.length || gone.length || focused.length || movedEls.length ||
      flagged.length;
    if (snap && toName) {
      const named = JSON.parse(snap({...opts.snapOptions,
                                     names: [...appeared.map(el => [el, true]),
                                             ...gone.map(el => [el, false]),
                                             ...movedEls.map(el => [el, true]),
                                             ...flagged.map(el => [el, true]),
                                             ...focused.map(el => [el, false])]}));
      const n = appeared.length, m = gone.length, k = movedEls.length, f = flagged.length;
      out.appeared = named.names.slice(0, n);
      out.gone = named.names.slice(n, n + m);
      if (k) out.moved = named.names.slice(n + m, n + m + k)
        .map((e, i) => e && [...e, movedAt[i]]);
      if (f) out.flagged = named.names.slice(n + m + k, n + m + k + f)
        .map((e, i) => e && [...e, flags[i]]);
      if (focused.length) out.focus = named.names[n + m + k + f];
      out.next = named.next;
    } else if (toName) {
      out.need_snap = true;
    }
    return out;
  }

  // CSS transitions and animations running that will end (a spinner never does).
  const moving = () => [document, ...(st ? st.shadows : [])].some(root =>
    root.getAnimations().some(a => a.playState === "running" && a.effect &&
                                   a.effect.getComputedTiming().endTime !== Infinity));

  // Resolves when the page has settled, then reports. A page that has not reacted at
  // all (no mutation in the window; `opts.active`: nor anything the daemon saw, such as a
  // request) has settled once `reactionMs` passed since this call — made right after the
  // input — without a reaction; one that reacted, once no mutation came for `quietMs`.
  // At `budgetMs` it reports anyway, not quiet.
  function settle(opts) {
    return new Promise((resolve) => {
      const called = now(), end = called + opts.budgetMs;
      const check = () => {
        if (!st) return resolve(report({...opts, quiet: true}));
        note(observer.takeRecords());
        const t = now();
        // A page that reacted is not settled while a transition it started still runs,
        // nor until `quietMs` after it ended: a modal's backdrop fades in, and only its
        // `transitionend` handler shows the modal (Bootstrap) — look again a frame on.
        if (st.raw && moving()) st.animatedAt = t;
        let wait = st.raw || opts.active
          ? opts.quietMs - (t - Math.max(st.t0, st.last, st.animatedAt || 0))
          : opts.reactionMs - (t - called);
        if (wait > 16 && st.animatedAt === t) wait = 16;
        if (wait <= 0) return resolve(report({...opts, quiet: true}));
        if (t >= end) return resolve(report({...opts, quiet: false}));
        setTimeout(check, Math.max(1, Math.min(wait, end - t)));
      };
      check();
    });
  }
  return globalThis.__bskFx = {begin, settle};
})()
