"""`python -m browserskill.api`: run the daemon in the foreground (the CLI spawns this)."""

from __future__ import annotations

import argparse
import errno
import logging
import os
import sqlite3
import sys
from pathlib import Path

from browserskill.api.server import AlreadyRunning, serve
from browserskill.base import event_loop, heap, paths, vault
from browserskill.base.catalog import tool_names
from browserskill.base.policy import Policy, PolicyError
from browserskill.base.policy import load as load_policy
from browserskill.browser.extension_protocol import RECONNECT_GRACE_S
from browserskill.browser.manager import BrowserConfig
from browserskill.daemon.core import TestHook
from browserskill.session.sessions import READOPT_TIMEOUT_S


def env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bsk daemon start --foreground",
                                description="Run the BrowserSkill daemon in the foreground.")
    p.add_argument("--cdp-url", default=os.environ.get("BSK_CDP_URL"),
                   metavar="URL",
                   help="attach to a running browser (http://host:port or ws://…) "
                        "instead of launching one [env BSK_CDP_URL]")
    p.add_argument("--grid", default=os.environ.get("BSK_GRID_URL"), metavar="URL",
                   help="new sessions run on this Selenium Grid 4 (http://host:4444), each "
                        "in a WebDriver session of its own, unless `session start` names "
                        "another place (--browser embedded for the daemon's own browser) "
                        "[env BSK_GRID_URL]")
    p.add_argument("--profile", default=os.environ.get("BSK_PROFILE"),
                   metavar="DIR",
                   help="profile directory for the launched browser "
                        "(default: STATE_DIR/profile) [env BSK_PROFILE]")
    p.add_argument("--ephemeral", action="store_true",
                   default=bool(os.environ.get("BSK_EPHEMERAL")),
                   help="use a throw-away profile, deleted at exit [env BSK_EPHEMERAL=1]")
    expose = os.environ.get("BSK_EXPOSE_CDP", "")
    p.add_argument("--expose-cdp", type=int, nargs="?", const=0, metavar="PORT",
                   default=int(expose) if expose.isdigit() else None,
                   help="also open the launched browser's DevTools on 127.0.0.1:PORT (0 or "
                        "no PORT: any free port) so other tools can share it; `bsk status` "
                        "then shows the endpoint. WARNING: any local user can connect to "
                        "it, run script in the agent's pages and read the user's files. "
                        "Off by default: the daemon talks to its browser over a private "
                        "pipe [env BSK_EXPOSE_CDP=PORT]")
    p.add_argument("--headed", action="store_true", default=bool(os.environ.get("BSK_HEADED")),
                   help="show the browser window [env BSK_HEADED=1]")
    p.add_argument("--idle-timeout", type=float,
                   default=env_float("BSK_IDLE_TIMEOUT", 1800),
                   metavar="SEC",
                   help="exit after this many seconds with no sessions and no requests; "
                        "0 = never (default 1800) [env BSK_IDLE_TIMEOUT]")
    tcp = os.environ.get("BSK_TCP_PORT")
    p.add_argument("--tcp-port", type=int, default=int(tcp) if tcp and tcp.isdigit() else None,
                   metavar="PORT",
                   help="also serve the HTTP API on 127.0.0.1:PORT (0 = any free port), "
                        "with the bearer token from STATE_DIR/token; off by default "
                        "[env BSK_TCP_PORT]")
    p.add_argument("--cleanup-timeout", type=float,
                   default=env_float("BSK_CLEANUP_TIMEOUT", 2.0),
                   metavar="SEC",
                   help="seconds a cancelled operation may spend on compensation before it "
                        "ends outcome_unknown (default 2) [env BSK_CLEANUP_TIMEOUT]")
    p.add_argument("--readopt-timeout", type=float, metavar="SEC",
                   default=env_float("BSK_READOPT_TIMEOUT", READOPT_TIMEOUT_S),
                   help="seconds re-adopting one session may take after a restart before "
                        f"it is ended, saying so (default {READOPT_TIMEOUT_S:g}) "
                        "[env BSK_READOPT_TIMEOUT]")
    p.add_argument("--extension-port", type=int,
                   default=int(os.environ["BSK_EXTENSION_PORT"])
                   if os.environ.get("BSK_EXTENSION_PORT", "").isdigit() else None,
                   metavar="PORT",
                   help="listen on 127.0.0.1:PORT for the BrowserSkill extension (the "
                        "extension's default is 47800; off unless given) "
                        "[env BSK_EXTENSION_PORT]"),
    p.add_argument("--extension-grace", type=float,
                   default=env_float("BSK_EXTENSION_GRACE", RECONNECT_GRACE_S),
                   metavar="SEC",
                   help="seconds the sessions of an extension browser whose connection "
                        "was lost wait for it to reconnect before they end; 0 = until "
                        f"stopped (default {RECONNECT_GRACE_S:g}) [env BSK_EXTENSION_GRACE]")
    p.add_argument("--policy", default=os.environ.get("BSK_POLICY") or None, metavar="FILE",
                   help="the person's policy (TOML or JSON): the domains and schemes the "
                        "agent's pages may reach, what waits for a person, what is refused "
                        "(docs/safety.md); nothing the agent calls changes it while the "
                        "daemon runs [env BSK_POLICY]")
    p.add_argument("--journal-max-age", type=float,
                   default=env_float("BSK_JOURNAL_MAX_AGE", 7 * 86400),
                   metavar="SEC",
                   help="drop ended operations older than this many seconds (default 7 days)")
    p.add_argument("--journal-max-count", type=int,
                   default=int(env_float("BSK_JOURNAL_MAX_COUNT", 10_000)),
                   metavar="N",
                   help="keep at most this many ended operations (default 10000)")
    return p


