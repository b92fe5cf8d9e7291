"""What the snapshot shows, rule by rule (docs/snapshot.md), on pages that copy the
markup real libraries ship (each page names its library): text joined as rendered, refs
for the items a delegated listener serves, icons named from their hints and kept in
their group, names from label and icon content, --interactive's context, `href="#"`,
virtualized rows counted, shadow DOM in the tree, refs kept across snapshots; and the
names it computes agree with Chromium's own accessibility tree."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from support.chromium import Chromium, PageDevTools, browser_cdp, launched_chromium
from support.cli import Bsk
from support.pages import ref_of
from support.wait import wait_until


def snap(bsk: Bsk, *flags: str) -> str:
    return str(bsk.ok("snapshot", *flags)["result"]["snapshot"])


def test_text_is_joined_as_rendered(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/snap_text.html")
    text = snap(bsk)
    # jQuery UI datepicker's title: two spans and an &nbsp; between them.
    assert "- text: December 2016\n" in text, text
    # Its day cells listen, their links are clicked: one ref per day, the link's.
    assert len(re.findall(r'"15".*\[ref=', text)) == 1, text
    # --interactive: no `cell "15"` around `link "15"`, a wrapper its child names.
    brief = bsk.ok("snapshot", "--interactive")["result"]["snapshot"]
    assert re.search(r'^- link "15" \[url=#\] \[ref=\w+\]$', brief, re.M), brief
    assert 'cell "15"' not in brief, brief
    bsk.ok("click", ref_of(text, "link", "15"))
    assert bsk("eval", "window.picked").value == "15"
    # Spaces between inline elements kept, none added where the page has none.
    assert "- text: Total: 42 items, nospace\n" in text, text
    # Block boundaries break lines.
    assert re.search(r"- text: first block\n- text: second block\n- text: third block$",
                     text), text


def test_items_a_delegated_listener_serves_get_refs(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/snap_delegated.html")
    text = snap(bsk, "-i")
    # jQuery UI sortable: the <ul> listens, its <li>s are dragged by ref.
    assert re.search(r"^- list$", snap(bsk), re.M)  # the list itself has no ref
    bsk.ok("drag", ref_of(text, "listitem", "Item 1"), ref_of(text, "listitem", "Item 3"))
    assert bsk("eval", "document.getElementById('order').textContent").value == \
        "Item 2, Item 3, Item 1"
    # SortableJS: bare <div>s in a container with a pointerdown listener.
    bsk.ok("click", ref_of(text, "clickable", "Beta"))
    # A table whose rows are clicked through one listener on the <table>: body rows.
    bsk.ok("click", ref_of(text, "row", "Grace Admiral"))
    assert '- row "Name Role"' not in text
    assert bsk("eval", "events").value == ["sjs:Beta", "row:Grace"]
    # Locators reach what refs do: the same items, by the same role and name.
    bsk.ok("click", 'role=row[name="Linus Maintainer"]')
    assert bsk("eval", "events").value[-1] == "row:Linus"
    # jQuery UI selectable's `ui-selectee` items, the listener on the document.
    bsk.ok("click", ref_of(text, "listitem", "Large"))
    assert bsk("eval", "document.getElementById('picked').textContent").value == "Large"


def test_icons_are_named_from_their_hints_and_stay_grouped(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/snap_icons.html")
    text = snap(bsk, "--interactive")
    group = re.search(r"^- group\n((?:  - [^\n]*\n)+)", text, re.M)
    assert group, text
    icons = group.group(1)
    # Class words (jQuery UI's ui-icon-trash, Font Awesome's fa-pen-to-square), a CSS
    # background's file, a ::before's content: url() file: guessed, and said so.
    for guess in ("trash", "archive box", "printer", "pen to square"):
        assert f'- clickable "{guess}" [guessed name] [ref=' in icons, icons
    # A Material Icons ligature is the icon's own text: a name, not a guess.
    assert '- clickable "delete" [ref=' in icons, icons
    # Last, the control's own class words (flatpickr's month arrow).
    assert re.search(r'- clickable "flatpickr prev month" \[guessed name\] \[ref=', text), text
    # An SVG's <title> names its button (accname), no guess.
    assert re.search(r'^- button "Close" \[ref=', text, re.M), text
    bsk.ok("click", ref_of(text, "clickable", "printer"))
    assert bsk("eval", "document.getElementById('used').textContent").value == "btn-print"
    bsk.ok("click", 'role=clickable[name="archive box"]')  # a locator, by the guess
    assert bsk("eval", "document.getElementById('used').textContent").value == "btn-archive"


def test_django_admin_names_context_and_options(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/snap_admin.html")
    text = snap(bsk, "-i")
    # The search box is labelled by an image's alt; the two filter boxes by a span's
    # aria-label inside their labels: each has its own name.
    assert re.search(r'- textbox "Search" \[ref=', text), text
    assert '- textbox "Type into this box to filter down the list of available groups."' in text
    assert ('- textbox "Type into this box to filter down the list of available user '
            'permissions."') in text
    # --interactive keeps the heading, the landmarks and the success message.
    assert re.search(r'- heading "Change user" \[level=1\]', text), text
    assert "- main\n" in text and "- search\n" in text
    assert "The user “bob” was added successfully." in text
    assert "plain words" not in text
    # A multi-select's options have refs; clicking one picks it.
    bsk.ok("click", ref_of(text, "option", "Publishers"))
    assert bsk("eval", "[...document.querySelector('#id_groups_from').selectedOptions]"
                       ".map(o => o.text)").value == ["Publishers"]
    # href="#" is no address: shown as it is; the icon's title inside is only a hint.
    assert re.search(r'- link "Choose a Time" \[guessed name\] \[url=#\] \[ref=', text), text


def test_a_frameworks_delegation_root_is_no_clickable(bsk: Bsk, site: str) -> None:
    """React listens for every event on its app's container; that makes the container
    no one thing to click or drop on: the text inside stands as text (it was folded into
    one `clickable` named with all of it: "Flavour Select... Your choice: none")."""
    bsk.ok("open", f"{site}/conformance/react-select.html")
    bsk.ok("wait", "--text", "Your choice")
    text = snap(bsk)
    assert "- text: Your choice: none" in text, text
    assert "clickable" not in text and "droppable" not in text, text
    assert re.search(r'- combobox "Flavour" \[expanded=false\] \[ref=\w+\]', text), text


def test_a_real_virtualized_grid_says_how_many_rows_it_has(bsk: Bsk, site: str) -> None:
    """ag-grid renders ~19 of its 301 rows and serves its cells' clicks from the grid
    (a delegating container): its line keeps the count an agent scrolls by."""
    bsk.ok("open", f"{site}/conformance/ag-grid.html")
    bsk.ok("wait", "--text", "Make")
    text = snap(bsk)
    assert re.search(r"- grid \[rows 2-\d+ of 301 rendered\]", text), text  # 1: header
    # Its focus trap's guards (empty, of no size) get no ref: a click on one only failed.
    assert "tab guard" not in text and "tab guard" not in snap(bsk, "-i"), text
    # Scrolled, the range is the body rows now drawn (the header row, always there, is not
    # counted: it made the range 1-122 when rows 93-122 were drawn).
    cell = re.search(r'- gridcell "Make 1" \[ref=(\w+)\]', text)
    assert cell, text
    bsk.ok("scroll", cell.group(1), "--dy", "3000")
    scrolled = re.search(r"- grid \[rows (\d+)-(\d+) of 301 rendered\]", snap(bsk))
    assert scrolled and 40 < int(scrolled.group(1)) < int(scrolled.group(2)), snap(bsk)
    # A click on a column's name sorts by it: the header says which way (aria-sort).
    assert 'columnheader "Price"\n' in text, text
    bsk.ok("click", ref_of(text, "clickable", "Price"))
    assert re.search(r'- columnheader "Price" \[sort=ascending\]', snap(bsk)), snap(bsk)
    # The focused row stays drawn apart from the scrolled ones: said as runs (before,
    # "rows 2-162" when 2 and 134-162 were drawn, and "Make 50" was not there).
    bsk.ok("open", f"{site}/conformance/ag-grid.html")
    bsk.ok("wait", "--text", "Make")
    first = ref_of(snap(bsk), "gridcell", "Make 1")
    bsk.ok("click", first)
    bsk.ok("scroll", first, "--dy", "3000")
    apart = re.search(r"- grid \[rows 2, (\d+)-(\d+) of 301 rendered\]", snap(bsk))
    assert apart and 40 < int(apart.group(1)) < int(apart.group(2)), snap(bsk)


def test_virtualized_rows_are_counted_and_shadow_roots_read(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/snap_virtual.html")
    text = snap(bsk, "-i")
    assert "- grid [rows 2-3 of 1001 rendered]" in text, text  # its header row is 1
    assert '- listbox "Cities" [items 11-12 of 400 rendered]' in text, text
    assert re.search(r'- gridcell "Ford" \[ref=', text), text
    # An open shadow root and its slotted content, in the same tree, once.
    full = snap(bsk)
    assert full.count("Slotted title") == 1, full
    bsk.ok("click", ref_of(text, "button", "Inside shadow"))
    assert bsk("eval", "window.shadowClicked").value is True


def test_shadow_roots_labels_resolve_in_their_own_tree(bsk: Bsk, site: str) -> None:
    """Shoelace's select: the combobox in an open root is labelled by the <label id="label">
    beside it, whose <slot> shows the host's `label` attribute or slotted light DOM; an
    id resolves in the element's own root (the document has a "label" too), and an id
    only in the document names nothing inside a root (its placeholder does). The
    combobox's `cursor: pointer` box, unnamed, gets no ref of its own."""
    bsk.ok("open", f"{site}/snap_shadow.html")
    text = snap(bsk)
    for name in ("Favourite colour", "Shipping country", "Own root first"):
        assert re.search(rf'- combobox "{name}" \[expanded=false\] \[ref=', text), text
    assert '"Document label"' not in text, text
    assert "clickable" not in text, text  # the cursor box around each combobox: no ref
    assert re.search(r'- textbox "Orphaned label" \[ref=', text), text


