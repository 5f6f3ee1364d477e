"""The Python API does what ``yamleval run`` does: store, resume, reports, exit codes."""
from __future__ import annotations

import json
import shutil
import sqlite3
import threading
from pathlib import Path

import pytest

import yamleval
from conftest import ROOT
from yamleval import api
from yamleval.records.errors import UsageError


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


# -- every verb of the command, from Python ------------------------------------------------

TWO = """
    experiments:
      - id: greet
        dataset: {items: [{id: a, input: hi, expected: hi, metadata: {topic: x}},
                          {id: b, input: yo, expected: hey, metadata: {topic: y}}]}
        runner: echo
        scorers: [exact_match]
        variants: [{id: plain}, {id: loud, label: Loud}]
      - id: other
        dataset: {items: [{input: a, expected: a}]}
        runner: echo
        scorers: [exact_match]
"""


@pytest.fixture
def stored(write_config, tmp_path):
    """A config of two experiments (one with two variants) and a store with one run of it."""
    config = write_config(TWO)
    db = str(tmp_path / "r.db")
    return config, db, api.run(config, store=db, formats=[])


def test_run_takes_the_command_s_variant_set_and_executor_options(stored):
    config, db, first = stored
    assert [r.experiment_id for r in first.results] == ["greet/plain", "greet/loud", "other"]
    outcome = api.run(config, store=db, variants=["loud"], sets=["greet:dataset.items.0.expected=nope"],
                      executor="local", formats=["json"], junit_family="xunit1", report_dir=str(Path(db).parent / "o"))
    assert [r.experiment_id for r in outcome.results] == ["greet/loud", "other"]
    assert outcome.results[0].summary.passed == 0 and outcome.exit_code == 1
    assert [Path(p).name for p in outcome.reports] == ["results.json"]
    with pytest.raises(UsageError, match="no variant with id 'lod'"):
        api.run(config, store=db, variants=["lod"])
    with pytest.raises(UsageError):
        api.run(api.load_project(config), sets=["greet:runner=echo"])


def test_runs_show_and_tag_read_the_store(stored):
    config, db, first = stored
    [listed] = api.runs(store=db)
    assert listed.run.run_id == first.run.run_id and listed.experiment_ids == ("greet/plain", "greet/loud", "other")
    assert listed.summary.pass_rate == pytest.approx(3 / 5) and listed.tags == ()
    tagged = api.tag("latest", ["main", "v1"], store=db)
    assert tagged.run.run_id == first.run.run_id and tagged.tags == ("main", "v1")
    assert api.runs(store=db)[0].tags == ("main", "v1")
    shown = api.show(store=db, by="metadata.topic")
    assert [r.experiment_id for r in shown.results] == ["greet/plain", "greet/loud", "other"]
    assert [[s.value for s in b.slices] for b in shown.breakdowns][0] == ["y", "x"]  # weakest first
    only = api.show(first.run.run_id[:10], store=db, config=True)
    assert only.results == () and list(only.run.config_text) == [str(config)]
    with pytest.raises(UsageError, match="not an item field"):
        api.show(store=db, by="topic")
    with pytest.raises(UsageError, match="no results database"):
        api.runs(store=str(Path(db).parent / "none.db"))


def test_rescore_compare_and_report_make_and_read_runs(stored, tmp_path):
    config, db, first = stored
    again = api.rescore(first.run.run_id, config, experiments=["other"], store=db, formats=[])
    assert again.run.rescored_from == first.run.run_id and [r.experiment_id for r in again.results] == ["other"]
    compared = api.compare(first.run.run_id, again.run.run_id, store=db, format="json")
    assert json.loads(compared.text)["base"] == first.run.run_id
    assert compared.comparison.candidate == again.run.run_id
    with pytest.raises(UsageError, match="unknown format"):
        api.compare(first.run.run_id, store=db, format="pdf")
    redone = api.report(first.run.run_id, store=db, formats=["markdown", "junit"], junit_family="xunit1",
                        report_dir=str(tmp_path / "again"), gate=True)
    assert sorted(Path(p).name for p in redone.reports) == ["junit.xml", "summary.md"]
    assert redone.exit_code == 1 and redone.run.run_id == first.run.run_id
    with pytest.raises(UsageError, match="unknown format pdf"):
        api.report(store=db, formats=["pdf"])


def test_export_writes_a_file_or_a_stream(stored, tmp_path):
    import io

    _, db, first = stored
    done = api.export(store=db, format="jsonl", experiments=["other"], output=tmp_path / "out.jsonl")
    assert done.count == 1 and done.path == str(tmp_path / "out.jsonl") and done.run.run_id == first.run.run_id
    assert json.loads((tmp_path / "out.jsonl").read_text(encoding="utf-8"))["id"]
    stream = io.StringIO()
    failed = api.export(store=db, statuses=["failed"], output=stream)
    assert failed.path is None and failed.count == 2 and stream.getvalue().count("\r\n") == 3  # header and 2 rows
    with pytest.raises(UsageError, match="has no such experiment"):
        api.export(store=db, experiments=["nope"], output=stream)


def test_history_follows_each_experiment_and_writes_its_page(stored, tmp_path):
    config, db, first = stored
    second = api.run(config, store=db, tags=["nightly"], formats=[])
    found = api.history(store=db)
    assert [h.experiment_id for h in found.experiments] == ["greet/plain", "greet/loud", "other"]
    assert [p.run.run_id for p in found.experiments[0].points] == [first.run.run_id, second.run.run_id]
    assert found.page is None and found.store == db
    tagged = api.history(store=db, tag="nightly", html=tmp_path / "history.html")
    assert [p.run.run_id for p in tagged.experiments[0].points] == [second.run.run_id]
    assert tagged.page == str(tmp_path / "history.html") and (tmp_path / "history.html").stat().st_size > 0


def test_merge_joins_the_stores_of_a_run_s_shards(write_config, tmp_path):
    config = write_config(TWO)
    shards = [str(tmp_path / f"shard{n}.db") for n in (1, 2)]
    for n, db in enumerate(shards, 1):
        assert api.run(config, store=db, shard=f"{n}/2", run_id="ci-7", formats=[]).exit_code == 0
    merged = api.merge(tmp_path / "all.db", shards)
    assert merged.run.run_id == "ci-7" and merged.run.status == "completed"
    assert sum(r.summary.completed for r in merged.results) == 5 and merged.exit_code == 1
    assert api.report("ci-7", store=tmp_path / "all.db", formats=[], gate=True).exit_code == 1
    with pytest.raises(UsageError, match="missing"):
        api.merge(tmp_path / "again.db", shards[:1])


def test_validate_preview_and_the_answer_cache(stored, tmp_path):
    config, _, _ = stored
    valid = api.validate(config)
    assert valid.files == (str(config),) and list(valid.experiments) == ["greet", "other"]
    assert [e.variant.id for e in valid.experiments["greet"]] == ["plain", "loud"]
    assert api.preview(config, experiments=["other"], limit=1).text.startswith("experiment other")
    with pytest.raises(UsageError, match="no cache at"):
        api.cache_stats(tmp_path / "no-cache.db")
