"""Large runs write report.html and summary.md in a second process: the files are the same."""
from __future__ import annotations

import json

import pytest

import yamleval.reporting
from yamleval.cli import main


def test_reports_written_beside_the_run_equal_those_rendered_in_one_process(write_config, tmp_path, monkeypatch):
    rows = [{"id": f"i{n}", "input": f"q{n}", "expected": f"q{n}" if n % 3 else "other"} for n in range(300)]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    config = write_config("""
        experiments:
          - id: e
            dataset: {file: data.jsonl}
            runner: echo
            scorers: [exact_match, {uses: levenshtein, threshold: 0.8}]
    """)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(yamleval.reporting, "PARALLEL_ITEMS", 100)
    monkeypatch.setattr(yamleval.reporting.os, "cpu_count", lambda: 2)
    beside = []
    start = yamleval.reporting._Beside.__init__
    monkeypatch.setattr(yamleval.reporting._Beside, "__init__",
                        lambda self, directory, names, *rest: beside.append(names) or start(self, directory, names, *rest))
    with pytest.raises(SystemExit):
        main(["run", str(config), "--quiet", "--report-dir", "beside"])
    assert beside == [["html", "markdown"]]
    monkeypatch.setattr(yamleval.reporting, "PARALLEL_ITEMS", 10**9)
    with pytest.raises(SystemExit) as done:
        main(["report", "latest", "--report-dir", "together"])
    assert done.value.code == 0
    for name in ("report.html", "summary.md", "junit.xml", "results.json"):
        assert (tmp_path / "beside" / name).read_bytes() == (tmp_path / "together" / name).read_bytes(), name
    assert "i299" in (tmp_path / "beside" / "report.html").read_text(encoding="utf-8")
