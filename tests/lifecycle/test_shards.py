"""Sharded runs: `run --shard I/N` splits the items, `merge` joins the shards' stores into one
run whose verdict, summaries and items are the unsharded run's, `report --gate` exits with it."""
from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
from pathlib import Path

import yaml

from conftest import DATA, ROOT, assert_golden, bash_step, run_cli
from yamleval.engine.shards import Shard, parse

GOLDEN = DATA / "sharding"

CONFIG = """
    reports: {formats: [json, junit]}
    experiments:
      - id: steady
        concurrency: 4
        dataset: {file: items.jsonl}
        runner: fixture_plugins.steady:answer
        scorers: [exact_match, {uses: levenshtein, threshold: 0.6}]
        pass_criteria:
          - {type: pass_rate, min: 0.5}
          - {type: error_rate, max: 0.2}
          - {type: mean_score, scorer: levenshtein, min: 0.7}
      - id: second
        dataset: {file: items.jsonl}
        runner: fixture_plugins.steady:answer
        scorers: [exact_match]
        pass_criteria: [{type: pass_rate, min: 0.99}]
"""


def _dataset(folder: Path, n: int, reverse: bool = False) -> None:
    rows = [{"id": f"item-{i}", "input": f"question {i}", "expected": f"answer {i}"} for i in range(n)]
    with open(folder / "items.jsonl", "w", encoding="utf-8") as out:
        for row in reversed(rows) if reverse else rows:
            out.write(json.dumps(row) + "\n")


def _ids(db: Path) -> dict[str, set[str]]:
    with sqlite3.connect(db) as con:
        found: dict[str, set[str]] = {}
        for experiment_id, item_id in con.execute("SELECT experiment_id, item_id FROM items"):
            found.setdefault(experiment_id, set()).add(item_id)
        return found


def _shards(folder: Path, count: int, *extra: str) -> list[subprocess.CompletedProcess]:
    """Each shard run as a CI job runs it: its own process, its own store (then only the .db kept)."""
    done = []
    for number in range(1, count + 1):
        done.append(run_cli("run", "--shard", f"{number}/{count}", "--store", f"shard{number}.db", "--report-dir",
                            f"reports{number}", "-q", *extra, cwd=folder))
        assert not (folder / f"shard{number}.db-wal").exists() or not (folder / f"shard{number}.db-wal").stat().st_size
    return done


def _comparable(results: dict) -> list:
    """results.json without what differs between two runs of the same items: times and ids (and
    so which breakdown values are the slowest and the weakest, and the order of those that tie)."""
    def strip(value):
        if isinstance(value, dict):
            found = {k: strip(v) for k, v in value.items()
                     if k not in ("latency_ms", "duration_ms", "started_at", "completed_at", "throttling", "slowest", "weakest")}
            if "field" in found and "values" in found:
                found["values"] = sorted(found["values"], key=lambda v: json.dumps(v, sort_keys=True))
            return found
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value
    return strip(results["experiments"])


def test_shards_split_the_items_once_each_whatever_the_order_of_the_rows(write_config, tmp_path):
    write_config(CONFIG)
    _dataset(tmp_path, 300)
    for done in _shards(tmp_path, 3):
        assert done.returncode == 0, done.stderr
    stored = [_ids(tmp_path / f"shard{n}.db") for n in (1, 2, 3)]
    everything = {f"item-{i}" for i in range(300)}
    for experiment_id in ("steady", "second"):
        parts = [s[experiment_id] for s in stored]
        assert set().union(*parts) == everything and sum(map(len, parts)) == 300
        assert all(60 < len(p) < 140 for p in parts), [len(p) for p in parts]
    assert stored[0]["steady"] != stored[0]["second"], "the experiment's id is part of the hash"
    _dataset(tmp_path, 300, reverse=True)
    again = run_cli("run", "--shard", "1/3", "--store", "reversed.db", "-q", "--report-dir", "r", cwd=tmp_path)
    assert again.returncode == 0 and _ids(tmp_path / "reversed.db") == stored[0]


def test_an_items_shard_never_changes_between_versions():
    # shards run by two versions of yamleval must still split the items the same way
    assert [next(n for n in range(1, 5) if Shard(n, 4).holds("support", f"q-{i}")) for i in range(12)] \
        == [1, 1, 1, 3, 2, 4, 2, 2, 2, 2, 3, 1]


