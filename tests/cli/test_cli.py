"""The command line as a user runs it: exit codes, reports, interrupts."""
from __future__ import annotations

import fcntl
import gc
import json
import os
import pty
import re
import signal
import struct
import subprocess
import sys
import termios
import time

import pytest

from conftest import ROOT, cli_env, run_cli
from servers.fixtures import openai_server  # noqa: F401  (a fixture)
from servers.openai_server import text_reply

PASSING = """
    experiments:
      - id: ok
        dataset: {items: [{input: a, expected: a}, {input: b, expected: b}]}
        runner: echo
        scorers: [exact_match]
"""
FAILING = """
    experiments:
      - id: ok
        dataset: {items: [{input: a, expected: a}]}
        runner: echo
      - id: bad
        dataset: {items: [{input: a, expected: b}]}
        runner: echo
        scorers: [exact_match]
"""


def test_a_run_in_this_process_leaves_its_interpreter_as_it_found_it(write_config, tmp_path, monkeypatch):
    """No ``sys.path`` entry and no garbage collector setting outlive ``yamleval run``."""
    from yamleval.cli import main

    config = write_config(PASSING)
    monkeypatch.chdir(tmp_path)
    path, threshold, frozen = list(sys.path), gc.get_threshold(), gc.get_freeze_count()
    with pytest.raises(SystemExit) as done:
        main(["run", str(config), "--quiet", "--report-dir", "out"])
    assert done.value.code == 0
    assert (list(sys.path), gc.get_threshold(), gc.get_freeze_count()) == (path, threshold, frozen)


