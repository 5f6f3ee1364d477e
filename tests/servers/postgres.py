"""A real PostgreSQL server on 127.0.0.1 for the store's tests: Debian's ``postgresql`` package,
``initdb`` in a temporary folder, password logins only (scram-sha-256), stopped by its owner.

PostgreSQL refuses to run as root: as root, every program of the server runs as the
``postgres`` user the package makes. Without the package these tests fail when ``CI`` is set
and skip otherwise.
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid

import pytest

USER = "yamleval"


def _bin() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return os.path.dirname(found[-1]) if found else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PostgresServer:
    """One server; ``url(database)`` is a connection URL with the password in it."""

    def __init__(self):
        self.bin = _bin()
        self.folder = tempfile.mkdtemp(prefix="yamleval-pg-")
        self.password = "pw-" + uuid.uuid4().hex
        self.port = _free_port()
        self.user = None if os.geteuid() else "postgres"  # who runs the server's programs
        self.process_log = os.path.join(self.folder, "server.log")

    def _run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([os.path.join(self.bin, args[0]), *args[1:]], capture_output=True, text=True,
                              timeout=120, user=self.user, check=False)

    def start(self) -> "PostgresServer":
        if self.user:
            owner = pwd.getpwnam(self.user)
            os.chown(self.folder, owner.pw_uid, owner.pw_gid)
        secret = os.path.join(self.folder, "password")
        with open(secret, "w") as out:
            out.write(self.password + "\n")
        if self.user:
            os.chown(secret, owner.pw_uid, owner.pw_gid)
        data = os.path.join(self.folder, "data")
        done = self._run("initdb", "-D", data, "-U", USER, "--auth=scram-sha-256", f"--pwfile={secret}",
                         "-E", "UTF8", "--locale=C")
        assert done.returncode == 0, done.stderr
        options = (f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.folder} -c fsync=off"
                   " -c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        done = self._run("pg_ctl", "-D", data, "-l", self.process_log, "-o", options, "-w", "-t", "60", "start")
        assert done.returncode == 0, done.stderr + self.log()
        return self

    def log(self) -> str:
        try:
            with open(self.process_log, encoding="utf-8", errors="replace") as handle:
                return handle.read()
        except OSError:
            return ""

    def url(self, database: str = "postgres", password: str | None = None) -> str:
        return f"postgresql://{USER}:{password or self.password}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh, empty database's URL."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url(), autocommit=True) as db:
            db.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        self._run("pg_ctl", "-D", os.path.join(self.folder, "data"), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server():
    """A PostgreSQL server for the whole test session, stopped at its end."""
    problem = None
    try:
        import psycopg  # noqa: F401
    except ImportError:
        problem = "psycopg is missing: pip install '.[test]'"
    if problem is None and _bin() is None:
        problem = "PostgreSQL is missing: apt-get install postgresql"
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL tests cannot run: {problem}", pytrace=False)
        pytest.skip(problem)
    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.stop()


class StoreAt:
    """Where a test keeps its results databases: SQLite files in its folder, or databases of the
    test PostgreSQL server (one per name). ``url(name)`` is what ``store:`` and ``--store`` take."""

    def __init__(self, kind: str, folder, server: PostgresServer | None = None):
        self.kind, self.folder, self.server = kind, folder, server
        self._databases: dict[str, str] = {}

    @property
    def postgres(self) -> bool:
        return self.kind == "postgresql"

    def url(self, name: str = "r.db") -> str:
        if not self.postgres:
            return name
        if name not in self._databases:
            self._databases[name] = self.server.new_database()
        return self._databases[name]

    def absolute(self, name: str = "r.db") -> str:
        """For ``Store(...)`` opened by the test itself, from any folder."""
        return self.url(name) if self.postgres else str(self.folder / name)

    def config(self, text: str) -> str:
        """A config whose ``store: NAME`` is this backend's database of that name."""
        import re

        return re.sub(r"store: (\S+)", lambda m: f"store: {self.url(m[1])}", text)

    def query(self, name: str, statement: str, parameters: tuple = ()) -> list[tuple]:
        """Rows of a statement run on the database by another program (``?`` placeholders)."""
        if self.postgres:
            import psycopg

            with psycopg.connect(self.url(name), autocommit=True) as db:
                cursor = db.execute(statement.replace("?", "%s"), parameters)
                return cursor.fetchall() if cursor.description else []
        import sqlite3

        with sqlite3.connect(self.folder / name) as db:
            return db.execute(statement, parameters).fetchall()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_at(request, tmp_path):
    """Each test that takes it runs twice: on SQLite files, and on the test PostgreSQL server."""
    if request.param == "sqlite":
        return StoreAt("sqlite", tmp_path)
    return StoreAt("postgresql", tmp_path, request.getfixturevalue("postgres_server"))
