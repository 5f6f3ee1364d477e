"""People in the loop: reviews stored and counted, dataset labels, each scorer's agreement with
people (checked against scikit-learn and statsmodels), and the judge_agreement gate."""
from __future__ import annotations

import json
import random

import pytest
from sklearn.metrics import accuracy_score, cohen_kappa_score, confusion_matrix
from statsmodels.stats.inter_rater import cohens_kappa
from statsmodels.stats.proportion import proportion_confint

from conftest import DATA, run_cli
from yamleval import api
from yamleval.analysis.agreement import measured

CALIBRATION = DATA / "reviews" / "calibration.jsonl"


def _calibration(write_config, criteria: str = "", store: str = "r.db", file: str = str(CALIBRATION)):
    return write_config(f"""
        store: {store}
        experiments:
          - id: calib
            dataset: {{file: {file}}}
            runner: {{uses: echo}}
            scorers:
              - {{id: judge, uses: fixture_plugins.verdicts:given}}
            pass_criteria: [{criteria}]
    """)


def _rows():
    return [json.loads(line) for line in CALIBRATION.read_text().splitlines()]


def test_agreement_kappa_and_confusion_matrix_equal_scikit_learns(write_config, tmp_path):
    outcome = api.run(_calibration(write_config), report_dir=tmp_path / "reports", formats=("json",))
    found = outcome.results[0].summary.agreement["judge"]
    rows = _rows()
    human = [r["human_verdict"] == "pass" for r in rows]
    judge = [r["judge"] for r in rows]
    assert found.n == 40
    assert found.rate == pytest.approx(accuracy_score(human, judge), abs=1e-12)
    assert found.kappa == pytest.approx(cohen_kappa_score(human, judge), abs=1e-12)
    assert [list(row) for row in found.matrix] == confusion_matrix(human, judge, labels=[True, False]).tolist()
    # the interval: statsmodels' cohens_kappa (Fleiss, Cohen and Everitt's large-sample variance)
    reference = cohens_kappa(confusion_matrix(human, judge, labels=[True, False]))
    assert found.kappa_ci == pytest.approx((reference.kappa_low, reference.kappa_upp), abs=1e-12)
    agreed = sum(h == j for h, j in zip(human, judge))
    assert found.rate_ci == pytest.approx(proportion_confint(agreed, 40, alpha=0.05, method="wilson"), abs=1e-12)
    # the dataset's labels count: the items pass as people said
    summary = outcome.results[0].summary
    assert summary.passed == sum(human) and summary.reviewed == 40
    assert summary.overruled == sum(h != j for h, j in zip(human, judge))
    written = json.loads((tmp_path / "reports" / "results.json").read_text())["experiments"][0]
    assert written["summary"]["agreement"]["judge"]["kappa"] == found.kappa
    assert written["summary"]["agreement"]["judge"]["confusion"]["human_fail"]["scorer_pass"] == found.matrix[1][0]
    shown = {i["id"]: i for i in written["items"]}
    flipped = next(r for r in rows if (r["human_verdict"] == "pass") != r["judge"])
    assert shown[flipped["id"]]["human"]["source"] == "dataset"
    assert shown[flipped["id"]]["human"]["machine"] == ("passed" if flipped["judge"] else "failed")
    assert shown[flipped["id"]]["status"] == ("passed" if flipped["human_verdict"] == "pass" else "failed")


def test_kappa_and_its_interval_match_the_references_over_many_tables():
    generator = random.Random(5)
    for _ in range(300):
        matrix = tuple(tuple(generator.randrange(0, 30) for _ in range(2)) for _ in range(2))
        if sum(map(sum, matrix)) < 2:
            continue
        found = measured("j", matrix)
        human = [True] * sum(matrix[0]) + [False] * sum(matrix[1])
        judge = [True] * matrix[0][0] + [False] * matrix[0][1] + [True] * matrix[1][0] + [False] * matrix[1][1]
        expected = cohen_kappa_score(human, judge) if len(set(human) | set(judge)) > 1 else float("nan")
        if found.kappa is None:  # people gave one verdict only: no kappa measures the scorer
            assert len(set(human)) == 1 and found.one_verdict, matrix
            continue
        assert not found.one_verdict, matrix
        assert found.kappa == pytest.approx(expected, abs=1e-12), matrix
        reference = cohens_kappa([list(r) for r in matrix])
        assert found.kappa_ci == pytest.approx((max(-1, reference.kappa_low), min(1, reference.kappa_upp)), abs=1e-12)


