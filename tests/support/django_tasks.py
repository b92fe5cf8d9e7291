"""The Django admin's conformance tasks (issue 24), in the shape of
tests/support/conformance_tasks.py (its docstring; support/agent_steps.py runs both):
what a person does in the admin, step by step, each step naming what an agent reads in a
snapshot (role and name) and does with it. `page` is a path on the project
support/django_admin.py serves; every task but "log in" needs a logged-in browser (run
"log in" first, in the same browser). Names are case-insensitive where a tool prints the
admin's CSS-uppercased text. `snapshot_fix`: the snapshot defect (issue 24 item 3) that
stops bsk today; tests/test_conformance_django.py makes the task a strict xfail with it.

The seed data (support/django_admin.py) keeps the tasks independent of their order:
"carol" for the group tasks, "Stale draft A/B" for the bulk delete, two "social" events for
the filter, one "Budget meeting" for the search.
"""

from __future__ import annotations

from typing import Any

from support.django_admin import ADMIN_PASSWORD, ADMIN_USER, GROUP, MEMBER

DJANGO_TASKS: list[dict[str, Any]] = [
    {"widget": "django: log in", "page": "/admin/login/",
     "steps": [
         {"action": "fill", "role": "textbox", "name": "^Username:?$", "value": ADMIN_USER},
         {"action": "fill", "role": "textbox", "name": "^Password:?$",
          "value": ADMIN_PASSWORD},
         {"action": "click", "role": "button", "name": "(?i)^log in$"},
     ],
     "check": "location.pathname === '/admin/' && !!document.querySelector('#user-tools')"},

    {"widget": "django: add a user", "page": "/admin/auth/user/add/",
     "steps": [
         {"action": "fill", "role": "textbox", "name": "^Username:?$", "value": "alice"},
         {"action": "fill", "role": "textbox", "name": "^Password:?$", "value": "alice-pw-1"},
         {"action": "fill", "role": "textbox", "name": "^Password confirmation:?$",
          "value": "alice-pw-1"},
         {"action": "click", "role": "button", "name": "(?i)^save and continue editing$"},
     ],
     "check": r"/^\/admin\/auth\/user\/\d+\/change\/$/.test(location.pathname)",
     # The success message: the only confirmation a person reads.
     "shows": "was added successfully"},

    # The same with the interactive-only snapshot, the first thing agents used to
    # playwright-cli or agent-browser type (`snapshot -i`).
    {"widget": "django: add a user (interactive snapshot)", "page": "/admin/auth/user/add/",
     "interactive": True,
     "steps": [
         {"action": "fill", "role": "textbox", "name": "^Username:?$", "value": "bob"},
         {"action": "fill", "role": "textbox", "name": "^Password:?$", "value": "bob-pw-1"},
         {"action": "fill", "role": "textbox", "name": "^Password confirmation:?$",
          "value": "bob-pw-1"},
         {"action": "click", "role": "button", "name": "(?i)^save and continue editing$"},
     ],
     "check": r"/^\/admin\/auth\/user\/\d+\/change\/$/.test(location.pathname)",
     "shows": "was added successfully"},

    # The two-list selector (filter_horizontal): its "Filter" box filters the available
    # list on key presses, so the agent types into it.
    {"widget": "django: two-list selector, filter", "page": "/admin/auth/user/",
     "steps": [
         {"action": "click", "role": "link", "name": f"^{MEMBER}$"},
         {"action": "click", "role": "textbox", "name": "(?i)available groups"},
         {"action": "type", "value": "zzz"},
     ],
     "check": "document.querySelector('#id_groups_from').options.length === 0"},

    {"widget": "django: two-list selector, choose", "page": "/admin/auth/user/",
     "steps": [
         {"action": "click", "role": "link", "name": f"^{MEMBER}$"},
         {"action": "click", "role": "option", "name": f"^{GROUP}$"},
         {"action": "click", "role": "button", "name": "(?i)^choose selected groups$"},
         {"action": "click", "role": "button", "name": "(?i)^save and continue editing$"},
     ],
     "check": "[...document.querySelectorAll('#id_groups_to option')]"
              f".some(o => o.textContent === {GROUP!r})",
     "shows": "was changed successfully"},

    # The calendar and clock pop-ups: their icon links hold only a span with a `title`,
    # so an agent reads them by place (the first and second such link) unless the
    # snapshot names them.
    {"widget": "django: calendar and clock", "page": "/admin/events/event/add/",
     "steps": [
         {"action": "fill", "role": "textbox", "name": "^Name:?$", "value": "Planning day"},
         {"action": "click", "role": "link", "name": "(?i)^(choose a (date|time))?$"},
         {"action": "click", "role": "link", "name": "^15$"},
         {"action": "click", "role": "link", "name": "(?i)^(choose a (date|time))?$",
          "nth": 1},
         {"action": "click", "role": "link", "name": r"^6 p\.m\.$"},
         {"action": "click", "role": "button", "name": "(?i)^save$"},
     ],
     "check": "location.pathname === '/admin/events/event/'",
     "shows": "was added successfully"},

    {"widget": "django: changelist filter", "page": "/admin/events/event/",
     "steps": [{"action": "click", "role": "link", "name": "^Social$"}],
     "check": "new URLSearchParams(location.search).get('kind__exact') === 'social'"
              " && document.querySelectorAll('#result_list tbody tr').length === 2"},

    {"widget": "django: changelist search", "page": "/admin/events/event/",
     "steps": [
         {"action": "fill", "role": "textbox|searchbox", "name": "(?i)search",
          "value": "Budget"},
         {"action": "click", "role": "button", "name": "(?i)^search$"},
     ],
     "check": "new URLSearchParams(location.search).get('q') === 'Budget'"
              " && document.querySelectorAll('#result_list tbody tr').length === 1"},

    {"widget": "django: bulk delete", "page": "/admin/events/event/",
     "steps": [
         {"action": "click", "role": "checkbox", "name": "Stale draft A$"},
         {"action": "click", "role": "checkbox", "name": "Stale draft B$"},
         {"action": "select", "role": "combobox", "name": "(?i)^action:?$",
          "value": "Delete selected events"},
         {"action": "click", "role": "button", "name": "(?i)^go$"},
         {"action": "click", "role": "button", "name": "(?i)^yes, i.m sure$"},
     ],
     "check": "document.body.innerText.includes('Successfully deleted 2 events')",
     "shows": "Successfully deleted 2 events"},
]
