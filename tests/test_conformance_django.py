"""A real application through bsk the way an agent drives it (issue 24): the Django admin
(PyPI `django`, pinned in the test extras), task by task — log in, add a user, the
two-list group selector, the calendar and clock pop-ups, a changelist's filter and
search, a bulk delete through its confirmation page. Each step snapshots, picks its ref
from the snapshot's text by role and name alone (support/snapshot_text.py), acts; the
task ends on the page's own check and, here, on Django's database.

The tasks (support/django_tasks.py) run in bench/conformance.py through playwright-cli and
agent-browser too. A task the snapshot cannot serve yet is a strict xfail naming the
snapshot's defect (issue 24, item 3), so that the fix shows as an XPASS to remove.

One Django server and one bsk session (logged in once) for the module.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.agent_steps import BskDriver, TaskResult, run_task
from support.cli import Bsk
from support.django_admin import GROUP, MEMBER, DjangoAdmin, running_django_admin
from support.django_tasks import DJANGO_TASKS
from support.snapshot_text import find_node

TASKS = {task["widget"].removeprefix("django: "): task for task in DJANGO_TASKS}


@pytest.fixture(scope="module")
def django_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DjangoAdmin]:
    with running_django_admin(tmp_path_factory.mktemp("django")) as site:
        yield site


@pytest.fixture(scope="module")
def admin(shared_bsk: Bsk, django_site: DjangoAdmin) -> Iterator[Bsk]:
    """A session of the shared daemon, logged in to the admin for the module's tasks (the
    daemon's sessions share cookies: test_log_in may have logged it in already)."""
    shared_bsk.ok("session", "start", "django-admin")
    session = shared_bsk.with_session("django-admin")
    if session.ok("open", f"{django_site.admin}login/")["result"]["url"] != django_site.admin:
        done(session, django_site, "log in")
    yield session
    # The admin's cookies live in the daemon's shared context, on 127.0.0.1 (any port):
    # gone with the module, so no later test finds a csrftoken it never set.
    session("cookies", "clear")
    session("session", "stop", "--wait")


def done(session: Bsk, site: DjangoAdmin, name: str) -> TaskResult:
    """Run one task through bsk; fail with what the snapshot offered, unless it is done."""
    # The admin's pages are static once loaded, and its pop-ups open at the click: an
    # agent that does not see its target at once will not see it later.
    result = run_task(BskDriver(session.text), site.url, TASKS[name], find_seconds=2,
                      check_seconds=5)
    assert result.done, f"{result.describe()}\nlast snapshot:\n{result.last_snapshot}"
    return result


def known_defect(name: str) -> pytest.MarkDecorator:
    """A strict xfail for a task a snapshot defect stops today (its `snapshot_fix`)."""
    return pytest.mark.xfail(strict=True, reason=TASKS[name]["snapshot_fix"])


def test_log_in(bsk: Bsk, django_site: DjangoAdmin) -> None:
    # Logged out, whatever ran before (the daemon's sessions share cookies; only this
    # site's session cookie goes).
    bsk.ok("cookies", "delete", "sessionid", "--url", django_site.admin)
    before = django_site.value("SELECT last_login FROM auth_user WHERE username = 'admin'")
    done(bsk, django_site, "log in")
    after = django_site.value("SELECT last_login FROM auth_user WHERE username = 'admin'")
    assert after is not None and after != before


def test_add_user(admin: Bsk, django_site: DjangoAdmin) -> None:
    done(admin, django_site, "add a user")
    assert django_site.value("SELECT count(*) FROM auth_user WHERE username = 'alice'") == 1


def test_add_user_interactive_snapshot_shows_the_success_message(
        admin: Bsk, django_site: DjangoAdmin) -> None:
    done(admin, django_site, "add a user (interactive snapshot)")


def test_selector_filter_box(admin: Bsk, django_site: DjangoAdmin) -> None:
    done(admin, django_site, "two-list selector, filter")


def test_selector_choose_a_group(admin: Bsk, django_site: DjangoAdmin) -> None:
    done(admin, django_site, "two-list selector, choose")
    assert django_site.rows(
        "SELECT g.name FROM auth_user_groups ug JOIN auth_user u ON u.id = ug.user_id "
        "JOIN auth_group g ON g.id = ug.group_id WHERE u.username = ?", MEMBER) == [(GROUP,)]


def test_calendar_and_clock(admin: Bsk, django_site: DjangoAdmin) -> None:
    done(admin, django_site, "calendar and clock")
    starts = django_site.value("SELECT starts_at FROM events_event WHERE name = 'Planning day'")
    # The calendar opens on the current month; day 15 was picked, then "6 p.m.".
    assert starts is not None and str(starts)[8:19] == "15 18:00:00", starts


def test_changelist_filter(admin: Bsk, django_site: DjangoAdmin) -> None:
    done(admin, django_site, "changelist filter")


def test_changelist_search(admin: Bsk, django_site: DjangoAdmin) -> None:
    done(admin, django_site, "changelist search")


def test_bulk_delete_through_the_confirmation_page(admin: Bsk,
                                                  django_site: DjangoAdmin) -> None:
    assert django_site.value("SELECT count(*) FROM events_event WHERE name LIKE 'Stale%'") == 2
    done(admin, django_site, "bulk delete")
    assert django_site.value("SELECT count(*) FROM events_event WHERE name LIKE 'Stale%'") == 0
    assert django_site.value("SELECT count(*) FROM events_event") >= 5  # only those two


def test_hash_link_does_not_read_as_navigation(admin: Bsk, django_site: DjangoAdmin) -> None:
    page = "/admin/events/event/add/"
    admin.ok("open", django_site.url + page)
    text = str(admin.ok("snapshot")["result"]["snapshot"])
    today = find_node(text, "link", "^Today$")
    assert today is not None and today.ref is not None
    line = next(line for line in text.splitlines() if f"ref={today.ref}]" in line)
    assert f"url={page}" not in line, line
