"""Text for people and for strict formats: cleaned, capped, one-line messages about items
and criteria. Shared by the reports and the console."""
from __future__ import annotations

import functools
import json
import re
from typing import Any

from yamleval.records import figures
from yamleval.analysis.criteria import latency_figure
from yamleval.reporting.trajectory import read_trajectory
from yamleval.records.types import CacheUse, CriterionResult, ExperimentResult, ItemResult, Throttling

TEXT_LIMIT = 64 * 1024  # bytes of UTF-8 per text; libxml2-based readers refuse nodes over 10 MB
MESSAGE_LIMIT = 200  # the one-line message attribute
TRUNCATED = "… (truncated)"
INCOMPLETE = "the run stopped before this experiment finished; these figures count only the items stored"

# CSI (colours, cursor moves), OSC (titles, hyperlinks) and two-byte escapes
_ANSI = r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]"
# outside XML 1.0 Char (even as &#NN;), plus DEL and C1 controls; 8-digit escapes for astral
_ILLEGAL = "[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
_SPACE = r"\s+"


@functools.lru_cache(maxsize=None)
def _pattern(source: str) -> re.Pattern:
    """Compiled on first use: the console imports this module on every run, most never clean text."""
    return re.compile(source)


def clean_text(text: str, limit: int = TEXT_LIMIT) -> str:
    """``text`` without ANSI escapes and characters XML 1.0 cannot hold, cut to
    ``limit`` bytes of UTF-8 with a visible marker when it was longer."""
    if len(text) * 4 <= limit and text.isprintable():  # nothing to remove or cut: most text
        return text
    cut = len(text) > limit
    if cut:  # cleaning only removes characters: no need to look past the limit
        text = text[:limit]
    if "\x1b" in text:
        text = _pattern(_ANSI).sub("", text)
    text = _pattern(_ILLEGAL).sub("", text)
    if len(text) * 4 > limit:
        data = text.encode("utf-8")
        if len(data) > limit:
            text, cut = data[:limit].decode("utf-8", "ignore"), True
    return text + TRUNCATED if cut else text


