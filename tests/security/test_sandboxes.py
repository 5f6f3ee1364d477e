"""The agent tools' sandboxes against code and paths that try to get out.

tests/tools covers the ordinary limits (timeouts, memory, output caps, ``..`` and absolute
paths, a symlink to /etc); these are the escapes a hostile model would try next.
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from yamleval.builtins.tools import ToolError, build_tools

pytestmark = pytest.mark.security


def tool(entry, sandbox):
    (built,) = build_tools([entry], str(sandbox))
    return built


def python(sandbox, code, **options) -> str:
    return tool({"uses": "python_exec", "with": options}, sandbox).call({"code": code})


def _namespaces_available() -> bool:
    """Whether this kernel lets this user make a user namespace (some distributions forbid it)."""
    done = subprocess.run(["unshare", "-U", "-p", "-f", "--mount-proc", "true"], capture_output=True)
    return done.returncode == 0


needs_namespaces = pytest.mark.skipif(not _namespaces_available(),
                                      reason="user namespaces are not allowed here")


# ---- python_exec ------------------------------------------------------------------------------

@needs_namespaces
def test_a_process_that_escapes_into_a_new_session_still_ends_with_the_call(tmp_path):
    """Double fork and setsid leave the process group yamleval kills; they must not outlive the call."""
    code = ("import os, time\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    if os.fork() == 0:\n"
            "        time.sleep(0.8)\n"
            "        open('escaped.txt', 'w').write('still running')\n"
            "    os._exit(0)\n"
            "print('parent done')")
    assert "parent done" in python(tmp_path, code)
    time.sleep(1.5)
    assert not (tmp_path / "escaped.txt").exists()


@needs_namespaces
def test_the_code_cannot_read_another_process_environment(tmp_path):
    """The code's environment is empty; /proc must not hand it yamleval's (or any process's)."""
    marker = "yamleval-sandbox-marker-4f1d"
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                              env={**os.environ, "SANDBOX_TEST_SECRET": marker})
    try:
        code = ("import os\n"
                "found = []\n"
                "for pid in os.listdir('/proc'):\n"
                "    try:\n"
                "        if b'" + marker + "' in open(f'/proc/{pid}/environ', 'rb').read(): found.append(pid)\n"
                "    except OSError: pass\n"
                "print('found', found, 'ppid', os.getppid())")
        # the scan itself works: from here, outside the sandbox, it finds the holder
        deadline = time.monotonic() + 5
        while marker.encode() not in Path(f"/proc/{holder.pid}/environ").read_bytes():
            assert time.monotonic() < deadline, "the holder never started"
            time.sleep(0.02)
        result = python(tmp_path, code)
    finally:
        holder.kill()
        holder.wait()
    assert "found [] ppid 0" in result, result


def test_a_file_cannot_grow_past_the_size_limit(tmp_path):
    """Python ignores SIGXFSZ, so the write fails with EFBIG instead of the process dying."""
    result = python(tmp_path, "open('big.bin', 'wb').write(b'x' * 3 * 1024 * 1024)\nprint('wrote')",
                    max_file_mb=1)
    assert "File too large" in result and "wrote" not in result
    assert (tmp_path / "big.bin").stat().st_size <= 1024 * 1024


def test_stderr_is_capped_like_stdout(tmp_path):
    result = python(tmp_path, "import sys\nsys.stderr.write('e' * 500_000)", max_output=1000)
    err = result.split("--- stderr ---\n")[1]
    assert len(err) < 1200 and "[output truncated: 500000 bytes in all]" in err


def test_many_children_all_end_with_the_call(tmp_path):
    code = ("import os, time\n"
            "for n in range(20):\n"
            "    if os.fork() == 0:\n"
            "        time.sleep(0.8)\n"
            "        open(f'child-{n}.txt', 'w').write('alive')\n"
            "        os._exit(0)\n"
            "print('forked')")
    assert "forked" in python(tmp_path, code)
    time.sleep(1.5)
    assert list(tmp_path.glob("child-*.txt")) == []


