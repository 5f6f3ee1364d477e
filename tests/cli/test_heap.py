"""The ``yamleval`` process asks glibc for one malloc heap: its threads' allocations then leave
no holes in heaps of their own (a million-item run stays flat in memory)."""
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")

HEAPS = r'''
import ctypes, re, sys, tempfile, threading
from yamleval.cli.heap import one_heap
asked = one_heap() if sys.argv[1] == "one" else None
def work():
    kept = [bytes(5000) for _ in range(200)]
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
libc = ctypes.CDLL(None)
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = (ctypes.c_char_p, ctypes.c_char_p)
libc.fclose.argtypes = (ctypes.c_void_p,)
libc.malloc_info.argtypes = (ctypes.c_int, ctypes.c_void_p)
with tempfile.NamedTemporaryFile(suffix=".xml") as out:
    handle = libc.fopen(out.name.encode(), b"w")
    libc.malloc_info(0, handle)
    libc.fclose(handle)
    print(asked, len(re.findall(r"<heap nr=", open(out.name).read())))
'''


def heaps(mode: str, **env) -> tuple[str, int]:
    environment = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"} | env
    done = subprocess.run([sys.executable, "-c", HEAPS, mode], capture_output=True, text=True, env=environment,
                          check=True)
    asked, count = done.stdout.split()
    return asked, int(count)


def test_the_command_keeps_one_heap_where_threads_would_make_their_own():
    assert heaps("default")[1] > 1  # what a Python process does without it
    assert heaps("one") == ("True", 1)


def test_a_heap_count_the_environment_sets_is_left_alone():
    asked, count = heaps("one", MALLOC_ARENA_MAX="4")
    assert asked == "False" and count > 1
