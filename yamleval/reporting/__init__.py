"""Reports rendered from a run: each format is a module with a streaming ``Writer`` and ``write(path, run, results)``."""
from __future__ import annotations

import contextlib
import json
import os
from typing import TYPE_CHECKING, Sequence

from yamleval import plugins
from yamleval.errors import UsageError, YamlevalError, describe_exception, display_path
from yamleval.records import encode_record, item_from_record
from yamleval.reporting.files import Named, atomic_output
from yamleval.types import ExperimentResult, RunInfo

if TYPE_CHECKING:
    from yamleval.reporting.live import LiveReports

# format -> entry point (group yamleval.reports) of its module: a ``Writer`` and the ``FILE_NAME`` it writes
FORMATS = plugins.entry_points("reports")
ALL_FORMATS = tuple(FORMATS)


def write_reports(directory: str, formats: Sequence[str], run: RunInfo, results: Sequence[ExperimentResult],
                  helper: "LiveReports | None" = None) -> list[str]:
    """Write each format into ``directory``; return the paths written, in the order asked.

    All formats are written in one pass over the items, each item read (and decoded) once.
    Items read from the store give their JSON records as stored, which ``results.json`` writes
    as they are; others are encoded here. ``helper``: a
    second process that has rendered the decoded formats while the items ran (``live``); a
    large stored run without one gets one now, when there is a second CPU.
    """
    names = list(dict.fromkeys(formats))
    results = list(results)
    if helper is None and _worth_a_second_process(names, results):
        from yamleval.reporting.live import LiveReports

        stored = results[0].items
        helper = LiveReports([name for name in names if name in APART])
        helper.begin(stored.uri, stored.run_id, [(r.experiment_id, list(r.summary.scorers)) for r in results],
                     directory)
        patient = True  # started just now, for this large run: worth waiting for
    else:
        patient = False
    if helper is None:
        _write_in_one_pass(directory, names, run, results)
    else:
        _write_beside(helper, directory, names, run, results, patient)
    return [os.path.join(directory, FORMATS[name].load().FILE_NAME) for name in names]


# A stored run of this many items, on a machine with a second CPU, has its decoded formats
# written by a second process while this one writes results.json.
PARALLEL_ITEMS = 20_000
APART = ("html", "junit", "markdown")  # the formats a second process can write


def splits(names: Sequence[str]) -> bool:
    """Whether these formats include some a second process can write, on this machine."""
    return any(name in APART for name in names) and (os.cpu_count() or 1) >= 2


def _worth_a_second_process(names: list[str], results: list[ExperimentResult]) -> bool:
    if not splits(names) or not results:
        return False
    stores = {(getattr(r.items, "path", None), getattr(r.items, "run_id", None)) for r in results}
    if len(stores) != 1 or None in next(iter(stores)):  # not all read from one stored run
        return False
    return sum(len(result.items) for result in results) >= PARALLEL_ITEMS


def _write_beside(helper: "LiveReports", directory: str, names: list[str], run: RunInfo,
                  results: list[ExperimentResult], patient: bool) -> None:
    """The second process writes its formats while this one writes the others; if it is
    gone (killed, out of memory), this one writes them after all."""
    from yamleval.reporting.live import ChildLost

    apart = [name for name in names if name in helper.names]
    if not helper.send(run, results, patient):
        _write_in_one_pass(directory, names, run, results)
        return
    try:
        _write_in_one_pass(directory, [name for name in names if name not in apart], run, results)
    except BaseException:
        helper.close()
        raise
    try:
        failure = helper.wait()
    except ChildLost:
        _write_in_one_pass(directory, apart, run, results)
        return
    if failure is not None:
        raise UsageError(failure)


def describe_failure(exc: BaseException, run_id: str) -> str:
    """Why a report could not be written, in a line: the message of the UsageError it makes."""
    if isinstance(exc, YamlevalError):
        return exc.message
    if isinstance(exc, OSError):
        return _unwritable(exc.filename or "the report folder", exc, run_id).message
    return f"writing the reports failed: {describe_exception(exc)}"


def _write_in_one_pass(directory: str, names: list[str], run: RunInfo, results: list[ExperimentResult]) -> None:
    try:
        with contextlib.ExitStack() as files:
            writers = []
            for name in names:
                module = FORMATS[name].load()
                path = os.path.join(directory, module.FILE_NAME)
                out = files.enter_context(atomic_output(path))
                writers.append(module.Writer(Named(out, path), run, results))
            _stream(writers, results)
    except OSError as exc:
        raise _unwritable(exc.filename or directory, exc, run.run_id) from None


def _stream(writers: list, results: Sequence[ExperimentResult]) -> None:
    """Feed every writer each experiment's items, in order: as items for those that look into
    them, as JSON records for those that copy records. Items read from the store come as
    their stored records, decoded once; items held in memory are encoded once."""
    decoded = [w for w in writers if not getattr(w, "wants_records", False)]
    textual = [w for w in writers if getattr(w, "wants_records", False)]
    for result in results:
        for writer in writers:
            writer.begin(result)
        stored = getattr(result.items, "records", None)
        if stored is not None and textual:
            for text in stored():
                for writer in textual:
                    writer.record(text)
                if decoded:
                    item = item_from_record(json.loads(text))
                    for writer in decoded:
                        writer.item(item)
        else:
            for item in result.items:
                if textual:
                    text = encode_record(item)
                    for writer in textual:
                        writer.record(text)
                for writer in decoded:
                    writer.item(item)
        for writer in writers:
            writer.end(result)
    for writer in writers:
        writer.close()


def _unwritable(path: str, exc: OSError, run_id: str) -> UsageError:
    """The one-line error for a report that could not be written (a full disk, a read-only
    folder): what, why, and that nothing is lost, since the run is in the store."""
    return UsageError(f"cannot write the report {display_path(path)}: {exc.strerror or exc}; the results are stored:"
                      f" free some space or make the folder writable, then `yamleval report {run_id}"
                      " --report-dir DIR` writes the reports again")