def test_merged_shards_give_the_unsharded_runs_verdict_summaries_and_items(write_config, tmp_path):
    write_config(CONFIG)
    _dataset(tmp_path, 400)
    whole = run_cli("run", "--store", "whole.db", "--report-dir", "whole", "-q", cwd=tmp_path)
    assert whole.returncode == 1, "'second' fails: every seventh item errs"
    shards = _shards(tmp_path, 4, "--run-id", "ci-7")
    assert [s.returncode for s in shards] == [0, 0, 0, 0], "a shard does not gate, passed or not"
    assert "run ci-7 is shard 1/4: the run's verdict comes once every shard is in" in shards[0].stderr
    artefacts = tmp_path / "artefacts"
    for number in range(1, 5):  # only the database travels, as a CI artefact
        (artefacts / str(number)).mkdir(parents=True)
        shutil.copy(tmp_path / f"shard{number}.db", artefacts / str(number) / "shard.db")
    merged = run_cli("merge", "merged.db", *[f"artefacts/{n}/shard.db" for n in (4, 2, 3, 1)], cwd=tmp_path)
    assert merged.returncode == 0, merged.stderr
    assert "merged 4 shards into run ci-7 in merged.db" in merged.stdout
    gate = run_cli("report", "ci-7", "--store", "merged.db", "--report-dir", "merged", "--format", "json,junit",
                   "--gate", cwd=tmp_path)
    assert gate.returncode == whole.returncode == 1, gate.stderr
    assert "steady: PASSED" in gate.stdout and "second: FAILED" in gate.stdout
    ours = json.loads((tmp_path / "merged" / "results.json").read_text(encoding="utf-8"))
    theirs = json.loads((tmp_path / "whole" / "results.json").read_text(encoding="utf-8"))
    assert ours["run_id"] == "ci-7" and ours["passed"] is theirs["passed"] is False
    assert _comparable(ours) == _comparable(theirs)  # summaries, criteria, items in dataset order
    assert [i["id"] for i in ours["experiments"][0]["items"]] == [f"item-{i}" for i in range(400)]
    durations = [json.loads(parts)["steady"][0] for n in range(1, 5) for (parts,) in
                 sqlite3.connect(tmp_path / f"shard{n}.db").execute("SELECT parts FROM run_shards")]
    assert ours["experiments"][0]["summary"]["duration_ms"] == round(max(durations), 3) > 0, "the longest shard's"
    again = run_cli("merge", "merged.db", *[f"artefacts/{n}/shard.db" for n in (1, 2, 3, 4)], cwd=tmp_path)
    assert again.returncode == 2 and "run ci-7 is in merged.db already" in again.stderr


def test_a_merged_run_that_passes_gates_with_exit_0(write_config, tmp_path):
    write_config(CONFIG.replace("{type: pass_rate, min: 0.99}", "{type: pass_rate, min: 0.1}, {type: error_rate, max: 0.5}"))
    _dataset(tmp_path, 60)
    _shards(tmp_path, 2)
    assert run_cli("merge", "m.db", "shard1.db", "shard2.db", cwd=tmp_path).returncode == 0
    gate = run_cli("report", "latest", "--store", "m.db", "--report-dir", "m", "--format", "json", "--gate",
                   cwd=tmp_path)
    assert gate.returncode == 0, gate.stdout + gate.stderr
    run = json.loads((tmp_path / "m" / "results.json").read_text())
    assert run["passed"] is True and run["run_id"] not in ("", None)


