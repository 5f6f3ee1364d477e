"""Reports rendered from a run: each format is a module with ``write(path, run, results)``."""
from __future__ import annotations

import importlib
import os
from typing import Callable, Iterable, Sequence

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
        if name == "json":
            paths.append(importlib.import_module(module).write(path, run, results, records))
        else:
            paths.append(importlib.import_module(module).write(path, run, results))
    return paths
