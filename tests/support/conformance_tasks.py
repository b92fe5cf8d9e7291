"""The conformance suite's widget tasks as data: what an agent does on each real widget
library page (tests/pages/conformance/, the libraries pinned in tests/package.json), so
that tests/test_conformance_widgets.py runs them through bsk and bench/conformance.py runs
the very same steps through the peers (playwright-cli, agent-browser).

A task is a dict:

- ``widget``: its name (unique); ``page``: its path on the pages server
  (tests/support/site.py serves tests/pages at ``/``, tests/node_modules at
  ``/node_modules/``).
- ``steps``: what an agent does, in order. Before each step the runner takes a snapshot
  and finds the target by ``role`` and ``name`` in its TEXT alone (nothing but what the
  agent reads), taking a fresh snapshot until the target is there (widgets animate; an
  agent looks again) or a few seconds have passed. A step is a dict:

  - ``action``: ``click`` | ``hover`` | ``fill`` | ``select`` | ``drag`` | ``press`` |
    ``type`` | ``scroll``.
  - ``role``: a regex the node's role must match whole (``"button|clickable"``).
  - ``name``: a regex searched in the node's accessible name (``"^$"``: unnamed; ``""``:
    any name). The first node in document order that matches and has a ref is taken,
    or the ``nth`` (0-based; -1 the last) such node.
  - ``value``: the text of ``fill``/``type``, the option of ``select``, the key of
    ``press``, the pixels down of ``scroll``. ``press`` and ``type`` act on the focused
    element and have no ``role``/``name``.
  - ``to``: ``{"role", "name"}``: ``drag``'s drop target; for ``scroll``, the node to
    scroll until it shows (scroll by ``value`` over the target, snapshot, again; at most
    ``SCROLL_TRIES`` times).
  - ``seen``: a regex the snapshot text must contain before the step: what the agent
    reads to know where it is (the month a date picker shows).

- ``check``: a JS expression, true once the page's own state says the task is done (the
  widget's value through its own API); polled a few seconds, as widgets animate.
- ``shows`` (optional): a regex the snapshot after the last step must contain: the
  confirmation a person reads (a tooltip's text).
- ``snapshot_fix`` (optional): the snapshot defect of issue 24 item 3 that stops this task
  today; the test is then a strict xfail with this reason, removed when the fix lands.
"""

from __future__ import annotations

from typing import Any

SCROLL_TRIES = 40


