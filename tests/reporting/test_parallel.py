"""Runs past a few hundred items have report.html, junit.xml and summary.md written by a second
process while the items run (``reporting.live``): the files equal those one process writes."""
from __future__ import annotations

import json

import pytest

import yamleval.reporting
import yamleval.cli.running
import yamleval.reporting.live
from yamleval.cli import main

NAMES = ("report.html", "summary.md", "junit.xml", "results.json")


@pytest.mark.parametrize("fork", [True, False], ids=["forked", "new interpreter"])
def test_reports_written_beside_the_run_equal_those_rendered_in_one_process(write_config, tmp_path, monkeypatch,
                                                                            fork):
    rows = [{"id": f"i{n}", "input": f"q{n}", "expected": f"q{n}" if n % 3 else "other"} for n in range(600)]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    config = write_config("""
        experiments:
          - id: e
            dataset: {file: data.jsonl}
            runner: echo
            scorers: [exact_match, {uses: levenshtein, threshold: 0.8}]
          - id: f
            dataset: {file: data.jsonl}
            runner: echo
            scorers: [exact_match]
    """)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(yamleval.reporting.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(yamleval.reporting.live, "forkable", lambda: fork)
    monkeypatch.setattr(yamleval.cli.running._Helper, "LARGE_DATASETS", 0)  # started when the config is read
    kinds = []
    start_fork = yamleval.reporting.live._Fork.__init__
    monkeypatch.setattr(yamleval.reporting.live._Fork, "__init__", lambda self: kinds.append("fork") or start_fork(self))
    started = []
    start = yamleval.reporting.live.LiveReports.__init__
    monkeypatch.setattr(yamleval.reporting.live.LiveReports, "__init__",
                        lambda self, names, **options: started.append(names) or start(self, names, **options))
    send = yamleval.reporting.live.LiveReports.send  # a short run ends before the process is ready:
    monkeypatch.setattr(yamleval.reporting.live.LiveReports, "send",  # wait for it all the same
                        lambda self, run, results, patient=False: send(self, run, results, True))
    here = []
    write_here = yamleval.reporting._write_in_one_pass
    monkeypatch.setattr(yamleval.reporting, "_write_in_one_pass",
                        lambda directory, names, *rest: here.append(names) or write_here(directory, names, *rest))
    with pytest.raises(SystemExit):
        main(["run", str(config), "--quiet", "--report-dir", "beside"])
    assert started == [["html", "junit", "markdown"]], "the run's reports were rendered beside it"
    assert kinds == (["fork"] if fork else [])
    assert here == [["json"]], "the second process wrote the others"

    monkeypatch.setattr(yamleval.reporting, "PARALLEL_ITEMS", 10**9)
    with pytest.raises(SystemExit) as done:
        main(["report", "latest", "--report-dir", "together"])
    assert done.value.code == 0
    monkeypatch.setattr(yamleval.reporting, "PARALLEL_ITEMS", 100)
    with pytest.raises(SystemExit) as done:
        main(["report", "latest", "--report-dir", "again"])
    assert done.value.code == 0 and len(started) == 2, "a large stored run is rendered beside, too"
    assert here[-1] == ["json"]
    for name in NAMES:
        together = (tmp_path / "together" / name).read_bytes()
        assert (tmp_path / "beside" / name).read_bytes() == together, name
        assert (tmp_path / "again" / name).read_bytes() == together, name
    page = (tmp_path / "beside" / "report.html").read_text(encoding="utf-8")
    assert "i599" in page and page.count('"scorers":') == 2
