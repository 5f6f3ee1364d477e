"""Reports rendered from a run: each format is a module (entry-point group ``yamleval.reports``)
with a streaming ``Writer`` and the ``FILE_NAME`` it writes; ``write_reports`` writes them.
A format may name a variant that its ``Writer`` takes: ``junit:xunit1``, ``html:10`` (the page within 10 MB);
a variant of several settings separates them with commas, each one argument: ``junit:xunit2,failure``."""
from __future__ import annotations

import contextlib
import os
from typing import Sequence

from yamleval.plugins import registry as plugins
from yamleval.records.errors import UsageError, display_path
from yamleval.reporting.files import NamedFile, atomic_output
from yamleval.records.types import ExperimentResult, RunInfo

# format -> entry point (group yamleval.reports) of its module: a ``Writer`` and the ``FILE_NAME`` it writes
FORMATS = plugins.entry_points("reports")


def write_reports(directory: str, formats: Sequence[str], run: RunInfo,
                  results: Sequence[ExperimentResult]) -> list[str]:
    """Write each format into ``directory`` in one pass over the items (each item read once);
    return the paths written, in the order asked."""
    names = list(dict.fromkeys(formats))
    results = list(results)
    try:
        with contextlib.ExitStack() as files:
            writers, paths = [], []
            for spec in names:
                name, _, variant = spec.partition(":")
                module = FORMATS[name].load()
                paths.append(os.path.join(directory, module.FILE_NAME))
                out = files.enter_context(atomic_output(paths[-1]))
                writers.append(module.Writer(NamedFile(out, paths[-1]), run, results, *(variant.split(",") if variant else [])))
            _stream(writers, results)
    except OSError as exc:
        raise _unwritable(exc.filename or directory, exc, run.run_id) from None
    return paths


def _stream(writers: list, results: Sequence[ExperimentResult]) -> None:
    """Feed every writer each experiment's items, in order."""
    for result in results:
        for writer in writers:
            writer.begin(result)
        for item in result.items:
            for writer in writers:
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
