"""`bsk`'s launcher: a script of the project's own instead of pip's console-script wrapper.

pip's wrapper imports `re` and starts Python with `site` (every `.pth` of the venv),
before bsk runs at all: milliseconds on every agent action. The launcher runs the
interpreter isolated and without `site` (`-I -S`: no user site, no `PYTHON*`
variables, no `.pth` files) and puts on `sys.path` only what bsk needs: the directory
the package is in and the venv's site-packages (for `bsk mcp`'s `mcp`; a tool call
imports nothing from it). Then browserskill/cli/fast.py runs (`launch`: a call the
daemon answered skips the interpreter's teardown).

`python -m browserskill.cli.launcher PATH` writes it (scripts/install.sh does, over pip's
wrapper, so the README's install gets it); a plain `pip install` keeps pip's wrapper,
which runs the same code, only slower to start.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

TEMPLATE = """\
#!{python} -IS
# bsk: BrowserSkill's launcher (browserskill/cli/launcher.py wrote it; docs/cli.md).
import sys
sys.path[len(sys.path):] = {paths!r}
from browserskill.cli.fast import launch
launch()
"""


def script(python: str = sys.executable) -> str:
    package_dir = str(Path(__file__).resolve().parent.parent.parent)  # holds browserskill/
    paths = list(dict.fromkeys([package_dir, sysconfig.get_paths()["purelib"]]))
    return TEMPLATE.format(python=python, paths=paths)


def write(path: str) -> None:
    """Replace `path` (pip's wrapper) with the launcher, atomically, executable."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(script())
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m browserskill.cli.launcher PATH")
    write(sys.argv[1])