def test_merge_refuses_shards_that_do_not_make_one_run(write_config, tmp_path):
    write_config(CONFIG)
    _dataset(tmp_path, 40)
    _shards(tmp_path, 3)
    other = tmp_path / "other"
    other.mkdir()
    (other / "evals.yaml").write_text((tmp_path / "evals.yaml").read_text().replace("min: 0.5", "min: 0.4"))
    shutil.copy(tmp_path / "items.jsonl", other / "items.jsonl")
    assert run_cli("run", "--shard", "3/3", "--store", "changed.db", "-q", "--report-dir", "r", cwd=other).returncode == 0
    assert run_cli("run", "--shard", "1/2", "--store", "halves.db", "-q", "--report-dir", "r", cwd=tmp_path).returncode == 0
    assert run_cli("run", "--store", "whole.db", "-q", "--report-dir", "r", cwd=tmp_path).returncode == 1
    cases = {
        "a shard missing": ["shard1.db", "shard3.db"],
        "a shard twice": ["shard1.db", "shard2.db", "shard2.db", "shard3.db"],
        "another config": ["shard1.db", "shard2.db", "other/changed.db"],
        "another split": ["shard1.db", "shard2.db", "halves.db"],
        "no shard in a store": ["shard1.db", "whole.db"],
        "no store at all": ["shard1.db", "nowhere.db"],
        "into a shard": ["shard2.db", "shard1.db", "shard3.db"],
    }
    lines = []
    for case, stores in cases.items():
        out = "shard2.db" if case == "into a shard" else "merged.db"
        done = run_cli("merge", out, *stores, cwd=tmp_path)
        assert done.returncode == 2 and "Traceback" not in done.stderr, (case, done.stderr)
        lines.append(f"{case}: {done.stderr.strip()}")
    assert not (tmp_path / "merged.db").exists() or not _ids(tmp_path / "merged.db"), "nothing merged"
    text = re.sub(r"[0-9a-f]{12} against [0-9a-f]{12}", "HASH against HASH", "\n".join(lines) + "\n")
    assert_golden(GOLDEN / "refused.txt", text)


def test_merge_refuses_a_shard_that_did_not_finish(write_config, tmp_path):
    write_config("""
        reports: {formats: [json]}
        experiments:
          - id: spend
            dataset: {file: items.jsonl}
            runner: {uses: fixture_plugins.behaviours:spending, with: {log: spent.log, tokens: 10}}
            scorers: [exact_match]
            budget: {max_tokens: 50}
    """)
    _dataset(tmp_path, 40)
    stopped = _shards(tmp_path, 2)
    assert stopped[0].returncode == 4, "a budget stops the shard: exit 4, not 0"
    done = run_cli("merge", "m.db", "shard1.db", "shard2.db", cwd=tmp_path)
    assert done.returncode == 2
    assert re.fullmatch(r"error: shard1\.db \(shard 1/2\): shard 1/2 of run \S+ is stopped, not finished; resume it"
                        r" \(`yamleval run --resume \S+ --shard 1/2 --store shard1\.db`\), then merge\n",
                        done.stderr), done.stderr


