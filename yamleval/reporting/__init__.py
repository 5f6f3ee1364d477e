"""Reports rendered from a run: each format is a module with ``write(path, run, results)``."""
from __future__ import annotations

import importlib
import os
from typing import Callable, Iterable, Sequence

from yamleval.errors import UsageError, display_path
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
                  records: Callable[[ExperimentResult], Iterable[str]] | None = None) -> list[str]:
    """Write each format into ``directory``; return the paths written, in the order asked.

    ``records`` gives the items' stored JSON records, which ``results.json`` writes as they are.
    """
    paths = []
    for name in dict.fromkeys(formats):
        module, file_name = FORMATS[name]
        path = os.path.join(directory, file_name)
        try:
            if name == "json":
                paths.append(importlib.import_module(module).write(path, run, results, records))
            else:
                paths.append(importlib.import_module(module).write(path, run, results))
        except OSError as exc:
            raise _unwritable(path, exc, run) from None
    return paths


def _unwritable(path: str, exc: OSError, run: RunInfo) -> UsageError:
    """The one-line error for a report that could not be written (a full disk, a read-only
    folder): what, why, and that nothing is lost, since the run is in the store."""
    return UsageError(f"cannot write the report {display_path(path)}: {exc.strerror or exc}; the results are stored:"
                      f" free some space or make the folder writable, then `yamleval report {run.run_id}"
                      " --report-dir DIR` writes the reports again")