# ---- file_ops ---------------------------------------------------------------------------------

@pytest.fixture
def files(tmp_path):
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    (tmp_path / "outside.txt").write_text("outside")
    return tool("file_ops", sandbox), sandbox, tmp_path / "outside.txt"


def test_a_nul_in_a_path_is_refused(files):
    ops, _, _ = files
    for action in ("read", "write", "list", "delete"):
        with pytest.raises(ToolError, match="is refused"):
            ops.call({"action": action, "path": "a\x00/../../outside.txt", "content": "x"})


def test_a_hard_link_to_a_file_outside_is_neither_read_nor_written(files):
    """realpath cannot see a hard link: code in the sandbox could make one to any file it can reach."""
    ops, sandbox, outside = files
    os.link(outside, sandbox / "linked.txt")
    for action in ("read", "write"):
        with pytest.raises(ToolError, match="is refused"):
            ops.call({"action": action, "path": "linked.txt", "content": "overwritten"})
    assert outside.read_text() == "outside"


def test_a_dangling_symlink_out_of_the_sandbox_cannot_create_a_file_there(files):
    ops, sandbox, outside = files
    os.symlink(outside.parent / "created.txt", sandbox / "new.txt")
    with pytest.raises(ToolError, match="is refused"):
        ops.call({"action": "write", "path": "new.txt", "content": "planted"})
    assert not (outside.parent / "created.txt").exists()


def test_a_symlinked_folder_out_of_the_sandbox_is_refused(files):
    ops, sandbox, outside = files
    os.symlink(outside.parent, sandbox / "up")
    for action in ("read", "list", "delete", "write"):
        with pytest.raises(ToolError, match="is refused"):
            ops.call({"action": action, "path": "up/outside.txt", "content": "x"})
    assert outside.read_text() == "outside"


# ---- web_fetch --------------------------------------------------------------------------------

class _Redirector(BaseHTTPRequestHandler):
    """/to?<url> redirects to <url>; /page is a page."""

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.startswith("/to?"):
            self.send_response(302)
            self.send_header("Location", self.path[4:])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = b"<html><title>ok</title><p>fetched</p></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Redirector)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


REFUSED = ["file:///etc/passwd", "FILE:///etc/passwd", "ftp://127.0.0.1/x", "gopher://127.0.0.1:70/_x",
           "data:text/html,<script>alert(1)</script>", "javascript:alert(1)", "//127.0.0.1/x",
           "/etc/passwd", "dict://127.0.0.1:11211/stat", "http:///etc/passwd"]


@pytest.mark.parametrize("url", REFUSED)
def test_web_fetch_refuses_schemes_other_than_http(tmp_path, url):
    with pytest.raises(ToolError, match="only http and https"):
        tool("web_fetch", tmp_path).call({"url": url})


@pytest.mark.parametrize("target", ["file:///etc/passwd", "ftp://127.0.0.1/x", "gopher://127.0.0.1/x",
                                    "data:text/plain,hi", "javascript:alert(1)"])
def test_a_redirect_to_another_scheme_is_refused(server, tmp_path, target):
    with pytest.raises(ToolError, match="only http and https"):
        tool("web_fetch", tmp_path).call({"url": f"{server}/to?{target}"})


def test_a_redirect_out_of_the_allowed_domains_is_refused(server, tmp_path):
    fetch = tool({"uses": "web_fetch", "with": {"allow_domains": ["127.0.0.1"]}}, tmp_path)
    port = server.rsplit(":", 1)[1]
    assert "fetched" in fetch.call({"url": f"{server}/to?/page"})
    for target in (f"http://localhost:{port}/page", f"http://127.0.0.1.evil.test:{port}/page",
                   f"http://evil.test@localhost:{port}/page"):
        with pytest.raises(ToolError, match="is not in allow_domains"):
            fetch.call({"url": f"{server}/to?{target}"})
