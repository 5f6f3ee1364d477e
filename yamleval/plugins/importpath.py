"""Where a project's own plugin modules come from: the folder of its config file.

``sys.path`` belongs to the whole process, so the folder is put on it only while the project's
plugins are imported (``importing``, when an experiment is prepared), one project at a time.
What a plugin imports later, when it runs (``import helper`` inside a function), is found by
the run's own finder (``SiblingModules``, installed by ``lazy_imports`` for the run): it looks
in the folder only for an import made by code that lives there, so the modules of one project
are never found for another running in the same process.
"""
from __future__ import annotations

import contextlib
import importlib.machinery
import os
import sys
import threading
from typing import Iterator

# sys.path is the process's: while one project's plugins are imported, only its folder is added
_SYS_PATH = threading.RLock()
_IMPORT_MACHINERY = (os.path.join(os.path.dirname(os.path.abspath(importlib.machinery.__file__)), ""),
                     os.path.join(os.path.dirname(os.path.abspath(__file__)), "importpath.py"))


@contextlib.contextmanager
def importing(folder: str) -> Iterator[None]:
    """``folder`` first on ``sys.path`` while inside, and on it for nobody else meanwhile."""
    with _SYS_PATH:
        added = folder not in sys.path
        if added:
            sys.path.insert(0, folder)
        try:
            yield
        finally:
            if added and folder in sys.path:
                sys.path.remove(folder)


def _importer() -> str | None:
    """The file of the code whose ``import`` is being looked for: the first frame outside the
    import machinery (``importlib`` and its frozen bootstrap) and this module."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith("<frozen importlib") and not name.startswith(_IMPORT_MACHINERY):
            return None if name.startswith("<") else os.path.abspath(name)
        frame = frame.f_back
    return None


class SiblingModules:
    """A ``sys.meta_path`` finder for one run: a top-level module in ``folder``, for an import
    made by code in that folder that nothing else on the path answered."""

    def __init__(self, folder: str) -> None:
        self.folder = os.path.join(os.path.abspath(folder), "")

    def find_spec(self, fullname: str, path=None, target=None):
        if path is not None:  # a submodule: its package's own __path__ finds it
            return None
        importer = _importer()
        if importer is None or not importer.startswith(self.folder):
            return None
        return importlib.machinery.PathFinder.find_spec(fullname, [self.folder])

    def invalidate_caches(self) -> None:
        pass


@contextlib.contextmanager
def lazy_imports(folder: str) -> Iterator[None]:
    """While inside, the project's code in ``folder`` may import its siblings as it runs."""
    finder = SiblingModules(folder)
    sys.meta_path.append(finder)  # last: consulted only for what the path did not find
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
