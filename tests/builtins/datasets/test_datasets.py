"""Dataset sources: inline, JSONL, JSON, YAML, CSV, plugins; fields, ids, lazy limits."""
from __future__ import annotations

import json

import pytest

from conftest import run_cli
from yamleval.config.loader import load_project
from yamleval.records.errors import ConfigError


def items_of(write_config, dataset_yaml: str, limit=None):
    path = write_config(f"""
        experiments:
          - id: e
            dataset: {dataset_yaml}
            runner: echo
    """)
    [experiment] = load_project([path]).experiments
    from yamleval.engine.plan import prepare

    return list(prepare(experiment).open_dataset(limit))


ROWS = [{"q": "one", "a": "1", "id": "first"}, {"q": "two", "a": "2"}, {"q": "three", "a": "3", "extra": True}]


@pytest.mark.parametrize("name, text", [
    ("data.jsonl", "\n".join(json.dumps(r) for r in ROWS) + "\n\n"),
    ("data.json", json.dumps(ROWS)),
    ("data.yaml", "- {q: one, a: '1', id: first}\n- {q: two, a: '2'}\n- {q: three, a: '3', extra: true}\n"),
])
def test_file_formats_and_field_mapping(write_config, tmp_path, name, text):
    (tmp_path / name).write_text(text)
    items = items_of(write_config, f"{{file: {name}, fields: {{input: q, expected: a}}}}")
    assert [(i.id, i.index, i.input, i.expected) for i in items] == [
        ("first", 0, "one", "1"), ("item-2", 1, "two", "2"), ("item-3", 2, "three", "3")]
    assert items[2].metadata == {"extra": True}, "unmapped columns are kept as metadata"


@pytest.mark.parametrize("name, text", [
    ("data.jsonl", '{"q": "one"}\n\n{"q": "two"}\n'),
    ("data.json", '[\n  {"q": "one"},\n\n  {"q": "two"}\n]\n'),
    ("data.yaml", "- q: one\n\n- q: two\n"),
    ("data.csv", "q\none\n\ntwo\n"),
])
def test_items_know_the_file_and_line_of_their_row(write_config, tmp_path, name, text):
    (tmp_path / name).write_text(text)
    items = items_of(write_config, f"{{file: {name}, fields: {{input: q}}}}")
    first, second = (n for n, line in enumerate(text.splitlines(), 1) if "one" in line or "two" in line)
    assert [i.source.rpartition("/")[2] for i in items] == [f"{name}:{first}", f"{name}:{second}"]


def test_inline_items_know_their_line_and_plugin_items_have_none(write_config):
    inline = items_of(write_config, "\n              items:\n                - {input: a}\n                - {input: b}")
    assert [i.source.rpartition("/")[2] for i in inline] == ["evals.yaml:6", "evals.yaml:7"]
    assert {i.source for i in items_of(write_config, "{uses: fixture_plugins.behaviours:countdown, limit: 2}")} == {None}


def test_csv_values_are_text(write_config, tmp_path):
    (tmp_path / "d.csv").write_text('question,answer\n"Hi, there",2\nBye,3\n')
    items = items_of(write_config, "{file: d.csv, fields: {input: question, expected: answer}}")
    assert [(i.input, i.expected) for i in items] == [("Hi, there", "2"), ("Bye", "3")]


def test_limit_from_config_and_command_line(write_config, tmp_path):
    (tmp_path / "d.jsonl").write_text("".join(json.dumps({"input": n}) + "\n" for n in range(10)))
    assert len(items_of(write_config, "{file: d.jsonl, limit: 4}")) == 4
    assert len(items_of(write_config, "{file: d.jsonl, limit: 4}", limit=2)) == 2
    assert len(items_of(write_config, "{file: d.jsonl}", limit=0)) == 0


def test_limit_reads_only_what_it_needs(write_config, tmp_path):
    # a huge file whose tail is not even JSON: with a limit, reading stops before it
    with open(tmp_path / "big.jsonl", "w") as out:
        for n in range(5):
            out.write(json.dumps({"input": n}) + "\n")
        out.write("this line is never read\n" * 200_000)
    items = items_of(write_config, "{file: big.jsonl, limit: 5}")
    assert [i.input for i in items] == [0, 1, 2, 3, 4]


