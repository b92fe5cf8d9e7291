"""support/snapshot_text.py reads the three tools' snapshot lines alike (the conformance
bench compares them through it): lines as each tool printed them on the Django admin."""

from __future__ import annotations

from support.snapshot_text import find_node, find_ref, nodes

BSK = """\
- navigation "Breadcrumbs"
  - link "Home" [url=/admin/] [ref=e40]
  - heading "Change user" [level=1] [ref=e84]
  - listbox "Available groups Choose groups by selecting them and then select the \\"Choose\\" arrow button." [ref=e100]
    - option "Editors"
  - textbox [placeholder="Filter"] [ref=e99]
  - textbox "Username:" [required] [ref=e88]: alice
  - link [url=/admin/events/event/add/] [ref=e210]
  - link "Now" [url=/admin/events/event/add/] [ref=e212]
  - link [url=/admin/events/event/add/] [ref=e213]
"""  # noqa: E501

AGENT_BROWSER = """\
- heading "Change user" [level=1, ref=e26]
- textbox "Type into this box to filter down the list of available groups." [ref=e68]
- listbox "Available groups" [ref=e62]
  - option "Editors" [ref=e69]
- checkbox "Active" [checked=true, ref=e59]
"""

PLAYWRIGHT_CLI = """\
- generic [ref=e1]:
  - link "Skip to main content" [ref=e2] [cursor=pointer]:
    - /url: "#content-start"
  - 'button "Toggle theme (current theme: auto)" [ref=e8] [cursor=pointer]'
  - textbox "Username:" [active] [ref=e19]
"""


def test_bsk_lines() -> None:
    assert find_ref(BSK, "heading", "^Change user$") == "e84"
    assert find_ref(BSK, "textbox", "^Username:?$") == "e88"
    assert find_ref(BSK, "listbox", '"Choose" arrow') == "e100"  # an escaped quote
    # An option shown without a ref: found as a node, never as a ref to act on.
    assert find_ref(BSK, "option", "^Editors$") is None
    node = find_node(BSK, "option", "^Editors$", with_ref=False)
    assert node is not None and node.ref is None
    # Unnamed nodes by place: "^$" and nth.
    assert find_ref(BSK, "textbox", "^$") == "e99"
    assert find_ref(BSK, "link", "^$", 1) == "e213"
    assert find_ref(BSK, "link", "^$", 2) is None
    assert find_ref(BSK, "link", "", -1) == "e213"  # the last one


def test_agent_browser_lines() -> None:
    assert find_ref(AGENT_BROWSER, "heading", "^Change user$") == "e26"
    assert find_ref(AGENT_BROWSER, "option", "^Editors$") == "e69"
    assert find_ref(AGENT_BROWSER, "checkbox", "Active") == "e59"
    assert find_ref(AGENT_BROWSER, "textbox", "(?i)available groups") == "e68"


def test_playwright_cli_lines() -> None:
    assert find_ref(PLAYWRIGHT_CLI, "button", "^Toggle theme") == "e8"  # YAML-quoted line
    assert find_ref(PLAYWRIGHT_CLI, "textbox", "^Username:$") == "e19"
    assert find_ref(PLAYWRIGHT_CLI, "generic", "") == "e1"
    assert [n.role for n in nodes(PLAYWRIGHT_CLI)][:2] == ["generic", "link"]


def test_roles_match_whole() -> None:
    assert find_ref(BSK, "link|heading", "^Change user$") == "e84"
    assert find_ref(BSK, "head", "^Change user$") is None
