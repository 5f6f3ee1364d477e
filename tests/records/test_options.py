"""``RunOptions``: every option of ``yamleval run`` in one record, which ``api.run`` takes and
from which the command line writes its "resume with …" hint."""
from __future__ import annotations

import dataclasses

import pytest

from yamleval import api
from yamleval.records.options import RunOptions

CONFIG = """
experiments:
  - id: echo
    runner: {uses: echo}
    dataset:
      items:
        - {id: a, input: x, expected: x}
        - {id: b, input: y, expected: y}
        - {id: c, input: z, expected: z}
    scorers: [exact_match]
"""


def test_the_options_are_a_frozen_record_of_tuples():
    options = RunOptions(experiments=["one"], tags=["main"], formats=["json"], store=__file__)
    assert options.experiments == ("one",) and options.tags == ("main",) and options.formats == ("json",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.limit = 3
    assert options.replaced(limit=3).limit == 3 and options.limit is None
    with pytest.raises(TypeError):
        options.replaced(no_such_option=1)


def test_the_resume_hint_repeats_what_finds_the_run_and_its_items_again():
    options = RunOptions(experiments=("greet",), variants=("loud",), sets=("runner.with.model=big x",), limit=5,
                         shard="1/2", store="r.db", report_dir="out", executor="local", junit_family="xunit1",
                         cache=False, refresh_cache=True, concurrency=8, tags=("main",), force=True)
    assert options.resume_command("20260101T000000Z-ab", ["evals.yaml"]) == (
        "`yamleval run evals.yaml --resume 20260101T000000Z-ab -e greet --variant loud"
        " --set 'runner.with.model=big x' --limit 5 --shard 1/2 --store r.db --report-dir out --executor local"
        " --junit-family xunit1 --no-cache --refresh-cache`")
    assert RunOptions(cache=True).resume_command("r", []) == "`yamleval run --resume r --cache`"


def test_api_run_takes_the_options_and_keyword_arguments_on_top_of_them(tmp_path):
    config = tmp_path / "evals.yaml"
    config.write_text(CONFIG)
    options = RunOptions(store=str(tmp_path / "r.db"), report_dir=str(tmp_path / "out"), formats=("json",),
                         limit=1, tags=("first",))
    one = api.run(config, options)
    assert one.exit_code == 0 and one.results[0].summary.completed == 1
    two = api.run(config, options, limit=2, tags=["second"])
    assert two.results[0].summary.completed == 2 and options.limit == 1
    three = api.run(config, store=str(tmp_path / "r.db"), formats=[], limit=3)
    assert three.results[0].summary.completed == 3
    tagged = {listed.run.run_id: listed.tags for listed in api.runs(store=tmp_path / "r.db")}
    assert tagged == {one.run.run_id: ("first",), two.run.run_id: ("second",), three.run.run_id: ()}
    loaded = api.load_project(config, ["echo:dataset.items.0.expected=nope"])
    again = api.run(loaded, options.replaced(sets=("echo:dataset.items.0.expected=nope",)))
    assert again.exit_code == 1  # the loaded project's --set values, the same as the options'


def test_api_rescore_takes_its_options_as_one_record(tmp_path):
    config = tmp_path / "evals.yaml"
    config.write_text(CONFIG)
    first = api.run(config, store=str(tmp_path / "r.db"), formats=[])
    options = api.RescoreOptions(store=str(tmp_path / "r.db"), report_dir=str(tmp_path / "again"), formats=["json"],
                                 tags="again")
    again = api.rescore(first.run.run_id, config, options)
    assert again.run.rescored_from == first.run.run_id and again.results[0].summary.completed == 3
    assert [p.rsplit("/", 1)[-1] for p in again.reports] == ["results.json"]
    assert {listed.run.run_id: listed.tags for listed in api.runs(store=tmp_path / "r.db")}[again.run.run_id] == (
        "again",)
