"""``executor: {uses: ray}``: items run as tasks on a real local Ray cluster (2 CPUs on 127.0.0.1,
started for the session: ``servers.ray_cluster``), with the store, resume, reports and exit
codes of the driver, as with local threads."""
from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import ROOT, assert_golden, cli_env, run_cli
from servers.throttled import ThrottledServer
from cli.test_cli import _wait_for_items

GOLDEN = Path(__file__).parent.parent.parent / "data" / "ray"

# the project's own plugins, next to its config: the workers import them from Ray's copy of the folder
PLUGINS = '''
import os
import signal
import time


def slow(input, seconds=0.0):
    time.sleep(float(seconds))
    return input


def stuck_on(input, which="stuck"):
    if input == which:
        time.sleep(120)
    return input


def dies_on(input, marker=None):
    """Kill the worker's own process on the input "boom" (only the first time, given a marker file)."""
    if input == "boom" and (marker is None or not os.path.exists(marker)):
        if marker is not None:
            open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return input


def where(input):
    return {"cwd": os.getcwd(), "module": __file__, "pid": os.getpid()}


def with_token(input, token):
    return f"{input}:{token}"


def _wait_for(path, seconds=60):
    until = time.monotonic() + seconds
    while not os.path.exists(path) and time.monotonic() < until:
        time.sleep(0.05)


def ends_the_run_state(input, folder, network):
    """Take a turn at a rate limit of the run's network (the run's actor keeps it). "end" kills
    that actor once "c" is running and the driver knows both have started; "c" asks for its
    turn after that."""
    import ray
    from yamleval.calls.limits import RateLimit

    limiter = network.limiter(("test-endpoint",), RateLimit(6000), False)
    if input == "end":
        _wait_for(os.path.join(folder, "c-started"))
        time.sleep(1.5)  # the driver looks at the tasks' starts at least once a second
        ray.kill(network.actor, no_restart=True)
        open(os.path.join(folder, "killed"), "w").close()
        time.sleep(30)  # cancelled when the run stops
        return input
    if input == "c":
        open(os.path.join(folder, "c-started"), "w").close()
        _wait_for(os.path.join(folder, "killed"))
    limiter.release(limiter.acquire(), 200)
    return input
'''