def _scrub_secrets(record: logging.LogRecord) -> bool:
    """A log line with every stored secret's value masked (browserskill/base/vault.py)."""
    text = record.getMessage()
    masked = vault.scrub_text(text)
    if masked != text:
        record.msg, record.args = masked, None
    return True


def main(argv: list[str] | None = None, *, test_hook: TestHook | None = None) -> int:
    """The daemon's entry point; `test_hook` only from a test build (tests/support)."""
    os.umask(paths.PRIVATE_UMASK)  # before anything is written: see paths.PRIVATE_UMASK
    args = parser().parse_args(argv)
    if args.cdp_url and not (args.ephemeral and os.environ.get("BSK_EPHEMERAL")) and (
            args.profile or args.ephemeral):
        print("bsk daemon: --cdp-url attaches to a browser; --profile/--ephemeral "
              "only apply to a launched one", file=sys.stderr)
        return 2
    problem = paths.state_dir_problem(paths.state_dir_name())
    if problem:  # one line, not a traceback (the CLI says the same before spawning)
        print(f"bsk daemon: {problem}", file=sys.stderr)
        return 2
    try:  # a policy that can't be read stops the start: no daemon runs without it
        policy = load_policy(args.policy, tool_names()) if args.policy else Policy()
    except PolicyError as e:
        print(f"bsk daemon: --policy: {e}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per Grid request
    for handler in logging.getLogger().handlers:  # a stored secret is masked in the log too
        handler.addFilter(_scrub_secrets)
    if args.grid and not args.grid.startswith(("http://", "https://")):
        print(f"bsk daemon: --grid must be an http:// or https:// URL: {args.grid}",
              file=sys.stderr)
        return 2
    config = BrowserConfig(
        cdp_url=args.cdp_url,
        grid_url=args.grid,
        profile=Path(args.profile).expanduser().resolve() if args.profile else None,
        ephemeral=args.ephemeral and not args.cdp_url,  # env default: moot when attached
        headless=not args.headed,
        expose_cdp=args.expose_cdp if not args.cdp_url else None,
    )
    heap.give_back_big_blocks()  # a days-long daemon must not keep a big message's MB
    try:
        event_loop.run(serve(config, idle_timeout=args.idle_timeout,
                          journal_max_age_s=args.journal_max_age,
                          journal_max_count=args.journal_max_count,
                          cleanup_timeout_s=args.cleanup_timeout,
                          readopt_timeout_s=args.readopt_timeout,
                          extension_port=args.extension_port,
                          extension_grace_s=args.extension_grace,
                          tcp_port=args.tcp_port, policy=policy, test_hook=test_hook))
    except AlreadyRunning as e:
        print(f"bsk daemon: {e}", file=sys.stderr)
        return 3
    except sqlite3.Error as e:  # not the file's content (that is moved aside): the disk
        print(f"bsk daemon: the journal {paths.journal_path()} can't be opened: {e} "
              "(check the free space and permissions of its filesystem)", file=sys.stderr)
        return 2
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        print(f"bsk daemon: cannot write to {paths.state_dir_name()}: {e.strerror} (free "
              "space on its filesystem)", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
