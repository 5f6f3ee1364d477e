import ast
import os
import time

import pytest

from yamleval.builtins.tools import ToolError, build_tools


def run(sandbox, code, **options):
    (tool,) = build_tools([{"uses": "python_exec", "with": options}], str(sandbox))
    return tool.call({"code": code})


def test_prints_output_and_exit_code(tmp_path):
    result = run(tmp_path, "import sys\nprint(6 * 7)\nprint('oops', file=sys.stderr)\nsys.exit(3)")
    assert result.startswith("exit code 3\n")
    assert "--- stdout ---\n42\n" in result
    assert "--- stderr ---\noops" in result


def test_infinite_loop_is_killed_at_its_timeout(tmp_path):
    start = time.monotonic()
    with pytest.raises(ToolError, match="python_exec timed out after 1 s"):
        run(tmp_path, "while True: pass", timeout=1)
    assert time.monotonic() - start < 5


def test_background_children_are_killed_with_the_group(tmp_path):
    """A child left running would write its file a moment after the call returned."""
    code = ("import subprocess, sys\n"
            "subprocess.Popen([sys.executable, '-c', "
            "'import time; time.sleep(0.8); open(\"late.txt\", \"w\").write(\"alive\")'])\n"
            "print('started')")
    result = run(tmp_path, code)
    assert "started" in result
    time.sleep(1.5)
    assert not (tmp_path / "late.txt").exists()


def test_allocating_4_gb_fails_within_the_memory_limit(tmp_path):
    result = run(tmp_path, "b = bytearray(4 * 1024**3)\nprint('allocated')")
    assert result.startswith("exit code 1\n")
    assert "MemoryError" in result
    assert "allocated" not in result


def test_environment_is_empty_of_the_parents_variables(tmp_path, monkeypatch):
    monkeypatch.setenv("YAMLEVAL_SECRET_TEST", "x")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    result = run(tmp_path, "import os\nprint(dict(os.environ))")
    child = ast.literal_eval(result.split("--- stdout ---\n")[1].split("\n--- stderr")[0].strip())
    assert "YAMLEVAL_SECRET_TEST" not in child and "OPENAI_API_KEY" not in child
    assert set(child) <= {"PATH", "HOME", "LC_ALL", "LC_CTYPE", "YAMLEVAL_PROCESS"}  # the last: its tag, to end it


def test_working_directory_is_the_sandbox(tmp_path):
    (tmp_path / "given.txt").write_text("from the item")
    result = run(tmp_path, "import os\nprint(os.getcwd())\nprint(open('given.txt').read())\n"
                           "open('made.txt', 'w').write('by the code')")
    assert f"\n{os.path.realpath(tmp_path)}\nfrom the item\n" in result
    assert (tmp_path / "made.txt").read_text() == "by the code"


def test_output_is_capped(tmp_path):
    result = run(tmp_path, "print('x' * 100_000)", max_output=1000)
    stdout = result.split("--- stdout ---\n")[1].split("\n--- stderr")[0]
    assert stdout.startswith("x" * 1000 + "\n[output truncated: 100001 bytes in all]")


def test_syntax_error_is_reported_as_a_result(tmp_path):
    result = run(tmp_path, "print(")
    assert result.startswith("exit code 1\n") and "SyntaxError" in result