def test_shard_and_run_id_are_checked_and_a_resumed_shard_stays_itself(write_config, tmp_path):
    write_config(CONFIG)
    _dataset(tmp_path, 30)
    lines = []
    for args in (["--shard", "0/4"], ["--shard", "5/4"], ["--shard", "1-4"], ["--shard", "1/0"],
                 ["--run-id", "has space"], ["--run-id", "x", "--resume", "latest"]):
        done = run_cli("run", "-q", "--store", "s.db", *args, cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        lines.append(f"{' '.join(args)}: {done.stderr.strip()}")
    assert run_cli("run", "-q", "--store", "s.db", "--shard", "2/4", "--run-id", "job-1", cwd=tmp_path).returncode == 0
    before = _ids(tmp_path / "s.db")
    gate = run_cli("report", "job-1", "--store", "s.db", "--gate", "--report-dir", "g", cwd=tmp_path)
    assert gate.returncode == 2
    lines.append(f"report --gate of a shard: {gate.stderr.strip()}")
    with sqlite3.connect(tmp_path / "s.db") as con:  # as if the shard's process had died before its end
        con.execute("UPDATE runs SET status = 'running', pid = 999999999")
        con.execute("UPDATE run_shards SET status = 'running', pid = 999999999")
        con.execute("UPDATE experiments SET status = 'running' WHERE experiment_id = 'second'")
        con.execute("DELETE FROM items WHERE rowid IN (SELECT rowid FROM items WHERE experiment_id = 'second' LIMIT 3)")
    for args in (["--run-id", "job-1"], ["--resume", "job-1", "--shard", "3/4"], ["--resume", "job-1", "--shard", "2/5"]):
        done = run_cli("run", "-q", "--store", "s.db", *args, cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        lines.append(f"{' '.join(args)}: {done.stderr.strip()}")
    assert_golden(GOLDEN / "options.txt", "\n".join(lines) + "\n")
    resumed = run_cli("run", "-q", "--store", "s.db", "--resume", "job-1", "--shard", "2/4", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert _ids(tmp_path / "s.db") == before, "the three items of shard 2/4 again, no other shard's"


def test_parse_reads_i_of_n():
    assert parse("2/4") == Shard(2, 4) and parse(" 1 / 1 ") == Shard(1, 1) and str(Shard(3, 8)) == "3/8"


def test_the_sharded_workflow_is_valid_and_its_jobs_give_one_verdict(tmp_path):
    from check_jsonschema.builtin_schemas import get_builtin_schema
    import jsonschema

    text = (ROOT / "examples" / "github" / "sharded.yml").read_text(encoding="utf-8")
    workflow = yaml.safe_load(text)
    workflow["on"] = workflow.pop(True)  # YAML 1.1 reads the key `on` as true; Actions reads YAML 1.2
    jsonschema.validate(workflow, get_builtin_schema("vendor.github-workflows"))
    for name in ("evals.yaml", "datasets", "plugins"):
        source = ROOT / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, tmp_path / name)
    run_id = "ci-1-1"
    jobs = workflow["jobs"]
    assert jobs["shard"]["strategy"]["fail-fast"] is False and jobs["merge"]["if"] == "always()"
    for number in jobs["shard"]["strategy"]["matrix"]["shard"]:
        for step in jobs["shard"]["steps"]:
            if "run" in step and "yamleval run" in step["run"]:
                done = bash_step(step["run"].replace("${{ matrix.shard }}", str(number)), tmp_path, RUN_ID=run_id)
                assert done.returncode == 0, done.stderr
        artefact = tmp_path / "shards" / f"yamleval-shard-{number}"
        artefact.mkdir(parents=True)
        shutil.move(tmp_path / "shard.db", artefact / "shard.db")
    merge_steps = [s["run"] for s in jobs["merge"]["steps"] if "run" in s and "yamleval " in s["run"]]
    codes = [bash_step(script, tmp_path, RUN_ID=run_id).returncode for script in merge_steps]
    demo = run_cli("run", "--store", "whole.db", "--report-dir", "whole", "-q", cwd=tmp_path)
    assert codes == [0, demo.returncode], "merge, then the gate: the unsharded run's exit code"
    for name in ("report.html", "junit.xml", "results.json"):
        assert (tmp_path / "reports" / name).is_file()
    merged = json.loads((tmp_path / "reports" / "results.json").read_text(encoding="utf-8"))
    assert merged["run_id"] == run_id
    whole = json.loads((tmp_path / "whole" / "results.json").read_text(encoding="utf-8"))
    assert _comparable(merged) == _comparable(whole)



def test_a_merged_run_keeps_the_shards_tags_and_a_baseline_found_by_them_judges_it(write_config, tmp_path, store_at):
    """Shards run with ``--tag main`` give a merged run tagged main, so a later run's
    ``no_regression: {baseline: main}`` compares with it and a run that got worse fails."""
    write_config(store_at.config("""
        store: r.db
        experiments:
          - id: e
            dataset: {file: items.jsonl}
            runner: echo
            scorers: [exact_match]
            pass_criteria: [{type: no_regression, baseline: main}]
    """))
    with open(tmp_path / "items.jsonl", "w", encoding="utf-8") as out:
        for i in range(40):
            out.write(json.dumps({"id": f"i{i}", "input": f"x{i}", "expected": f"x{i}"}) + "\n")
    assert [done.returncode for done in _shards(tmp_path, 2, "--tag", "main", "--tag", "nightly")] == [0, 0]
    merged = run_cli("merge", store_at.url("r.db"), "shard1.db", "shard2.db", cwd=tmp_path)
    assert merged.returncode == 0, merged.stderr
    listed = run_cli("runs", cwd=tmp_path)
    assert "main,nightly" in listed.stdout, listed.stdout
    with open(tmp_path / "items.jsonl", "w", encoding="utf-8") as out:
        for i in range(40):
            out.write(json.dumps({"id": f"i{i}", "input": f"x{i}", "expected": "other"}) + "\n")
    worse = run_cli("run", cwd=tmp_path)
    assert worse.returncode == 1 and "regressed" in worse.stdout, worse.stdout