def _reviewed_project(write_config, store_at, criteria: str):
    items = ", ".join(f"{{id: r{i:02d}, input: q, metadata: {{judge: {str(i % 3 != 0).lower()}}}}}" for i in range(12))
    return write_config(store_at.config(f"""
        store: r.db
        experiments:
          - id: answers
            dataset: {{items: [{items}]}}
            runner: {{uses: echo}}
            scorers:
              - {{id: judge, uses: fixture_plugins.verdicts:given}}
            pass_criteria: [{criteria}]
    """))


def test_reviews_are_kept_counted_and_gated_on_both_backends(write_config, tmp_path, store_at):
    _reviewed_project(write_config, store_at, "{type: pass_rate, min: 0.7}, {type: judge_agreement, scorer: judge,"
                                              " min: 0.5}")
    first = run_cli("run", cwd=tmp_path)
    assert first.returncode == 1, first.stdout + first.stderr  # 8 of 12 pass; no human verdicts yet
    assert "not enough human verdicts (n = 0 < 10)" in first.stdout
    db = store_at.url("r.db")
    # r00 failed by its judge; a person passes it, thinks again, and fails it
    assert run_cli("review", "latest", "answers", "r00", "--verdict", "pass", "--by", "ana", "--store", db,
                   cwd=tmp_path).returncode == 0
    again = run_cli("review", "latest", "answers", "r00", "--verdict", "fail", "--by", "ana", "--note", "wrong city",
                    "--store", db, cwd=tmp_path)
    assert again.returncode == 0 and "1 review stored" in again.stdout, again.stderr
    kept = store_at.query("r.db", "SELECT verdict, machine, reviewer, note FROM reviews ORDER BY rowid")
    assert kept == [("passed", "failed", "ana", None), ("failed", "failed", "ana", "wrong city")]
    # the rest from a file: people pass r03 and r06 (their judge failed them) and agree elsewhere
    rows = ["experiment,item,verdict,note,by"] + [
        f"answers,r{i:02d},{'pass' if i % 3 != 0 or i in (3, 6) else 'fail'},,bo" for i in range(1, 12)]
    (tmp_path / "reviews.csv").write_text("\n".join(rows) + "\n")
    imported = run_cli("review", "latest", "--import", "reviews.csv", "--store", db, cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert "11 reviews stored" in imported.stdout and "10/12 items pass" in imported.stdout
    gated = run_cli("report", "latest", "--gate", "--format", "json,markdown", "--store", db, cwd=tmp_path)
    assert gated.returncode == 0, gated.stdout + gated.stderr  # 10/12 ≥ 0.7 now, and the judge agrees enough
    written = json.loads((tmp_path / "reports" / "results.json").read_text())
    experiment = written["experiments"][0]
    summary = experiment["summary"]
    assert (summary["passed"], summary["failed"], summary["reviewed"], summary["overruled"]) == (10, 2, 12, 2)
    assert summary["pass_rate"] == pytest.approx(10 / 12)
    human = [True, *[i % 3 != 0 or i in (3, 6) for i in range(1, 12)]]
    human[0] = False
    judge = [i % 3 != 0 for i in range(12)]
    agreement = summary["agreement"]["judge"]
    assert agreement["kappa"] == pytest.approx(cohen_kappa_score(human, judge), abs=1e-12)
    assert [c["passed"] for c in summary["criteria"]] == [True, True]
    assert summary["criteria"][1]["actual"] == pytest.approx(agreement["kappa"], abs=1e-12)
    assert written["passed"] is True
    r00 = next(i for i in experiment["items"] if i["id"] == "r00")
    assert r00["status"] == "failed" and r00["human"]["reviews"] == 2 and r00["human"]["note"] == "wrong city"
    markdown = (tmp_path / "reports" / "summary.md").read_text()
    assert "People: 12 items counted with a person's verdict, 2 of them overruling the scorers'" in markdown
    assert "PASSED" in run_cli("runs", "--store", db, cwd=tmp_path).stdout  # listed as reviewed (it ended FAILED)
    machine = run_cli("report", "latest", "--gate", "--verdicts", "machine", "--format", "json", "--store", db,
                      cwd=tmp_path)
    assert machine.returncode == 1, machine.stdout  # as its scorers judged it: 8 of 12, and no human verdicts
    counted = json.loads((tmp_path / "reports" / "results.json").read_text())["experiments"][0]["summary"]
    assert (counted["passed"], "reviewed" in counted) == (8, False)
    listed = run_cli("agreement", "latest", "--format", "json", "--store", db, cwd=tmp_path)
    assert json.loads(listed.stdout)["experiments"]["answers"]["agreement"]["judge"]["n"] == 12
    # a new, unreviewed run compared with the reviewed one: the two items people passed fell back
    reviewed = run_cli("runs", "--ids", "--store", db, cwd=tmp_path).stdout.split()[0]
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 1
    compared = run_cli("compare", reviewed, "latest", "--format", "json", "--store", db, cwd=tmp_path)
    change = json.loads(compared.stdout)["experiments"][0]["change"]
    assert (change["pass_to_fail"], change["fail_to_pass"]) == (2, 0), compared.stdout
    # its outputs scored again: the people's verdicts on them still count, and the new run keeps them
    rescored = run_cli("rescore", reviewed, "--format", "json", "--store", db, cwd=tmp_path)
    assert rescored.returncode == 0, rescored.stdout + rescored.stderr
    again = json.loads((tmp_path / "reports" / "results.json").read_text())
    assert again["rescored_from"] == reviewed and again["passed"] is True
    assert (again["experiments"][0]["summary"]["passed"], again["experiments"][0]["summary"]["overruled"]) == (10, 2)
    assert store_at.query("r.db", "SELECT COUNT(*) FROM reviews WHERE run_id = ?", (again["run_id"],)) == [(13,)]


@pytest.mark.parametrize("criterion, code, said", [
    ("{type: judge_agreement, scorer: judge, min: 0.9}", 1, "judge_agreement(judge) kappa ≥ 0.9"),
    ("{type: judge_agreement, scorer: judge, min: 0.9, severity: warn}", 0, "(warn)"),
    ("{type: judge_agreement, scorer: judge, metric: agreement, bound: lower, min: 0.5}", 0, "agreement (lower 95% bound)"),
])
def test_judge_agreement_gates_a_run(write_config, tmp_path, criterion, code, said):
    _calibration(write_config, criterion)
    done = run_cli("run", cwd=tmp_path)
    assert done.returncode == code, done.stdout + done.stderr
    assert said in done.stdout


def test_too_few_human_verdicts_is_no_pass(write_config, tmp_path):
    few = tmp_path / "few.jsonl"
    few.write_text("".join(line + "\n" for line in CALIBRATION.read_text().splitlines()[:9]))
    _calibration(write_config, "{type: judge_agreement, scorer: judge, min: 0.0}", file=str(few))
    done = run_cli("run", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "not enough human verdicts (n = 9 < 10)" in done.stdout


def test_bad_reviews_are_refused_whole_and_say_where(write_config, tmp_path):
    _calibration(write_config)
    assert run_cli("run", "-q", cwd=tmp_path).returncode in (0, 1)
    (tmp_path / "bad.csv").write_text("experiment,item,verdict,note,by\ncalib,q01,pass,,bo\ncalib,q02,maybe,,bo\n")
    cases = [
        (("--import", "bad.csv"), "bad.csv:3: verdict 'maybe' for item 'q02' is not pass or fail"),
        (("calib", "q01", "--verdict", "pass"), "no reviewer for item 'q01'"),
        (("calib", "nope", "--verdict", "pass", "--by", "bo"), "experiment 'calib' of run"),
        (("other", "q01", "--verdict", "pass", "--by", "bo"), "has no experiment 'other' (it has: calib)"),
        (("calib", "q01"), "give --verdict pass|fail"),
    ]
    for args, said in cases:
        done = run_cli("review", "latest", *args, cwd=tmp_path)
        assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr, (args, done.stderr)
    (tmp_path / "bad.jsonl").write_text('{"experiment": "calib", "item": "q01", "verdict": "fail", "by": "bo"}\n{oops\n')
    done = run_cli("review", "latest", "--import", "bad.jsonl", cwd=tmp_path)
    assert done.returncode == 2 and "bad.jsonl:2: not JSON" in done.stderr
    assert json.loads(run_cli("agreement", "--format", "json", cwd=tmp_path).stdout)["experiments"]["calib"][
        "reviewed"] == 40  # the dataset's labels only: no review of either file was stored


def test_a_dataset_label_that_is_no_verdict_is_a_config_error(write_config, tmp_path):
    (tmp_path / "odd.jsonl").write_text('{"id": "a", "input": "x", "judge": true, "human_verdict": "pass"}\n'
                                        '{"id": "b", "input": "y", "judge": true, "human_verdict": "perhaps"}\n')
    _calibration(write_config, file=str(tmp_path / "odd.jsonl"))
    done = run_cli("run", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "odd.jsonl:2" in done.stderr and "'perhaps', not a verdict" in done.stderr


def test_the_queue_puts_the_items_most_worth_a_review_first():
    from yamleval.analysis.queue import worth_review
    from yamleval.records.reviews import HumanVerdict
    from yamleval.records.types import ExperimentResult, Item, ItemList, ItemResult, ScoreResult, Summary, LatencySummary, Usage

    def judge(passed, reason="fine", **more):
        return ScoreResult("judge", "success", float(passed), passed, reason=reason,
                           metadata={"model": "m", **more}, usage=Usage(1, 1))

    def item(n, scores, **more):
        return ItemResult(Item(f"i{n}", n, "q"), "passed", scores=scores, **more)

    exact = lambda passed: ScoreResult("exact_match", "success", float(passed), passed)  # noqa: E731
    items = [
        item(0, {"judge": judge(True), "exact_match": exact(True)}),  # nothing to look at
        item(1, {"judge": judge(True), "exact_match": exact(False)}),  # they disagree
        item(2, {"judge": judge(True, votes=["pass", "fail", "pass"]), "exact_match": exact(False)}),  # and its votes
        item(3, {"judge": ScoreResult("judge", "error", error="answer cut off at max_tokens (64)", usage=Usage(1, 1))}),
        item(4, {"judge": judge(False, reason=" "), "exact_match": exact(True)},
             human=HumanVerdict("passed", "failed", by="ana")),  # reviewed already: left out
        item(5, {"judge": judge(False, reason="")}),  # no reasoning
    ]
    summary = Summary(6, 6, 6, 0, 0, 0, None, 1.0, 0.0, LatencySummary(), Usage(), {})
    result = ExperimentResult("e", None, True, summary, ItemList(items), "", "")
    found = worth_review([result], limit=3)
    assert [(w.item_id, w.reasons) for w in found] == [
        ("i2", ("judge and exact_match disagree", "judge's repeats disagree")),
        ("i1", ("judge and exact_match disagree",)),
        ("i3", ("judge's answer was cut off",)),
    ]
    assert [w.item_id for w in worth_review([result])] == ["i2", "i1", "i3", "i5"]


def test_a_csv_calibration_set_may_leave_labels_out_and_a_review_file_must_be_utf8(write_config, tmp_path):
    (tmp_path / "some.csv").write_text("id,input,judge,human_verdict\na,x,1,pass\nb,y,1,\nc,z,0,no\n")
    write_config("""
        store: r.db
        experiments:
          - id: calib
            dataset: {file: some.csv}
            runner: {uses: echo}
            scorers:
              - {id: judge, uses: fixture_plugins.verdicts:given}
    """)
    done = run_cli("run", "-q", cwd=tmp_path)
    assert done.returncode == 1 and "2/3 items passed" in done.stdout, done.stdout + done.stderr  # c: as its label says
    found = json.loads(run_cli("agreement", "--format", "json", cwd=tmp_path).stdout)["experiments"]["calib"]
    assert (found["reviewed"], found["agreement"]["judge"]["n"]) == (2, 2)
    (tmp_path / "latin.csv").write_bytes("experiment,item,verdict,note,by\ncalib,a,fail,caf\xe9,bo\n".encode("latin-1"))
    refused = run_cli("review", "latest", "--import", "latin.csv", cwd=tmp_path)
    assert refused.returncode == 2 and "is not UTF-8" in refused.stderr and "Traceback" not in refused.stderr


def test_a_review_keeps_the_corpus_figure_of_a_scorer(write_config, tmp_path):
    import dataclasses

    from yamleval.records.reviews import HumanVerdict
    from yamleval.records.types import Item, ItemList, ItemResult, ScoreResult
    from yamleval.analysis.aggregate import recount
    from yamleval.analysis.reviewed import recounted

    items = ItemList([ItemResult(Item(f"i{n}", n, "q"), "passed", scores={"bleu": ScoreResult("bleu", "success", 0.5,
                                                                                              True)}) for n in range(3)])
    stored = recount(None, items)
    stored = dataclasses.replace(stored, scorers={"bleu": dataclasses.replace(stored.scorers["bleu"], corpus=0.42)})
    reviewed = ItemList([dataclasses.replace(items[0], status="failed", human=HumanVerdict("failed", "passed")),
                         items[1], items[2]])
    again = recounted(stored, reviewed)
    assert (again.passed, again.overruled, again.scorers["bleu"].corpus) == (2, 1, 0.42)


def test_a_retry_of_a_reviewed_run_keeps_its_reviews_and_its_verdict_counts_them(write_config, tmp_path):
    from servers.postgres import StoreAt

    _reviewed_project(write_config, StoreAt("sqlite", tmp_path), "{type: pass_rate, min: 0.75}")
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 1  # 8 of 12
    first = run_cli("runs", "--ids", cwd=tmp_path).stdout.split()[0]
    (tmp_path / "r.jsonl").write_text("".join(json.dumps({"experiment": "answers", "item": i, "verdict": "pass",
                                                          "by": "ana"}) + "\n" for i in ("r03", "r06")))
    assert run_cli("review", first, "--import", "r.jsonl", cwd=tmp_path).returncode == 0
    retried = run_cli("run", "--retry-errors", first, "-q", cwd=tmp_path)
    assert retried.returncode == 0, retried.stdout + retried.stderr  # 10 of 12, the reviews copied and counted
    assert "10/12 items passed" in retried.stdout


def test_hostile_reviews_are_refused_at_their_row_and_names_are_echoed_clean(write_config, tmp_path, store_at):
    _reviewed_project(write_config, store_at, "{type: pass_rate, min: 0.5}")
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 0
    db = store_at.url("r.db")
    named = run_cli("review", "latest", "answers", "r01", "--verdict", "fail", "--by", "\x1b[31mana\x1b]0;owned\x07",
                    "--store", db, cwd=tmp_path)
    assert named.returncode == 0, named.stderr
    assert "\x1b" not in named.stdout and "\x07" not in named.stdout and "by ana" in named.stdout
    row = '{{"experiment": "answers", "item": "r02", "verdict": "fail", "by": "bo", "note": {note}}}\n'
    for number, note in enumerate(['"\\ud800"', '"a \\u0000 b"']):
        name = f"hostile{number}.jsonl"
        (tmp_path / name).write_text(row.format(note='"fine"') + row.format(note=note), encoding="utf-8")
        done = run_cli("review", "latest", "--import", name, "--store", db, cwd=tmp_path)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.startswith(f"error: {name}:2: the note holds U+"), done.stderr
    (tmp_path / "wide.csv").write_text("experiment,item,verdict,note,by\nanswers,r03,pass,,bo\n"
                                       "answers,r04,fail,wrong, city,bo\n", encoding="utf-8")
    wide = run_cli("review", "latest", "--import", "wide.csv", "--store", db, cwd=tmp_path)
    assert wide.returncode == 2 and "wide.csv:3: 6 fields where the header names 5" in wide.stderr, wide.stderr
    assert store_at.query("r.db", "SELECT item_id, reviewer FROM reviews") == [("r01", "\x1b[31mana\x1b]0;owned\x07")]
