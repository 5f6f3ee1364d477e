"""The ``yamleval`` process keeps one malloc heap for all its threads.

glibc gives each thread that allocates under contention a heap ("arena") of its own. A run's
worker threads read items, the thread that records them frees them, and every arena keeps
the holes that leaves: over a million items the process grew by 30 MB where one heap stays
flat (W3 in ``bench/``). The command asks glibc for one heap before any thread starts,
unless ``MALLOC_ARENA_MAX`` says otherwise; a program that calls ``yamleval.api`` keeps its
own settings.
"""
from __future__ import annotations

import ctypes
import os
import sys

M_ARENA_MAX = -8  # mallopt's parameter number in glibc's malloc.h


def one_heap() -> bool:
    """Ask glibc for a single malloc arena; False where that is not glibc's to give."""
    if not sys.platform.startswith("linux") or "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # a C library without mallopt (musl)
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return mallopt(M_ARENA_MAX, 1) == 1
