"""The roles the snapshot acts on and gives refs to: one list for the snapshot, the
locators, the effects and a ref's error hints (docs/snapshot.md)."""

from __future__ import annotations

# Roles an agent acts on; with --interactive only these (and their context) are shown.
ACTIONABLE = frozenset({
    "button", "link", "textbox", "searchbox", "checkbox", "radio", "combobox", "listbox",
    "option", "menuitem", "menuitemcheckbox", "menuitemradio", "tab", "switch", "slider",
    "spinbutton", "treeitem", "textarea", "MenuListPopup", "ListBoxOption", "gridcell",
})
# Roles that also get a ref: things an agent reads or targets by ref.
REF_ROLES = ACTIONABLE | {"heading", "img", "image", "dialog", "alertdialog", "iframe",
                          "region", "form", "canvas"}
