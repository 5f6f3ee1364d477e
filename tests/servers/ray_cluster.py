"""A real local Ray cluster for the tests, on 127.0.0.1 with 2 CPUs and a temporary folder of
its own (its session logs and the workers' copies of config folders are in it), with token
authentication on. A run joins it with ``env`` in its environment: the token's file, and the
setting that keeps Ray's servers and the drivers that join them on the loopback address.

A child process starts it (``ray.init``) and ends it (``ray.shutdown``) when the tests close
its standard input: the process that started the cluster is the one that stops it, so no
other Ray process of the machine is touched. Runs join it by its address.
"""
from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

START = """
import json, sys
import ray
ray.init(num_cpus=int(sys.argv[2]), include_dashboard=False, _temp_dir=sys.argv[1], configure_logging=False)
print(json.dumps({"address": ray.get_runtime_context().gcs_address}), flush=True)
sys.stdin.read()
ray.shutdown()
"""


@dataclass
class RayCluster:
    address: str
    folder: Path  # Ray's temporary folder: session logs, runtime resources
    env: dict  # what a driver's environment needs to join it

    def files(self):
        """Every file of the cluster's folder that can be read (logs, the workers' working dirs)."""
        for path in self.folder.rglob("*"):
            if path.is_file() and not path.is_symlink() and path.name != "token":
                yield path


@contextlib.contextmanager
def local_cluster(cpus: int = 2):
    """A cluster of ``cpus`` CPUs while inside (a ``RayCluster``), ended at the way out."""
    folder = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))  # short: Ray's sockets live under it
    token = folder / "token"
    token.write_text(secrets.token_hex(32))
    env = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # Ray's "local only" mode: 127.0.0.1, not the host's address
           "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}
    starter = subprocess.Popen([sys.executable, "-c", START, str(folder), str(cpus)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, env={**os.environ, **env})
    try:
        line = starter.stdout.readline()
        if not line:
            raise RuntimeError(f"the Ray cluster did not start (exit {starter.wait(60)})")
        yield RayCluster(json.loads(line)["address"], folder, env)
    finally:
        starter.stdin.close()
        try:
            starter.wait(60)
        except subprocess.TimeoutExpired:
            starter.kill()
            starter.wait()
        starter.stdout.close()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def ray_cluster():
    with local_cluster() as cluster:
        yield cluster
