"""Any text is stored and read back alike on each backend (``store_at``): an item id or an
output holding U+0000, which no PostgreSQL text can hold, and an id too long for any key of
PostgreSQL's, keyed by a digest of it (``schema.item_key``) while its record keeps the id."""
from __future__ import annotations

import json

from conftest import run_cli
from yamleval.records.types import ItemList
from yamleval.store.schema import item_key
from yamleval.store.writer import Store

NUL_ID, LONG_ID = "nul\u0000id", "long-" + "é" * 3000
ROWS = [{"id": NUL_ID, "input": "in\u0000put", "expected": "in\u0000put"},
        {"id": LONG_ID, "input": "a", "expected": "a"},
        {"id": "plain", "input": "a", "expected": "b"}]
CONFIG = """
    store: r.db
    reports: {dir: out, formats: [json]}
    experiments:
      - id: e
        dataset: {file: items.jsonl}
        runner: echo
        scorers: [exact_match]
"""


def test_ids_and_outputs_holding_nul_and_ids_past_any_key_are_stored_and_read_back(write_config, tmp_path,
                                                                                   store_at):
    with open(tmp_path / "items.jsonl", "w", encoding="utf-8") as out:
        out.writelines(json.dumps(row) + "\n" for row in ROWS)
    write_config(store_at.config(CONFIG))
    for _ in range(2):
        done = run_cli("run", "-q", cwd=tmp_path)
        assert done.returncode == 1 and "error" not in done.stderr, done.stderr  # "plain" fails
    store = Store(store_at.absolute())
    [run, first] = store.runs()
    [result] = store.results(run.run_id)
    items = {r.item.id: r for r in result.items}
    assert list(items) == [NUL_ID, LONG_ID, "plain"]
    assert items[NUL_ID].output == "in\u0000put" and items[NUL_ID].status == "passed"
    assert result.items.find(LONG_ID).item.id == LONG_ID and result.items.find(NUL_ID).output == "in\u0000put"
    assert list(result.items.verdicts(["exact_match"])) == list(ItemList(list(result.items)).verdicts(["exact_match"]))
    store.close()
    assert sorted(key for key, in store_at.query("r.db", "SELECT DISTINCT item_id FROM items")) == sorted(
        item_key(i) for i in (NUL_ID, LONG_ID, "plain"))
    compared = run_cli("compare", first.run_id, "latest", cwd=tmp_path)  # the two runs, each item paired by its id
    assert compared.returncode == 0 and "0 regressions" in compared.stdout, compared.stderr
    exported = run_cli("export", "--format", "jsonl", cwd=tmp_path)
    assert [json.loads(line)["id"] for line in exported.stdout.splitlines()] == [NUL_ID, LONG_ID, "plain"]


def test_an_item_key_is_its_id_unless_no_key_can_hold_it():
    assert item_key("q-1") == "q-1" and item_key("é" * 500) == "é" * 500
    digests = {item_key(i) for i in (NUL_ID, LONG_ID, "é" * 1001, item_key(NUL_ID))}
    assert len(digests) == 4 and all(len(key) < 100 and "\u0000" not in key for key in digests)
