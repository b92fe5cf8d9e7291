// The accessibility snapshot of one frame, computed in the page (in BrowserSkill's own
// isolated world, so page scripts can't see or change its ref registry).
//
// Chromium's Accessibility.getFullAXTree takes seconds and tens of megabytes on a
// 5,000-row table; walking the DOM here takes tens of milliseconds. Roles and names
// follow the ARIA/HTML-AAM mappings and a pragmatic subset of accname.
//
// Anything a person could act on gets a ref whatever its tag (docs/contract-notes.md,
// "Targets"): native controls and ARIA widget roles, and also elements that are
// focusable (tabindex), draggable, a drop target, editable, or clickable — a pointer-like
// cursor of their own (not inherited from an element that already has a ref), an on*
// handler attribute, or a click/mouse listener found with DOMDebugger.getEventListeners
// (`__bskListened`, filled by snapshot.py before this runs). Those get a role-like name:
// their own role if they have one, else "link" (<a> without href), "clickable",
// "focusable", "draggable" or "droppable" (a `drop` listener, `__bskDropTargets`, or a
// library's mark of a drop target).
// A wrapper whose only interactive content already has a ref gets none; a container
// whose listener serves its repeated, similar children gives them the refs instead.
// Text is joined as rendered; icons without a name get one guessed from their hints,
// marked "[guessed name]". Shadow roots are walked in place of their hosts' children,
// closed ones too once snapshot.py has handed them over (`candidates`, below).
// docs/snapshot.md gives each rule with an example.
//
// Returns a JSON line {refs, next} (+ `tree` with `asTree`: nodes are
// [role, name, value, states, ref, children], text nodes ["text", text]), then the text.
// An <iframe>'s frame is read separately and spliced in by the caller: in the text at
// the placeholder line "\u0000<index>", in the tree where a node's children are that
// index — an index into `__bsk.iframes`.
(options) => {
  const {prefix, next: firstRef, refRoles, actionable, rootRef} = options;
  const bsk = globalThis.__bsk || (globalThis.__bsk = {refs: new Map(), byEl: new WeakMap()});
  // Closed shadow roots (host → root): page JS can't reach them (`el.shadowRoot` is
  // null), so snapshot.py asks CDP about the hosts this walk lists in `candidates` and
  // hands their roots back here; the walk then enters them as it does open ones. A
  // candidate is a defined custom element without an open root, not asked before: a
  // page's own elements attach their roots when defined (an undefined one, Angular's
  // components, has none to find), and each is asked once per document.
  const CLOSED = bsk.closed || (bsk.closed = new WeakMap());
  const ASKED = bsk.asked || (bsk.asked = new WeakSet());
  bsk.candidates = [];
  const shadowOf = el => el.shadowRoot || CLOSED.get(el) || null;
  let next = firstRef;
  const REF_ROLES = new Set(refRoles);
  const ACTIONABLE = new Set(actionable);
  const listened = globalThis.__bskListened || new WeakSet();
  const dropTargets = globalThis.__bskDropTargets || new WeakSet();
  // Nodes (their arrays) that got a ref for being interactive without an actionable role:
  // --interactive keeps them.
  const INFERRED = new Set();
  // A listened container's items (delegatedItems), found once per container, as a Set.
  const ITEMS = new Map();
  // Text nodes and containers --interactive keeps as context (status-like messages).
  const CONTEXT = new Set();
  bsk.iframes = [];
  const here = location;
  const focused = deepActive(document);

  const INPUT_ROLES = {
    button: "button", submit: "button", reset: "button", image: "button",
    checkbox: "checkbox", radio: "radio", range: "slider", number: "spinbutton",
    search: "searchbox", email: "textbox", tel: "textbox", text: "textbox", url: "textbox",
    password: "textbox", date: "textbox", "datetime-local": "textbox", month: "textbox",
    time: "textbox", week: "textbox", color: "button", file: "button",
  };
  const TAG_ROLES = {
    button: "button", h1: "heading", h2: "heading", h3: "heading", h4: "heading",
    h5: "heading", h6: "heading", textarea: "textbox", table: "table", tr: "row",
    td: "cell", ul: "list", ol: "list", li: "listitem", nav: "navigation", main: "main",
    aside: "complementary", form: "form", dialog: "dialog", option: "option",
    progress: "progressbar", meter: "meter", hr: "separator", fieldset: "group",
    details: "group", summary: "button", figure: "figure", article: "article",
    menu: "list", optgroup: "group", output: "status", iframe: "iframe", dl: "list",
    dt: "term", dd: "definition", blockquote: "blockquote", caption: "caption",
    thead: "rowgroup", tbody: "rowgroup", tfoot: "rowgroup", search: "search",
  };
  const NAME_FROM_CONTENT = new Set([
    "button", "link", "heading", "cell", "gridcell", "columnheader", "rowheader", "option",
    "tab", "menuitem", "menuitemcheckbox", "menuitemradio", "treeitem", "checkbox", "radio",
    "switch", "tooltip", "caption", "term", "legend",
  ]);
  const SKIP_TAGS = new Set(["script", "style", "noscript", "template", "head", "meta",
                             "link", "title", "svg"]);
  // Cursors that say "act on me" when an element sets one of its own.
  const ACT_CURSORS = new Set(["pointer", "grab", "grabbing", "move", "crosshair", "cell",
                               "all-scroll", "zoom-in", "zoom-out", "col-resize",
                               "row-resize", "ew-resize", "ns-resize"]);
  const HANDLER_ATTRS = ["onclick", "onmousedown", "onmouseup", "onpointerdown",
                         "onpointerup", "ondblclick", "ontouchstart"];
  // Tags whose text usually flows inline: their text joins the text around them.
  const INLINE_TAGS = new Set(["span", "b", "i", "em", "strong", "a", "code", "small",
                               "label", "abbr", "mark", "sub", "sup", "time", "u", "s",
                               "q", "cite", "kbd", "var", "data", "bdi", "bdo", "font", "del",
                               "ins", "dfn", "samp", "big", "tt", "wbr", "br"]);

  function deepActive(doc) {
    let el = doc.activeElement;
    while (el && shadowOf(el) && shadowOf(el).activeElement) el = shadowOf(el).activeElement;
    return el === doc.body || el === doc.documentElement ? null : el;
  }

  // Elements that may set an act-on-me cursor of their own: those matched by a style
  // rule that sets one (pseudo-classes dropped: a superset) or by an inline style.
  // Computing every element's style costs more than the rest of the walk on a big page;
  // this asks only these. null when a style sheet can't be read (cross-origin): ask all.
  function cursorCandidates() {
    const selectors = [];
    const visit = rules => {
      for (const rule of rules) {
        if (rule.selectorText && rule.style &&
            ACT_CURSORS.has(rule.style.getPropertyValue("cursor").trim()))
          selectors.push(rule.selectorText);
        if (rule.cssRules) visit(rule.cssRules);  // @media, @supports, @layer, nesting
      }
    };
    try {
      for (const sheet of [...document.styleSheets, ...(document.adoptedStyleSheets || [])])
        visit(sheet.cssRules);
      const found = new Set(document.querySelectorAll("[style*=cursor]"));
      for (const selector of selectors) {
        const plain = selector.replace(/::?[\w-]+(\((?:[^()]|\([^()]*\))*\))?/g, "");
        for (const el of document.querySelectorAll(plain)) found.add(el);
      }
      return found;
    } catch (e) {
      return null;  // an unreadable sheet, or a selector that means "everything"
    }
  }
  const cursorSet = cursorCandidates();

  // A focus trap's guard (ag-grid's "tab guard", react-focus-lock's, MUI's sentinels): an
  // empty element of no size that only passes the focus on — nothing a person sees or acts
  // on, so no ref (an agent's click on one fails: not visible).
  function focusGuard(el) {
    if (el.firstChild) return false;
    const box = el.getBoundingClientRect();
    return box.width === 0 || box.height === 0;
  }

  // Why an element without an actionable role is interactive: "click", "focus", "drag",
  // "cursor" (a cursor of its own only), or "" (it is not).
  function interactiveWhy(el, role, inActionable) {
    const tag = el.localName;
    if (tag === "html" || tag === "body" || tag === "label" && el.control) return "";
    if (listened.has(el)) return "click";
    if (servedByParent(el)) return "item";
    if (dropTargets.has(el)) return "drop";
    if (el.attributes.length) {
      if (HANDLER_ATTRS.some(a => el.hasAttribute(a))) return "click";
      if (el.getAttribute("draggable") === "true") return "drag";
      if (el.classList.length) {
        if (DRAG_CLASSES.some(c => el.classList.contains(c))) return "drag";
        if (PICK_CLASSES.some(c => el.classList.contains(c))) return "item";
        if (DROP_CLASSES.some(c => el.classList.contains(c))) return "drop";
      }
      if (DROP_ATTRS.some(a => el.hasAttribute(a))) return "drop";
      const tabindex = el.getAttribute("tabindex");
      if (tabindex !== null && tabindex.trim() !== "" && +tabindex >= 0 && !inActionable &&
          !focusGuard(el))
        return "focus";
    }
    if (cursorSet && !cursorSet.has(el) && el.getRootNode() === document) return "";
    const style = getComputedStyle(el);
    if (!ACT_CURSORS.has(style.cursor)) return "";
    const parent = el.parentElement;
    if (inActionable && parent && getComputedStyle(parent).cursor === style.cursor) return "";
    return "cursor";
  }

  // Libraries' own marks of an item to drag or pick (jQuery UI sortable, draggable,
  // selectable), whose listener sits on the container or the document.
  const DRAG_CLASSES = ["ui-sortable-handle", "ui-draggable", "ui-draggable-handle"];
  const PICK_CLASSES = ["ui-selectee"];
  // ... and of a place to drop on, where no listener says so (jQuery UI's draggable
  // finds its droppables itself; react-beautiful-dnd and its fork @hello-pangea/dnd;
  // HTML's old `dropzone`). A `drop` listener (HTML drag and drop) is `__bskDropTargets`.
  const DROP_CLASSES = ["ui-droppable"];
  const DROP_ATTRS = ["dropzone", "data-rbd-droppable-id", "data-rfd-droppable-id"];
  const ROWGROUPS = new Set(["thead", "tbody", "tfoot"]);

  // The repeated, similar children of `el` that its listener serves: two or more of
  // one tag (a table's rows through its row groups), making most of its children, none
  // with a listener, handler or actionable role of its own. null when there are none.
  function delegatedItems(el) {
    if (!ITEMS.has(el)) {
      const found = findItems(el);
      ITEMS.set(el, found && new Set(found));
    }
    return ITEMS.get(el);
  }
  function findItems(el) {
    let kids = [...el.children];
    if (kids.length && kids.every(k => ROWGROUPS.has(k.localName)))  // a table's body rows
      kids = kids.filter(k => k.localName !== "thead").flatMap(k => [...k.children]);
    if (kids.length < 2) return null;
    const counts = new Map();
    for (const k of kids) counts.set(k.localName, (counts.get(k.localName) || 0) + 1);
    const [tag, count] = [...counts].sort((a, b) => b[1] - a[1])[0];
    if (count < 2 || count < kids.length * 0.6 || SKIP_TAGS.has(tag) || tag === "br")
      return null;
    const items = kids.filter(k => k.localName === tag);
    if (items.some(k => listened.has(k) || HANDLER_ATTRS.some(a => k.hasAttribute(a)) ||
                        ACTIONABLE.has(roleOf(k))))
      return null;
    return items;
  }

  // Whether `el` is one of the items its parent's (or its table's) listener serves.
  function servedByParent(el) {
    let host = el.parentElement;
    if (host && ROWGROUPS.has(host.localName)) host = host.parentElement;
    if (!host || !listened.has(host) || HANDLER_ATTRS.some(a => host.hasAttribute(a)) ||
        ACTIONABLE.has(roleOf(host)))
      return false;
    const items = delegatedItems(host);
    return items !== null && items.has(el);
  }

  function inferredRole(el, role, why) {
    if (role && role !== "generic" && role !== "paragraph") return role;
    if (el.localName === "a") return "link";
    if (why === "drag") return "draggable";
    if (why === "drop") return "droppable";
    if (why === "focus") return "focusable";
    return "clickable";
  }

  function shortUrl(href) {
    let url;
    try { url = new URL(href, here.href); } catch (e) { return clean(href, 80); }
    if (url.protocol === "javascript:") return "";
    // An opaque origin ("null": data:, file:, mailto:) is never this page's own.
    const out = url.origin === here.origin && url.origin !== "null"
      ? (url.pathname === here.pathname && url.search === here.search && url.hash
         ? url.hash : url.pathname + url.search + url.hash)
      : url.protocol === "http:" || url.protocol === "https:"
        ? url.host + url.pathname + url.search + url.hash : url.href;
    return out.length > 80 ? out.slice(0, 79) + "…" : out;
  }

  function roleOf(el) {
    const explicit = (el.getAttribute("role") || "").trim().split(/\s+/)[0];
    if (explicit && explicit !== "none" && explicit !== "presentation") return explicit;
    if (explicit) return "";
    const tag = el.localName;
    if (tag === "a" || tag === "area") return el.hasAttribute("href") ? "link" : "";
    if (tag === "input") {
      if (el.type === "hidden") return null;
      if (el.type === "text" || el.type === "search" || el.type === "email" ||
          el.type === "tel" || el.type === "url") {
        if (el.list) return "combobox";
      }
      return INPUT_ROLES[el.type] || "textbox";
    }
    if (tag === "select") return el.multiple || el.size > 1 ? "listbox" : "combobox";
    if (tag === "img") return el.getAttribute("alt") === "" ? "" : "img";
    if (tag === "th") {
      // A header cell in a row of data cells heads that row; otherwise its column.
      if (el.scope === "row" || el.scope === "rowgroup") return "rowheader";
      if (el.scope === "col" || el.scope === "colgroup" || el.closest("thead"))
        return "columnheader";
      const row = el.parentElement;
      return row && [...row.children].some(c => c.localName === "td") ? "rowheader"
                                                                       : "columnheader";
    }
    if (tag === "canvas") return "canvas";
    if (tag === "section") return hasLabel(el) ? "region" : "";
    if (tag === "header") return el.closest("article, aside, main, nav, section") ? ""
                                                                                  : "banner";
    if (tag === "footer") return el.closest("article, aside, main, nav, section") ? ""
                                                                                  : "contentinfo";
    if (el.isContentEditable && (!el.parentElement || !el.parentElement.isContentEditable))
      return "textbox";
    return TAG_ROLES[tag] || "";
  }

  function hasLabel(el) {
    return el.hasAttribute("aria-label") || el.hasAttribute("aria-labelledby");
  }

  function clean(text, limit = 300) {
    text = (text || "").replace(/\s+/g, " ").trim();
    return text.length > limit ? text.slice(0, limit) + "…" : text;
  }

  // A value shown whole, on one line: line breaks as \n (only --max-tokens cuts, visibly).
  function whole(value) {
    return value.replace(/\r?\n/g, "\\n");
  }

  function firstLine(el) {
    return clean((el.innerText || "").split("\n").find(line => line.trim()), 80);
  }

  function textOf(el) {
    // A leaf's text is its textContent (no layout needed); innerText only when there
    // are child elements, some of which may be hidden.
    if (el.childElementCount === 0 || el.innerText === undefined) return clean(el.textContent);
    return clean(el.innerText);
  }

  function nameOf(el, role) {
    const by = labelledBy(el);
    if (by) return by;
    const label = el.getAttribute("aria-label");
    if (label && label.trim()) return clean(label);
    const tag = el.localName;
    if (tag === "input" || tag === "textarea" || tag === "select") {
      if (el.type === "submit" || el.type === "reset" || el.type === "button")
        return clean(el.value) || (el.type === "submit" ? "Submit" :
                                   el.type === "reset" ? "Reset" : "");
      if (el.type === "image") return clean(el.alt) || "Submit";
      if (el.labels && el.labels.length)
        return clean([...el.labels].map(l => labelText(l, el)).join(" "));
      return clean(el.getAttribute("title") || el.getAttribute("placeholder") || "");
    }
    if (tag === "img" || tag === "area") return clean(el.getAttribute("alt") || el.title);
    if (tag === "fieldset") {
      const legend = el.querySelector(":scope > legend");
      if (legend) return textOf(legend);
    }
    if (tag === "table") {
      const caption = el.querySelector(":scope > caption");
      if (caption) return textOf(caption);
    }
    if (tag === "iframe") return clean(el.title);
    if (NAME_FROM_CONTENT.has(role))
      return textOf(el) || clean(contentName(el, null, 0)) || generatedText(el) ||
             clean(el.title);
    return clean(el.title);
  }

  // Text CSS draws (`content:` of ::before/::after, its own and its children's), which
  // innerText leaves out and accname counts: Quill's pickers ("Normal", "Heading 1") are
  // named only so. Asked only when nothing else names the element; an icon font's glyph
  // (a private-use character) is no name.
  function generatedText(el, depth = 0) {
    const drawn = pseudo => {
      const content = getComputedStyle(el, pseudo).content;
      const attr = /^attr\(([\w-]+)\)$/.exec(content);
      if (attr) return el.getAttribute(attr[1]) || "";
      const quoted = /^"((?:[^"\\]|\\.)*)"$/.exec(content);
      return quoted ? quoted[1].replace(/\\(.)/g, "$1") : "";
    };
    let out = drawn("::before");
    if (depth < 2) for (const child of el.children) out += " " + generatedText(child, depth + 1);
    out += " " + drawn("::after");
    out = clean(out.replace(/[\ue000-\uf8ff]/g, ""));
    return /[\p{L}\p{N}]/u.test(out) ? out : "";
  }

  // aria-labelledby's ids name elements of the element's own tree: its shadow root's
  // (Shoelace's combobox, labelled by the <label id="label"> beside it), else the
  // document's; as in Chromium, an id in another tree names nothing. Each referenced
  // element gives its aria-label, else its content as rendered, slotted text included
  // (the label's <slot> shows the host's `label` attribute or light-DOM text).
  function labelledBy(el) {
    const by = el.getAttribute("aria-labelledby");
    if (!by) return "";
    const root = el.getRootNode();
    if (!root.getElementById) return "";
    return clean(by.trim().split(/\s+/).map(id => {
      const ref = root.getElementById(id);
      if (!ref) return "";
      return clean(ref.getAttribute("aria-label")) || textOf(ref) ||
             clean(contentName(ref, null, 0));
    }).join(" "));
  }

  function labelText(label, control) {
    // The label's content without the control itself (a label may wrap its input).
    return contentName(label, control, 0);
  }

  // Name from content as accname (and Chromium) computes it, for what innerText misses:
  // an image's alt, an SVG's <title>, a child's aria-label, a control's value (Django
  // admin: a search box labelled by <img alt="Search">, filter boxes by a <span
  // aria-label="Type into this box…">). Hidden content and `skip` count for nothing; a
  // child's title doesn't either (Chromium ignores it: it is a hint, guessedName's).
  function contentName(el, skip, depth) {
    let out = "";
    for (const node of children(el)) {
      if (node === skip) continue;
      if (node.nodeType === 3) { out += node.textContent; continue; }
      if (node.nodeType !== 1 || depth > 8) continue;
      const e = node, tag = e.localName;
      if (e.getAttribute("aria-hidden") === "true" || SKIP_TAGS.has(tag) && tag !== "svg")
        continue;
      let part = clean(e.getAttribute("aria-label"));
      if (part) { /* its own label */ }
      else if (tag === "img") part = clean(e.getAttribute("alt") ?? e.title);
      else if (tag === "svg") {
        const title = e.querySelector(":scope > title");
        part = title ? clean(title.textContent) : "";
      } else if (tag === "input" || tag === "textarea") part = clean(e.value);
      else if (tag === "select") part = clean(e.selectedOptions[0]?.textContent);
      else if (e.checkVisibility && !e.checkVisibility() &&
               getComputedStyle(e).display !== "contents") continue;
      else part = clean(contentName(e, skip, depth + 1));
      out += INLINE_TAGS.has(tag) && tag !== "br" ? part : " " + part + " ";
    }
    return out;
  }

  // A name guessed from an icon's hints when the page gives none: an inner element's
  // title (Django's clock link: <a href="#"><span title="Choose a Time">), class words
  // (icon-trash, fa-trash, bi-trash, ui-icon-trash), or the file name of an image it
  // draws (a CSS background, `content: url()` in ::before/::after, an <img>'s src).
  // Shown marked "[guessed name]": the page never said it.
  const ICON_CLASS = /^(?:icons?|fa[srlbdk]?|bi|glyphicon|mdi|ti|ri|la[srb]?|ion|ionicons?|ico|gg|octicon|codicon|feather|lnr|wi|oi|typcn|dashicons|el-icon|ui-icon|anticon|icofont|bx[sl]?|ph|uil|tabler|lucide|pi|fe|ki)[-_](.+)$/;
  const ICON_NOISE = /^(?:solid|regular|light|thin|duotone|brands?|sharp|xs|sm|lg|xl|[0-9]+x|fw|spin|pulse|border|inverse|flip(?:-.*)?|rotate(?:-.*)?|stack(?:-.*)?|pull-.*|li|ul|large|small|white|black|inline|before|after|button|btn|wrapper|container|only|left|right|text|label|color|size)$/;
  function hintWords(text) {
    return text.replace(/%20|[-_.+]+/g, " ").replace(/([a-z])([A-Z])/g, "$1 $2")
               .replace(/\b(?:icon|ico|img|image|btn|button|svg|png)\b/gi, " ")
               .replace(/\b[0-9]+(?:x[0-9]+)?(?:px)?\b/g, " ").replace(/\s+/g, " ").trim()
               .toLowerCase();
  }
  function fileStem(url) {
    if (!url || url.startsWith("data:")) return "";
    const file = url.split(/[?#]/)[0].split("/").pop() || "";
    return hintWords(decodeURIComponent(file.replace(/\.[a-z0-9]+$/i, "")));
  }
  function guessedName(el) {
    const seen = [el, ...el.querySelectorAll("*")].slice(0, 6);
    for (const e of seen) {
      const title = e !== el && clean(e.getAttribute("title"));
      if (title) return title;
    }
    for (const e of seen) {
      for (const c of e.classList) {
        const m = ICON_CLASS.exec(c);
        if (m && !ICON_NOISE.test(m[1])) { const w = hintWords(m[1]); if (w) return w; }
      }
    }
    for (const e of seen) {
      if (e.localName === "img") { const w = fileStem(e.getAttribute("src")); if (w) return w; }
      for (const pseudo of [null, "::before", "::after"]) {
        const style = getComputedStyle(e, pseudo);
        const drawn = style.backgroundImage + " " + (pseudo ? style.content : "");
        const url = /url\(\s*["']?([^"')]+)/.exec(drawn);
        const w = url ? fileStem(url[1]) : "";
        if (w) return w;
      }
    }
    // Last, the control's own class words (flatpickr's `flatpickr-prev-month`), skipping
    // states and generated hashes (`css-1dimb5e`).
    for (const c of el.classList) {
      if (/\d/.test(c) || STATE_CLASS.test(c)) continue;
      const w = hintWords(c);
      if (w.length > 2) return w;
    }
    return "";
  }
  const STATE_CLASS = /^(?:is-|has-|js-|ng-|v-|x-)|^(?:active|disabled|selected|open|opened|show|shown|hidden|hide|focus|focused|hover|visible|in|fade|collapsed|current|clickable|pointer|icon|btn|button|link)$/;

  function states(el, role) {
    const out = [];
    const aria = name => el.getAttribute("aria-" + name);
    if (role === "checkbox" || role === "radio" || role === "switch" ||
        role === "menuitemcheckbox" || role === "menuitemradio") {
      const a = aria("checked");
      if (a === "mixed") out.push("checked=mixed");
      else if (el.localName === "input" ? el.checked : a === "true") out.push("checked");
    }
    if (el.matches(":disabled") || aria("disabled") === "true") out.push("disabled");
    const expanded = el.localName === "summary" && el.parentElement &&
                     el.parentElement.localName === "details"
                     ? String(el.parentElement.open) : aria("expanded");
    if (expanded === "true") out.push("expanded");
    else if (expanded === "false") out.push("expanded=false");
    if (role === "option" ? (el.localName === "option" ? el.selected
                                                       : aria("selected") === "true")
                          : aria("selected") === "true") out.push("selected");
    const pressed = aria("pressed");
    if (pressed === "true") out.push("pressed");
    else if (pressed === "mixed") out.push("pressed=mixed");
    const sort = aria("sort");  // a table's column it is sorted by, and which way
    if (sort && sort !== "none") out.push("sort=" + sort);
    if (el.required || aria("required") === "true") out.push("required");
    if (role === "heading") {
      const level = aria("level") || (/^h[1-6]$/.test(el.localName) ? el.localName[1] : "2");
      out.push("level=" + level);
    }
    if ((el.readOnly && role === "textbox") || aria("readonly") === "true") out.push("readonly");
    if (aria("invalid") === "true") out.push("invalid");
    if (el === focused) out.push("focused");
    if (el.getAttribute("draggable") === "true" && role !== "draggable") out.push("draggable");
    const placeholder = el.getAttribute("placeholder") || el.getAttribute("aria-placeholder");
    if (placeholder && placeholder.trim() && clean(placeholder) !== nameOf(el, role))
      out.push("placeholder=" + JSON.stringify(clean(placeholder)));
    const shown = VIRTUAL_ROLES.has(role) ? rendered(el, role) : "";
    if (shown) out.push(shown);
    if (role === "link" && el.hasAttribute("href")) {
      // "#" goes nowhere (a script acts on the click): shown as it is, not as this page.
      const href = el.getAttribute("href").trim();
      const url = href === "#" || href === "" ? "#" : shortUrl(href);
      if (url) out.push("url=" + url);
    }
    return out;
  }

  // A virtualized list or grid renders only some of its rows: say which, out of how many
  // the page says exist (aria-rowcount on the grid, aria-setsize on its items), so an
  // agent knows to scroll for the rest.
  const VIRTUAL_ROLES = new Set(["grid", "treegrid", "table", "list", "listbox", "tree",
                                 "menu", "feed"]);
  function rendered(el, role) {
    // The indexes rendered, as runs: "2, 134-162" (a selected row kept rendered apart
    // from the scrolled ones is not "2-162").
    const range = (items, attr) => {
      const at = [...new Set(items.map(e => +e.getAttribute(attr)).filter(n => n > 0))]
        .sort((a, b) => a - b);
      if (!at.length) return `${items.length}`;
      const runs = [];
      for (const n of at) {
        const last = runs[runs.length - 1];
        if (last && n === last[1] + 1) last[1] = n;
        else runs.push([n, n]);
      }
      const shown = runs.slice(0, 4).map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`));
      return shown.join(", ") + (runs.length > 4 ? ", …" : "");
    };
    const rowcount = +el.getAttribute("aria-rowcount");
    if (rowcount > 0) {
      const rows = [...el.querySelectorAll("[role=row], tr")];
      // The header row is always rendered: the range is the body's (scrolled) rows.
      const body = rows.filter(r => !r.querySelector("[role=columnheader], th"));
      if (rows.length < rowcount)
        return `rows ${range(body.length ? body : rows, "aria-rowindex")} of ${rowcount} rendered`;
      return "";
    }
    const first = el.querySelector("[aria-setsize]");
    const size = first ? +first.getAttribute("aria-setsize") : 0;
    if (size > 0) {
      const items = [...el.querySelectorAll("[aria-setsize]")]
        .filter(e => e.parentElement === first.parentElement);
      if (items.length < size) return `items ${range(items, "aria-posinset")} of ${size} rendered`;
    }
    return "";
  }

  function valueOf(el, role) {
    const tag = el.localName;
    if (tag === "input") {
      if (["checkbox", "radio", "button", "submit", "reset", "image", "file"]
          .includes(el.type)) return null;
      if (el.type === "password") return el.value ? "••••" : null;
      return el.value === "" ? null : whole(el.value);
    }
    if (tag === "textarea") return el.value === "" ? null : whole(el.value);
    if (tag === "select" && role === "combobox") {
      const opt = el.selectedOptions[0];
      return opt ? clean(opt.textContent) : null;
    }
    if (role === "textbox" && el.isContentEditable) return whole(el.innerText.trim()) || null;
    if (role === "slider" || role === "spinbutton" || role === "progressbar")
      return el.getAttribute("aria-valuenow") || (el.value !== undefined ? String(el.value)
                                                                        : null);
    return null;
  }

  function visible(el, role) {
    if (el.getAttribute("aria-hidden") === "true") return false;
    if (el.localName === "option" || el.localName === "optgroup") return true;
    // `visibility: hidden` needs the computed style, which costs: checked only where it
    // matters most, on elements an agent would act on.
    const shown = REF_ROLES.has(role) ? el.checkVisibility({visibilityProperty: true})
                                      : el.checkVisibility();
    return shown || getComputedStyle(el).display === "contents";
  }

  function refFor(el) {
    let ref = bsk.byEl.get(el);
    if (ref && bsk.refs.get(ref) === el) return ref;
    // A number this document already gave another element is never given again: after
    // a daemon restart the daemon counts from 1, but the page still holds its refs.
    do ref = prefix + "e" + (next++); while (bsk.refs.has(ref));
    bsk.refs.set(ref, el);
    bsk.byEl.set(el, ref);
    return ref;
  }

  function children(el) {
    const root = shadowOf(el);
    if (root) return root.childNodes;
    if (el.localName === "slot") return el.assignedNodes({flatten: true});
    return el.childNodes;
  }

  // Pushes a text line, or joins it to the line before when only inline content stood
  // between them (one line per block of text, not one per <span>).
  function pushText(out, raw) {
    const text = clean(raw);
    if (!text) return;
    const last = out[out.length - 1];
    if (out.joinable && last && last[0] === "text") {
      const space = /\s$/.test(out.lastRaw) || /^\s/.test(raw) ? " " : "";
      last[1] += space + text;
    } else {
      out.push(["text", text]);
    }
    out.joinable = true;
    out.lastRaw = raw;
  }

  function isInline(el) {
    if (!INLINE_TAGS.has(el.localName)) return false;
    const display = getComputedStyle(el).display;
    return display === "inline" || display === "contents";
  }

  // Whether `nodes` hold an actionable node (a ref an agent acts on) named `name`, or,
  // with name null, how many actionable nodes they hold.
  function actionableIn(nodes, name) {
    let count = 0;
    for (const n of nodes) {
      if (n[0] === "text") continue;
      if (n[4] && (ACTIONABLE.has(n[0]) || INFERRED.has(n))) {
        if (name !== null && n[1] === name) return 1;
        count++;
      }
      if (Array.isArray(n[5])) {
        const inner = actionableIn(n[5], name);
        if (name !== null && inner) return 1;
        count += inner;
      }
    }
    return name !== null ? 0 : count;
  }

  // Walks `parent`'s children into `out`; `parentText` suppresses text nodes that only
  // repeat their parent's name; `inActionable`: an ancestor is something to act on.
  function walk(parent, out, parentText, inActionable) {
    for (const node of children(parent)) {
      if (node.nodeType === 3) {
        const raw = node.textContent;
        const text = clean(raw);
        // Whitespace alone (a space, an &nbsp;) between inline elements renders as a
        // space: "December&nbsp;2016" reads "December 2016", not "December2016".
        if (!text && raw && out.joinable) out.lastRaw += " ";
        if (text && text !== parentText && !(parentText && parentText.includes(text)))
          pushText(out, raw);
        continue;
      }
      if (node.nodeType !== 1) continue;
      const el = node;
      if (SKIP_TAGS.has(el.localName)) continue;
      const role = roleOf(el);
      if (role === null) continue;
      if (el.localName !== "slot" && !visible(el, role)) {
        if (el.localName !== "select" && getComputedStyle(el).display === "none") continue;
        if (getComputedStyle(el).visibility === "hidden") {
          walk(el, out, parentText, inActionable);
          continue;
        }
        continue;
      }
      if (el.localName.includes("-") && !el.shadowRoot && !CLOSED.has(el) && !ASKED.has(el)
          && el.matches(":defined"))
        bsk.candidates.push(el);
      const why = ACTIONABLE.has(role) ? "" : interactiveWhy(el, role, inActionable);
      const from = out.length;
      if (why) {
        inferred(el, role, why, out, inActionable);
      } else if (!role || role === "generic" || role === "paragraph" || role === "rowgroup") {
        // A label's words already name its control: don't repeat them as text. A click
        // anywhere in it is its control's (Shoelace's checkbox draws its box and text
        // in a `cursor: pointer` label): a cursor inherited there is no target of its own.
        const labels = el.localName === "label" && !!el.control;
        const labelled = labels ? clean(el.textContent) : "";
        if (isInline(el)) {
          walk(el, out, labelled || parentText, inActionable || labels);
        } else {
          out.joinable = false;
          const inner = [];
          walk(el, inner, labelled || parentText, inActionable || labels);
          out.push(...(iconRow(inner) ? [["group", "", null, [], null, inner]] : inner));
          out.joinable = false;
        }
      } else {
        item(el, role, out, parentText, inActionable);
      }
      if (LIVE_ROLES.has(role) || MESSAGE_CLASS.test(el.getAttribute("class") || ""))
        for (let i = from; i < out.length; i++) CONTEXT.add(out[i]);
    }
  }

  // Status-like text --interactive keeps: live regions, and the classes pages give their
  // messages (Django admin's `ul.messagelist li.success`, `p.errornote`, Bootstrap's
  // `.alert`).
  const LIVE_ROLES = new Set(["status", "alert", "log", "marquee", "timer", "alertdialog"]);
  const MESSAGE_CLASS = /(?:^|\s)(?:messagelist|messages?|alert(?:-[\w-]+)?|success|errors?|errornote|errorlist|warning|notice|notification|toast|flash|callout|invalid-feedback)(?:\s|$)/;
  // Roles shown with a name they guessed: what an agent clicks.
  const GUESS_ROLES = new Set(["button", "link", "menuitem", "tab", "clickable", "treeitem",
                               "switch", "draggable", "focusable"]);

  // A block of two or more controls and nothing else, at least two of them icons (things
  // to click with no name of their own; an unnamed list box is no icon): a toolbar,
  // kept as one group so they can be told apart by place.
  function iconRow(nodes) {
    if (nodes.length < 2) return false;
    let icons = 0;
    for (const n of nodes) {
      if (n[0] === "text" || !n[4]) return false;
      if (GUESS_ROLES.has(n[0]) && (!n[1] || n[3].includes("guessed name"))) icons++;
    }
    return icons >= 2;
  }

  // A named node (a role of its own): its line, then its content.
  function item(el, role, out, parentText, inActionable) {
    let name = nameOf(el, role);
    // States matter on what an agent acts on; elsewhere only when ARIA says so.
    const stateful = ACTIONABLE.has(role) || role === "heading" || el.attributes.length > 0
                     || el === focused;
    const guess = !name && GUESS_ROLES.has(role) ? guessedName(el) : "";
    if (guess) name = guess;
    // A <select> a library hid (clipped to nothing) and draws its own control for: no
    // ref — no one can act on it (`select` refuses it); its options still say the choices.
    const hiddenSelect = el.localName === "select" && clippedAway(el);
    const node = [role, name, valueOf(el, role), stateful ? states(el, role) : [],
                  REF_ROLES.has(role) && !hiddenSelect ? refFor(el) : null, []];
    if (guess) node[3].unshift("guessed name");
    if (role === "iframe") {
      node[5] = bsk.iframes.length;  // index: the caller splices the frame's tree in
      bsk.iframes.push(el);
    } else if (el.localName === "select") {
      // A list box's options are clicked (ctrl-click, double-click): each has a ref,
      // unless the list box is clipped to nothing: a library hid it for screen readers
      // and draws its own (Tom Select, Select2), whose options are the ones to click.
      const listbox = role === "listbox" && !hiddenSelect;
      for (const opt of el.options) {
        node[5].push(["option", clean(opt.textContent), null,
                      opt.selected ? ["selected"] : [], listbox ? refFor(opt) : null, []]);
      }
    } else if (!(el.localName === "input" || el.localName === "textarea")) {
      walk(el, node[5], name, inActionable || ACTIONABLE.has(role));
    }
    out.push(node);
    out.joinable = false;
  }

  // Visually hidden (the "sr-only" pattern: clipped away, or a box of a pixel or less).
  function clippedAway(el) {
    const box = el.getBoundingClientRect();
    if (box.width <= 1 || box.height <= 1) return true;
    const style = getComputedStyle(el);
    return style.clip === "rect(0px, 0px, 0px, 0px)" || /^inset\(50%/.test(style.clipPath);
  }

  // An element that is interactive without an actionable role: a ref and a role-like
  // name, unless it only wraps what already has one (then its content stands alone).
  function inferred(el, role, why, out, inActionable) {
    const shownRole = inferredRole(el, role, why);
    let name = nameOf(el, shownRole === "link" ? "link" : role) || textOf(el) ||
               clean(contentName(el, null, 0));
    const guess = !name && GUESS_ROLES.has(shownRole) ? guessedName(el) : "";
    if (guess) name = guess;
    const known = bsk.byEl.get(el);
    const ref = refFor(el);  // before its content's: refs follow document order
    // A listener on a container of repeated, similar children serves them: they get refs.
    const items = why === "click" && !HANDLER_ATTRS.some(a => el.hasAttribute(a))
                  ? delegatedItems(el) : null;
    const kids = [];
    walk(el, kids, name, true);
    // A cursor on a wrapper of what already has a ref, a listener that delegates for
    // several refs inside (a list's), or a delegated item whose content has refs of its
    // own (a tree's row whose label has a cursor): the refs inside cover it.
    const ownCursor = why === "cursor" || ACT_CURSORS.has(getComputedStyle(el).cursor);
    const delegating = items ? actionableIn(kids, null) > 0 :
                       why === "click" && !ownCursor &&
                       !HANDLER_ATTRS.some(a => el.hasAttribute(a)) && actionableIn(kids, null) > 1;
    // A listener on a wrapper of one control named as it is (jQuery UI datepicker's day
    // <td> around its link): the control is what a person clicks, and the click reaches
    // the listener; two refs of one name for one thing only make an agent guess. Not a
    // custom element's host (Shoelace's <sl-button>): it is the control its page uses.
    const wraps = why === "click" && name !== "" && !shadowOf(el) &&
                  actionableIn(kids, null) === 1 &&
                  actionableIn(kids, name) === 1;
    // A cursor on a wrapper with no name of its own around one control (Shoelace's
    // select draws its combobox in a `cursor: pointer` box): the control covers it.
    const bare = why === "cursor" && guess !== "" && actionableIn(kids, null) === 1;
    if ((why === "cursor" && actionableIn(kids, name)) || bare || delegating || wraps ||
        (why === "item" && actionableIn(kids, null))) {
      const shown = role && role !== "generic" && role !== "paragraph" && role !== "rowgroup";
      // A ref shown (a dialog's, Bootstrap's modal listening for backdrop clicks) stays
      // in the registry: only one that is not shown is taken back.
      if (known !== ref && !(shown && REF_ROLES.has(role))) {
        bsk.refs.delete(ref); bsk.byEl.delete(el);
      }
      if (shown) {
        // With its states: a virtualized grid serving its cells' clicks still says how
        // many rows it has (ag-grid's).
        out.push([role, nameOf(el, role), null, states(el, role), REF_ROLES.has(role) ? ref : null,
                  kids]);
      } else {
        out.joinable = false;
        out.push(...(iconRow(kids) ? [["group", "", null, [], null, kids]] : kids));
      }
      out.joinable = false;
      return;
    }
    // A drop target holding refs (a board's column of cards, a page-wide drop area) is
    // named by its label or its first line (the column's heading), not by all it holds.
    if (why === "drop" && !nameOf(el, role) && actionableIn(kids, null)) name = firstLine(el);
    const node = [shownRole, name, valueOf(el, role), states(el, shownRole), ref, kids];
    if (guess) node[3].unshift("guessed name");
    INFERRED.add(node);
    out.push(node);
    out.joinable = false;
  }

  // Only actionable nodes, with the named containers around them (--interactive), and
  // what gives them context: headings, landmarks, status and alert text.
  const LANDMARKS = new Set(["banner", "navigation", "main", "complementary", "contentinfo",
                             "search", "form", "dialog", "alertdialog", "toolbar", "grid",
                             "treegrid", "tablist", "menubar", "radiogroup", "group"]);
  function pruneInteractive(nodes, context) {
    const out = [];
    for (const n of nodes) {
      const live = context || CONTEXT.has(n);
      if (n[0] === "text") { if (live) out.push(n); continue; }
      const kept = Array.isArray(n[5]) ? pruneInteractive(n[5], live) : n[5];
      if (ACTIONABLE.has(n[0]) || INFERRED.has(n) || typeof n[5] === "number" ||
          n[0] === "heading") {
        out.push([n[0], n[1], n[2], n[3], n[4], kept]);
      } else if (kept.length) {
        // A container named only by what it holds says nothing more (a calendar's
        // cell "15" around its link "15").
        const echo = kept.length === 1 && !!n[1] && kept[0][1] === n[1] && !n[3].length &&
          !LANDMARKS.has(n[0]);
        if (echo) out.push(...kept);
        else if (n[1] || n[3].length || LANDMARKS.has(n[0]) || CONTEXT.has(n) && n[0] !== "text")
          out.push([n[0], n[1], null, n[3], n[4], kept]);
        else out.push(...kept);
      }
    }
    return out;
  }

  // The text form, rendered here so a 5,000-row table crosses the wire once, as text.
  // An iframe's frame goes where its placeholder line ("\u0000" + index) stands.
  function render(nodes, depth, lines, refs) {
    const pad = "  ".repeat(depth);
    for (const n of nodes) {
      if (n[0] === "text") { lines.push(pad + "- text: " + n[1]); continue; }
      let line = pad + "- " + n[0];
      if (n[1]) line += " " + JSON.stringify(n[1]);
      for (const state of n[3]) line += " [" + state + "]";
      if (n[4]) { line += " [ref=" + n[4] + "]"; refs.push([n[4], n[0], n[1]]); }
      if (n[2] !== null) line += ": " + n[2];
      lines.push(line);
      if (typeof n[5] === "number") lines.push("  ".repeat(depth + 1) + "\u0000" + n[5]);
      else render(n[5], depth + 1, lines, refs);
    }
    return lines;
  }

  // Locators (`options.locate`: {kind: css|text|role, value, name}): the visible elements
  // that match, each with a ref, for the caller to demand exactly one (locators.py).
  function* elementsIn(root) {
    for (const el of root.querySelectorAll("*")) {
      yield el;
      if (shadowOf(el)) yield* elementsIn(shadowOf(el));
    }
  }

  function shownText(el) {
    if (el.localName === "input" && ["button", "submit", "reset"].includes(el.type))
      return clean(el.value, Infinity);
    return clean(el.innerText === undefined ? el.textContent : el.innerText, Infinity);
  }

  function isShown(el) {
    if (el.localName === "option" || el.localName === "optgroup") {
      // No box of its own: shown as its <select> is (a library's combobox hides the
      // select it replaces, 1 px and clipped, and lists the same options as its own).
      const list = el.closest("select");
      const box = list ? list.getBoundingClientRect() : null;
      return !!box && box.width >= 2 && box.height >= 2 && isShown(list);
    }
    return el.getAttribute("aria-hidden") !== "true" &&
           el.checkVisibility({visibilityProperty: true});
  }

  const squash = text => (text || "").replace(/\s+/g, " ");

  // Elements whose text may hold `lower`; a subtree whose text can't is skipped whole.
  function* textCandidates(root, lower) {
    for (const el of root.children) {
      const own = el.localName === "input" ? el.value || "" : el.textContent;
      const inside = squash(own).toLowerCase().includes(lower);
      if (inside) yield el;
      if (inside) yield* textCandidates(el, lower);
      if (shadowOf(el)) yield* textCandidates(shadowOf(el), lower);
    }
  }

  // Of elements whose text matches, the innermost; then the outermost actionable element
  // around it with that same text (the button, not the <span> in it).
  function byText(want, exact) {
    const lower = want.toLowerCase();
    const hits = [];
    for (const el of textCandidates(document, lower)) {
      if (SKIP_TAGS.has(el.localName) || el.localName === "html" || el.localName === "body")
        continue;
      const text = shownText(el);
      if ((exact ? text === want : text.toLowerCase().includes(lower)) && isShown(el))
        hits.push(el);
    }
    const inner = hits.filter(el => !hits.some(other => other !== el && el.contains(other)));
    const out = new Set();
    for (let el of inner) {
      const text = shownText(el);
      let acts = false;
      for (let up = el; up && up.localName !== "body" && shownText(up) === text;
           up = up.parentElement) {
        const role = roleOf(up);
        if (role === null) continue;
        const why = ACTIONABLE.has(role) ? "role" : interactiveWhy(up, role, false);
        // A delegated item whose content acts itself leaves it the ref (as the walk does).
        if (why && !(why === "item" && acts)) { el = up; acts = true; }
      }
      out.add(el);
    }
    return [...out];
  }

  const INFERRED_ROLES = new Set(["clickable", "focusable", "draggable", "droppable", "link"]);

  // [role as the snapshot shows it, name], or null when it is not `want` (if given).
  function roleAndName(el, want) {
    const role = roleOf(el);
    if (role === null) return null;
    let shown = role, why = "";
    if (want === undefined || (role !== want && INFERRED_ROLES.has(want)) ||
        (role === want && !ACTIONABLE.has(role))) {
      why = ACTIONABLE.has(role) ? "" : interactiveWhy(el, role, false);
      if (why) shown = inferredRole(el, role, why);
    }
    if (want !== undefined && shown !== want) return null;
    const name = nameOf(el, shown === "link" ? "link" : role) ||
                 (why === "drop" && el.querySelector(CONTROLS) ? firstLine(el) :
                  why ? textOf(el) || clean(contentName(el, null, 0)) : "");
    return [shown, name || (GUESS_ROLES.has(shown) ? guessedName(el) : "")];
  }
  // What a drop target holding refs holds, as a locator tells it without a walk.
  const CONTROLS = "a[href], button, input, select, textarea, [tabindex], [role], " +
                   "[draggable=true], [contenteditable]";

  function byRole(want, name) {
    const hits = [];
    for (const el of elementsIn(document)) {
      if (SKIP_TAGS.has(el.localName)) continue;
      const found = roleAndName(el, want);
      if (found && isShown(el)) hits.push([el, found[1]]);
    }
    if (name === null || name === undefined) return hits.map(h => h[0]);
    const exact = hits.filter(h => h[1] === name);
    if (exact.length) return exact.map(h => h[0]);
    const lower = name.toLowerCase();
    return hits.filter(h => h[1].toLowerCase().includes(lower)).map(h => h[0]);
  }

  // A recorded action's target as a locator (tools/recording.py): role and name when
  // they pick exactly this element, else a unique id, else its exact text, else a CSS path.
  function locatorFor(el) {
    const found = roleAndName(el);
    if (found && found[1]) {
      const hits = byRole(found[0], found[1]);
      if (hits.length === 1 && hits[0] === el) return `role=${found[0]}[name=${JSON.stringify(found[1])}]`;
    }
    const uniqueId = (e) => e.id && /^[A-Za-z][\w-]*$/.test(e.id)
      && document.querySelectorAll("#" + e.id).length === 1;
    if (uniqueId(el)) return "css=#" + el.id;
    const text = shownText(el);
    if (text && text.length <= 80 && !text.includes("\n")) {
      const hits = byText(text, true);
      if (hits.length === 1 && hits[0] === el) return "text=" + text;
    }
    const parts = [];
    for (let e = el; e && e.nodeType === 1 && e.localName !== "html"; e = e.parentElement) {
      if (uniqueId(e)) { parts.unshift("#" + e.id); break; }
      const same = e.parentElement ? [...e.parentElement.children]
        .filter(c => c.localName === e.localName) : [e];
      parts.unshift(same.length > 1 ? `${e.localName}:nth-of-type(${same.indexOf(e) + 1})`
                                    : e.localName);
    }
    return "css=" + parts.join(" > ");
  }
  if (options.describe) return locatorFor(options.describe);
  // Elements as the snapshot names them, for an action's effects (tools/effects.js):
  // [role, name, ref]; a ref is given where asked (`[el, true]`) and the role gets one.
  // `next` is read after the names are given their refs: the daemon numbers the next
  // snapshot from it, and refs are kept per document (a stale count reissued them).
  if (options.names) {
    const names = options.names.map(([el, give]) => {
      const found = roleAndName(el);
      if (!found) return null;
      const held = bsk.byEl.get(el);
      const ref = held && bsk.refs.get(held) === el ? held
        : give && (REF_ROLES.has(found[0]) || INFERRED_ROLES.has(found[0])) ? refFor(el) : null;
      return [found[0], found[1], ref];
    });
    return JSON.stringify({names, next});  // `next` after the refs it gave
  }

  if (options.locate) {
    const {kind, value, name} = options.locate;
    let found;
    if (kind === "css") {
      try { found = [...document.querySelectorAll(value)]; }
      catch (e) { return JSON.stringify({error: String(e.message || e), next}) + "\n"; }
      found = found.filter(isShown);
    } else if (kind === "text_exact") {
      found = byText(value, true);
    } else if (kind === "text") {
      found = byText(value, true);
      if (!found.length) found = byText(value, false);
    } else {
      found = byRole(value, name);
    }
    const matches = found.slice(0, 20).map(el => {
      const [role, elName] = roleAndName(el) || ["", ""];
      return [refFor(el), role || el.localName, elName];
    });
    return JSON.stringify({matches, count: found.length, next}) + "\n";
  }

  let tree = [];
  if (rootRef) {
    const el = bsk.refs.get(rootRef);
    if (!el || !el.isConnected) return JSON.stringify({missing: true, next}) + "\n";
    // Walk just this element: as the only child of a stand-in parent.
    walk({childNodes: [el], localName: "", shadowRoot: null}, tree, "", false);
  } else {
    walk(document.body ? document.documentElement : document, tree, "", false);
  }
  if (options.interactive) tree = pruneInteractive(tree, false);
  const refs = [];
  const text = render(tree, 0, [], refs).join("\n");
  // One string, the protocol serializes it far faster than a deep value: a JSON head
  // line, then the text as it is (not escaped a second time inside the JSON).
  return JSON.stringify({refs, next, title: document.title, candidates: bsk.candidates.length,
                         tree: options.asTree ? tree : undefined}) + "\n" + text;
}