def one_line(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` cleaned, its whitespace runs collapsed to one space, at most ``limit`` characters."""
    if len(text) <= limit and text.isprintable() and "  " not in text:  # its only blanks are single spaces
        return text.strip(" ")
    text = _pattern(_SPACE).sub(" ", clean_text(text, limit * 4)).strip()
    return text if len(text) <= limit else text[:limit - len(TRUNCATED)] + TRUNCATED


# Bidirectional controls reorder what follows them on screen ("invoice\u202egpj.exe" shows as
# "invoiceexe.jpg"); where text cannot be isolated they are shown by their code point.
_BIDI = {code: f"[U+{code:04X}]" for code in (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))}


def reveal_bidi(text: str) -> str:
    """``text`` with each bidirectional control written as ``[U+202E]``."""
    return text.translate(_BIDI)


def terminal_line(text: str, limit: int = 500) -> str:
    """``text`` safe to print on one terminal line: no escape sequences or control characters
    (they could recolour, move the cursor, retitle the window or, as a line of its own in
    CI, start a workflow command), no line breaks, bidirectional controls made visible."""
    return reveal_bidi(one_line(text, limit))


def terminal_block(text: str, limit: int = TEXT_LIMIT) -> str:
    """Text of several lines safe to print: as ``terminal_line`` but keeping its line breaks;
    a line that would start a workflow command (``::error::``) in a CI log is quoted with ``> ``."""
    text = _pattern(_LINE_BREAKS).sub("\n", clean_text(text, limit))
    return _pattern(_COMMAND_START).sub(r"\1> ::", reveal_bidi(text))


_LINE_BREAKS = "\r\n|[\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]"
_COMMAND_START = r"(?m)^(\s*)::"


def as_text(value: Any, indent: int | None = 2) -> str:
    """A value as people read it: strings as they are, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str, indent=indent)


def score_text(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def side_digits(score: float, threshold: float, least: int, most: int) -> int:
    """The fewest decimals from ``least`` (at most ``most``) at which ``score`` rounds to the
    side of ``threshold`` that it is on: 0.0996 under 0.1 needs 4, not the 3 of ``0.100``."""
    for digits in range(least, most):
        if (round(score, digits) >= threshold) == (score >= threshold):
            return digits
    return most


def below(score: float, threshold: float) -> str:
    """``score`` (below ``threshold``) with three decimals, or as many more as it takes not to
    read as the threshold itself: 0.0996 under 0.1 is ``0.0996``, not ``0.100``."""
    text = f"{score:.{side_digits(score, threshold, 3, 9)}f}"
    return text if float(text) < threshold else repr(score)


def item_message(result: ItemResult) -> str:
    """Why an item did not pass, in a line: the error, or each failing scorer with
    its score against the threshold and its reason; then its notes, in brackets."""
    notes = "".join(f" [{note}]" for note in result.notes)
    why = _why(result)
    return (_human(result) + why if why else _human(result).removesuffix(": ")) + notes


def _human(result: ItemResult) -> str:
    """Who decided a reviewed item's verdict: ``failed by a person (ana; its scorers passed it): ``."""
    human = result.human
    if human is None:
        return ""
    who = f"{human.by}; " if human.by else "the dataset's label; " if human.source == "dataset" else ""
    said = f": {human.note}" if human.note else ""
    if not human.overruled:
        return f"{human.verdict} by its scorers and a person ({who.rstrip('; ') or 'reviewed'}){said}: "
    return f"{human.verdict} by a person ({who}its scorers {'passed' if human.machine == 'passed' else 'failed'} it){said}: "


def _why(result: ItemResult) -> str:
    if result.error:
        return result.error
    if result.status == "skipped":
        return "skipped: " + "; ".join(f"{sid}: {s.reason or 'no score'}" for sid, s in result.scores.items())
    misses = []
    for sid, s in result.scores.items():
        if s.passed is not False:
            continue
        if s.threshold is not None and s.score is not None and s.score < s.threshold:
            miss = f"{sid} {below(s.score, s.threshold)} < {s.threshold:g}"
        else:
            miss = f"{sid} failed" + (f" ({score_text(s.score)})" if s.score is not None else "")
        misses.append(miss + (f": {s.reason}" if s.reason else ""))
    return "; ".join(misses) or ("" if result.human is not None else result.status)


def shown_label(result: ExperimentResult) -> str:
    """The name a report gives an experiment: its label (or id), and a variant's own label (or id)
    after it, so the variants of one experiment read apart."""
    variant = result.variant
    if variant is None:
        return result.label or result.experiment_id
    return f"{result.label or variant.experiment_id} — {variant.label or variant.id}"


def stopped_because(result: ExperimentResult) -> str:
    """Why an aborted experiment stopped, in a few words (its ``aborted`` message says the rest)."""
    return ("could not evaluate" if result.could_not_evaluate else "budget reached" if result.stopped_by_budget
            else "dataset error")


def stop_notice(result: ExperimentResult) -> tuple[str, str]:
    """The heading and text that say why an aborted experiment stopped, for the reports."""
    if result.stopped_by_budget:
        return "Incomplete", f"{result.aborted}; resume the run with a larger budget to finish it"
    return "Aborted", result.aborted or ""


def throttling_text(throttling: Throttling) -> str | None:
    """``12 of 1040 calls refused (429/503), 3.2 s waited in all`` (the calls' waits for their
    turn, added up); None when nothing was refused and nothing waited: nothing to say."""
    if not throttling.throttled and throttling.waited_seconds < 0.05:
        return None
    return (f"{throttling.throttled} of {figures.count(throttling.calls, 'call')} refused (429/503), "
            f"{throttling.waited_seconds:.1f} s waited in all")


def cache_text(use: CacheUse) -> str | None:
    """``980 answers from the cache, 20 asked (saved 1,234,000 tokens, $3.40)``; None when the
    cache was not used."""
    if not use.hits and not use.misses and not use.damaged and not use.not_cached:
        return None
    cost = f", {figures.dollars(use.saved_cost)}" if use.saved_cost else ""
    damaged = (f"; {use.damaged:,} damaged entr{'ies' if use.damaged != 1 else 'y'} ignored and asked again"
               if use.damaged else "")
    return (f"{use.hits:,} answer{'s' if use.hits != 1 else ''} from the cache, {use.misses:,} asked"
            f" (saved {use.saved_tokens:,} tokens{cost}){damaged}{_not_cached(use.not_cached)}")


def _not_cached(count: int) -> str:
    return (f"; {count:,} judge call{'s' if count != 1 else ''} asked and not cached (a judge is cached only at"
            " temperature 0)" if count else "")


def criterion_subject(criterion: CriterionResult, scorer: str = "[{}]") -> str:
    """What a criterion holds to its bound: ``pass_rate[exact_match]``, ``latency p95``, ``tokens per
    item``, ``pass_rate (lower 95% bound)``; ``scorer`` says how its scorer follows the type."""
    text = criterion.type + (scorer.format(criterion.scorer) if criterion.scorer else "")
    if criterion.percentile is not None:
        text += f" {latency_figure(criterion.percentile)}"
    if criterion.per_item:
        text += " per item"
    if criterion.metric is not None:
        text += f" {criterion.metric}"
    if criterion.bound == "lower":
        text += f" (lower {criterion.confidence * 100:g}% bound)"
    return text


def criterion_figure(criterion: CriterionResult, value: float | None) -> str:
    """A value of the criterion's figure: ``0.812``, ``2.3 s``, ``87``, ``$0.0123``; a dash for none."""
    if value is None:
        return figures.MISSING
    if criterion.type == "latency":
        return figures.ms(value)
    if criterion.type == "cost":
        return figures.dollars(value)
    if criterion.type in ("items", "tokens"):
        return f"{value:,.1f}" if criterion.per_item else f"{value:,.0f}"
    return figures.number(value)


def _written(criterion: CriterionResult) -> str:
    """The criterion's ``min`` or ``max`` as written, with its unit: ``0.8``, ``2000 ms``, ``$5``."""
    value = criterion.max if criterion.max is not None else criterion.min
    text = str(int(value)) if value == int(value) else f"{value:g}"
    return {"latency": f"{text} ms", "cost": f"${text}"}.get(criterion.type, text)


def bound(criterion: CriterionResult, at_least: str = ">=", at_most: str = "<=") -> str:
    """What a criterion asks of its value: ``>= 0.9``, or ``<= 2000 ms`` for a maximum, or ``vs
    main`` for no_regression's baseline."""
    if criterion.baseline is not None:
        return f"vs {criterion.baseline}"
    return f"{at_most if criterion.max is not None else at_least} {_written(criterion)}"


def limit_text(criterion: CriterionResult) -> str:
    """The bound for a table's ``min`` column: ``0.9``, or ``≤ 2000 ms`` for a maximum."""
    if criterion.baseline is not None:
        return f"vs {criterion.baseline}"
    return f"≤ {_written(criterion)}" if criterion.max is not None else _written(criterion)


def criterion_name(criterion: CriterionResult) -> str:
    """``pass_rate[exact_match] >= 0.9``, ``latency p95 <= 2000 ms``, after the label when there is one."""
    rule = f"{criterion_subject(criterion)} {bound(criterion)}"
    return f"{criterion.label} ({rule})" if criterion.label else rule


def _no_value(criterion: CriterionResult) -> str:
    """Why a criterion has no value to hold to its bound."""
    if criterion.type == "cost":
        return "no call had a known price"
    if criterion.bound == "lower":
        return "too few items for an interval"
    return "nothing was scored" if criterion.type in ("mean_score", "pass_rate") else "no item completed"


def criterion_outcome(criterion: CriterionResult) -> str:
    """What a criterion found, for a table cell: its value (or why it has none), or what
    no_regression found."""
    if criterion.detail is not None:
        return criterion.detail
    if criterion.actual is None and not criterion.skipped:
        return f"no value: {_no_value(criterion)}"
    return criterion_figure(criterion, criterion.actual)


def criterion_mark(criterion: CriterionResult, met: str, missed: str, warned: str, skipped: str) -> str:
    """The one of four marks that says how the criterion came out."""
    if criterion.skipped:
        return skipped
    return met if criterion.passed else warned if criterion.severity == "warn" else missed


def criterion_message(criterion: CriterionResult) -> str:
    subject = criterion_subject(criterion, " of {}")
    if criterion.detail is not None:
        return f"{subject} {bound(criterion)}: {criterion.detail}"
    if criterion.actual is None:
        return f"{subject}: no value ({_no_value(criterion)}), needs {bound(criterion, 'at least', 'at most')}"
    actual = criterion_figure(criterion, criterion.actual)
    if criterion.max is not None:
        return f"{subject} {actual} {'<=' if criterion.passed else '>'} max {_written(criterion)}"
    relation = ">=" if criterion.passed else "<"
    return f"{subject} {actual} {relation} min {_written(criterion)}"


def _counted(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def trajectory_lines(trace: Any, limit: int) -> list[str]:
    """An agent's trajectory as lines of text (laid out by ``reporting.trajectory``, as the
    HTML report shows it): the steps and tool calls counted, then at most ``limit`` steps,
    ``step 1 · model · 12.5 ms · 13 tokens: what it said`` with a line per tool call it made."""
    shown = read_trajectory(trace)
    if shown is None:
        return []
    lines = [f"trajectory: {_counted(shown.step_count, 'step')}, {_counted(shown.call_count, 'tool call')}"]
    for step in shown.steps[:limit]:
        bits = [step.label] if step.number is None else [f"step {step.number}"] + [step.label] * (step.label != "tool call")
        if step.latency_ms is not None:
            bits.append(figures.ms(step.latency_ms))
        if step.tokens is not None:
            bits.append(_counted(step.tokens.total_tokens, "token"))
        said = step.error if step.error is not None else step.text
        lines.append("  " + " · ".join(bits) + (f": {one_line(as_text(said, None), 300)}" if said is not None else ""))
        for call in step.calls:
            line = f"    tool call {call.name or '(unnamed)'}"
            if call.arguments is not None:
                line += " " + one_line(as_text(call.arguments, None), 300)
            answer = call.error if call.error is not None else call.result
            if answer is not None:
                line += (" → error: " if call.error is not None else " → ") + one_line(as_text(answer, None), 300)
            lines.append(line)
    if len(shown.steps) > limit:
        lines.append(f"  … and {len(shown.steps) - limit} more")
    return lines