def test_closed_shadow_roots_are_read_and_acted_on(bsk: Bsk, site: str,
                                                   cross_site: str) -> None:
    """Controls in closed shadow roots (page JS can't reach them) are read through CDP:
    named, with refs that click and fill, a closed root inside a closed root too, and in
    same- and cross-origin (out-of-process) iframes."""
    bsk.ok("open", f"{site}/snap_shadow.html")
    text = snap(bsk)
    assert "- text: Email notifications" not in text, text  # the switch, not its label text
    switch = ref_of(text, "switch", "Email notifications")
    bsk.ok("click", switch)
    assert bsk("eval", "document.getElementById('notify').on").value is True
    bsk.ok("fill", ref_of(text, "textbox", "Closed caption"), "hello")
    assert bsk("eval", "document.getElementById('log').textContent").value == "field=hello;"
    # A closed root inside a closed root; the same refs next time; a locator reaches it.
    assert re.search(r'- heading "Panel" \[level=2\] \[ref=e\d+\]\n- switch "Nested switch"',
                     text), text
    again = snap(bsk)
    assert ref_of(again, "switch", "Email notifications") == switch
    assert '- switch "Email notifications" [checked] [ref=' in again, again
    assert '- textbox "Closed caption" [focused] [ref=' in again, again  # focus inside it
    bsk.ok("click", 'role=switch[name="Nested switch"]')
    assert "[checked]" in snap(bsk, "--ref", ref_of(again, "switch", "Nested switch"))
    # In iframes: the same page same-origin and from another site.
    port = cross_site.rsplit(":", 1)[1]
    bsk.ok("open", f"{site}/snap_shadow_frames.html?cross={port}")
    wait_until(lambda: snap(bsk).count('switch "Nested switch"') == 2, 10,
               "both frames' closed roots")
    text = snap(bsk)
    for frame in ("f1", "f2"):
        assert re.search(rf'- switch "Email notifications" \[ref={frame}e\d+\]', text), text
    cross = re.search(r'- switch "Nested switch" \[ref=(f2e\d+)\]', text)
    assert cross, text
    bsk.ok("click", cross.group(1))  # its own click handler sets aria-checked
    assert re.search(rf'- switch "Nested switch" \[checked\][^\n]* \[ref={cross.group(1)}\]',
                     snap(bsk))


