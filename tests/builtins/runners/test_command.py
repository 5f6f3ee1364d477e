"""The ``command`` runner: real subprocesses, stdin modes, errors, timeouts, and runs from YAML."""
from __future__ import annotations

import datetime
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import yamleval
from conftest import run_cli
from yamleval.records.errors import ConfigError
from yamleval.builtins.runners.command import command
from yamleval.records.types import Item, RunnerResult

PY = sys.executable
ITEM = Item(id="q1", index=0, input="hello", expected="HELLO", context=["doc"], metadata={"lang": "en"})


def python(code: str) -> list[str]:
    return [PY, "-c", code]


def alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie waiting for its parent to reap it does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pid: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.02)
    return False


def test_stdin_json_carries_the_item():
    result = command(ITEM, argv=python("import sys; print(sys.stdin.read())"), parse_json=True)
    assert isinstance(result, RunnerResult)
    assert result.output == {"id": "q1", "input": "hello", "expected": "HELLO", "context": ["doc"],
                             "metadata": {"lang": "en"}}
    assert result.metadata == {"exit_code": 0}


def test_stdin_input_is_text_or_json():
    read = python("import sys; sys.stdout.write(sys.stdin.read())")
    assert command(ITEM, argv=read, stdin="input").output == "hello"
    structured = Item(id="s", index=0, input={"sku": "é-1", "qty": 2})
    assert command(structured, argv=read, stdin="input", parse_json=True).output == {"sku": "é-1", "qty": 2}


def test_an_input_json_cannot_hold_reaches_the_program_as_text():
    """A date from a dataset plugin, say: as its text, in YAMLEVAL_INPUT and on stdin alike."""
    dated = Item(id="d", index=0, input={"when": datetime.date(2024, 1, 2)})
    shown = python("import os, sys; print(os.environ['YAMLEVAL_INPUT'], sys.stdin.read())")
    assert command(dated, argv=shown, stdin="input").output == '{"when": "2024-01-02"} {"when": "2024-01-02"}'


def test_stdin_none_gives_the_program_nothing_to_read():
    assert command(ITEM, argv=python("import sys; print(repr(sys.stdin.read()))"), stdin="none").output == "''"


def test_only_one_trailing_newline_is_stripped_and_bad_bytes_are_replaced():
    assert command(ITEM, argv=python("print('a\\n')"), stdin="none").output == "a\n"
    out = command(ITEM, argv=python("import sys; sys.stdout.buffer.write(b'ok \\xff')"), stdin="none").output
    assert out == "ok \ufffd"


def test_shell_runs_through_bin_sh():
    result = command(ITEM, shell="read line; echo \"$line\" | tr a-z A-Z; echo note >&2", stdin="input")
    assert result.output == "HELLO"
    assert result.metadata == {"exit_code": 0, "stderr": "note"}


def test_env_and_cwd(tmp_path):
    result = command(ITEM, argv=python("import os; print(os.environ['GREETING'], os.getcwd())"),
                     env={"GREETING": "hi", "COUNT": 3}, cwd=str(tmp_path), stdin="none")
    assert result.output == f"hi {os.path.realpath(tmp_path)}"


