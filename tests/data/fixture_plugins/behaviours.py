"""Runners and scorers that misbehave on purpose, item by item."""
from __future__ import annotations

import asyncio
import hashlib
import os
import signal
import sys
import threading
import time

import numpy

from yamleval import RunnerResult, Score


def per_item(input, item):
    """Behave as the item's input says: ``raise``, ``hang``, ``junk``, ``exit``, ``slow``, else echo."""
    if input == "raise":
        raise RuntimeError("boom on purpose")
    if input == "hang":
        time.sleep(30)
        return "too late"
    if input == "junk":
        return object()
    if input == "nan":
        return float("nan")
    if input == "exit":
        sys.exit(3)
    if input == "slow":
        time.sleep(0.3)
    return item.expected if item.expected is not None else input


def ends_the_run(input):
    """Echo, except that input ``interrupt`` presses Ctrl-C on the run and ``crash`` kills its process."""
    if input == "interrupt":
        os.kill(os.getpid(), signal.SIGINT)
    elif input == "crash":
        os._exit(9)
    return input


_NEVER = threading.Event()


def forever(input):
    """Never returns (until the test process ends)."""
    _NEVER.wait()


def held(input, item, log: str, release: str):
    """Note the item in ``log``, then wait (up to a minute) until the file ``release`` exists."""
    import os

    with open(log, "a") as handle:
        handle.write(f"{item.id}\n")
    deadline = time.monotonic() + 60
    while not os.path.exists(release) and time.monotonic() < deadline:
        time.sleep(0.01)
    return input


def with_usage(input):
    return RunnerResult(output=str(input), metadata={"seen": True},
                        usage={"prompt_tokens": 3, "completion_tokens": 2}, trace=[{"tool": "x"}])


def sleeper(input, seconds: float = 0.2):
    time.sleep(seconds)
    return input


def which_thread(input, seconds: float = 0.0):
    """The thread that ran the item (after ``seconds`` of waiting, as on a model's reply)."""
    time.sleep(seconds)
    return threading.get_ident()


async def async_upper(input):
    await asyncio.sleep(0.001)
    return str(input).upper()


class Prefixer:
    """A class runner: ``with:`` goes to the constructor, each item to ``__call__``."""

    def __init__(self, prefix: str):
        self.prefix = prefix

    def __call__(self, input):
        return self.prefix + str(input)


def fixed(output, value=0.5):
    """A scorer returning a fixed value, whatever it is (even junk)."""
    return value


def odd_verdict(output, kind):
    """A scorer returning a verdict or a score that is not a plain bool or float."""
    return {
        "numpy false": numpy.False_, "numpy true": numpy.True_,
        "numpy float32 0.25": numpy.float32(0.25), "numpy float32 0.75": numpy.float32(0.75),
        "numpy float32 1.5": numpy.float32(1.5),
        "Score passed numpy false": Score(passed=numpy.False_), "Score passed numpy true": Score(passed=numpy.True_),
        "Score passed 0": Score(passed=0), "Score passed 'no'": Score(passed="no"),
        "Score score numpy float32 0.25": Score(score=numpy.float32(0.25)),
    }[kind]


def raising_scorer(output):
    raise ValueError("scorer broke")


def verdict(output, expected):
    return Score(score=None, passed=output == expected, reason="compared")


def skipping(output):
    return Score(skipped=True, reason="nothing to judge")


def spin(input):
    """Computes forever, holding the processor (never sleeps)."""
    while True:
        pass


def countdown(limit=None):
    """A dataset plugin: an endless generator; counts how many items were pulled."""
    countdown.pulled = 0
    n = 0
    while True:
        countdown.pulled += 1
        n += 1
        yield {"id": f"n{n}", "input": n, "expected": n}


def broken_dataset():
    yield {"input": 1}
    raise RuntimeError("source went away")


def counting(input, item, log: str, seconds: float = 0.002):
    """Sleep a little, then note this process and the item in ``log``: who ran what, how often."""
    time.sleep(seconds)
    with open(log, "a") as handle:
        handle.write(f"{os.getpid()} {item.id}\n")
    return input if int(item.id.split("-")[1]) % 3 else "wrong"


def noted(input, item, log: str):
    """Echo the input (raise on ``raise``), each call noted in ``log``: a line with the item's id."""
    with open(log, "a") as handle:
        handle.write(f"{item.id}\n")
    if input == "raise":
        raise RuntimeError("boom on purpose")
    return input


def judged(output):
    """A scorer that reports what a judge model would have used."""
    return Score(score=1.0, passed=True, reason="fine", usage={"prompt_tokens": 5, "completion_tokens": 1,
                                                                "cost": 0.25})


def priced(input):
    return RunnerResult(output=input, usage={"prompt_tokens": 10, "completion_tokens": 2, "cost": 0.5})


def agentish(input):
    """An answer with an agent-like trace: a model turn calling a tool, its result, the final turn."""
    return RunnerResult(output="4", usage={"prompt_tokens": 30, "completion_tokens": 6}, trace=[
        {"type": "model", "step": 1, "text": "", "tool_calls": [{"name": "calculator", "arguments": {"expression": "2+2"}}],
         "latency_ms": 12.5, "tokens": {"prompt": 10, "completion": 3}},
        {"type": "tool", "step": 1, "name": "calculator", "arguments": {"expression": "2+2"},
         "result": "4 <img src=x onerror=\"window.__pwned=1\">", "latency_ms": 0.3},
        {"type": "model", "step": 2, "text": "4", "tool_calls": [], "latency_ms": 9.0,
         "tokens": {"prompt": 20, "completion": 3}},
    ])


class CoinFlip:
    """Right (the expected answer) or wrong with probability 0.5 per call, decided by a hash of
    the input and how many times this runner has answered it, so every run gives the same
    answers, in whatever order its calls happen. With ``log``, each call is noted there."""

    def __init__(self, log: str | None = None):
        self.calls: dict[str, int] = {}
        self.lock = threading.Lock()
        self.log = log

    def __call__(self, input, item):
        with self.lock:
            count = self.calls.get(input, 0)
            self.calls[input] = count + 1
            if self.log:
                with open(self.log, "a") as handle:
                    handle.write(f"{item.id}\n")
        heads = hashlib.sha256(f"{input}/{count}".encode()).digest()[0] % 2 == 0
        return item.expected if heads else "wrong"


class FailsFirst:
    """Raise on the first call, echo the expected answer after."""

    def __init__(self):
        self.calls = 0

    def __call__(self, item):
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("the first call fails")
        return item.expected


def spending(input, item, log: str, tokens: int = 5, cost: float | None = None, seconds: float = 0.0):
    """Note the item in ``log`` (who ran, how often), wait ``seconds``, and report ``tokens`` (3 of
    them prompt) and ``cost`` used."""
    with open(log, "a") as handle:
        handle.write(f"{item.id}\n")
    time.sleep(seconds)
    return RunnerResult(output=input, usage={"prompt_tokens": 3, "completion_tokens": tokens - 3, "cost": cost})


def down_for(input, item, log: str, down: str):
    """Echo the input, each call noted in ``log``; raise for the items whose ids are lines of the
    file ``down`` while it exists (an endpoint that was down for some calls)."""
    with open(log, "a") as handle:
        handle.write(f"{item.id}\n")
    if os.path.exists(down) and item.id in open(down).read().split():
        raise ConnectionError("the endpoint was down")
    return input
