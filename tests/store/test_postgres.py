"""PostgreSQL as the store, beyond what the store's own tests run on both databases: a login
refused, a server that cannot be reached and a missing driver are one line and exit 2, and the
password is in no output, report, log or table."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from conftest import DATA, assert_golden, cli_env, run_cli

CONFIG = """
    store: ${DATABASE_URL}
    reports: {dir: out}
    experiments:
      - id: e
        dataset: {items: [{id: a, input: x, expected: x}, {id: b, input: y, expected: z}]}
        runner: echo
        scorers: [exact_match]
"""


def test_a_refused_login_an_unreachable_server_and_no_driver_are_one_line_without_the_password(
        tmp_path, postgres_server):
    (tmp_path / "evals.yaml").write_text(textwrap.dedent(CONFIG))
    url = postgres_server.new_database()
    wrong = url.replace(postgres_server.password, "not-the-password-0042")
    port = str(postgres_server.port)
    cases = {
        "a wrong password": ["run", "--store", wrong],
        "an unreachable server": ["runs", "--store", "postgresql://yamleval:hunter2-secret@127.0.0.1:1/db"],
        "no such database": ["show", "--store", url.rsplit("/", 1)[0] + "/missing"],
    }
    lines = []
    for case, args in cases.items():
        done = run_cli(*args, cwd=tmp_path, DATABASE_URL=wrong)
        assert done.returncode == 2 and done.stdout == "", (case, done.stdout, done.stderr)
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
        for secret in ("not-the-password-0042", "hunter2-secret", postgres_server.password):
            assert secret not in done.stderr
        lines.append(f"{case}: {done.stderr.replace(port, 'PORT').strip()}")
    # as if the postgres extra were not installed
    script = "import sys; sys.modules['psycopg'] = None; from yamleval.cli import main; main(sys.argv[1:])"
    missing = subprocess.run([sys.executable, "-c", script, "runs", "--store", url], cwd=tmp_path,
                             capture_output=True, text=True, env=cli_env())
    assert missing.returncode == 2 and postgres_server.password not in missing.stderr
    lines.append(f"no driver: {missing.stderr.replace(port, 'PORT').strip()}")
    text = "\n".join(lines).replace(url.rsplit("/", 1)[1], "DB") + "\n"
    assert_golden(DATA / "postgres" / "refused.txt", text)


def test_the_password_is_in_no_output_report_log_or_table(tmp_path, postgres_server):
    (tmp_path / "evals.yaml").write_text(textwrap.dedent(CONFIG))
    url = postgres_server.new_database()
    done = run_cli("run", cwd=tmp_path, DATABASE_URL=url)
    assert done.returncode == 1, done.stderr
    listed = run_cli("runs", cwd=tmp_path, DATABASE_URL=url)
    shown = run_cli("show", cwd=tmp_path, DATABASE_URL=url)
    history = run_cli("history", "--html", "out/history.html", cwd=tmp_path, DATABASE_URL=url)
    assert listed.returncode == shown.returncode == history.returncode == 0, listed.stderr + shown.stderr
    outputs = [c.stdout + c.stderr for c in (done, listed, shown, history)]
    outputs += [path.read_text(encoding="utf-8") for path in (tmp_path / "out").iterdir()]
    outputs.append(postgres_server.log())
    import psycopg

    with psycopg.connect(url) as db:
        for table in ("runs", "experiments", "items", "run_tags", "repeats", "yamleval_schema"):
            outputs += [str(row) for row in db.execute(f"SELECT * FROM {table}")]
    assert any("${DATABASE_URL}" in text for text in outputs), "the config is stored as written"
    assert all(postgres_server.password not in text for text in outputs)
    assert "history: out/history.html" in history.stdout


def _comparable(path) -> list:
    from lifecycle.test_shards import _comparable as comparable

    return comparable(json.loads(path.read_text(encoding="utf-8")))


def test_four_shard_processes_write_one_run_into_postgresql_at_once(write_config, tmp_path,
                                                                    postgres_server):
    """Four jobs of one CI run, started together, each its shard, all into one shared database:
    every item stored exactly once, and the run the last shard completes is the unsharded run."""
    from lifecycle.test_shards import CONFIG as SHARDED, _dataset

    write_config(SHARDED)
    _dataset(tmp_path, 2000)
    url = postgres_server.new_database()
    jobs = [subprocess.Popen([sys.executable, "-m", "yamleval", "run", "-q", "--shard", f"{n}/4", "--run-id", "ci-1",
                              "--store", url, "--report-dir", f"job{n}"], cwd=tmp_path, env=cli_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n in range(1, 5)]
    for job in jobs:
        _, stderr = job.communicate(timeout=600)
        assert job.returncode == 0 and "error" not in stderr, stderr
    import psycopg

    with psycopg.connect(url) as db:
        counts = db.execute("SELECT experiment_id, count(*), count(DISTINCT item_id) FROM items WHERE run_id = 'ci-1'"
                            " GROUP BY experiment_id ORDER BY experiment_id").fetchall()
        assert counts == [("second", 2000, 2000), ("steady", 2000, 2000)]
        assert db.execute("SELECT status FROM runs").fetchall() == [("completed",)]
    gate = run_cli("report", "ci-1", "--store", url, "--report-dir", "merged", "--format", "json", "--gate",
                   cwd=tmp_path)
    whole = run_cli("run", "-q", "--store", "whole.db", "--report-dir", "whole", cwd=tmp_path)
    assert gate.returncode == whole.returncode == 1, gate.stderr
    assert _comparable(tmp_path / "merged" / "results.json") == _comparable(tmp_path / "whole" / "results.json")


def test_shards_stored_apart_merge_into_postgresql(write_config, tmp_path, postgres_server):
    from lifecycle.test_shards import CONFIG as SHARDED, _dataset, _shards

    write_config(SHARDED)
    _dataset(tmp_path, 200)
    assert [done.returncode for done in _shards(tmp_path, 2, "--run-id", "ci-2")] == [0, 0]
    url = postgres_server.new_database()
    merged = run_cli("merge", url, "shard1.db", "shard2.db", cwd=tmp_path)
    assert merged.returncode == 0, merged.stderr
    assert postgres_server.password not in merged.stdout + merged.stderr
    gate = run_cli("report", "ci-2", "--store", url, "--report-dir", "merged", "--format", "json", "--gate",
                   cwd=tmp_path)
    whole = run_cli("run", "-q", "--store", "whole.db", "--report-dir", "whole", cwd=tmp_path)
    assert gate.returncode == whole.returncode
    assert _comparable(tmp_path / "merged" / "results.json") == _comparable(tmp_path / "whole" / "results.json")


def test_every_form_of_password_libpq_reads_is_hidden_everywhere(tmp_path, postgres_server):
    """In the user part (raw, with ``#`` and ``?`` in it, or percent-encoded), in the query
    (``password=``), and in ``PGPASSWORD``: the password is in no output, page or message, on a run
    that reaches the server and on one refused."""
    import urllib.parse

    import psycopg

    secret = "se#cr?et-" + postgres_server.password[3:15]
    role = "r_" + postgres_server.password[3:11]
    name = postgres_server.new_database()
    with psycopg.connect(postgres_server.url(), autocommit=True) as db:
        db.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{secret}'")
        db.execute(f'GRANT ALL ON DATABASE "{name.rsplit("/", 1)[1]}" TO {role}')
        db.execute(f'ALTER DATABASE "{name.rsplit("/", 1)[1]}" OWNER TO {role}')
    where = f"127.0.0.1:{postgres_server.port}/{name.rsplit('/', 1)[1]}"
    encoded = urllib.parse.quote(secret, safe="")
    forms = {
        "encoded in the user part": (f"postgresql://{role}:{encoded}@{where}", {}),
        "in the query": (f"postgresql://{role}@{where}?password={encoded}", {}),
        "in PGPASSWORD": (f"postgresql://{role}@{where}", {"PGPASSWORD": secret}),
    }
    (tmp_path / "evals.yaml").write_text(textwrap.dedent(CONFIG))
    texts = []
    for form, (url, environ) in forms.items():
        done = run_cli("run", cwd=tmp_path, DATABASE_URL=url, **environ)
        assert done.returncode == 1, (form, done.stderr)
        history = run_cli("history", "--html", "out/history.html", cwd=tmp_path, DATABASE_URL=url, **environ)
        assert history.returncode == 0, (form, history.stderr)
        if environ:
            refused = run_cli("runs", "--store", url, cwd=tmp_path, PGPASSWORD="wrong" + secret)
        else:
            refused = run_cli("runs", "--store", url.replace(encoded, "wrong" + encoded), cwd=tmp_path)
        assert refused.returncode == 2 and "password authentication failed" in refused.stderr, (form, refused.stderr)
        texts += [done.stdout + done.stderr, history.stdout + history.stderr, refused.stderr]
        texts += [path.read_text(encoding="utf-8") for path in (tmp_path / "out").iterdir()]
    raw = f"postgresql://{role}:{secret}@{where}"
    texts += [run_cli("runs", "--store", raw, cwd=tmp_path).stderr, run_cli("runs", "--store", raw + "?sslmode=x#y",
                                                                            cwd=tmp_path).stderr]
    for text in texts:
        for shown in (secret, encoded, secret.split("#")[1], secret.split("?")[1]):
            assert shown not in text, (shown, text)


def test_a_schema_holding_another_roles_tables_is_refused_and_the_schema_option_it_names_works(tmp_path,
                                                                                               postgres_server):
    """The login cannot see the other role's tables (``information_schema`` hides them), one of them
    named ``items``: the database is refused, naming them and the schema to use; with that schema in
    the URL the run goes ahead."""
    import psycopg

    name = postgres_server.new_database()
    database = name.rsplit("/", 1)[1]
    role, secret = "s_" + postgres_server.password[-8:], "pw-" + postgres_server.password[11:23]
    with psycopg.connect(postgres_server.url(), autocommit=True) as db:
        db.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{secret}'")
    with psycopg.connect(name, autocommit=True) as db:
        db.execute("CREATE TABLE items (id int)")  # owned by the server's user, not readable by the role
        db.execute(f"GRANT CREATE, USAGE ON SCHEMA public TO {role}")
        db.execute(f"CREATE SCHEMA yamleval AUTHORIZATION {role}")
    url = f"postgresql://{role}:{secret}@127.0.0.1:{postgres_server.port}/{database}"
    with psycopg.connect(url) as db:
        assert not db.execute("SELECT 1 FROM information_schema.tables WHERE table_name = 'items'").fetchall()
    (tmp_path / "evals.yaml").write_text(textwrap.dedent(CONFIG))
    refused = run_cli("run", cwd=tmp_path, DATABASE_URL=url)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "it holds other tables: items" in refused.stderr and "?options=-csearch_path%3Dyamleval" in refused.stderr
    done = run_cli("run", cwd=tmp_path, DATABASE_URL=url + "?options=-csearch_path%3Dyamleval")
    assert done.returncode == 1, done.stderr  # one of the two items fails: the run went ahead
    with psycopg.connect(url) as db:
        assert db.execute("SELECT count(*) FROM yamleval.items").fetchone() == (2,)