def test_refs_are_kept_across_snapshots_of_one_document(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/snap_delegated.html")
    first = snap(bsk)
    assert snap(bsk) == first  # an unchanged page: the same text, the same refs
    bsk.ok("eval", "document.body.prepend(Object.assign(document.createElement('button'),"
                   " {textContent: 'New'})); 1")
    after = snap(bsk)
    assert ref_of(after, "button", "New") not in first
    for role, name in (("listitem", "Item 2"), ("clickable", "Gamma"), ("row", "Ada Engineer")):
        assert ref_of(after, role, name) == ref_of(first, role, name)


# Roles whose names the snapshot computes itself and Chromium computes too: they must
# agree (accname), checked against Chromium's own accessibility tree.
NAMED_ROLES = ("textbox", "searchbox", "button", "link", "option", "listbox", "heading",
               "gridcell", "checkbox", "radio", "combobox", "img", "switch")
# Chromium's internal names for some of those roles.
CHROMIUM_ROLES = {"img": ("image",), "button": ("button", "ColorWell"),
                  "combobox": ("combobox", "ComboBoxSelect", "ComboBoxMenuButton")}


@pytest.fixture(scope="module")
def own_chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chromium]:
    """A Chromium of this module's own: its accessibility tree is the reference."""
    with launched_chromium(tmp_path_factory.mktemp("ax") / "chromium.log") as browser:
        yield browser


