"""A test build of the daemon: the real one, with the fault seam installed at start.

Run as a script (`spawn(command=[python, this file])`, see `start_hooked`); the
production entry point (`python -m browserskill.api`) takes no hook from its
environment or arguments (docs/design.md, test hooks).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from support.cli import Bsk


def start_hooked(runner: Bsk) -> int:
    """Start the test build for `runner`'s state dir and environment; its pid."""
    from browserskill.daemon.spawn import spawn

    return spawn(command=[sys.executable, __file__], home=runner.home, env=runner.env)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: support.*
    from browserskill.api.__main__ import main
    from support.faults import install_in_daemon

    sys.exit(main(sys.argv[1:], test_hook=install_in_daemon))
