"""Reports rendered from a run: each format is a module with a streaming ``Writer`` and ``write(path, run, results)``."""
from __future__ import annotations

import contextlib
import importlib
import json
import os
import threading
import time
from typing import IO, Callable, Iterable, Sequence

from yamleval.errors import UsageError, YamlevalError, display_path
from yamleval.records import encode_record, item_from_record
from yamleval.reporting.files import atomic_output
from yamleval.types import ExperimentResult, RunInfo

# format -> (module, file name in the report folder)
FORMATS = {
    "html": ("yamleval.reporting.html", "report.html"),
    "junit": ("yamleval.reporting.junit", "junit.xml"),
    "json": ("yamleval.reporting.json_report", "results.json"),
    "markdown": ("yamleval.reporting.markdown", "summary.md"),
}
ALL_FORMATS = tuple(FORMATS)


def write_reports(directory: str, formats: Sequence[str], run: RunInfo, results: Sequence[ExperimentResult],
                  records: Callable[[ExperimentResult], Iterable[str]] | None = None,
                  helper: "SecondProcess | None" = None) -> list[str]:
    """Write each format into ``directory``; return the paths written, in the order asked.

    All formats are written in one pass over the items, each item read (and decoded) once.
    ``records`` gives the items' stored JSON records, which ``results.json`` writes as they are;
    without it, items that know their records (read from the store) give them. ``helper``: a
    second process started while the items ran, ready to write some formats beside this one.
    """
    names = list(dict.fromkeys(formats))
    results = list(results)
    apart = _second_process(names, results, HELPED_ITEMS if helper is not None else PARALLEL_ITEMS)
    if apart:
        own = [name for name in names if name not in apart]
        with _Beside(directory, apart, run, results, helper):
            _write_in_one_pass(directory, own, run, results, records)
    else:
        _write_in_one_pass(directory, names, run, results, records)
    return [os.path.join(directory, FORMATS[name][1]) for name in names]


# Past this many items, and with a second CPU, report.html and summary.md are written by a
# second process while this one writes the rest: each reads the items from the store itself.
PARALLEL_ITEMS = 20_000
HELPED_ITEMS = 2_000  # with a second process started already, while the items ran
_APART = ("html", "markdown")


def splits(names: Sequence[str]) -> bool:
    """Whether these formats can be shared between two processes, on this machine."""
    apart = [name for name in names if name in _APART]
    return bool(apart) and len(apart) < len(set(names)) and (os.cpu_count() or 1) >= 2


def _second_process(names: list[str], results: list[ExperimentResult], least: int) -> list[str]:
    """The formats worth writing in a second process (none when it would not pay off)."""
    if not splits(names):
        return []
    if not all(hasattr(result.items, "records") for result in results):  # not read from a store
        return []
    apart = [name for name in names if name in _APART]
    return apart if sum(len(result.items) for result in results) >= least else []


def _write_apart(directory: str, names: list[str], run: RunInfo, results: list[ExperimentResult]) -> str | None:
    """In the second process: write ``names``; the error's message, if any (exceptions may not pickle)."""
    try:
        _write_in_one_pass(directory, names, run, results, None)
    except YamlevalError as exc:
        return exc.format_message()
    return None


def _ready() -> None:
    """In the second process, while the items run: import what writing the page takes, and
    load its template, so none of it is left for the end of the run."""
    importlib.import_module("yamleval.reporting.markdown")
    importlib.import_module("yamleval.reporting.html")._template()


class SecondProcess:
    """A process to write reports beside this one, started before they are due."""

    def __init__(self) -> None:
        import concurrent.futures
        import multiprocessing

        self.pool = concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                                                           initializer=_end_with, initargs=(os.getpid(),))
        self.pool.submit(_ready)

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


class _Beside:
    """Writes some formats in a second process while the block writes the others."""

    def __init__(self, directory: str, names: list[str], run: RunInfo, results: list[ExperimentResult],
                 helper: SecondProcess | None = None):
        self.helper = helper or SecondProcess()
        self.future = self.helper.pool.submit(_write_apart, directory, names, run, results)

    def __enter__(self) -> "_Beside":
        return self

    def __exit__(self, kind, value, traceback) -> None:
        try:
            failure = self.future.result()
        finally:
            self.helper.pool.shutdown()
        if failure is not None and kind is None:
            raise UsageError(failure)


def _end_with(parent: int) -> None:
    """Start of the second process: make it end when yamleval ends, even by SIGKILL. Left
    alone it would finish its report after the run was killed (and maybe resumed, putting
    a stale report over a new one), then wait forever on its pool's pipe, holding the
    terminal's or the CI step's output open. (Linux's parent-death signal does not serve:
    it follows the thread that started the process, which may end long before yamleval.)"""
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    if os.getppid() != parent:  # yamleval ended before this process got here
        os._exit(1)


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.1)
    os._exit(1)


def _write_in_one_pass(directory: str, names: list[str], run: RunInfo, results: list[ExperimentResult],
                       records: Callable[[ExperimentResult], Iterable[str]] | None) -> None:
    paths = [os.path.join(directory, FORMATS[name][1]) for name in names]
    current = [""]
    try:
        with contextlib.ExitStack() as files:
            writers = []
            for name, path in zip(names, paths):
                current[0] = path
                out = files.enter_context(atomic_output(path))
                writers.append(importlib.import_module(FORMATS[name][0]).Writer(_Named(out, path, current), run, results))
            _stream(writers, results, records)
    except OSError as exc:
        raise _unwritable(current[0], exc, run) from None


class _Named:
    """A report file that remembers it was the one being written when an error came up."""

    def __init__(self, out: IO[str], path: str, current: list[str]):
        self._out, self._path, self._current = out, path, current

    def write(self, text: str) -> None:
        self._current[0] = self._path
        self._out.write(text)


def _stream(writers: list, results: Sequence[ExperimentResult],
            records: Callable[[ExperimentResult], Iterable[str]] | None) -> None:
    """Feed every writer each experiment's items, in order: decoded for those that look into
    items, as stored JSON text for those that copy records."""
    decoded = [w for w in writers if not getattr(w, "wants_records", False)]
    textual = [w for w in writers if getattr(w, "wants_records", False)]
    for result in results:
        for writer in writers:
            writer.begin(result)
        if decoded and textual:
            for text in _records(result, records):
                item = item_from_record(json.loads(text))
                for writer in textual:
                    writer.record(text)
                for writer in decoded:
                    writer.item(item)
        elif textual:
            for text in _records(result, records):
                for writer in textual:
                    writer.record(text)
        elif decoded:
            for item in result.items:
                for writer in decoded:
                    writer.item(item)
        for writer in writers:
            writer.end(result)
    for writer in writers:
        writer.close()


def _records(result: ExperimentResult, records: Callable[[ExperimentResult], Iterable[str]] | None) -> Iterable[str]:
    if records is not None:
        return records(result)
    if hasattr(result.items, "records"):
        return result.items.records()
    return map(encode_record, result.items)


def _unwritable(path: str, exc: OSError, run: RunInfo) -> UsageError:
    """The one-line error for a report that could not be written (a full disk, a read-only
    folder): what, why, and that nothing is lost, since the run is in the store."""
    return UsageError(f"cannot write the report {display_path(path)}: {exc.strerror or exc}; the results are stored:"
                      f" free some space or make the folder writable, then `yamleval report {run.run_id}"
                      " --report-dir DIR` writes the reports again")