def project(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ray_plugins.py").write_text(PLUGINS, encoding="utf-8")
    (folder / "evals.yaml").write_text(textwrap.dedent(text), encoding="utf-8")
    return folder


def results(folder: Path, reports: str = "reports") -> dict:
    return json.loads((folder / reports / "results.json").read_text(encoding="utf-8"))


def items_of(report: dict) -> dict:
    return {e["id"]: {i["id"]: i for i in e["items"]} for e in report["experiments"]}


def _same_result(experiment: dict) -> dict:
    """What an experiment's result says whatever executes it: items, statuses, scores, counts
    (of each of its variants, if it has some)."""
    if "variants" in experiment:
        return {"passed": experiment["passed"], "variants": [_same_result(v) for v in experiment["variants"]]}
    items = [(i["id"], i["status"], i.get("output"), i.get("error"),
              {sid: (s.get("score"), s.get("passed")) for sid, s in (i.get("scores") or {}).items()})
             for i in experiment.get("items", [])]
    summary = {k: v for k, v in experiment["summary"].items() if k in ("total", "completed", "passed", "failed", "errors",
                                                                         "skipped", "mean_score", "pass_rate", "scorers")}
    return {"passed": experiment["passed"], "items": items, "summary": summary,
            "criteria": [(c.get("type"), c.get("passed"), c.get("actual")) for c in experiment.get("criteria", [])]}


def test_the_demo_gives_the_same_results_on_ray_as_on_local_threads(tmp_path, ray_cluster):
    for name in ("evals.yaml", "plugins", "datasets"):
        source = ROOT / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, tmp_path / name)
    local = run_cli("run", "--report-dir", "local", "--store", "local.db", cwd=tmp_path)
    assert local.returncode == 0, local.stderr
    on_ray = run_cli("run", "--report-dir", "ray", "--store", "ray.db", "--ray-address", ray_cluster.address,
                     cwd=tmp_path, timeout=180, **ray_cluster.env)
    assert on_ray.returncode == 0, on_ray.stderr
    assert "Traceback" not in on_ray.stderr
    mine, theirs = results(tmp_path, "ray"), results(tmp_path, "local")
    assert [e["id"] for e in mine["experiments"]] == [e["id"] for e in theirs["experiments"]]
    assert len(mine["experiments"]) >= 5
    for a, b in zip(mine["experiments"], theirs["experiments"]):
        assert _same_result(a) == _same_result(b), a["id"]
    assert any(e.get("items") for e in mine["experiments"])


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_submitting_stores_what_finished_and_resume_finishes_the_rest(tmp_path, ray_cluster, signum):
    folder = project(tmp_path / "p", """
        experiments:
          - id: slow
            executor: {uses: ray, address: %s}
            concurrency: 2
            dataset: {items: [%s]}
            runner: {uses: ray_plugins:slow, with: {seconds: 0.5}}
        """ % (ray_cluster.address, ", ".join(f"{{id: s{i}, input: {i}}}" for i in range(16))))
    child = subprocess.Popen([sys.executable, "-m", "yamleval", "run", "--report-dir", "out"], cwd=folder,
                             env=cli_env(**ray_cluster.env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_items(folder / ".yamleval" / "results.db", 2, timeout=120)
        child.send_signal(signum)  # Ray's own SIGTERM handler must not end the run at once
        stdout, stderr = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 130, stderr
    assert "Traceback" not in stderr
    report = results(folder, "out")
    assert report["interrupted"] is True and report["status"] == "interrupted"
    finished = report["experiments"][0]["items"]
    assert 2 <= len(finished) < 16
    assert all(item["status"] == "passed" for item in finished), "running items were let finish"
    resumed = run_cli("run", "--resume", "--report-dir", "out", "-q", cwd=folder, timeout=120, **ray_cluster.env)
    assert resumed.returncode == 0, resumed.stderr
    again = results(folder, "out")
    assert again["run_id"] == report["run_id"]
    assert sorted(i["id"] for i in again["experiments"][0]["items"]) == sorted(f"s{i}" for i in range(16))


SECRET = "correct-horse-battery-staple-7731"


@pytest.fixture(scope="module")
def one_run(tmp_path_factory, ray_cluster):
    """One run of experiments that each show one behaviour (a Ray run costs seconds to start):
    where plugins import from, a timeout, a worker killed with and without retries, a secret,
    a rate limit; its results, the server's refusals and the run's stderr."""
    folder = tmp_path_factory.mktemp("one-run")
    marker = folder / "killed-once"
    items = ", ".join(f"{{id: q{i}, input: q{i}}}" for i in range(30))
    with ThrottledServer(rate=20, burst=4, delay=0.05) as server:
        (folder / "p" / "suites").mkdir(parents=True)
        (folder / "p" / "suites" / "subplug.py").write_text("def answer(input):\n    return input.upper()\n")
        (folder / "p" / "suites" / "sub.yaml").write_text(textwrap.dedent("""
            id: included
            dataset: {items: [{id: a, input: a, expected: A}]}
            runner: subplug:answer
            scorers: [exact_match]
            """))
        (folder / "p" / "last.yaml").write_text(textwrap.dedent("""
            id: unreachable
            retries: 0
            dataset: {items: [%s]}
            runner: {uses: http, with: {url: "http://127.0.0.1:%d/", body: {input: "{{ input }}"}}}
            """ % (items, _closed_port())))  # last: it stops the run
        project(folder / "p", """
            defaults: {executor: {uses: ray}, concurrency: 2}
            include: [suites/sub.yaml, last.yaml]  # included after the experiments below, in this order
            experiments:
              - id: where
                dataset: {items: [{id: a, input: a}, {id: b, input: b}]}
                runner: ray_plugins:where
              - id: hangs
                timeout: 3
                dataset: {items: [{id: a, input: a}, {id: stuck, input: stuck}, {id: b, input: b}, {id: c, input: c}]}
                runner: ray_plugins:stuck_on
              - id: dies
                retries: 0
                dataset: {items: [{id: a, input: a}, {id: boom, input: boom}, {id: b, input: b}, {id: c, input: c}]}
                runner: ray_plugins:dies_on
              - id: dies-once
                retries: 1
                dataset: {items: [{id: a, input: a}, {id: boom, input: boom}, {id: b, input: b}, {id: c, input: c}]}
                runner: {uses: ray_plugins:dies_on, with: {marker: %s}}
              - id: tokens
                dataset: {items: [{id: a, input: a}, {id: b, input: b}]}
                runner: {uses: ray_plugins:with_token, with: {token: "${RAY_TEST_TOKEN}"}}
              - id: limited
                concurrency: 4
                executor: {num_cpus: 0.5}  # merged with the defaults' executor
                dataset: {items: [%s]}
                runner:
                  uses: http
                  with: {url: "%s", body: {input: "{{ input }}"}, output: output,
                         rate_limit: {requests_per_minute: 600}}
            """ % (json.dumps(str(marker)), items, server.url))
        began = time.monotonic()
        done = run_cli("run", "-q", "--ray-address", ray_cluster.address, cwd=folder / "p", timeout=240,
                       RAY_TEST_TOKEN=SECRET, **ray_cluster.env)
        seconds = time.monotonic() - began
        refused = server.refused
    assert done.returncode == 3, done.stderr  # hangs and dies fail; the last could not be evaluated
    assert "Traceback" not in done.stderr
    return {"results": results(folder / "p"), "refused": refused, "seconds": seconds, "marker": marker}


def _closed_port() -> int:
    import socket

    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        return unused.getsockname()[1]  # closed again: nothing listens there


def test_an_endpoint_that_cannot_be_used_stops_the_run_as_on_local_threads(one_run):
    [experiment] = [e for e in one_run["results"]["experiments"] if e["id"] == "unreachable"]
    assert experiment["aborted"].startswith("could not evaluate: the http runner's ")
    assert "all failed (connection refused)" in experiment["aborted"]
    assert experiment["summary"]["completed"] < 30  # it stopped early


def test_the_workers_import_the_project_from_rays_copy_of_its_folder(one_run, ray_cluster):
    import os

    [included] = items_of(one_run["results"])["included"].values()  # its plugin is next to its own file
    assert included["status"] == "passed", included

    for item in items_of(one_run["results"])["where"].values():
        output = item["output"]
        assert output["pid"] != os.getpid()
        assert Path(output["cwd"]).is_relative_to(ray_cluster.folder), output  # Ray's working_dir copy
        assert Path(output["module"]).parent == Path(output["cwd"])


def test_an_item_past_its_timeout_is_cancelled_and_an_error_the_others_pass(one_run):
    assert one_run["seconds"] < 100  # not the stuck call's 120 s
    found = items_of(one_run["results"])["hangs"]
    assert found["stuck"]["status"] == "error"
    assert found["stuck"]["error"] == "timed out after 3s (on its Ray worker, whose task was cancelled)"
    assert [found[i]["status"] for i in "abc"] == ["passed"] * 3


def test_a_killed_worker_leaves_its_item_an_error_or_with_retries_runs_it_once_more(one_run):
    found = items_of(one_run["results"])
    assert [found["dies"][i]["status"] for i in "abc"] == ["passed"] * 3
    assert found["dies"]["boom"]["status"] == "error"
    assert found["dies"]["boom"]["error"].startswith("the Ray worker running it died (")
    assert found["dies"]["boom"]["error"].endswith("; with `retries` above 0 it runs once more")
    assert [found["dies-once"][i]["status"] for i in ("a", "boom", "b", "c")] == ["passed"] * 4
    assert one_run["marker"].exists()  # it was killed once


def test_no_secret_reaches_rays_logs_or_its_copy_of_the_folder(one_run, ray_cluster):
    outputs = [i["output"] for i in items_of(one_run["results"])["tokens"].values()]
    assert outputs == ["a:${RAY_TEST_TOKEN}", "b:${RAY_TEST_TOKEN}"]
    files = list(ray_cluster.files())
    assert any("working_dir_files" in str(path) for path in files)  # the folder was copied, and is searched
    assert any(path.suffix in (".log", ".out", ".err") for path in files)
    leaked = [str(path) for path in files if SECRET.encode() in path.read_bytes()]
    assert leaked == []


def test_a_rate_limit_holds_across_the_cluster_and_its_counts_reach_the_summary(one_run):
    assert one_run["refused"] == 0  # 10/s from four workers at once: one limiter, not one per worker
    [experiment] = [e for e in one_run["results"]["experiments"] if e["id"] == "limited"]
    assert experiment["summary"]["passed"] == 30
    assert experiment["summary"]["throttling"]["calls"] == 30


def test_when_the_runs_actor_dies_the_run_stops_keeping_what_finished_without_a_traceback(tmp_path, ray_cluster):
    items = ", ".join(f"{{id: {name}, input: {name}, expected: {name}}}" for name in ("a", "b", "end", "c", "d", "e"))
    folder = project(tmp_path / "p", """
        experiments:
          - id: lost
            concurrency: 2
            executor: {uses: ray}
            dataset: {items: [%s]}
            runner: {uses: ray_plugins:ends_the_run_state, with: {folder: %s}}
            scorers: [exact_match]
          - id: after
            dataset: {items: [{id: a, input: a}]}
            runner: echo
        """ % (items, json.dumps(str(tmp_path))))
    done = run_cli("run", "--ray-address", ray_cluster.address, cwd=folder, timeout=180, **ray_cluster.env)
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    message = ("could not evaluate: the run's state on the Ray cluster (its rate limits and the starts of its tasks)"
               " was lost: ")
    assert message in done.stderr
    assert ("The run stopped early: the items that finished are stored and reported; run it again to evaluate the"
            " rest\n") in done.stderr
    assert done.stderr.rstrip().endswith("it runs again the items that could not be evaluated")  # --resume, named
    [experiment] = results(folder)["experiments"]  # the run stopped there
    assert experiment["aborted"].startswith(message)
    stored = [(i["id"], i["status"]) for i in experiment["items"]]
    # what finished; "c" found the actor gone on its worker, and is not an error of its own
    assert (tmp_path / "killed").exists() and stored == [("a", "passed"), ("b", "passed")]
    assert experiment["summary"]["completed"] == 2 and not experiment["passed"]


def test_a_run_without_an_address_starts_ray_for_itself_and_ends_it(tmp_path):
    folder = project(tmp_path / "p", """
        experiments:
          - id: alone
            executor: {uses: ray, num_cpus: 1}
            dataset: {items: [{id: a, input: a}, {id: b, input: b}]}
            runner: ray_plugins:where
        """)
    import tempfile

    ray_tmp = tempfile.mkdtemp(prefix="rt-", dir="/tmp")  # short: Ray's sockets live under it
    try:
        done = run_cli("run", "-q", cwd=folder, timeout=180, RAY_ADDRESS="", RAY_TMPDIR=ray_tmp,
                       RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0")
        assert done.returncode == 0, done.stderr
        outputs = [i["output"] for i in items_of(results(folder))["alone"].values()]
        assert all(output["cwd"].startswith(ray_tmp) for output in outputs)  # its own instance's workers
        deadline = time.monotonic() + 30
        while _processes_of(ray_tmp) and time.monotonic() < deadline:  # its instance's processes end with it
            time.sleep(0.2)
        assert _processes_of(ray_tmp) == []
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)


def _processes_of(folder: str) -> list[str]:
    """The command lines of the processes on this machine that name ``folder`` (a Ray instance's)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if folder in command:
                found.append(command)
    return found


def test_without_ray_installed_naming_it_is_a_config_error_saying_how_to_install_it(tmp_path):
    folder = project(tmp_path / "p", """
        experiments:
          - id: needs-ray
            executor: {uses: ray}
            dataset: {items: [{id: a, input: a}]}
            runner: echo
        """)
    hide_ray = "import sys; sys.modules['ray'] = None; from yamleval.cli import main; sys.argv[0] = 'yamleval'; main()"
    outputs = []
    for args in (["validate"], ["run"]):
        done = subprocess.run([sys.executable, "-c", hide_ray, *args], cwd=folder, env=cli_env(), capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 2, done.stderr
        outputs.append(done.stderr)
    (folder / "evals.yaml").write_text("experiments:\n  - {id: plain, dataset: {items: [{input: a}]}, runner: echo}\n")
    done = subprocess.run([sys.executable, "-c", hide_ray, "run", "--executor", "ray"], cwd=folder, env=cli_env(),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    outputs.append(done.stderr)
    assert_golden(GOLDEN / "not_installed.txt", "\n".join(outputs))
    import sqlite3

    with sqlite3.connect(folder / ".yamleval" / "results.db") as db:
        assert db.execute("SELECT count(*) FROM runs").fetchone() == (0,)  # nothing ran


def test_a_secret_in_the_runtime_env_is_a_config_error(tmp_path):
    folder = project(tmp_path / "p", """
        defaults:
          executor: {uses: ray, runtime_env: {env_vars: {KEY: "${RAY_TEST_TOKEN}"}}}
        experiments:
          - id: leaky
            dataset: {items: [{id: a, input: a}]}
            runner: echo
        """)
    done = run_cli("validate", cwd=folder, RAY_TEST_TOKEN="hunter2-hunter2")
    assert done.returncode == 2
    assert "hunter2" not in done.stderr + done.stdout
    assert_golden(GOLDEN / "secret_in_runtime_env.txt", done.stderr)


def test_more_cpus_per_item_than_a_node_has_is_refused_at_the_start(tmp_path, ray_cluster):
    folder = project(tmp_path / "p", """
        experiments:
          - id: greedy
            executor: {uses: ray, num_cpus: 3}
            dataset: {items: [{id: a, input: a}]}
            runner: echo
        """)
    done = run_cli("run", "-q", "--ray-address", ray_cluster.address, cwd=folder, timeout=120, **ray_cluster.env)
    assert done.returncode == 2
    assert done.stderr == ("error: `executor.num_cpus` is 3, but no node of the Ray cluster has more than 2 CPUs:"
                           " an item would never start; ask for 2 or fewer\n")


def test_an_address_where_nothing_answers_is_one_line_and_exit_2_at_once(tmp_path):
    port = _closed_port()
    folder = project(tmp_path / "p", """
        experiments:
          - id: a
            dataset: {items: [{id: a, input: a}]}
            runner: echo
        """)
    began = time.monotonic()
    done = run_cli("run", "-q", "--ray-address", f"127.0.0.1:{port}", cwd=folder, timeout=60)
    assert time.monotonic() - began < 30  # not Ray's minutes of retrying
    assert done.returncode == 2
    assert done.stderr.replace(str(port), "PORT") == (
        "error: cannot join the Ray cluster at 127.0.0.1:PORT: ConnectionError: nothing answers at 127.0.0.1:PORT"
        " (Connection refused); start one with `ray start --head` and give its address (`executor.address`,"
        " `--ray-address`), or leave the address out to run on this machine\n")
