"""The Python API does what ``yamleval run`` does: store, resume, reports, exit codes."""
from __future__ import annotations

import json
import shutil
import sqlite3
import threading

import yamleval
from conftest import ROOT


def _demo(tmp_path):
    for name in ("evals.yaml", "datasets", "plugins"):
        source = ROOT / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, tmp_path / name)
    return tmp_path / "evals.yaml"


class _StopAfterFirstExperiment(yamleval.RunWatcher):
    def __init__(self, stop: threading.Event):
        self.stop, self.finished = stop, []

    def experiment_finished(self, result):
        self.finished.append(result.experiment_id)
        self.stop.set()


def _stored(db):
    with sqlite3.connect(db) as con:
        runs = con.execute("SELECT run_id, status FROM runs").fetchall()
        items = con.execute("SELECT experiment_id, item_id, status FROM items ORDER BY experiment_id, position")
        return runs, items.fetchall()


def test_the_demo_runs_is_stored_resumed_and_reported_from_python(tmp_path):
    config = _demo(tmp_path)
    db, reports = tmp_path / "results.db", tmp_path / "out"
    stop = threading.Event()
    watcher = _StopAfterFirstExperiment(stop)

    first = yamleval.run(config, store=str(db), report_dir=str(reports), stop=stop, watcher=watcher)
    assert first.interrupted and first.exit_code == 130 and not first.passed
    assert watcher.finished == ["support-answers"]
    assert [r.experiment_id for r in first.results] == ["support-answers"]
    assert _stored(db)[0] == [(first.run.run_id, "interrupted")]

    resumed = yamleval.run(config, store=str(db), report_dir=str(reports), resume="latest")
    assert resumed.run.run_id == first.run.run_id and resumed.run.status == "completed"
    assert [r.experiment_id for r in resumed.results] == [e.id for e in yamleval.load_experiments(config)]
    assert sorted(p.rsplit("/", 1)[-1] for p in resumed.reports) == [
        "junit.xml", "report.html", "results.json", "summary.md"]
    assert all((reports / name).stat().st_size > 0 for name in ("junit.xml", "report.html", "summary.md"))

    fresh = yamleval.run(config, store=str(tmp_path / "fresh.db"), report_dir=str(tmp_path / "fresh"))
    assert fresh.exit_code == resumed.exit_code == (0 if fresh.passed else 1)
    assert _stored(db)[1] == _stored(tmp_path / "fresh.db")[1], "the resumed run equals an uninterrupted one"
    summaries = [r.summary for r in resumed.results]
    assert [(s.passed, s.failed, s.errored) for s in summaries] == [
        (s.passed, s.failed, s.errored) for s in (r.summary for r in fresh.results)]
    document = json.loads((reports / "results.json").read_text(encoding="utf-8"))
    assert document["run_id"] == first.run.run_id and document["status"] == "completed"
    written = {r.variant.experiment_id if r.variant else r.experiment_id for r in resumed.results}
    assert len(document["experiments"]) == len(written)  # the variants of one experiment inside its entry


def test_items_of_a_stored_run_are_read_back_from_the_store(tmp_path):
    config = _demo(tmp_path)
    outcome = yamleval.run(config, experiments=["arithmetic"], store=str(tmp_path / "r.db"), formats=[])
    [result] = outcome.results
    assert outcome.reports == ()
    ids = [r.item.id for r in result.items]
    assert len(ids) == len(result.items) == result.summary.completed > 0
    assert [r.item.id for r in result.items.with_status(("passed", "failed", "error"), 2)] == ids[:2]


def test_run_experiment_repeats_each_item_as_told(tmp_path):
    experiment = yamleval.load_experiments(_demo(tmp_path))[0]
    result = yamleval.run_experiment(experiment, repeats=3, limit=4)
    assert result.summary.completed == 4
    assert all(len(item.repeats) == 3 for item in result.items)
    once = yamleval.run_experiment(experiment, limit=4)
    assert all(item.repeats == () for item in once.items)


def test_load_project_takes_one_path_as_well_as_a_list(tmp_path):
    from yamleval.api import load_project

    config = _demo(tmp_path)
    ids = [e.id for e in load_project([config]).experiments]
    assert [e.id for e in load_project(str(config)).experiments] == ids
    assert [e.id for e in load_project(config).experiments] == ids
    assert "support-answers" in ids
