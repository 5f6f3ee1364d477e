"""A runner that reports the tool calls an agent made, for the tool_call_accuracy tests."""
from __future__ import annotations

from yamleval import RunnerResult

CALLS = {
    "weather": [{"tool": "lookupCity", "arguments": {"q": "Paris"}},
                {"name": "weatherTool", "arguments": {"city": "Paris"}}],
    "openai": [{"id": "call_1", "type": "function", "function": {"name": "weatherTool", "arguments": "{}"}}],
    "none": [],
}


def run(input: str) -> RunnerResult:
    return RunnerResult(output=f"answer to {input}", trace=CALLS[input])
