"""The extension protocol is one table (browserskill/browser/extension_protocol.py): the
Python side, the extension's service worker and shared module, and docs/extension.md all
name exactly its requests, messages and constants."""

from __future__ import annotations

import re
from pathlib import Path

from browserskill.browser import extension_protocol as proto

ROOT = Path(__file__).resolve().parent.parent
# The service worker's modules (background.js and what it imports).
WORKER = "\n".join((ROOT / "extension" / f"{name}.js").read_text(encoding="utf-8") for name in
                   ("background", "connection", "relay", "focus", "ui", "state", "tabs"))
LIB = (ROOT / "extension" / "lib.js").read_text(encoding="utf-8")
DOCS = (ROOT / "docs" / "extension.md").read_text(encoding="utf-8")
# The daemon's side of the protocol (a CDP filter's `"type": "page"` elsewhere is no message).
PYTHON = "\n".join(p.read_text(encoding="utf-8")
                   for p in (ROOT / "browserskill" / "browser").glob("*.py")
                   if p.name.startswith(("extension", "agent_window")))


def worker_ops() -> set[str]:
    body = WORKER[WORKER.index("\nconst OPS = {"):]
    body = body[:body.index("\n};\n")]
    return set(re.findall(r"^  (?:async )?([a-z_]+)\(", body, re.M))


def test_the_worker_serves_exactly_the_tables_ops() -> None:
    assert worker_ops() == set(proto.OPS)


def test_the_daemon_asks_only_for_ops_in_the_table() -> None:
    asked = set(re.findall(r'"op": "([a-z_]+)"', PYTHON))
    assert asked and asked <= set(proto.OPS), asked - set(proto.OPS)


def test_messages_each_way_are_the_tables() -> None:
    sent_by_worker = set(re.findall(r'send\(\{ type: "([a-z_]+)"', WORKER))
    sent_by_worker |= set(re.findall(r'type: "(hello)"', WORKER))
    assert sent_by_worker == set(proto.EXTENSION_MESSAGES)
    handled_by_worker = set(re.findall(r'msg\.type === "([a-z_]+)"', WORKER))
    assert handled_by_worker == set(proto.DAEMON_MESSAGES)
    sent_by_daemon = set(re.findall(r'"type": "([a-z_]+)"', PYTHON))
    assert sent_by_daemon == set(proto.DAEMON_MESSAGES)
    handled_by_daemon = set(re.findall(r'kind (?:==|in) \(?"([a-z_]+)"', PYTHON))
    handled_by_daemon |= set(re.findall(r'kind in \("[a-z_]+", "([a-z_]+)"\)', PYTHON))
    assert handled_by_daemon <= set(proto.EXTENSION_MESSAGES), handled_by_daemon


def test_error_codes_are_the_tables() -> None:
    thrown = set(re.findall(r'OpError\("([a-z_]+)"', WORKER)) | {"browser_error"}
    assert thrown == set(proto.ERROR_CODES)


def test_shared_constants_agree() -> None:
    for name, value in (("DEFAULT_PORT", proto.DEFAULT_PORT), ("PROTOCOL", proto.PROTOCOL),
                        ("MIN_PROTOCOL", proto.MIN_PROTOCOL),
                        ("HEARTBEAT_MS", proto.HEARTBEAT_MS)):
        found = re.search(rf"export const {name} = ([0-9_]+);", LIB)
        assert found, f"lib.js does not export {name}"
        assert int(found.group(1).replace("_", "")) == value, name


def test_the_docs_name_every_op_and_message() -> None:
    section = DOCS[DOCS.index("## Protocol"):DOCS.index("## Pairing")]
    for name in [*proto.OPS, *proto.DAEMON_MESSAGES, *proto.EXTENSION_MESSAGES]:
        assert f"`{name}`" in section or f'"{name}"' in section, name
    errors = DOCS[DOCS.index("## Protocol"):]
    for code in proto.ERROR_CODES:
        assert f"`{code}`" in errors, code
