"""``det.import_from_path(path)``: import modules from a folder (a checkpoint's ``code/``) without
mixing them up with same-named modules already imported, as Determined's does.

Inside the ``with``: the folder is first on sys.path; the current directory (``""`` and the cwd)
is off it, and the modules imported from there are set aside, so ``import model_def`` finds the
folder's. On exit the modules imported from the folder are forgotten, sys.path is restored and
the set-aside modules come back. No ``__pycache__`` is written into the folder. It does not nest
and is not for several threads at once.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator

_KEEP = ("harness", "determined")  # ours: never set aside (a second copy would break isinstance)
_lock = threading.Lock()
_active = False


def _top_level_from(folders: set[str]) -> set[str]:
    """Top-level modules (and packages) whose file lies directly in one of ``folders``."""
    tops = set()
    for name, module in list(sys.modules.items()):
        if "." in name or name in _KEEP:
            continue
        path = getattr(module, "__file__", None)
        if not path:
            continue
        parent, base = os.path.split(os.path.abspath(path))
        if base.startswith("__init__."):
            parent = os.path.dirname(parent)
        if parent in folders:
            tops.add(name)
    return tops


def _modules_of(tops: set[str]) -> list[str]:
    return [name for name in list(sys.modules) if name.split(".")[0] in tops]


@contextlib.contextmanager
def import_from_path(path: str | os.PathLike[str]) -> Iterator[None]:
    global _active
    with _lock:
        if _active:
            raise RuntimeError("import_from_path() does not nest and is not for several threads")
        _active = True
    folder = os.path.abspath(os.fspath(path))
    cwd = os.path.abspath(os.getcwd())
    saved_path = list(sys.path)
    saved_bytecode = sys.dont_write_bytecode
    set_aside = {name: sys.modules.pop(name) for name in _modules_of(_top_level_from({cwd}))}
    sys.path[:] = [folder] + [p for p in saved_path if p and os.path.abspath(p) != cwd]
    sys.dont_write_bytecode = True
    try:
        yield
    finally:
        for name in _modules_of(_top_level_from({folder})):
            del sys.modules[name]
        sys.path[:] = saved_path
        sys.modules.update(set_aside)
        sys.dont_write_bytecode = saved_bytecode
        with _lock:
            _active = False
