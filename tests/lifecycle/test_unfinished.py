"""A run that did not evaluate all its items never gates 0, however it was made: a whole run or
its shards stopped by a dataset error, a merge of such shards, a rescore of a crashed run or of a
sharded run with a shard missing. Each says why."""
from __future__ import annotations

import json
import shutil

from conftest import DATA, run_cli
from servers.fixtures import openai_server  # noqa: F401  (a fixture)
from servers.openai_server import text_reply

CONFIG = """
    store: r.db
    reports: {formats: [json]}
    experiments:
      - id: e
        concurrency: 1
        dataset: {file: items.jsonl}
        runner: fixture_plugins.behaviours:ends_the_run
        scorers: [exact_match]
        pass_criteria: [{type: pass_rate, min: 0.9}]
"""


def _items(folder, count: int, bad_after: int | None = None, crash_at: int | None = None) -> None:
    with open(folder / "items.jsonl", "w", encoding="utf-8") as out:
        for index in range(count):
            if index == bad_after:
                out.write("{not json\n")
            text = "crash" if index == crash_at else f"x{index}"
            out.write(json.dumps({"id": f"i{index}", "input": text, "expected": text}) + "\n")


def _listed(folder, store: str = "r.db") -> str:
    done = run_cli("runs", "--store", store, cwd=folder)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _results(folder, reports: str = "reports") -> dict:
    return json.loads((folder / reports / "results.json").read_text(encoding="utf-8"))


def test_a_run_stopped_by_a_bad_row_is_aborted_and_fails_every_gate(write_config, tmp_path):
    write_config(CONFIG)
    _items(tmp_path, 40)
    assert run_cli("run", "-q", "--run-id", "good", cwd=tmp_path).returncode == 0
    _items(tmp_path, 40, bad_after=20)
    done = run_cli("run", "-q", "--run-id", "bad", cwd=tmp_path)
    assert done.returncode == 2 and "items.jsonl:21" in done.stderr, done.stderr
    listed = {line.split()[0]: line.split()[4:6] for line in _listed(tmp_path).splitlines()[1:]}
    assert listed == {"good": ["completed", "PASSED"], "bad": ["aborted", "FAILED"]}
    assert run_cli("report", "bad", "--gate", "--format", "json", cwd=tmp_path).returncode == 2
    for flag in ("--fail-on-regression", "--fail-on-any-regression"):
        gate = run_cli("compare", "good", "bad", flag, cwd=tmp_path)
        assert gate.returncode == 1, (flag, gate.stdout, gate.stderr)
        assert "aborted" in gate.stdout + gate.stderr
    _items(tmp_path, 40)
    resumed = run_cli("run", "-q", "--resume", "bad", "--force", cwd=tmp_path)  # the row mended
    assert resumed.returncode == 0, resumed.stderr
    assert _results(tmp_path)["experiments"][0]["summary"]["total"] == 40


def test_shards_stopped_by_a_bad_row_exit_2_merge_refuses_them_and_the_shared_run_never_gates_0(write_config,
                                                                                                tmp_path):
    write_config(CONFIG)
    _items(tmp_path, 40, bad_after=20)
    for number in (1, 2):
        apart = run_cli("run", "-q", "--shard", f"{number}/2", "--run-id", "s", "--store", f"shard{number}.db",
                        "--report-dir", f"r{number}", cwd=tmp_path)
        assert apart.returncode == 2 and "items.jsonl:21" in apart.stderr, apart.stderr
        shared = run_cli("run", "-q", "--shard", f"{number}/2", "--run-id", "t", "--store", "shared.db",
                         "--report-dir", f"t{number}", cwd=tmp_path)
        assert shared.returncode == 2, shared.stderr
    merged = run_cli("merge", "merged.db", "shard1.db", "shard2.db", cwd=tmp_path)
    assert merged.returncode == 2 and "shard 1/2 of run s is aborted" in merged.stderr, merged.stderr
    gate = run_cli("report", "t", "--store", "shared.db", "--gate", "--format", "json", cwd=tmp_path)
    assert gate.returncode == 2 and "1/2 (aborted), 2/2 (aborted)" in gate.stderr, gate.stderr


