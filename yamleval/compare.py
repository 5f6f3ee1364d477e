"""Two stored runs side by side: flips, score deltas, items added or removed, summary deltas,
and how their stored configs differ."""
from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from yamleval.types import ExperimentResult, RunInfo

RANK = {"passed": 2, "skipped": 1, "failed": 0, "error": -1}
CONFIG_DIFF_LINES = 40  # of the diff printed; the JSON has all of it


@dataclass(frozen=True)
class Flip:
    experiment_id: str
    item_id: str
    before: str
    after: str

    @property
    def regression(self) -> bool:
        return RANK[self.after] < RANK[self.before]


@dataclass(frozen=True)
class ExperimentDiff:
    experiment_id: str
    flips: tuple[Flip, ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]
    score_deltas: dict[str, float | None]      # scorer id -> change of its mean
    summary_deltas: dict[str, float | None]    # pass_rate, mean_score -> change
    only_in: str | None = None                 # "base" or "candidate" when one run lacks the experiment


@dataclass(frozen=True)
class Comparison:
    base: str
    candidate: str
    base_status: str        # each run's status: completed, interrupted, crashed, running
    candidate_status: str
    experiments: tuple[ExperimentDiff, ...] = field(default_factory=tuple)
    config_diff: tuple[str, ...] = ()  # unified diff of the stored configs; empty: the same configuration

    @property
    def regressions(self) -> list[Flip]:
        return [f for e in self.experiments for f in e.flips if f.regression]

    @property
    def unfinished(self) -> str | None:
        """Why the candidate cannot pass a regression gate: it did not complete, so the items it
        never reached show as removed (or its experiments as only in the base run), not as worse."""
        if self.candidate_status == "completed":
            return None
        return (f"the candidate run {self.candidate} is {self.candidate_status}, not completed: "
                "the items it did not reach are not compared")


def _delta(before: float | None, after: float | None) -> float | None:
    return None if before is None or after is None else after - before


def _diff(base: ExperimentResult, candidate: ExperimentResult) -> ExperimentDiff:
    before = {r.item.id: r.status for r in base.items}
    after = {r.item.id: r.status for r in candidate.items}
    flips = tuple(Flip(candidate.experiment_id, item_id, before[item_id], status)
                  for item_id, status in after.items() if item_id in before and before[item_id] != status)
    scorers = dict.fromkeys([*base.summary.scorers, *candidate.summary.scorers])
    score_deltas = {}
    for sid in scorers:
        b, c = base.summary.scorers.get(sid), candidate.summary.scorers.get(sid)
        score_deltas[sid] = _delta(b.mean if b else None, c.mean if c else None)
    return ExperimentDiff(
        experiment_id=candidate.experiment_id, flips=flips,
        added=tuple(i for i in after if i not in before), removed=tuple(i for i in before if i not in after),
        score_deltas=score_deltas,
        summary_deltas={"pass_rate": _delta(base.summary.pass_rate, candidate.summary.pass_rate),
                        "mean_score": _delta(base.summary.mean_score, candidate.summary.mean_score)},
    )


def config_diff(base: Mapping[str, str], candidate: Mapping[str, str]) -> tuple[str, ...]:
    """A unified diff (one line of context) of two runs' config files as stored, file by file."""
    lines: list[str] = []
    for name in sorted({*base, *candidate}):
        lines += difflib.unified_diff(base.get(name, "").splitlines(), candidate.get(name, "").splitlines(),
                                      f"base/{name}", f"candidate/{name}", n=1, lineterm="")
    return tuple(lines)


def compare(base_run: RunInfo, base: Sequence[ExperimentResult], candidate_run: RunInfo,
            candidate: Sequence[ExperimentResult]) -> Comparison:
    """Match experiments by id and items by id within them."""
    before = {r.experiment_id: r for r in base}
    after = {r.experiment_id: r for r in candidate}
    diffs = []
    for experiment_id in dict.fromkeys([*before, *after]):
        if experiment_id in before and experiment_id in after:
            diffs.append(_diff(before[experiment_id], after[experiment_id]))
        else:
            side = "base" if experiment_id in before else "candidate"
            diffs.append(ExperimentDiff(experiment_id, (), (), (), {}, {}, only_in=side))
    return Comparison(base_run.run_id, candidate_run.run_id, base_run.status, candidate_run.status, tuple(diffs),
                      config_diff(base_run.config_text, candidate_run.config_text))


def _signed(value: float | None, percent: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value * 100:+.1f} pp" if percent else f"{value:+.3f}"


def to_text(c: Comparison, markdown: bool = False) -> str:
    lines = [f"{'## ' if markdown else ''}{c.base} ({c.base_status}) → {c.candidate} ({c.candidate_status}): "
             f"{len(c.regressions)} regressions"]
    if c.unfinished:
        lines.append(c.unfinished)
    lines += _config_lines(c, markdown)
    for e in c.experiments:
        lines.append("")
        lines.append(f"{'### ' if markdown else ''}{e.experiment_id}")
        if e.only_in:
            lines.append(f"only in the {e.only_in} run")
            continue
        lines.append(f"pass rate {_signed(e.summary_deltas['pass_rate'], True)}, "
                     f"mean score {_signed(e.summary_deltas['mean_score'])}")
        for sid, delta in e.score_deltas.items():
            lines.append(f"{'- ' if markdown else '  '}{sid}: mean {_signed(delta)}")
        for f in e.flips:
            mark = "regressed" if f.regression else "improved" if RANK[f.after] > RANK[f.before] else "changed"
            item = f"`{f.item_id}`" if markdown else f.item_id
            lines.append(f"{'- ' if markdown else '  '}{item}: {f.before} → {f.after} ({mark})")
        if e.added:
            lines.append(f"{'- ' if markdown else '  '}added: {', '.join(e.added)}")
        if e.removed:
            lines.append(f"{'- ' if markdown else '  '}removed: {', '.join(e.removed)}")
    return "\n".join(lines) + "\n"


def _config_lines(c: Comparison, markdown: bool) -> list[str]:
    """``same configuration``, or the start of the diff, safe to print (control characters
    removed, each line indented: a code block in Markdown)."""
    if not c.config_diff:
        return ["same configuration"]
    from yamleval.reporting.text import terminal_block

    shown = terminal_block("\n".join(c.config_diff[:CONFIG_DIFF_LINES])).split("\n")
    lines = ["configuration changed:", *([""] if markdown else []),  # a code block cannot interrupt a paragraph
             *(("    " if markdown else "  ") + line for line in shown)]
    if len(c.config_diff) > CONFIG_DIFF_LINES:
        lines.append(f"  … {len(c.config_diff) - CONFIG_DIFF_LINES} more lines"
                     f" (`yamleval show RUN --config` prints a run's configuration)")
    return lines


def to_json(c: Comparison) -> str:
    return json.dumps({
        "base": c.base, "candidate": c.candidate, "base_status": c.base_status, "candidate_status": c.candidate_status,
        "regressions": len(c.regressions), "config_diff": list(c.config_diff),
        "experiments": [{"id": e.experiment_id, "only_in": e.only_in,
                         "flips": [{"item": f.item_id, "before": f.before, "after": f.after,
                                    "regression": f.regression} for f in e.flips],
                         "added": list(e.added), "removed": list(e.removed), "score_deltas": e.score_deltas,
                         "summary_deltas": e.summary_deltas} for e in c.experiments],
    }, indent=2, ensure_ascii=False) + "\n"
