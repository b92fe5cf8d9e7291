"""Files the daemon writes for a tool (screenshots, PDFs, videos, HAR, scripts).

A path is checked before anything is sent to the browser, so a call that can't write its
file fails with nothing done (`invalid_params` naming `path`, retry-safe). The writing
itself goes through browserskill/base/user_files.py: opened non-blocking in a worker, only a
regular file, inside the call's deadline.
"""

from __future__ import annotations

import os
from pathlib import Path

from browserskill.base import user_files
from browserskill.base.errors import invalid


def check_writable(path: Path) -> None:
    """Refuse, before capturing, a path the daemon could not write (nothing sent yet)."""
    try:
        if path.is_dir():
            raise invalid("path", f"{path} is a directory; give a file name")
        user_files.check_not_special(path)  # a FIFO or a device: refused, never opened
        if not path.parent.is_dir():
            raise invalid("path", f"directory {path.parent} does not exist")
        if not os.access(path.parent, os.W_OK | os.X_OK) or (
                path.exists() and not os.access(path, os.W_OK)):
            raise invalid("path", f"the daemon can't write {path} (permission denied)")
    except OSError as e:  # a name too long, a parent that can't be searched, …
        raise invalid("path", f"can't write {path}: {e.strerror or e}") from None
