"""PostgreSQL as the store, beyond what the store's own tests run on both databases: a login
refused, a server that cannot be reached and a missing driver are one line and exit 2, and the
password is in no output, report, log or table."""
from __future__ import annotations

import subprocess
import sys
import textwrap

from conftest import DATA, assert_golden, cli_env, run_cli
from servers.postgres import postgres_server  # noqa: F401  (a fixture)

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
        tmp_path, postgres_server):  # noqa: F811
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


def test_the_password_is_in_no_output_report_log_or_table(tmp_path, postgres_server):  # noqa: F811
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