@pytest.mark.parametrize("page", ["snap_admin.html", "snap_icons.html", "snap_virtual.html",
                                  "snap_shadow.html",
                                  "form.html", "reach_fidelity.html", "login.html"])
def test_names_agree_with_chromiums_accessibility_tree(bsk: Bsk, site: str,
                                                       own_chromium: Chromium, page: str) -> None:
    chromium = own_chromium
    url = f"{site}/{page}"
    target = browser_cdp(chromium, "Target.createTarget", {"url": url})["targetId"]
    hand = PageDevTools(chromium, target)
    try:
        wait_until(lambda: hand.send("Runtime.evaluate", {
            "expression": "document.readyState", "returnByValue": True})["result"]["value"]
            == "complete", 10, "the page to load")
        hand.send("Accessibility.enable")
        reads: list[list[dict[str, Any]]] = []

        def settled() -> bool:  # the tree is built after enable: read until it holds still
            reads.append(hand.send("Accessibility.getFullAXTree")["nodes"])
            return len(reads) > 1 and len(reads[-1]) > 3 and len(reads[-1]) == len(reads[-2])

        wait_until(settled, 10, "Chromium's accessibility tree")
        nodes = reads[-1]
    finally:
        hand.close()
    chromium_names = {(n["role"]["value"], " ".join(str(n.get("name", {}).get("value", ""))
                                                    .split()))
                      for n in nodes if not n.get("ignored")}
    bsk.ok("open", url)
    ours = re.findall(r'- (\w+)(?: "([^"\n]*)")?((?: \[[^\]\n]*\])*)', snap(bsk))
    checked = 0
    for role, name, states in ours:
        if role not in NAMED_ROLES or "[guessed name]" in states or "[ref=" not in states:
            continue
        checked += 1
        roles = CHROMIUM_ROLES.get(role, (role,))
        assert any((r, name) in chromium_names for r in roles), (
            f"{role} {name!r}: Chromium names it otherwise: "
            f"{sorted(n for r, n in chromium_names if r in roles)}")
    assert checked


def test_refs_an_actions_effects_gave_are_never_given_again(bsk: Bsk, site: str) -> None:
    """A click's effects give refs to what appeared (Tom Select's dropdown options); the
    next document's snapshot numbers on after them, so no ref names two elements (the
    conformance suite's next task read a ref bound to the page before: stale_ref)."""
    bsk.ok("open", f"{site}/snap_delegated.html")
    bsk.ok("eval", "const b = Object.assign(document.createElement('button'), {textContent:"
                   " 'Open'}); b.onclick = () => { for (const n of ['One', 'Two', 'Three'])"
                   " document.body.append(Object.assign(document.createElement('button'),"
                   " {textContent: n})); }; document.body.prepend(b); 1")
    appeared = bsk.ok("click", ref_of(snap(bsk), "button", "Open"))["result"]["effects"]
    given = {a["ref"] for a in appeared["dom"]["appeared"]}
    assert len(given) == 3, appeared
    bsk.ok("open", f"{site}/snap_delegated.html")  # a new document of the same page
    text = snap(bsk)
    assert not given & set(re.findall(r"\[ref=(e\d+)\]", text)), (given, text)
    bsk.ok("click", ref_of(text, "listitem", "Item 2"))  # bound to this document


def test_a_select_a_library_replaced_leaves_its_options_to_the_library(
        bsk: Bsk, site: str) -> None:
    """Tom Select keeps the native <select multiple> clipped to nothing and draws its own
    options: the first "Texas" option with a ref is the one a person clicks (the clipped
    one's was covered by the library's input)."""
    bsk.ok("open", f"{site}/snap_replaced.html")
    text = snap(bsk)
    assert re.search(r'^ *- option "Texas"$', text, re.M), text  # shown, without a ref
    bsk.ok("click", ref_of(text, "option", "Texas"))
    assert bsk("eval", "document.getElementById('select-state').value").value == "TX"