def test_a_rescore_of_a_crashed_run_is_incomplete_and_never_passes(write_config, tmp_path):
    write_config(CONFIG)
    _items(tmp_path, 40, crash_at=10)
    assert run_cli("run", "-q", "--run-id", "crashed", cwd=tmp_path).returncode == 9
    assert " crashed  -  " in _listed(tmp_path)  # no verdict
    done = run_cli("rescore", "crashed", "-q", cwd=tmp_path)
    assert done.returncode == 1 and "run crashed is crashed: only the items it stored are scored again" in done.stderr
    [experiment] = _results(tmp_path)["experiments"]
    assert experiment["incomplete"] is True and experiment["passed"] is False
    assert run_cli("report", "latest", "--gate", "--format", "json", cwd=tmp_path).returncode == 1


def test_a_rescore_of_a_sharded_run_with_a_shard_missing_is_incomplete(write_config, tmp_path):
    write_config(CONFIG)
    _items(tmp_path, 40)
    first = run_cli("run", "-q", "--shard", "1/2", "--run-id", "half", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    done = run_cli("rescore", "half", "-q", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    [experiment] = _results(tmp_path)["experiments"]
    assert experiment["incomplete"] is True and experiment["passed"] is False
    assert run_cli("report", "latest", "--gate", "--format", "json", cwd=tmp_path).returncode == 1


def test_messages_say_what_a_file_is_and_what_can_be_done(write_config, tmp_path):
    """A cache file that is not a cache is named as the answer cache; a completed shard run again
    says it is completed rather than suggesting a resume that is refused."""
    write_config(CONFIG.replace("reports: {formats: [json]}",
                                "reports: {formats: [json]}\n    defaults: {cache: {runner: true, path: cache.db}}"))
    _items(tmp_path, 4)
    (tmp_path / "cache.db").write_text("not a database at all, but long enough to be read as one " * 20)
    done = run_cli("cache", "stats", "--path", "cache.db", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: cannot open the answer cache cache.db: it is not a yamleval answer cache")
    assert "--store" not in done.stderr and "give another file as `cache: {path: …}`, or remove it" in done.stderr
    (tmp_path / "cache.db").unlink()
    for _ in range(2):
        again = run_cli("run", "-q", "--shard", "1/2", "--run-id", "s", "--store", "shared.db", cwd=tmp_path)
    assert again.returncode == 2 and "is stored already, completed: nothing is left to run" in again.stderr
    assert "--resume" not in again.stderr


def test_shards_in_one_store_share_the_runs_budget(write_config, tmp_path, store_at, openai_server):  # noqa: F811
    """``budget: {max_tokens: 100}`` over the whole run, 4 shards one after another in one store (a
    SQLite file, a PostgreSQL database), a model runner whose answers take 10 tokens: about 10
    calls in all, not 10 in each shard."""
    write_config(store_at.config(f"""
        store: shared.db
        budget: {{max_tokens: 100}}
        models:
          sut: {{base_url: "{openai_server.base_url}", model: tiny}}
        experiments:
          - id: e
            concurrency: 1
            dataset: {{file: items.jsonl}}
            runner: {{uses: openai, with: {{model: sut}}}}
            scorers: [exact_match]
    """))
    _items(tmp_path, 80)
    openai_server.push(*[text_reply("x", prompt_tokens=5, completion_tokens=5) for _ in range(80)])
    codes = [run_cli("run", "-q", "--shard", f"{n}/4", "--run-id", "b", cwd=tmp_path).returncode for n in range(1, 5)]
    assert 10 <= len(openai_server.requests) <= 12, (len(openai_server.requests), codes)
    assert codes == [4, 4, 4, 4], codes  # each stopped by the run's budget


TWO = """
    store: shared.db
    reports: {formats: [json]}
    experiments:
      - id: a
        concurrency: 1
        dataset: {file: a.jsonl}
        runner: fixture_plugins.behaviours:ends_the_run
        scorers: [exact_match]
      - id: b
        dataset: {file: b.jsonl}
        runner: echo
        scorers: [exact_match]
"""


def _rows(path, inputs) -> None:
    with open(path, "w", encoding="utf-8") as out:
        for index, text in enumerate(inputs):
            out.write(json.dumps({"id": f"i{index}", "input": text, "expected": text}) + "\n")


def test_a_shard_joins_only_a_run_of_the_same_datasets_and_plugins_even_with_force(write_config, tmp_path, store_at):
    """Shard 1/2 is interrupted in experiment a, before any shard started b. Shard 2/2 with
    another dataset for b, or other plugin code, is refused as merge refuses such shards
    (exit 2), with --force too; with the same work it joins."""
    from yamleval.engine.shards import Shard

    write_config(store_at.config(TWO))
    first = next(n for n in range(100) if Shard(1, 2).holds("a", f"i{n}"))
    _rows(tmp_path / "a.jsonl", ["x"] * first + ["interrupt"] + ["y"] * 5)
    _rows(tmp_path / "b.jsonl", ["p", "q", "r"])
    assert run_cli("run", "-q", "--shard", "1/2", "--run-id", "s", cwd=tmp_path).returncode == 130
    _rows(tmp_path / "b.jsonl", ["p", "q", "other"])
    for extra in ((), ("--force",)):
        refused = run_cli("run", "-q", "--shard", "2/2", "--run-id", "s", *extra, cwd=tmp_path)
        assert refused.returncode == 2, refused.stderr
        assert "shard 2/2 runs another dataset for 'b' than the shards of run s" in refused.stderr, refused.stderr
    _rows(tmp_path / "b.jsonl", ["p", "q", "r"])
    behaviours = tmp_path / "fixture_plugins"
    behaviours.mkdir()
    (behaviours / "__init__.py").write_text("")
    source = (DATA / "fixture_plugins" / "behaviours.py").read_text(encoding="utf-8")
    (behaviours / "behaviours.py").write_text(source + "\n# changed\n", encoding="utf-8")
    changed = run_cli("run", "-q", "--shard", "2/2", "--run-id", "s", cwd=tmp_path)
    assert changed.returncode == 2 and "runs other plugin code than the shards of run s" in changed.stderr, \
        changed.stderr
    shutil.rmtree(behaviours)
    joined = run_cli("run", "-q", "--shard", "2/2", "--run-id", "s", cwd=tmp_path)
    assert joined.returncode == 0, joined.stderr


SPEND_AND_STOP = '''
import os
import signal

from yamleval import RunnerResult


def answer(input):
    """10 tokens an item; input ``interrupt`` presses Ctrl-C on the run."""
    if input == "interrupt":
        os.kill(os.getpid(), signal.SIGINT)
    return RunnerResult(output=input, usage={"prompt_tokens": 5, "completion_tokens": 5})
'''


def test_a_resumed_shard_counts_its_own_items_once_against_the_runs_budget(write_config, tmp_path):
    """Shard 1/2 spends 50 of the run's 100 tokens, then is interrupted; resumed, it goes on to
    the budget (about 5 items more) instead of counting its 50 twice and stopping at once."""
    from yamleval.engine.shards import Shard

    (tmp_path / "spend.py").write_text(SPEND_AND_STOP, encoding="utf-8")
    write_config("""
        store: shared.db
        budget: {max_tokens: 100}
        experiments:
          - id: e
            concurrency: 1
            dataset: {file: items.jsonl}
            runner: spend:answer
            scorers: [exact_match]
    """)
    mine = [n for n in range(200) if Shard(1, 2).holds("e", f"i{n}")]
    inputs = {f"i{n}": "interrupt" if n == mine[5] else f"x{n}" for n in range(200)}
    with open(tmp_path / "items.jsonl", "w", encoding="utf-8") as out:
        for item_id, text in inputs.items():
            out.write(json.dumps({"id": item_id, "input": text, "expected": text}) + "\n")
    assert run_cli("run", "-q", "--shard", "1/2", "--run-id", "r", cwd=tmp_path).returncode == 130
    resumed = run_cli("run", "-q", "--resume", "r", "--shard", "1/2", "--force", cwd=tmp_path)
    assert resumed.returncode == 4, resumed.stderr  # stopped by the budget, once it is spent
    [experiment] = json.loads((tmp_path / "reports" / "results.json").read_text(encoding="utf-8"))["experiments"]
    assert 9 <= experiment["summary"]["completed"] <= 11, experiment["summary"]


def test_a_tag_names_its_newest_completed_run_not_a_newer_aborted_one(write_config, tmp_path):
    write_config(CONFIG)
    _items(tmp_path, 40)
    assert run_cli("run", "-q", "--run-id", "good", "--tag", "main", cwd=tmp_path).returncode == 0
    _items(tmp_path, 40, bad_after=20)
    assert run_cli("run", "-q", "--run-id", "bad", "--tag", "main", cwd=tmp_path).returncode == 2
    shown = run_cli("show", "main", cwd=tmp_path)
    assert shown.returncode == 0 and shown.stdout.startswith("run good"), shown.stdout
    assert run_cli("show", "bad", cwd=tmp_path).stdout.startswith("run bad")  # an exact id is that run
