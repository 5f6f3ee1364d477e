"""A tiny command-line "model" for the demo's ``command`` runner.

It reads one item as JSON on stdin and prints its input shouted back: ``hello`` → ``HELLO!``.
"""
from __future__ import annotations

import json
import sys


def shout(text: str) -> str:
    return text.strip().rstrip("!.?").upper() + "!"


def main() -> int:
    item = json.load(sys.stdin)
    value = item["input"]
    print(shout(value if isinstance(value, str) else json.dumps(value)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