def test_relative_paths_start_from_the_config_files_folder_wherever_yamleval_runs(tmp_path):
    project = tmp_path / "project"
    (project / "tools").mkdir(parents=True)
    (project / "tools" / "shout.py").write_text("import sys, json\nprint(json.load(sys.stdin)['input'].upper())\n")
    (project / "data").mkdir()
    (project / "data" / "note.txt").write_text("from the data folder")
    (project / "evals.yaml").write_text(textwrap.dedent(f"""
        reports: {{formats: [json]}}
        experiments:
          - id: shout
            dataset: {{items: [{{id: a, input: hi, expected: HI}}]}}
            runner: {{uses: command, with: {{argv: [{sys.executable!r}, tools/shout.py]}}}}
            scorers: [exact_match]
          - id: folder
            dataset: {{items: [{{id: b, input: x, expected: from the data folder}}]}}
            runner: {{uses: command, with: {{argv: [cat, note.txt], cwd: data, stdin: none}}}}
            scorers: [exact_match]
    """))
    done = run_cli("run", "project/evals.yaml", "--store", "r.db", "--report-dir", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert command(ITEM, argv=python("import os; print(os.getcwd())"), stdin="none", cwd=str(tmp_path),
                   config_dir="/somewhere/else").output == os.path.realpath(tmp_path), "an absolute cwd stays"


def test_invalid_json_output_shows_its_start():
    with pytest.raises(ValueError, match=r"command output is not JSON .*'not json at all"):
        command(ITEM, argv=python("print('not json at all' * 30)"), parse_json=True, stdin="none")


def test_non_zero_exit_reports_the_code_and_the_end_of_stderr():
    code = "import sys\nfor i in range(50): print('line', i, file=sys.stderr)\nsys.exit(3)"
    with pytest.raises(RuntimeError) as caught:
        command(ITEM, argv=python(code), stdin="none")
    message = str(caught.value)
    assert message.startswith("command exited with code 3; stderr:\nline 30\n")
    assert message.endswith("line 49") and "line 29" not in message


def test_a_long_stderr_is_cut_to_its_last_2000_characters():
    with pytest.raises(RuntimeError) as caught:
        command(ITEM, argv=python("import sys; sys.stderr.write('x' * 5000 + 'END'); sys.exit(1)"), stdin="none")
    tail = str(caught.value).split("stderr:\n", 1)[1]
    assert len(tail) == 2000 and tail.endswith("END")


def test_a_signal_is_named():
    with pytest.raises(RuntimeError, match=r"killed by SIGKILL \(exit code -9\); stderr was empty"):
        command(ITEM, shell="kill -9 $$", stdin="none")


def test_timeout_kills_the_whole_process_group(tmp_path):
    pidfile = tmp_path / "child.pid"
    started = time.monotonic()
    with pytest.raises(TimeoutError, match=r"^command timed out after 0.5s$"):
        command(ITEM, shell=f"sleep 30 & echo $! > {pidfile}; wait", timeout=0.5, stdin="none")
    assert time.monotonic() - started < 5
    child = int(pidfile.read_text())
    assert wait_gone(child), f"the shell's child {child} outlived the timeout"


def test_background_processes_end_with_the_item(tmp_path):
    pidfile = tmp_path / "child.pid"
    result = command(ITEM, shell=f"sleep 30 >/dev/null 2>&1 & echo $! > {pidfile}; echo done", stdin="none")
    assert result.output == "done"
    assert wait_gone(int(pidfile.read_text()))


def test_a_child_holding_stdout_does_not_hold_the_answer_and_is_killed(tmp_path):
    pidfile = tmp_path / "child.pid"
    started = time.monotonic()
    result = command(ITEM, shell=f"sleep 444 & echo $! > {pidfile}; echo hi", timeout=5, stdin="none")
    assert time.monotonic() - started < 5
    assert result.output == "hi"
    assert result.metadata == {"exit_code": 0, "killed_leftovers": 1}
    assert wait_gone(int(pidfile.read_text()))


DAEMON = """
import os, sys, time
child = os.fork()
if child == 0:
    os.setsid()
    if os.fork() == 0:  # a daemon: another session, its parent gone, stdout still open
        with open(sys.argv[1] + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(sys.argv[1] + ".tmp", sys.argv[1])
        time.sleep(444)
    os._exit(0)
os.waitpid(child, 0)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
print("hi")
"""


def test_a_daemon_in_a_session_of_its_own_is_killed_too(tmp_path):
    pidfile = tmp_path / "daemon.pid"
    started = time.monotonic()
    result = command(ITEM, argv=[PY, "-c", DAEMON, str(pidfile)], timeout=5, stdin="none")
    assert time.monotonic() - started < 5
    assert result.output == "hi"
    assert result.metadata == {"exit_code": 0, "killed_leftovers": 1}
    assert wait_gone(int(pidfile.read_text()))


def test_the_experiment_timeout_kills_the_programs_when_it_gives_up_on_them(write_config, tmp_path):
    result = run_yaml(write_config, f"""
        experiments:
          - id: slow
            timeout: 1
            concurrency: 2
            dataset: {{items: [{{id: a, input: x}}, {{id: b, input: y}}]}}
            runner:
              uses: command
              with:
                shell: 'echo $$ > "$DIR/$YAMLEVAL_ITEM_ID.pid"; exec sleep 300'
                env: {{DIR: {json.dumps(str(tmp_path))}}}
    """)
    assert [r.status for r in result.items] == ["error", "error"]
    for name in ("a", "b"):
        pid = int((tmp_path / f"{name}.pid").read_text())
        assert wait_gone(pid), f"the program of item {name} outlived the run"


EXITING = """
import os, signal, sys, threading, time
from yamleval.builtins.runners.command import command
from yamleval.records.types import Item
pidfile = sys.argv[1]
threading.Thread(target=command, args=(Item(id="a", index=0, input="x"),), daemon=True,
                 kwargs={"shell": f"echo $$ > {pidfile}.tmp; mv {pidfile}.tmp {pidfile}; exec sleep 300",
                         "stdin": "none"}).start()
while not os.path.exists(pidfile):
    time.sleep(0.01)
print("ready", flush=True)
if sys.argv[2] == "interrupt":
    threading.Event().wait()
"""


@pytest.mark.parametrize("how", ["exit", "interrupt"])
def test_programs_still_running_when_yamleval_exits_are_killed(tmp_path, how):
    pidfile = tmp_path / "program.pid"
    process = subprocess.Popen([PY, "-c", EXITING, str(pidfile), how], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    assert process.stdout.readline() == "ready\n"
    if how == "interrupt":
        process.send_signal(signal.SIGINT)  # Ctrl-C
    process.wait(timeout=30)
    process.stdout.close()
    assert wait_gone(int(pidfile.read_text()))


def test_stdout_past_max_output_mb_is_cut_and_the_program_runs_to_its_end():
    code = "import sys; sys.stdout.write('x' * 30_000_000); sys.stdout.flush(); sys.stderr.write('done')"
    result = command(ITEM, argv=python(code), stdin="none", max_output_mb=1)
    assert result.output == "x" * 1_000_000 + "\n[output cut at 1 MB]"
    assert result.metadata == {"exit_code": 0, "stderr": "done"}
    with pytest.raises(ValueError, match=r"longer than `max_output_mb` \(1\) allows, so it cannot be parsed"):
        command(ITEM, argv=python(code), stdin="none", max_output_mb=1, parse_json=True)


COUNT_INPUT = 'printf %s "$YAMLEVAL_INPUT" | wc -c'
ENV_LIMIT = 131_072 - len("YAMLEVAL_INPUT=") - 1  # Linux's MAX_ARG_STRLEN holds the name, the value, a NUL


def test_an_input_as_large_as_an_environment_variable_holds_reaches_yamleval_input():
    result = command(Item(id="big", index=0, input="x" * ENV_LIMIT), shell=COUNT_INPUT, stdin="none")
    assert result.output.strip() == "131056"


@pytest.mark.parametrize("text, problem", [
    # two bytes a character: the limit is in bytes
    ("é" * (ENV_LIMIT // 2) + "x", "is 131,057 bytes, more than the 131,056 of an environment variable"),
    ("a\0b", "holds a NUL character"),
])
@pytest.mark.parametrize("stdin", ["none", "json"])
def test_an_input_no_environment_variable_holds_is_an_error_saying_to_use_stdin(text, problem, stdin):
    with pytest.raises(ValueError) as caught:
        command(Item(id="big", index=0, input=text), shell=COUNT_INPUT, stdin=stdin)
    assert str(caught.value) == (f"the input {problem}, so it cannot be passed in YAMLEVAL_INPUT; read it on "
                                 "stdin instead (`stdin: input`, or `stdin: json` for the whole item)")


def test_a_large_input_on_stdin_needs_no_variable():
    code = "import os, sys; print(len(sys.stdin.read()), sorted(k for k in os.environ if k[:9] == 'YAMLEVAL_'))"
    result = command(Item(id="big", index=0, input="a\0" * 500_000), argv=python(code), stdin="input")
    assert result.output == "1000000 ['YAMLEVAL_ITEM_ID', 'YAMLEVAL_PROCESS']"


def test_arguments_too_large_for_the_system_are_named():
    with pytest.raises(OSError, match=r"^cannot run 'true': its arguments and environment are larger than"):
        command(ITEM, argv=["true", "x" * 200_000], stdin="none")


@pytest.mark.parametrize("options, message", [
    ({}, "exactly one of `argv`"),
    ({"argv": ["true"], "shell": "true"}, "exactly one of `argv`"),
    ({"argv": "echo hi"}, "`argv` must be a non-empty list"),
    ({"argv": []}, "`argv` must be a non-empty list"),
    ({"argv": ["echo", {"a": 1}]}, "every entry of `argv`"),
    ({"shell": "  "}, "`shell` must be a non-empty string"),
    ({"argv": ["true"], "stdin": "text"}, "stdin must be one of json, input, none, not 'text'"),
])
def test_bad_options_are_value_errors(options, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        command(ITEM, **options)


def test_a_missing_program_is_named():
    with pytest.raises(FileNotFoundError, match="cannot run 'no-such-program-here'"):
        command(ITEM, argv=["no-such-program-here"])


# --- end to end, from YAML through the engine ----------------------------------------------------

def run_yaml(write_config, text: str):
    [experiment] = yamleval.load_experiments(write_config(text))
    return yamleval.run_experiment(experiment)


def test_argv_templates_are_rendered_per_item_and_one_failure_stays_on_its_item(write_config):
    code = "import sys\nif sys.argv[1] == 'fail': sys.exit('no good')\nprint(sys.argv[1].upper())"
    result = run_yaml(write_config, f"""
        experiments:
          - id: shout
            concurrency: 2
            dataset:
              items:
                - {{id: a, input: hello, expected: HELLO}}
                - {{id: b, input: fail, expected: FAIL}}
                - {{id: c, input: two words, expected: TWO WORDS}}
            runner:
              uses: yamleval.builtins.runners.command:command
              with:
                argv: [{json.dumps(PY)}, -c, {json.dumps(code)}, "{{{{ input }}}}"]
                stdin: none
            scorers: [exact_match]
    """)
    items = {r.item.id: r for r in result.items}
    assert items["a"].status == "passed" and items["a"].output == "HELLO"
    assert items["c"].status == "passed" and items["c"].output == "TWO WORDS"
    assert items["a"].metadata == {"exit_code": 0}
    assert items["b"].status == "error"
    assert items["b"].error == "runner raised RuntimeError: command exited with code 1; stderr:\nno good"
    assert result.summary.passed == 2 and result.summary.errored == 1 and not result.passed


def test_shell_with_json_stdin_and_a_timed_out_item(write_config):
    code = ("import json, sys, time\nitem = json.load(sys.stdin)\n"
            "if item['input'] == 'slow': time.sleep(30)\n"
            "print(json.dumps({'id': item['id'], 'n': len(item['input'])}))")
    shell = f'exec "{PY}" -c "$SNIPPET"'  # the program comes through the environment: no quoting
    result = run_yaml(write_config, f"""
        experiments:
          - id: lengths
            timeout: 20
            dataset:
              items:
                - {{id: one, input: abc, expected: {{id: one, n: 3}}}}
                - {{id: slow, input: slow, expected: {{id: slow, n: 4}}}}
            runner:
              uses: yamleval.builtins.runners.command:command
              with:
                shell: {json.dumps(shell)}
                env: {{SNIPPET: {json.dumps(code)}}}
                parse_json: true
                timeout: 1
            scorers: [json_diff]
    """)
    items = {r.item.id: r for r in result.items}
    assert items["one"].status == "passed" and items["one"].output == {"id": "one", "n": 3}
    assert items["slow"].status == "error"
    assert items["slow"].error == "runner raised TimeoutError: command timed out after 1s"


def test_a_misspelled_option_fails_before_anything_runs(write_config):
    path = write_config("""
        experiments:
          - id: typo
            dataset: {items: [{input: a}]}
            runner:
              uses: yamleval.builtins.runners.command:command
              with: {argv: [echo], parse_jsn: true}
    """)
    [experiment] = yamleval.load_experiments(path)
    with pytest.raises(ConfigError, match="did you mean 'parse_json'"):
        yamleval.run_experiment(experiment)


def test_the_demo_program_shouts(tmp_path):
    root = Path(__file__).resolve().parents[3]
    result = command(ITEM, argv=[PY, str(root / "plugins" / "shout.py")])
    assert result.output == "HELLO!"


def test_shell_lines_read_the_item_from_the_environment_not_the_command_line():
    from yamleval.builtins.runners.command import command
    from yamleval.records.types import Item

    hostile = 'x"; echo INJECTED; echo "'
    result = command(Item(id="a-1", index=0, input=hostile), shell='printf "%s|%s" "$YAMLEVAL_ITEM_ID" "$YAMLEVAL_INPUT"',
                     stdin="none")
    assert result.output == f"a-1|{hostile}"