def test_malformed_rows_name_file_and_line(write_config, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.jsonl").write_text('{"input": 1}\n{"input": 2,}\n')
    with pytest.raises(ConfigError) as caught:
        items_of(write_config, "{file: bad.jsonl}")
    assert caught.value.format_message().startswith("bad.jsonl:2:")
    (tmp_path / "bad.csv").write_text("input,expected\na,b\nc,d,e\n")
    with pytest.raises(ConfigError) as caught:
        items_of(write_config, "{file: bad.csv}")
    assert caught.value.format_message().startswith("bad.csv:3:1: error: row has 3 fields but the header has 2")


def test_duplicate_ids_and_missing_input(write_config, tmp_path):
    (tmp_path / "dup.jsonl").write_text('{"id": "a", "input": 1}\n{"id": "a", "input": 2}\n')
    with pytest.raises(ConfigError, match="duplicate item id 'a'"):
        items_of(write_config, "{file: dup.jsonl}")
    (tmp_path / "noinput.jsonl").write_text('{"question": 1}\n')
    with pytest.raises(ConfigError, match="item has no 'input' field"):
        items_of(write_config, "{file: noinput.jsonl}")


def test_plugin_datasets_are_consumed_lazily(write_config):
    from fixture_plugins import behaviours

    items = items_of(write_config, "{uses: fixture_plugins.behaviours:countdown, limit: 3}")
    assert [i.id for i in items] == ["n1", "n2", "n3"]
    assert behaviours.countdown.pulled == 3


FIELDS_TYPO = """\
version: 1
experiments:
  - id: qa
    dataset:
      file: qa.jsonl
      fields:
        input: question
        expected: answr
    runner: {uses: echo, with: {output: "{{ input }}"}}
    scorers: [exact_match]
"""


def test_a_fields_entry_naming_no_column_is_an_error_at_its_line_before_any_item_runs(write_config, tmp_path):
    from conftest import run_cli

    (tmp_path / "qa.jsonl").write_text("".join(json.dumps({"question": f"q{n}", "answer": f"q{n}"}) + "\n"
                                               for n in range(30)))
    path = write_config(FIELDS_TYPO)
    for command in (["validate", str(path)], ["run", str(path), "--store", str(tmp_path / "r.db"),
                                              "--report-dir", str(tmp_path / "reports")]):
        done = run_cli(*command, cwd=tmp_path)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "evals.yaml:8:19: $.experiments[0].dataset.fields.expected: error: `fields: {expected: answr}` names" \
               " a column that none of the first 20 rows has (did you mean `answer`? the columns are: question," \
               " answer)" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    assert done.stdout == "" and not list((tmp_path / "reports").glob("*"))  # nothing ran, stored or reported


def test_a_column_only_some_of_the_first_rows_have_is_mapped(write_config, tmp_path):
    rows = [{"question": "a"}, {"question": "b", "answr": "b"}]
    (tmp_path / "qa.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    project = load_project([str(write_config(FIELDS_TYPO))])
    from yamleval.builtins.datasets import open_dataset

    assert [item.expected for item in open_dataset(project.experiments[0].dataset)] == [None, "b"]


@pytest.mark.parametrize("name, text", [
    ("data.jsonl", '{"input": "a"}\n\n{"input": "b"}\n{"input": "c"}\n'),
    ("data.yaml", "- {input: a}\n- {input: b}\n# a comment\n- input: c\n"),
    ("data.json", '[{"input": "a"},\n {"input": "b"}, {"input": "c"}]'),
    ("data.csv", 'input\na\n\n"b, with a comma"\n"c\nover two lines"\n'),
])
def test_a_file_dataset_is_counted_before_its_first_item_so_progress_can_show_a_total(write_config, tmp_path, name, text):
    (tmp_path / name).write_text(text, encoding="utf-8")
    path = write_config(f"""
        experiments:
          - id: e
            dataset: {{file: {name}}}
            runner: echo
    """)
    [experiment] = load_project([path]).experiments
    from yamleval.engine.plan import prepare

    assert prepare(experiment).open_dataset().total == 3
    assert prepare(experiment).open_dataset(2).total == 2
    assert len(list(prepare(experiment).open_dataset())) == 3


@pytest.mark.parametrize("fields, said", [
    ("{input: questoin, expected: answer}", "d.jsonl:1:1: error: the item has no 'questoin' field"),
    ("{input: question, expected: answr}", "evals.yaml:5:66: $.experiments[0].dataset.fields.expected: error:"),
])
def test_a_column_typo_stops_the_run_before_it_stores_or_reports_anything(write_config, tmp_path, store_at, fields,
                                                                          said):
    (tmp_path / "d.jsonl").write_text("".join(f'{{"question": "q{n}", "answer": "q{n}"}}\n' for n in range(30)))
    project = """
        store: r.db
        experiments:
          - id: e
            dataset: {{file: d.jsonl, fields: {fields}}}
            runner: {{uses: echo}}
            scorers: [exact_match]
    """
    write_config(store_at.config(project.format(fields="{input: question, expected: answer}")))
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 0
    kept = (tmp_path / "reports" / "results.json").read_text(encoding="utf-8")
    write_config(store_at.config(project.format(fields=fields)))
    validated = run_cli("validate", cwd=tmp_path)
    done = run_cli("run", cwd=tmp_path)
    for checked in (validated, done):
        assert checked.returncode == 2 and "Traceback" not in checked.stderr, checked.stdout + checked.stderr
        assert checked.stderr.startswith(said), checked.stderr
    assert (tmp_path / "reports" / "results.json").read_text(encoding="utf-8") == kept
    assert store_at.query("r.db", "SELECT status FROM runs") == [("completed",)]
