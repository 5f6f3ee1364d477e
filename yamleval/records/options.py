"""Every option of ``yamleval run`` as one record (``RunOptions``): the command line builds it
once, ``api.run`` takes it, the lifecycle runs by it, and the "resume with …" hint is written
from it; and those of ``yamleval rescore`` (``RescoreOptions``).
"""
from __future__ import annotations

import dataclasses
import os
import shlex
from dataclasses import dataclass
from typing import Sequence

_LISTS = ("experiments", "variants", "sets", "tags")


@dataclass(frozen=True)
class RunOptions:
    """How to run a project, as ``yamleval run``'s options say; every field defaults to "as the
    config says".

    ``experiments`` and ``variants``: only these ids (``-e``, ``--variant``); ``sets``:
    ``[ID:]PATH=VALUE`` overrides of the files (``--set``); ``store``: the results database (a
    path or a ``postgresql://`` URL); ``report_dir``, ``formats`` and ``junit_family``: the
    reports; ``resume``: a run id (or ``latest``) to continue; ``force``: resume (or retry) although
    the config or a dataset changed; ``limit``, ``concurrency`` and ``repeats``: items per
    experiment, at once, and runs of each; ``tags``: names the run is tagged with; ``cache``:
    True keeps the runner's answers too, False none; ``refresh_cache``: read no kept answer;
    ``shard``: ``I/N``, one shard of the items; ``run_id``: the new run's id; ``executor``
    (``local`` or ``ray``) and ``ray_address``: where items run; ``retry_errors``: a stored run
    whose errored items a new run runs again, keeping the rest.
    """

    experiments: tuple[str, ...] = ()
    variants: tuple[str, ...] = ()
    sets: tuple[str, ...] = ()
    store: str | None = None
    report_dir: str | None = None
    formats: tuple[str, ...] | None = None
    junit_family: str | None = None
    resume: str | None = None
    force: bool = False
    limit: int | None = None
    concurrency: int | None = None
    repeats: int | None = None
    tags: tuple[str, ...] = ()
    cache: bool | None = None
    refresh_cache: bool = False
    shard: str | None = None
    run_id: str | None = None
    executor: str | None = None
    ray_address: str | None = None
    retry_errors: str | None = None

    def __post_init__(self) -> None:
        _settle(self, _LISTS)

    def replaced(self, **changes) -> "RunOptions":
        """These options with ``changes`` (keyword names as the fields'); TypeError for an unknown one."""
        return dataclasses.replace(self, **changes) if changes else self

    def resume_command(self, run_id: str, paths: Sequence[str]) -> str:
        """The command that continues run ``run_id`` where it stopped, quoted for a shell: the same
        files, values, selection, limit, store, report folder, executor and cache use (else it would
        look in another store, refuse a changed config, or run what the first command left out)."""
        given = {"-e": self.experiments, "--variant": self.variants, "--set": self.sets, "--limit": self.limit,
                 "--shard": self.shard, "--store": self.store, "--report-dir": self.report_dir,
                 "--executor": self.executor, "--ray-address": self.ray_address, "--junit-family": self.junit_family,
                 "--cache": self.cache is True, "--no-cache": self.cache is False,
                 "--refresh-cache": self.refresh_cache}
        words = ["yamleval", "run", *paths, "--resume", run_id]
        for flag, value in given.items():
            if value is True:
                words.append(flag)
            elif isinstance(value, tuple):
                for one in value:
                    words += [flag, one]
            elif value is not None and value is not False:
                words += [flag, str(value)]
        return "`" + " ".join(shlex.quote(word) for word in words) + "`"


@dataclass(frozen=True)
class RescoreOptions:
    """How ``yamleval rescore`` scores a stored run again: only the ``experiments`` given (all of
    the run's that the config has, if none); the new run stored in ``store`` (default: the
    config's), its reports in ``report_dir`` as ``formats`` (names: ``html``, ``junit``, ``json``,
    ``markdown``; default: the config's ``reports.formats``) with the JUnit report's
    ``junit_family``, and the run tagged ``tags``."""

    experiments: tuple[str, ...] = ()
    store: str | None = None
    report_dir: str | None = None
    formats: tuple[str, ...] | None = None
    junit_family: str | None = None
    tags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _settle(self, ("experiments", "tags"))


def _settle(options, lists) -> None:
    """Lists a caller gave kept as tuples (a text as one item), the formats as a tuple, the store as
    a path's text: the record never changes under the run."""
    for name in lists:
        value = getattr(options, name)
        object.__setattr__(options, name, (value,) if isinstance(value, str) else tuple(value or ()))
    if options.formats is not None:
        object.__setattr__(options, "formats", tuple(options.formats))
    if options.store is not None:
        object.__setattr__(options, "store", os.fspath(options.store))
