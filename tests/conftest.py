"""Fixtures: a local site, a real daemon driven through the real `bsk` CLI, browsers.

Every test talks to a real headless Chromium. Most share one daemon (each test in its
own session); tests about the daemon's life get their own state dir. The helpers live in
`tests/support/` by concern; this file registers fixtures, and re-exports the helpers'
names so that `from conftest import Bsk, wait_until` keeps working (new tests import
from `support.*`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from support.chromium import (  # noqa: F401  (re-exported)
    Chromium,
    PageDevTools,
    browser_cdp,
    cdp,
    free_port,
    launched_chromium,
    one_cdp_command,
)
from support.cli import (  # noqa: F401  (re-exported)
    BSK,
    Bsk,
    CliRun,
    alive,
    answer_of,
    daemon_pid,
    live_ops,
    short_home,
    stop_for_good,
)
from support.extension import (  # noqa: F401  (re-exported)
    EXTENSION_DIR,
    BrowserWithExtension,
    agent_session,
    answer_prompt,
    extension_browser,
    log_in_through_the_relay,
    stop_button_interrupts,
    the_connected_browser,
)
from support.headed import HEADED_ARGS, running_xvfb
from support.pages import clicks_report_the_state_they_left, ref_of  # noqa: F401
from support.site import PAGES, serve_pages  # noqa: F401  (re-exported)
from support.wait import in_ci, wait_until  # noqa: F401  (re-exported)

# The helpers' names before they were renamed (production has an `ExtensionBrowser` and
# a `Result`), for tests written against them.
ExtensionBrowser = BrowserWithExtension
Result = CliRun


@pytest.fixture(scope="session")
def site() -> Iterator[str]:
    """The fixture pages in tests/pages, served on a free loopback port."""
    with serve_pages() as url:
        yield url


@pytest.fixture(scope="session")
def cross_site() -> Iterator[str]:
    """The same pages on a second port, addressed as `localhost`: another site, so
    Chromium puts its frames in another process (an out-of-process iframe)."""
    with serve_pages("localhost") as url:
        yield url


@pytest.fixture(scope="session")
def shared_bsk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bsk]:
    """One daemon for the many tests that don't care about the daemon's own life. Its
    browser opens a DevTools port (--expose-cdp) for the tests that drive a page with a
    second DevTools client; by default it has none (tests/test_security.py)."""
    runner = Bsk(short_home(tmp_path_factory, "shared"), BSK_EXPOSE_CDP="0")
    yield runner
    runner.stop_daemon()


@pytest.fixture
def bsk(shared_bsk: Bsk) -> Iterator[Bsk]:
    """The shared daemon, bound to a session of this test's own."""
    sid = "t-" + uuid.uuid4().hex[:8]
    shared_bsk.ok("session", "start", sid)
    runner = shared_bsk.with_session(sid)
    yield runner
    runner("session", "stop", "--wait")


@pytest.fixture
def make_bsk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Bsk]]:
    """Runners on state dirs of their own (`make_bsk(BSK_X="1")` sets env for bsk and the
    daemon it spawns). Every daemon started on them is stopped at teardown."""
    made: list[Bsk] = []

    def make(**env: str) -> Bsk:
        runner = Bsk(short_home(tmp_path_factory, "home"), **env)
        made.append(runner)
        return runner

    yield make
    for runner in made:
        stop_for_good(runner)


@pytest.fixture
def fresh_bsk(make_bsk: Callable[..., Bsk]) -> Bsk:
    """A state dir of this test's own: for tests of the daemon's start, stop and death."""
    return make_bsk()


@pytest.fixture(scope="session")
def api(shared_bsk: Bsk) -> Iterator[httpx.Client]:
    """An HTTP client over the shared daemon's Unix socket (the daemon is started first)."""
    shared_bsk.ok("daemon", "start")
    transport = httpx.HTTPTransport(uds=str(shared_bsk.home / "bsk.sock"))
    with httpx.Client(transport=transport, base_url="http://bsk", timeout=60) as client:
        yield client


@pytest.fixture
def chromium(tmp_path: Path) -> Iterator[Chromium]:
    """A Chromium the test started itself (for --cdp-url)."""
    with launched_chromium(tmp_path / "chromium.log") as browser:
        yield browser


@pytest.fixture(scope="session")
def xvfb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One virtual X server for the whole test session; yields its DISPLAY (":N").
    Without Xvfb the tests that need it skip, except on CI (support/headed.py)."""
    with running_xvfb(tmp_path_factory.mktemp("xvfb") / "xvfb.log") as display:
        yield display


@pytest.fixture
def ext_browser(make_bsk: Callable[..., Bsk], tmp_path: Path) -> Iterator[BrowserWithExtension]:
    """A daemon with its extension listener on a free port, and a headless Chromium
    that loads extension/ and is pointed at that port; connected when yielded."""
    port = free_port()
    runner = make_bsk(BSK_EXTENSION_PORT=str(port))
    with extension_browser(runner, port, tmp_path / "chromium.log") as ext:
        yield ext


@pytest.fixture(scope="module")
def headed_ext_browser(xvfb: str, tmp_path_factory: pytest.TempPathFactory
                       ) -> Iterator[BrowserWithExtension]:
    """ext_browser's headed twin: the same Chromium and extension with real windows on
    the session's Xvfb (DISPLAY set for that process only). One per test module: tests
    using it share the browser and its daemon, so each uses session ids of its own."""
    port = free_port()
    runner = Bsk(short_home(tmp_path_factory, "headed"), BSK_EXTENSION_PORT=str(port))
    with extension_browser(runner, port, runner.home / "chromium.log",
                           *HEADED_ARGS, headless=False, display=xvfb) as ext:
        yield ext