def test_a_web_components_checkbox_is_one_ref(bsk: Bsk, site: str) -> None:
    """Shoelace's sl-checkbox draws its box and its text inside a `cursor: pointer`
    <label> around the input: a click anywhere there is the checkbox's, so the checkbox
    is the one ref — not also its box ("checkbox control") and its text."""
    bsk.ok("open", f"{site}/conformance/shoelace-dialog.html")
    bsk.ok("eval", "document.querySelector('sl-dialog').show()")
    bsk.ok("wait", "--text", "I agree")
    text = snap(bsk, "--interactive")
    dialog = text[text.index("dialog"):text.index("contentinfo")]
    refs = re.findall(r"^ *- (\w+) \"([^\"]*)\".*\[ref=(\w+)\]", dialog, re.M)
    assert [(role, name) for role, name, _ in refs if role != "heading" and
            name != "Close"] == [("checkbox", "I agree")], text
    bsk.ok("click", ref_of(text, "checkbox", "I agree"))
    assert bsk("eval", "document.getElementById('agree').checked").value is True


def test_a_listening_dialogs_ref_is_kept(bsk: Bsk, site: str) -> None:
    """Bootstrap's modal listens for clicks on its backdrop and holds its buttons: the
    dialog's ref it shows stays its ref (it was taken back from the registry, so the
    next snapshot renumbered it and the one read was stale)."""
    bsk.ok("open", f"{site}/snap_delegated.html")
    bsk.ok("eval", "const d = Object.assign(document.createElement('div'), {role: 'dialog',"
                   " innerHTML: '<button>Close</button><button>Save changes</button>'});"
                   " d.setAttribute('role', 'dialog'); d.setAttribute('aria-label', 'Modal');"
                   " d.addEventListener('click', () => {}); document.body.append(d); 1")
    first = snap(bsk)
    dialog = ref_of(first, "dialog", "Modal")
    assert ref_of(snap(bsk), "dialog", "Modal") == dialog
    assert "Save changes" in str(bsk.ok("snapshot", "--ref", dialog)["result"]["snapshot"])


def test_drop_targets_get_refs(bsk: Bsk, site: str) -> None:
    """A place to drop on is a target an agent names: a `drop` listener (HTML drag and
    drop) or a library's mark (jQuery UI's `ui-droppable`, @hello-pangea/dnd's column)
    gives it a ref, named by its text (its first line when it holds refs); a box that is
    neither gets none."""
    bsk.ok("open", f"{site}/snap_drop.html")
    text = snap(bsk, "-i")
    assert re.search(r'^- droppable "Drop files here" \[ref=e\d+\]$', text, re.M), text
    assert re.search(r'^- droppable "Trash" \[ref=e\d+\]$', text, re.M), text
    assert "Plain box" not in text, text
    # A board's column holding cards: named by its first line, not all it holds.
    assert re.search(r'^- droppable "To do" \[ref=e\d+\]$', text, re.M), text
    bsk.ok("drag", ref_of(text, "draggable", "Report.pdf"),
           ref_of(text, "droppable", "Drop files here"))
    assert bsk("eval", "document.getElementById('dropped').textContent").value == "card"
    # Locators reach them by the same role and name.
    assert bsk.ok("click", 'role=droppable[name="Trash"]')
    assert bsk.ok("hover", 'role=droppable[name="To do"]')
    # ... the column's name as shown: a card's text does not name it.
    assert bsk("hover", 'role=droppable[name="Write the report"]').code != 0


def test_a_mailto_link_on_a_page_of_opaque_origin_keeps_its_scheme(bsk: Bsk) -> None:
    """A data: page's origin is opaque ("null"), and so is a mailto: link's: equal as
    strings, the two are still not one site (the link showed as `url=help@example.com`,
    the address without what it is)."""
    page = ('<a href="mailto:help@example.com">Write to us</a> '
            '<a href="https://example.com/x">Out</a>')
    bsk.ok("open", "data:text/html," + quote(page))
    text = bsk.ok("snapshot")["result"]["snapshot"]
    assert '- link "Write to us" [url=mailto:help@example.com]' in text, text
    assert '- link "Out" [url=example.com/x]' in text, text
