"""The reference docs are generated from the code; a change to the catalog, the CLI or
the OpenAPI document without `python -m browserskill.docgen --write` fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

from browserskill import docgen

DOCS = Path(__file__).resolve().parent.parent / "docs"


@pytest.mark.parametrize("page", sorted(docgen.PAGES))
def test_generated_page_matches_the_code(page: str) -> None:
    text = (DOCS / page).read_text(encoding="utf-8")
    assert text == docgen.PAGES[page](), (
        f"docs/{page} is out of date: run `python -m browserskill.docgen --write`")


def test_cli_reference_covers_every_command() -> None:
    from browserskill.base.catalog import TOOLS
    from browserskill.cli.commands import CONTROL

    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    for c in CONTROL:
        assert f"### `bsk {c.usage}`" in text
    for t in TOOLS:
        assert f"tools/{t.name}`" in text or t.name == "session_stop"


def test_check_mode_reports_drift(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(docgen, "DOCS", tmp_path)
    assert docgen.main(["--check"]) == 1
    assert docgen.main(["--write"]) == 0
    assert docgen.main(["--check"]) == 0


@pytest.mark.parametrize("page", ["outcomes.md", "mcp.md"])
def test_hand_written_pages_exist(page: str) -> None:
    assert len((DOCS / page).read_text(encoding="utf-8")) > 1000


@pytest.mark.parametrize("path", sorted(docgen.CODE, key=str))
def test_generated_code_matches_the_code(path: Path) -> None:
    assert path.read_text(encoding="utf-8") == docgen.CODE[path](), (
        f"{path.name} is out of date: run `python -m browserskill.docgen --write`")
