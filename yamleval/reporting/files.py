"""Report files: written whole or not at all (a temporary file renamed over the target), and
rendered as text in one pass over the items."""
from __future__ import annotations

import contextlib
import io
import os
from typing import IO, Any, Callable, Iterable, Iterator, Sequence

from yamleval.plugins.processes import running


@contextlib.contextmanager
def atomic_output(path: str) -> Iterator[IO[str]]:
    """A text file to write ``path`` through; it appears only when the block ends without error."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    temporary = f"{path}.tmp-{os.getpid()}"
    try:
        with open(temporary, "w", encoding="utf-8", newline="\n") as out:
            yield out
        os.replace(temporary, path)
    except BaseException as exc:
        if os.path.exists(temporary):
            os.remove(temporary)
        if isinstance(exc, OSError) and exc.filename in (None, temporary):  # the report, not its stand-in
            exc.filename = path
        raise
    _remove_abandoned(path)


class NamedFile:
    """A report file whose failed writes name the report (``OSError.filename``): a failed
    write names no file, and when several reports are written at once the error must say
    which one."""

    def __init__(self, out: IO[str], path: str):
        self._out, self._path = out, path

    def write(self, text: str) -> None:
        try:
            self._out.write(text)
        except OSError as exc:
            self._name(exc)
            raise

    def flush(self) -> None:
        try:
            self._out.flush()
        except OSError as exc:
            self._name(exc)
            raise

    def _name(self, exc: OSError) -> None:
        if exc.filename is None:
            exc.filename = self._path


def _remove_abandoned(path: str) -> None:
    """Delete temporary files of ``path`` left by processes that died while writing it
    (killed, or the machine went down), so a report folder holds only whole reports.
    A process still alive may be writing its own: its file is left alone."""
    folder, prefix = os.path.dirname(path) or ".", os.path.basename(path) + ".tmp-"
    try:
        names = [n for n in os.listdir(folder) if n.startswith(prefix) and n[len(prefix):].isdigit()]
    except OSError:
        return
    for name in names:
        if not running(int(name[len(prefix):])):
            with contextlib.suppress(OSError):
                os.remove(os.path.join(folder, name))


def render_with(writer: Callable[[IO[str], Any, Sequence[Any]], Any], run: Any, results: Iterable[Any]) -> str:
    """A whole report as text: a format's ``Writer`` fed every item of ``results`` in one pass."""
    out = io.StringIO()
    results = list(results)
    written = writer(out, run, results)
    for result in results:
        written.begin(result)
        for item in result.items:
            written.item(item)
        written.end(result)
    written.close()
    return out.getvalue()