TASKS: list[dict[str, Any]] = [
    {
        "widget": "jqueryui-datepicker",
        "page": "/conformance/jqueryui-datepicker.html",
        "steps": [
            {"action": "click", "role": "textbox", "name": "^(Date:?)?$"},
            {"action": "click", "role": "link", "name": "^Next$", "seen": "November 2016"},
            {"action": "click", "role": "link", "name": "^15$", "seen": "December 2016"},
        ],
        "check": "$('#datepicker').val() === '12/15/2016'",
    },
    {
        "widget": "jqueryui-sortable",
        "page": "/conformance/jqueryui-sortable.html",
        "steps": [
            {"action": "drag", "role": "listitem", "name": "^Item 1$",
             "to": {"role": "listitem", "name": "^Item 3$"}},
        ],
        "check": "(a => a.indexOf('item-1') > a.indexOf('item-2'))"
                 "($('#sortable').sortable('toArray'))",
    },
    {
        "widget": "jqueryui-selectable",
        "page": "/conformance/jqueryui-selectable.html",
        "steps": [{"action": "click", "role": "listitem|option", "name": "^Item 3$"}],
        "check": "$('#selectable .ui-selected').text() === 'Item 3'",
    },
    {
        "widget": "jqueryui-droppable",
        "page": "/conformance/jqueryui-droppable.html",
        "steps": [
            {"action": "drag", "role": "clickable", "name": "^Drag me to my target$",
             # any role: the box is a plain div, a drop target only by the library's say
             "to": {"role": "[a-z]+", "name": "^Drop here$"}},
        ],
        "check": "$('#droppable').hasClass('ui-state-highlight')",
        "shows": "Dropped!",
    },
    {
        "widget": "jqueryui-autocomplete",
        "page": "/conformance/jqueryui-autocomplete.html",
        "steps": [
            {"action": "click", "role": "textbox", "name": "^Tags"},
            {"action": "type", "value": "Jav"},
            {"action": "click", "role": "menuitem|listitem|clickable|option",
             "name": "^JavaScript$"},
        ],
        "check": "$('#tags').val() === 'JavaScript'",
    },
    {
        # The same with `fill`, what an agent reaches for on a textbox: the field keeps
        # focus (a blur cancels the widget's pending search).
        "widget": "jqueryui-autocomplete-fill",
        "page": "/conformance/jqueryui-autocomplete.html",
        "steps": [
            {"action": "fill", "role": "textbox", "name": "^Tags", "value": "Jav"},
            {"action": "click", "role": "menuitem|listitem|clickable|option",
             "name": "^JavaScript$"},
        ],
        "check": "$('#tags').val() === 'JavaScript'",
    },
    {
        "widget": "jqueryui-slider",
        "page": "/conformance/jqueryui-slider.html",
        "steps": [
            # the handle: a span with tabindex inside the track, neither of them named
            {"action": "click", "role": "clickable|slider", "name": "", "nth": 1},
            {"action": "press", "value": "End"},
        ],
        "check": "$('#slider').slider('value') === 10 && $('#amount').val() === '10'",
    },
    {
        "widget": "jqueryui-dialog",
        "page": "/conformance/jqueryui-dialog.html",
        "steps": [
            {"action": "click", "role": "button", "name": "^Open dialog$"},
            {"action": "click", "role": "button", "name": "^Save$"},
        ],
        "check": "window.saved === true && !$('#dialog').dialog('isOpen')",
    },
    {
        "widget": "jqueryui-tabs",
        "page": "/conformance/jqueryui-tabs.html",
        "steps": [{"action": "click", "role": "tab", "name": "^Aenean lacinia$"}],
        "check": "$('#tabs').tabs('option', 'active') === 2",
        "shows": "Mauris eleifend est et turpis",
    },
    {
        "widget": "jqueryui-accordion",
        "page": "/conformance/jqueryui-accordion.html",
        "steps": [{"action": "click", "role": "tab", "name": "^Section 3$"}],
        "check": "$('#accordion').accordion('option', 'active') === 2",
        "shows": "Nam enim risus",
    },
    {
        "widget": "jqueryui-menu",
        "page": "/conformance/jqueryui-menu.html",
        "steps": [
            {"action": "click", "role": "menuitem", "name": "^Electronics$"},
            {"action": "click", "role": "menuitem", "name": "^Car Hifi$"},
        ],
        "check": "window.picked === 'Car Hifi'",
    },
    {
        "widget": "select2",
        "page": "/conformance/select2.html",
        "steps": [
            {"action": "click", "role": "combobox", "name": "^Alabama$"},
            {"action": "click", "role": "option", "name": "^Wyoming$"},
        ],
        "check": "$('#state').val() === 'WY'",
    },
    {
        "widget": "tom-select",
        "page": "/conformance/tom-select.html",
        "steps": [
            {"action": "click", "role": "combobox", "name": "^States$"},
            {"action": "click", "role": "option", "name": "^Texas$"},
        ],
        "check": "document.getElementById('select-state').tomselect.getValue().includes('TX')",
    },
    {
        "widget": "flatpickr",
        "page": "/conformance/flatpickr.html",
        "steps": [
            {"action": "click", "role": "textbox", "name": "^Departure$"},
            {"action": "click", "role": "clickable|button", "name": "(?i)next"},
            {"action": "click", "role": "clickable|button|gridcell|option",
             "name": "^March 15, 2025$"},
        ],
        "check": "document.getElementById('when').value === '2025-03-15'",
    },
    {
        "widget": "flatpickr-month-dropdown",
        "page": "/conformance/flatpickr.html",
        "steps": [
            {"action": "click", "role": "textbox", "name": "^Departure$"},
            {"action": "select", "role": "combobox", "name": "(?i)month", "value": "March"},
            {"action": "click", "role": "clickable|button|gridcell|option",
             "name": "^March 15, 2025$"},
        ],
        "check": "document.getElementById('when').value === '2025-03-15'",
    },
    {
        "widget": "sortablejs",
        "page": "/conformance/sortablejs.html",
        "steps": [
            {"action": "drag", "role": "listitem", "name": "^item 1$",
             "to": {"role": "listitem", "name": "^item 3$"}},
        ],
        "check": "(a => a.indexOf('1') > a.indexOf('2'))(window.sortable.toArray())",
    },
    {
        "widget": "bootstrap-dropdown",
        "page": "/conformance/bootstrap-dropdown.html",
        "steps": [
            {"action": "click", "role": "button", "name": "^Dropdown button$"},
            {"action": "click", "role": "button|menuitem", "name": "^Another action$"},
        ],
        "check": "window.chosen === 'Another action'",
    },
    {
        "widget": "bootstrap-modal",
        "page": "/conformance/bootstrap-modal.html",
        "steps": [
            {"action": "click", "role": "button", "name": "^Launch demo modal$"},
            {"action": "click", "role": "button", "name": "^Save changes$",
             "seen": "Modal title"},
        ],
        "check": "window.saved === true && window.hidden === true",
    },
    {
        # The same, its dialog fading in for 1.6 s: a press before the fade ends is ignored.
        "widget": "bootstrap-modal-fade",
        "page": "/conformance/bootstrap-modal.html?fade",
        "steps": [
            {"action": "click", "role": "button", "name": "^Launch demo modal$"},
            {"action": "click", "role": "button", "name": "^Save changes$",
             "seen": "Modal title"},
        ],
        "check": "window.saved === true && window.hidden === true",
    },
    {
        "widget": "bootstrap-collapse",
        "page": "/conformance/bootstrap-collapse.html",
        "steps": [{"action": "click", "role": "button", "name": "^Button with data-bs-target$"}],
        "check": "window.shown === true",
        "shows": "Some placeholder content for the collapse component",
    },
    {
        "widget": "bootstrap-tooltip",
        "page": "/conformance/bootstrap-tooltip.html",
        "steps": [{"action": "hover", "role": "button", "name": "^Tooltip on bottom$"}],
        "check": "document.querySelector('.tooltip.show') !== null",
        "shows": r"- tooltip[^\n]*\n?[^\n]*Tooltip on bottom",
    },
    {
        "widget": "react-select",
        "page": "/conformance/react-select.html",
        "steps": [
            {"action": "click", "role": "combobox", "name": "^Flavour$"},
            {"action": "click", "role": "option", "name": "^Strawberry$"},
        ],
        "check": "window.flavour === 'strawberry'",
        "shows": "Your choice: Strawberry",
    },
    {
        "widget": "shoelace-select",
        "page": "/conformance/shoelace-select.html",
        "steps": [
            {"action": "click", "role": "combobox", "name": "^Select one"},
            {"action": "click", "role": "option", "name": "^Option 2$"},
        ],
        "check": "document.getElementById('pick').value === 'option-2'",
    },
    {
        "widget": "shoelace-dialog",
        "page": "/conformance/shoelace-dialog.html",
        "steps": [
            {"action": "click", "role": "button|clickable", "name": "^Open Dialog$"},
            {"action": "click", "role": "checkbox", "name": "^I agree$"},
            {"action": "click", "role": "button|clickable", "name": "^Done$"},
        ],
        "check": "document.getElementById('agree').checked && "
                 "!document.querySelector('sl-dialog').open",
    },
    {
        "widget": "closed-shadow-root",
        "page": "/conformance/closed-shadow.html",
        "steps": [{"action": "click", "role": "switch", "name": "^Email notifications$"}],
        "check": "document.getElementById('notify').on === true",
    },
    {
        "widget": "ag-grid",
        "page": "/conformance/ag-grid.html",
        "steps": [
            # 300 rows, ~30 drawn: scroll over the last drawn row until row 150 is drawn
            {"action": "scroll", "role": "gridcell", "name": "", "nth": -1, "value": "500",
             "to": {"role": "gridcell", "name": "^Make 150$"}},
            {"action": "click", "role": "gridcell", "name": "^Make 150$"},
        ],
        "check": "(r => r.length === 1 && r[0].id === 150)(gridApi.getSelectedRows()) && "
                 "document.querySelectorAll('.ag-center-cols-container .ag-row').length < 100",
    },
    {
        "widget": "quill",
        "page": "/conformance/quill.html",
        "steps": [
            {"action": "click", "role": "textbox", "name": ""},
            {"action": "press", "value": "Control+A"},
            {"action": "type", "value": "Hello Quill"},
            {"action": "press", "value": "Control+A"},
            {"action": "click", "role": "button", "name": "^bold$"},
        ],
        "check": "quill.getText() === 'Hello Quill\\n' && quill.getFormat(0, 11).bold === true",
    },
    {  # the picker's names are CSS text (::before content): nothing else names them
        "widget": "quill heading",
        "page": "/conformance/quill.html",
        "steps": [
            {"action": "click", "role": "textbox", "name": ""},
            {"action": "click", "role": "button", "name": "^Normal$"},
            {"action": "click", "role": "button", "name": "^Heading 2$"},
        ],
        "check": "quill.getFormat(0, 1).header === 2",
    },
    {
        "widget": "codemirror",
        "page": "/conformance/codemirror.html",
        "steps": [
            {"action": "click", "role": "textbox", "name": ""},
            {"action": "press", "value": "Control+End"},
            {"action": "type", "value": "console.log(42)"},
        ],
        "check": "view.state.doc.toString().endsWith('}\\nconsole.log(42)')",
    },
]
