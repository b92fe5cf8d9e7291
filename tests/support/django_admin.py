"""A throwaway Django project (PyPI `django`, pinned in the test extras) served on a
loopback port: a real application for the conformance suite (issue 24).

Everything lives in one temporary folder: a settings module written in code (sqlite,
the admin, auth, sessions, messages, static files), a small app with a model the admin
shows with a `DateTimeField` (the calendar and clock pop-ups), a list filter and a search
box, a superuser, and `python -m django runserver --noreload` on a free port (DEBUG, so
it serves the admin's own JavaScript and CSS). The database is read from the test
process with `sqlite3` (Django's own tables, no Django set-up in this process).

Used by tests/test_conformance_django.py and bench/conformance.py.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ADMIN_USER, ADMIN_PASSWORD = "admin", "conformance-pw-1"
# Rows the tasks start from: a group to join, events to filter, search and delete.
GROUP, MEMBER = "Editors", "carol"
EVENTS = [("Launch party", "social"), ("Quarterly review", "work"),
          ("Team lunch", "social"), ("Budget meeting", "work"), ("Offsite", "work"),
          ("Stale draft A", "work"), ("Stale draft B", "work")]

SETTINGS = """
from pathlib import Path
BASE = Path(__file__).resolve().parent
SECRET_KEY = "conformance-only-not-a-secret"
DEBUG = True
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = [
    "django.contrib.admin", "django.contrib.auth", "django.contrib.contenttypes",
    "django.contrib.sessions", "django.contrib.messages", "django.contrib.staticfiles",
    "events",
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "urls"
TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True,
    "OPTIONS": {"context_processors": [
        "django.template.context_processors.request",
        "django.contrib.auth.context_processors.auth",
        "django.contrib.messages.context_processors.messages",
    ]},
}]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": BASE / "db.sqlite3"}}
# Weak passwords are fine for throwaway users; hashing stays fast on a loaded machine.
AUTH_PASSWORD_VALIDATORS = []
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_TZ = True
STATIC_URL = "static/"
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
"""

URLS = """
from django.contrib import admin
from django.urls import path
urlpatterns = [path("admin/", admin.site.urls)]
"""

MODELS = """
from django.db import models

class Event(models.Model):
    KINDS = [("social", "Social"), ("work", "Work")]
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=20, choices=KINDS, default="work")
    starts_at = models.DateTimeField("starts at")

    def __str__(self):
        return self.name
"""

ADMIN = """
from django.contrib import admin
from .models import Event

@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "starts_at"]
    list_filter = ["kind"]
    search_fields = ["name"]
"""

SEED = f"""
import datetime
from django.contrib.auth.models import Group, User
from events.models import Event
User.objects.create_superuser({ADMIN_USER!r}, "admin@example.com", {ADMIN_PASSWORD!r})
Group.objects.create(name={GROUP!r})
User.objects.create_user({MEMBER!r}, password="carol-pw-1")
start = datetime.datetime(2026, 1, 5, 9, 0, tzinfo=datetime.UTC)
for i, (name, kind) in enumerate({EVENTS!r}):
    Event.objects.create(name=name, kind=kind, starts_at=start + datetime.timedelta(days=i))
"""


@dataclass
class DjangoAdmin:
    """A running project: its base URL (`http://127.0.0.1:PORT`) and its database."""

    url: str
    db: Path

    @property
    def admin(self) -> str:
        return f"{self.url}/admin/"

    def rows(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        """Rows of a query on the project's database (read-only, a fresh connection, so
        it sees what the server has committed)."""
        with contextlib.closing(sqlite3.connect(f"file:{self.db}?mode=ro", uri=True,
                                                timeout=10)) as conn:
            return conn.execute(sql, params).fetchall()

    def value(self, sql: str, *params: Any) -> Any:
        rows = self.rows(sql, *params)
        return rows[0][0] if rows else None


def write_project(root: Path) -> None:
    (root / "events").mkdir(parents=True, exist_ok=True)
    for path, text in {"settings.py": SETTINGS, "urls.py": URLS,
                       "events/__init__.py": "", "events/models.py": MODELS,
                       "events/admin.py": ADMIN, "seed.py": SEED}.items():
        (root / path).write_text(textwrap.dedent(text).lstrip())


def _django(root: Path, *args: str, timeout: float = 180) -> None:
    cp = subprocess.run([sys.executable, "-m", "django", *args], cwd=root, env=_env(root),
                        capture_output=True, text=True, timeout=timeout)
    if cp.returncode != 0:
        raise RuntimeError(f"django {' '.join(args)} exited {cp.returncode}:\n"
                           f"{cp.stdout}{cp.stderr}")


def _env(root: Path) -> dict[str, str]:
    return {**os.environ, "DJANGO_SETTINGS_MODULE": "settings", "PYTHONPATH": str(root),
            "PYTHONUNBUFFERED": "1"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError):
        return False


@contextlib.contextmanager
def running_django_admin(root: Path, start_timeout: float = 90) -> Iterator[DjangoAdmin]:
    """Write, migrate and seed the project in `root`, serve it; stop the server after."""
    write_project(root)
    # --run-syncdb: the small app's table without a migrations folder of its own.
    _django(root, "migrate", "--run-syncdb", "--verbosity", "0")
    _django(root, "shell", "-c", (root / "seed.py").read_text())
    log = (root / "server.log").open("w")
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "django", "runserver", "--noreload",
         f"127.0.0.1:{port}"],
        cwd=root, env=_env(root), stdout=log, stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL, start_new_session=True)
    site = DjangoAdmin(f"http://127.0.0.1:{port}", root / "db.sqlite3")
    try:
        deadline = time.monotonic() + start_timeout
        while not _answers(f"{site.admin}login/"):
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the Django dev server did not start:\n"
                                   f"{(root / 'server.log').read_text()}")
            time.sleep(0.1)
        yield site
    finally:
        server.terminate()
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(20)
        log.close()