def test_exit_0_when_every_experiment_passes(write_config, tmp_path):
    write_config(PASSING)
    done = run_cli("run", "--report-dir", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "PASSED" in done.stdout
    report = json.loads((tmp_path / "out" / "results.json").read_text())
    assert report["passed"] is True
    assert report["experiments"][0]["summary"]["passed"] == 2


def test_every_report_gives_the_intervals_at_the_configured_confidence(write_config, tmp_path):
    """8 of 10 items pass: the Wilson interval of the pass rate and the t interval of the mean score
    (cut at 1) at 90%, as statsmodels and scipy give them."""
    items = ", ".join(f"{{input: {n}, expected: {n if n < 8 else 'other'}}}" for n in range(10))
    write_config(f"""
        defaults: {{confidence: 0.9}}
        experiments:
          - id: e
            dataset: {{items: [{items}]}}
            runner: echo
            scorers: [exact_match]
    """)
    done = run_cli("run", "--report-dir", "out", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "\n  90% CI      mean score 0.556–1.000 · pass rate 54.1–93.1%\n" in done.stdout
    assert "  exact_match   0.800  0.000  1.000      80.0%  0.556–1.000   54.1–93.1%  8/2/0/0\n" in done.stdout
    summary_md = (tmp_path / "out" / "summary.md").read_text()
    assert "\n90% CI: pass rate 54.1–93.1%, mean score 0.556–1.000.\n" in summary_md
    assert "\n| exact\\_match | 0.800 | 0.556–1.000 | 80.0% | 54.1–93.1% |\n" in summary_md
    junit = (tmp_path / "out" / "junit.xml").read_text()
    for name, value in (("confidence", "0.9"), ("pass_rate_ci", "[0.540793, 0.931442]"),
                        ("mean_score_ci", "[0.555585, 1]"), ("scorer.exact_match.mean_ci", "[0.555585, 1]"),
                        ("scorer.exact_match.pass_rate_ci", "[0.540793, 0.931442]")):
        assert f'<property name="{name}" value="{value}" />' in junit
    summary = json.loads((tmp_path / "out" / "results.json").read_text())["experiments"][0]["summary"]
    wilson, t = [0.5407928056874879, 0.9314420122624679], [0.5555849423125017, 1.0]
    assert (summary["confidence"], summary["pass_rate_ci"], summary["mean_score_ci"]) == (
        0.9, pytest.approx(wilson, rel=1e-9), pytest.approx(t, rel=1e-9))
    scorer = summary["scorers"]["exact_match"]
    assert (scorer["pass_rate_ci"], scorer["mean_ci"]) == (pytest.approx(wilson, rel=1e-9), pytest.approx(t, rel=1e-9))
    html = (tmp_path / "out" / "report.html").read_text()
    assert "54.1–93.1%</div><div class=\"stat-name\">Pass rate 90% CI" in html
    assert "0.556–1.000</div><div class=\"stat-name\">Mean score 90% CI" in html


def test_exit_1_when_an_experiment_fails(write_config, tmp_path):
    write_config(FAILING)
    done = run_cli("run", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    report = json.loads((tmp_path / "reports" / "results.json").read_text())
    assert [e["passed"] for e in report["experiments"]] == [True, False]
    assert "✗ item-1 failed: exact_match failed (0.000)" in done.stdout


def test_exit_2_for_bad_config_and_bad_usage(write_config, tmp_path):
    write_config("experiments: [{id: x}]\n")
    done = run_cli("run", cwd=tmp_path)
    assert done.returncode == 2
    assert "evals.yaml:1:15: $.experiments[0]: error: missing required key 'dataset'" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "reports").exists(), "nothing runs when the config is invalid"
    assert run_cli("run", "--concurrency", "0", cwd=tmp_path).returncode == 2
    assert run_cli("frobnicate", cwd=tmp_path).returncode == 2
    assert run_cli("run", "missing.yaml", cwd=tmp_path).returncode == 2


def test_experiment_selection_and_limit(write_config, tmp_path):
    write_config(FAILING)
    done = run_cli("run", "-e", "ok", "--limit", "0", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "reports" / "results.json").read_text())
    assert [e["id"] for e in report["experiments"]] == ["ok"]
    assert report["experiments"][0]["summary"]["completed"] == 0
    unknown = run_cli("run", "-e", "bda", cwd=tmp_path)
    assert unknown.returncode == 2 and "did you mean 'bad'?" in unknown.stderr
    for name in ("ñandú", "实验"):  # nothing near: the experiments are listed instead of a guess
        unknown = run_cli("run", "-e", name, cwd=tmp_path)
        assert unknown.returncode == 2 and f"no experiment with id '{name}' (experiments: ok, bad)" in unknown.stderr


def test_quiet_prints_only_verdicts(write_config, tmp_path):
    write_config(FAILING)
    done = run_cli("run", "--quiet", cwd=tmp_path)
    assert done.stdout.splitlines() == ["ok: PASSED (1/1 items passed)", "bad: FAILED (0/1 items passed)"]


def test_progress_lines_when_not_a_terminal(write_config, tmp_path):
    write_config(PASSING)
    done = run_cli("run", cwd=tmp_path)
    assert "Traceback" not in done.stderr
    assert done.returncode == 0
    assert re.search(r"^ok: 1/2 items · [\d.,]+ items/s · ETA \d+s · 1 passed · 0 failed · 0 errors$", done.stderr, re.M)
    assert "\r" not in done.stderr and "\x1b" not in done.stderr, "a log gets plain lines, never redrawn ones"


def _on_a_terminal(cwd, *args: str) -> tuple[subprocess.CompletedProcess, float]:
    """``yamleval ARGS`` with its stderr on a pseudo-terminal 160 columns wide: the process (its
    ``stderr`` what the terminal showed) and how long it took."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    started = time.monotonic()
    child = subprocess.Popen([sys.executable, "-m", "yamleval", *args], cwd=cwd, env=cli_env(),
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    shown = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every end of the terminal the child had is closed
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    stdout = child.stdout.read().decode()
    child.stdout.close()
    code = child.wait(60)
    return subprocess.CompletedProcess(args, code, stdout, shown.decode()), time.monotonic() - started


def test_on_a_terminal_one_progress_line_is_redrawn_in_place(write_config, tmp_path):
    items = ", ".join(["{input: slow, expected: slow}"] * 6)  # each takes 0.3 s: every one is drawn
    write_config(f"""
        experiments:
          - id: slow
            concurrency: 1
            dataset: {{items: [{items}]}}
            runner: fixture_plugins.behaviours:per_item
            scorers: [exact_match]
    """)
    done, _ = _on_a_terminal(tmp_path, "run", "--report-dir", "out")
    assert done.returncode == 0, done.stdout + done.stderr
    frames = done.stderr.split("\r\x1b[2K")
    assert frames[0] == "" and frames[-1] == "", "each frame overwrites the line; the last one clears it"
    assert "\n" not in "".join(frames), "the progress never scrolls"
    third = [f for f in frames if " 3/6 items" in f]
    assert third and re.fullmatch(r"\[##########\.{10}\] slow: 3/6 items · \d+\.\d items/s · ETA \d+s"
                                  r" · 3 passed · 0 failed · 0 errors", third[0]), frames
    assert "PASSED" in done.stdout


def test_on_a_terminal_the_line_is_redrawn_at_most_ten_times_a_second(write_config, tmp_path):
    items = ", ".join(f"{{input: x{n}, expected: x{n}}}" for n in range(3000))
    write_config(f"""
        experiments:
          - id: quick
            dataset: {{items: [{items}]}}
            runner: echo
            scorers: [exact_match]
    """)
    done, took = _on_a_terminal(tmp_path, "run", "--report-dir", "out")
    assert done.returncode == 0, done.stdout + done.stderr
    draws = done.stderr.count("\r\x1b[2K") - 1  # the last clears the line
    assert 1 <= draws <= took * 10 + 2, (draws, took)
    assert "3000/3000 items" in done.stderr


def test_validate(write_config, tmp_path):
    write_config(PASSING)
    done = run_cli("validate", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == "ok: 1 experiment in evals.yaml"
    assert not (tmp_path / "reports").exists()


@pytest.mark.parametrize("command, usage, default", [
    ("show", "yamleval show [OPTIONS] [RUN]", "or `latest` (the default)"),
    ("report", "yamleval report [OPTIONS] [RUN]", "or `latest` (the default)"),
    ("compare", "yamleval compare [OPTIONS] BASE [CANDIDATE]", "CANDIDATE is `latest` when it is not given"),
])
def test_help_shows_a_run_that_defaults_to_latest_as_optional(tmp_path, command, usage, default):
    done = run_cli(command, "--help", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stdout.splitlines()[0] == f"Usage: {usage}"
    assert default in " ".join(done.stdout.split())


def test_schema_prints_the_shipped_schema(tmp_path):
    done = run_cli("schema", cwd=tmp_path)
    assert done.returncode == 0
    assert json.loads(done.stdout) == json.loads((ROOT / "schema" / "yamleval.schema.json").read_text())


def test_init_starts_a_project_that_runs_offline(tmp_path):
    done = run_cli("init", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("next: yamleval run\n")
    first = (tmp_path / "evals.yaml").read_text(encoding="utf-8").splitlines()[0]
    assert first == "# yaml-language-server: $schema=yamleval.schema.json"
    assert (tmp_path / "yamleval.schema.json").read_text() == run_cli("schema", cwd=tmp_path).stdout

    done = run_cli("run", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    [experiment] = json.loads((tmp_path / "reports" / "results.json").read_text())["experiments"]
    assert experiment["summary"]["total"] == 8 and experiment["summary"]["pass_rate"] >= 0.8
    assert experiment["passed"] is True
    assert {"report.html", "junit.xml", "summary.md"} <= {p.name for p in (tmp_path / "reports").iterdir()}


def test_init_offers_a_model_runner_in_comments_that_validates_once_uncommented(tmp_path):
    assert run_cli("init", cwd=tmp_path).returncode == 0
    text = (tmp_path / "evals.yaml").read_text()
    assert '# models:\n#   app: {base_url: "http://127.0.0.1:8080/v1", model: my-model,' in text
    uncommented = (text.replace("# models:", "models:").replace('#   app: {', '  app: {')
                   .replace("    runner: plugins.assistant:answer", "    # runner: plugins.assistant:answer")
                   .replace("    # runner:\n", "    runner:\n"))
    uncommented = re.sub(r"(?m)^    # ( {2,}\S)", r"    \1", uncommented)  # the runner's lines
    (tmp_path / "evals.yaml").write_text(uncommented)
    done = run_cli("validate", cwd=tmp_path, OPENAI_API_KEY="k")
    assert done.returncode == 0, done.stderr + uncommented
    assert "uses: openai" in uncommented and "\n    runner:\n      uses: openai" in uncommented


def test_init_with_a_base_url_and_model_tests_that_model(tmp_path, openai_server):
    done = run_cli("init", "--base-url", openai_server.base_url, "--model", "small: q4", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (f'  app: {{base_url: "{openai_server.base_url}", model: "small: q4", max_tokens: 300}}'
            in (tmp_path / "evals.yaml").read_text())
    openai_server.push(*(text_reply("Refunds are accepted within 30 days; shipping takes 3 to 5 business days;"
                                    " we are open on Saturday; keep your receipt; use Forgot password; sorry,"
                                    " I can only help with orders") for _ in range(8)))
    done = run_cli("run", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    [first, *_] = openai_server.bodies
    assert len(openai_server.bodies) == 8 and first["model"] == "small: q4" and first["max_tokens"] == 300
    assert first["messages"][0]["role"] == "system" and "30 days" in first["messages"][0]["content"]
    asked = sorted(body["messages"][1]["content"] for body in openai_server.bodies)  # concurrently, in any order
    assert "Can I get a refund on a book I bought last week?" in asked and len(set(asked)) == 8
    report = json.loads((tmp_path / "reports" / "results.json").read_text())
    assert report["experiments"][0]["runner"] == "openai" and report["passed"] is True


@pytest.mark.parametrize("args, message", [
    (["--model", "m"], "error: give --base-url and --model together: the endpoint and the model to ask there\n"),
    (["--base-url", "127.0.0.1:8080", "--model", "m"],
     "error: --base-url '127.0.0.1:8080' is no http:// or https:// URL; give the endpoint's, e.g."
     " http://127.0.0.1:8080/v1\n"),
])
def test_init_refuses_half_a_model_or_a_url_that_is_none(tmp_path, args, message):
    done = run_cli("init", *args, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr == message
    assert list(tmp_path.iterdir()) == [], "nothing was written"


def test_init_overwrites_nothing_without_force(tmp_path):
    (tmp_path / "evals.yaml").write_text("mine\n")
    done = run_cli("init", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == "error: evals.yaml already exists; nothing was written (--force overwrites)\n"
    assert [p.name for p in tmp_path.iterdir()] == ["evals.yaml"]
    assert (tmp_path / "evals.yaml").read_text() == "mine\n"

    assert run_cli("init", "--force", cwd=tmp_path).returncode == 0
    assert (tmp_path / "evals.yaml").read_text().startswith("# yaml-language-server: ")
    assert run_cli("validate", cwd=tmp_path).returncode == 0


SLOW = """
    experiments:
      - id: slow
        concurrency: 2
        dataset: {items: [%s]}
        runner: {uses: fixture_plugins.behaviours:sleeper, with: {seconds: 0.25}}
      - id: never-started
        dataset: {items: [{input: x}]}
        runner: echo
""" % ", ".join(f"{{id: s{i}, input: {i}}}" for i in range(200))


def _wait_for_items(db, count: int, timeout: float = 60) -> None:
    """Wait until the run has stored ``count`` items (so its signal handlers are in place)."""
    import sqlite3

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as con:
                if con.execute("SELECT count(*) FROM items").fetchone()[0] >= count:
                    return
        except sqlite3.Error:
            pass
        time.sleep(0.01)
    raise AssertionError(f"{count} items were not stored within {timeout}s")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_writes_the_report_of_finished_items_and_exits_130(write_config, tmp_path, signum):
    write_config(SLOW)
    child = subprocess.Popen([sys.executable, "-m", "yamleval", "run", "--report-dir", "out"], cwd=tmp_path,
                             env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for_items(tmp_path / ".yamleval" / "results.db", 2)
    child.send_signal(signum)
    stdout, stderr = child.communicate(timeout=30)
    assert child.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "stopping: no new items start" in stderr
    report = json.loads((tmp_path / "out" / "results.json").read_text())
    assert report["interrupted"] is True and report["passed"] is False
    [experiment] = report["experiments"]
    finished = experiment["items"]
    assert 2 <= len(finished) < 200
    assert all(item["status"] == "passed" for item in finished), "running items were let finish"
    assert [i["index"] for i in finished] == sorted(i["index"] for i in finished)
    assert "INTERRUPTED" in stdout


def _lines_of(stream):
    """The lines of ``stream`` as they come, on a queue (None at its end)."""
    import queue
    import threading

    lines = queue.Queue()

    def read():
        for line in stream:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    return lines


def _wait_for_line(lines, text: str, timeout: float = 30) -> list[str]:
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
        if line is None:
            break
        seen.append(line)
        if text in line:
            return seen
    raise AssertionError(f"no line with {text!r} in {seen}")


def test_quiet_says_an_interrupted_experiment_was_interrupted(write_config, tmp_path):
    write_config(SLOW)
    child = subprocess.Popen([sys.executable, "-m", "yamleval", "run", "-q"], cwd=tmp_path,
                             env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for_items(tmp_path / ".yamleval" / "results.db", 2)
    child.send_signal(signal.SIGINT)
    stdout, stderr = child.communicate(timeout=30)
    assert child.returncode == 130, stderr
    [line] = [line for line in stdout.splitlines() if line.startswith("slow:")]
    assert line.startswith("slow: INTERRUPTED (") and "FAILED" not in stdout


def test_items_that_compute_past_their_timeout_do_not_hold_up_the_run(write_config, tmp_path):
    """Python cannot stop a thread: a spinning runner's items are timed out and the run ends
    soon after, without waiting for the threads (they end with the process)."""
    write_config("""
        experiments:
          - id: spin
            timeout: 1
            concurrency: 6
            dataset: {items: [%s]}
            runner: fixture_plugins.behaviours:spin
    """ % ", ".join(f"{{input: {i}}}" for i in range(6)))
    started = time.monotonic()
    done = run_cli("run", "-q", cwd=tmp_path, timeout=60)
    assert done.returncode == 1, done.stderr
    report = json.loads((tmp_path / "reports" / "results.json").read_text())
    assert [i["error"] for i in report["experiments"][0]["items"]] == ["timed out after 1s (in the runner)"] * 6
    assert time.monotonic() - started < 15, "the run waited for threads it had given up on"


def test_second_interrupt_stops_waiting_and_resume_runs_what_was_cut_off(write_config, tmp_path):
    """Items cut off by a second Ctrl-C are no results: none is stored, and --resume runs them."""
    write_config("""
        experiments:
          - id: stuck
            timeout: 60
            dataset: {items: [{id: i-1, input: 1}, {id: i-2, input: 2}]}
            runner: {uses: fixture_plugins.behaviours:held, with: {log: started.log, release: go}}
    """)
    log = tmp_path / "started.log"
    log.write_text("")
    with subprocess.Popen([sys.executable, "-m", "yamleval", "run"], cwd=tmp_path, env=cli_env(),
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as child:
        lines = _lines_of(child.stderr)
        deadline = time.monotonic() + 30
        while len(log.read_text().split()) < 2 and time.monotonic() < deadline:  # both items are running
            time.sleep(0.01)
        child.send_signal(signal.SIGINT)
        _wait_for_line(lines, "stopping:")
        child.send_signal(signal.SIGINT)
        started = time.monotonic()
        child.wait(timeout=20)
        _wait_for_line(lines, "interrupted")
    assert child.returncode == 130
    assert time.monotonic() - started < 10
    report = json.loads((tmp_path / "reports" / "results.json").read_text())
    assert report["status"] == "interrupted" and report["experiments"][0]["items"] == []

    (tmp_path / "go").write_text("")  # the items now run to their end
    resumed = run_cli("run", "--resume", cwd=tmp_path, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    report = json.loads((tmp_path / "reports" / "results.json").read_text())
    assert [i["status"] for i in report["experiments"][0]["items"]] == ["passed", "passed"]


def test_main_job_from_the_repository_root(tmp_path):
    done = subprocess.run([sys.executable, "-m", "yamleval", "run", "evals.yaml", "--report-dir", str(tmp_path),
                           "--store", str(tmp_path / "results.db")],
                          cwd=ROOT, capture_output=True, text=True, env=cli_env(), timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "results.json").read_text())
    for key in ("yamleval_version", "run_id", "started_at", "completed_at", "passed", "experiments"):
        assert key in report
    experiment = report["experiments"][0]
    assert set(experiment) >= {"id", "label", "passed", "summary", "items"}
    summary = experiment["summary"]
    assert set(summary) >= {"total", "completed", "passed", "failed", "errored", "skipped", "mean_score",
                            "pass_rate", "duration_ms", "latency_ms", "tokens", "scorers", "criteria"}
    assert set(summary["latency_ms"]) == {"mean", "p50", "p90", "p95", "p99", "max"}
    assert set(summary["tokens"]) == {"prompt", "completion", "total", "cost"}
    for scorer in summary["scorers"].values():
        assert set(scorer) >= {"name", "mean", "min", "max", "pass_rate", "passed", "failed", "errored",
                               "skipped", "threshold"}
    for criterion in summary["criteria"]:
        assert set(criterion) >= {"type", "scorer", "min", "actual", "passed", "severity", "label"}
    item = experiment["items"][0]
    assert set(item) >= {"id", "index", "status", "input", "expected", "output", "latency_ms", "error", "scores"}
    assert set(next(iter(item["scores"].values()))) >= {"score", "status", "threshold", "passed", "reason"}
    partly_failing = [e for e in report["experiments"] if "variants" not in e and e["passed"] and e["summary"]["failed"]]
    [compared] = [e for e in report["experiments"] if "variants" in e]  # the demo's model comparison
    assert {"summary", "items", "comparison"} <= set(compared["variants"][1])
    assert partly_failing, "the demo shows an experiment that passes its criteria with failing items"


def test_no_secret_in_any_artefact(write_config, tmp_path):
    secret = "sk-test-7f3a9c1b2d"
    write_config("""
        models:
          judge: {model: small, api_key: "${API_KEY}", base_url: "http://127.0.0.1:9/v1"}
        experiments:
          - id: e
            description: "key is ${API_KEY}"
            dataset: {items: [{input: hello, expected: hello}, {input: bye, expected: hello}]}
            runner: echo
            scorers: [exact_match]
    """)
    summary = tmp_path / "step-summary.md"
    done = run_cli("run", cwd=tmp_path, API_KEY=secret, GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(summary))
    assert done.returncode == 1, done.stderr
    artefacts = [tmp_path / "reports" / name for name in ("report.html", "junit.xml", "results.json", "summary.md")]
    artefacts += [summary, *sorted((tmp_path / ".yamleval").iterdir())]
    for path in artefacts:
        assert path.exists(), path
        assert secret.encode() not in path.read_bytes(), path
    assert secret not in done.stdout + done.stderr
    assert "::error" in done.stdout, "failing items are annotated inside GitHub Actions"
    assert "❌" in summary.read_text() or "FAILED" in summary.read_text()


CONFIGURED = """
    # the project: a model whose key comes from the environment, an agent with a system prompt
    store: r.db
    reports: {dir: out, formats: [html]}
    models:
      toy: {model: toy, script: model.yaml, api_key: "${TOY_KEY}"}
    experiments:
      - id: agent
        dataset: {items: [{id: sum, input: "What is 2 + 2?", expected: "4"}]}
        runner: {uses: agent, with: {model: toy, instructions: "Answer with the number only.", max_steps: 2}}
        scorers: [exact_match]
"""
TOY_MODEL = "- when: {role: user}\n  reply: {content: '4'}\n"


def test_show_config_prints_the_configuration_as_stored(write_config, tmp_path):
    """The files as written (the system prompt in them, ${VAR} unexpanded), not their values."""
    config = write_config(CONFIGURED)
    (tmp_path / "model.yaml").write_text(TOY_MODEL, encoding="utf-8")
    assert run_cli("run", "-q", cwd=tmp_path, TOY_KEY="sk-toy-secret").returncode == 0
    for args in (["show", "--config"], ["show", "latest", "--config"]):
        shown = run_cli(*args, "--store", "r.db", cwd=tmp_path)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout == "# evals.yaml\n" + config.read_text(encoding="utf-8")
    assert 'instructions: "Answer with the number only."' in shown.stdout
    assert '"${TOY_KEY}"' in shown.stdout and "sk-toy-secret" not in shown.stdout


def test_compare_says_whether_the_configuration_changed_and_how(write_config, tmp_path):
    write_config(CONFIGURED)
    (tmp_path / "model.yaml").write_text(TOY_MODEL, encoding="utf-8")
    run_cli("run", "-q", cwd=tmp_path, TOY_KEY="k")
    run_cli("run", "-q", cwd=tmp_path, TOY_KEY="k")
    write_config(CONFIGURED.replace("Answer with the number only.", "Answer in words."))
    run_cli("run", "-q", cwd=tmp_path, TOY_KEY="k")
    first, second, third = [line.split()[0] for line in
                            run_cli("runs", "--store", "r.db", cwd=tmp_path).stdout.splitlines()[1:]][::-1]

    same = run_cli("compare", first, second, "--store", "r.db", cwd=tmp_path)
    assert same.stdout.splitlines()[2] == "same configuration"  # after the verdict line
    changed = run_cli("compare", second, third, "--store", "r.db", cwd=tmp_path)
    assert changed.returncode == 0, changed.stderr
    assert changed.stdout.splitlines()[2:10] == [
        "configuration changed:",
        "  --- base/evals.yaml",
        "  +++ candidate/evals.yaml",
        "  @@ -9,3 +9,3 @@",
        '       dataset: {items: [{id: sum, input: "What is 2 + 2?", expected: "4"}]}',
        '  -    runner: {uses: agent, with: {model: toy, instructions: "Answer with the number only.", max_steps: 2}}',
        '  +    runner: {uses: agent, with: {model: toy, instructions: "Answer in words.", max_steps: 2}}',
        "       scorers: [exact_match]",
    ]
    data = json.loads(run_cli("compare", second, third, "--store", "r.db", "--format", "json", cwd=tmp_path).stdout)
    assert data["config_diff"][:2] == ["--- base/evals.yaml", "+++ candidate/evals.yaml"]
    markdown = run_cli("compare", second, third, "--store", "r.db", "--format", "markdown", cwd=tmp_path).stdout
    assert "configuration changed:\n\n    --- base/evals.yaml\n" in markdown


def _two_stored_runs(write_config, tmp_path, failing_before: int, failing_after: int, items: int = 200):
    """Two runs of the same experiment into r.db, the second failing more of its first items."""
    config = """
        store: r.db
        reports: {dir: out, formats: []}
        experiments:
          - id: e
            dataset: {file: DATA}
            runner: echo
            scorers: [exact_match]
    """
    for name, failing in (("base.jsonl", failing_before), ("candidate.jsonl", failing_after)):
        rows = [{"id": f"i{n}", "input": f"answer {n}", "expected": "wrong" if n < failing else f"answer {n}"}
                for n in range(items)]
        (tmp_path / name).write_text("".join(json.dumps(row) + "\n" for row in rows))
        write_config(config.replace("DATA", name))
        assert run_cli("run", "-q", cwd=tmp_path).returncode == (1 if failing else 0)
    from yamleval.store.writer import Store

    store = Store(str(tmp_path / "r.db"))
    candidate, base = (run.run_id for run in store.runs(2))
    store.close()
    return base, candidate


def test_compare_finds_twenty_more_failures_in_two_hundred_items_a_significant_regression(write_config, tmp_path):
    base, candidate = _two_stored_runs(write_config, tmp_path, 10, 30)
    gate = run_cli("compare", base, candidate, "--store", "r.db", "--fail-on-regression", cwd=tmp_path)
    assert gate.returncode == 1
    assert gate.stderr == "regression gate failed: significant regression (alpha 0.05) in e, e › exact_match\n"
    lines = gate.stdout.splitlines()
    assert lines[:2] == [f"{base} (completed) → {candidate} (completed): 20 regressions",
                         "paired verdict (alpha 0.05): regressed: e, e › exact_match"]
    headline, verdict = lines[lines.index("e") + 1], lines[lines.index("e") + 3]  # heading, rates, mean, verdict
    assert headline == "pass rate 95.0% → 85.0% (-10.0 pp): worse, beyond chance over 200 items"
    assert verdict.startswith("regressed: 200 pairs, 20 pass → fail, 0 fail → pass, McNemar p = 1.9e-06; "
                              "mean score -0.100 (95% CI -0.1")
    data = json.loads(run_cli("compare", base, candidate, "--store", "r.db", "--format", "json",
                              cwd=tmp_path).stdout)
    assert (data["alpha"], data["margin"], data["significant_regressions"]) == (0.05, 0.0, ["e", "e › exact_match"])
    for change in (data["experiments"][0]["change"], data["experiments"][0]["scorer_changes"]["exact_match"]):
        assert (change["verdict"], change["pairs"], change["pass_to_fail"], change["fail_to_pass"]) == (
            "regressed", 200, 20, 0)
        assert change["p_value"] < 0.001 and change["mean_difference"] == pytest.approx(-0.1)
        assert change["ci_method"] == "bootstrap" and change["mean_difference_ci"][1] < 0
    markdown = run_cli("compare", base, candidate, "--store", "r.db", "--format", "markdown", cwd=tmp_path).stdout
    assert "\n**regressed**: 200 pairs, 20 pass → fail" in markdown
    # a margin above the 10-point drop, or a stricter alpha than its p-value, lets it through
    for options in (["--margin", "0.15"], ["--alpha", "0.000001"]):
        assert run_cli("compare", base, candidate, "--store", "r.db", "--fail-on-regression", *options,
                       cwd=tmp_path).returncode == 0


def test_compare_gates_one_item_worse_only_under_the_strict_flag(write_config, tmp_path):
    base, candidate = _two_stored_runs(write_config, tmp_path, 0, 1, items=50)
    significant = run_cli("compare", base, candidate, "--store", "r.db", "--fail-on-regression", cwd=tmp_path)
    assert significant.returncode == 0, significant.stderr
    assert "paired verdict (alpha 0.05): no significant change\n" in significant.stdout
    strict = run_cli("compare", base, candidate, "--store", "r.db", "--fail-on-any-regression", cwd=tmp_path)
    assert (strict.returncode, strict.stderr) == (1, "regression gate failed: 1 item got worse\n")


@pytest.mark.parametrize("option", [["--alpha", "0"], ["--alpha", "1"], ["--margin", "-0.1"]])
def test_compare_refuses_an_alpha_or_margin_out_of_range(write_config, tmp_path, option):
    base, candidate = _two_stored_runs(write_config, tmp_path, 0, 0, items=2)
    done = run_cli("compare", base, candidate, "--store", "r.db", *option, cwd=tmp_path)
    assert done.returncode == 2 and "Invalid value for" in done.stderr


def test_the_progress_of_a_jsonl_file_counts_its_rows(write_config, tmp_path):
    rows = [json.dumps({"id": f"r{n}", "input": "x", "expected": "x"}) for n in range(3)]
    (tmp_path / "rows.jsonl").write_text("\n".join(rows[:2]) + "\n\n   \n" + rows[2] + "\n", encoding="utf-8")
    write_config("""
        experiments:
          - id: file
            concurrency: 1
            dataset: {file: rows.jsonl}
            runner: echo
            scorers: [exact_match]
    """)
    done = run_cli("run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert re.search(r"^file: 1/3 items · ", done.stderr, re.M), done.stderr  # the blank lines are no rows
    limited = run_cli("run", "--limit", "2", cwd=tmp_path)
    assert re.search(r"^file: 1/2 items · ", limited.stderr, re.M), limited.stderr


def test_an_empty_list_of_report_formats_writes_no_report(write_config, tmp_path):
    write_config("""
        store: r.db
        reports: {dir: out, formats: []}
        experiments:
          - {id: e, dataset: {items: [{input: a, expected: a}]}, runner: echo, scorers: [exact_match]}
    """)
    done = run_cli("run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "report:" not in done.stdout and not (tmp_path / "out").exists()
    shown = run_cli("show", "--store", "r.db", cwd=tmp_path)
    assert shown.returncode == 0 and "e" in shown.stdout  # the run is stored all the same
