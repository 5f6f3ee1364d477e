"""How a report tells what people said: items counted with a human verdict and those it
overruled, and each scorer's agreement with people (n, agreement, Cohen's kappa with its
interval, the confusion matrix): as JSON, as lines of text, as a Markdown table."""
from __future__ import annotations

from typing import Any

from yamleval.records import figures
from yamleval.analysis.agreement import MIN_VERDICTS
from yamleval.records.reviews import UNMEASURABLE, Agreement
from yamleval.records.types import Summary


def agreement_dict(a: Agreement) -> dict[str, Any]:
    (pp, pf), (fp, ff) = a.matrix
    kappa, interval = (None, None) if a.one_verdict else (a.kappa, a.kappa_ci)
    return {"n": a.n, "agreement": a.rate, "agreement_ci": a.rate_ci, "kappa": kappa, "kappa_ci": interval,
            **({"unmeasurable": UNMEASURABLE} if a.one_verdict else {}),
            "confusion": {"human_pass": {"scorer_pass": pp, "scorer_fail": pf},
                          "human_fail": {"scorer_pass": fp, "scorer_fail": ff}}}


def people_dict(summary: Summary) -> dict[str, Any]:
    """What ``results.json`` says of people's verdicts (nothing, when there are none)."""
    if not summary.reviewed:
        return {}
    return {"reviewed": summary.reviewed, "overruled": summary.overruled,
            "agreement": {sid: agreement_dict(a) for sid, a in summary.agreement.items()}}


def _interval(value: tuple[float, float] | None, shown) -> str:
    return f" [{shown(value[0])}, {shown(value[1])}]" if value is not None else ""


def _kappa(a: Agreement, none: str) -> str:
    """Kappa and its interval; why it cannot be measured (people gave one verdict only); else ``none``."""
    if a.one_verdict:
        return UNMEASURABLE
    return none if a.kappa is None else figures.number(a.kappa) + _interval(a.kappa_ci, figures.number)


def agreement_line(a: Agreement, confidence: float) -> str:
    """``judge: n 40 · agreement 82.5% [68.1%, 91.3%] · kappa 0.632 [0.385, 0.878] (95%)``; of a table
    where people gave one verdict only, that it cannot be measured."""
    if a.one_verdict:
        said = "passed" if sum(a.matrix[0]) else "failed"
        return f"{a.scorer}: n {a.n} · {UNMEASURABLE} (every item {said})"
    few = f" · fewer than {MIN_VERDICTS}: too few to gate on" if a.n < MIN_VERDICTS else ""
    return (f"{a.scorer}: n {a.n} · agreement {figures.percent(a.rate)}{_interval(a.rate_ci, figures.percent)}"
            f" · kappa {_kappa(a, '-')} ({confidence * 100:g}% intervals){few}")


def matrix_lines(a: Agreement) -> list[str]:
    """The confusion matrix, rows the people's verdicts, columns the scorer's."""
    (pp, pf), (fp, ff) = a.matrix
    width = max(len(str(v)) for v in (pp, pf, fp, ff, "scorer fail"))
    head = f"{'':13}{'scorer pass':>{width}}  {'scorer fail':>{width}}"
    return [head, f"{'person pass':13}{pp:>{width}}  {pf:>{width}}", f"{'person fail':13}{fp:>{width}}  {ff:>{width}}"]


def reviewed_line(summary: Summary) -> str:
    """``12 items counted with a person's verdict, 3 of them overruling the scorers``; empty without any."""
    if not summary.reviewed:
        return ""
    return (f"{summary.reviewed:,} item{'s' if summary.reviewed != 1 else ''} counted with a person's verdict,"
            f" {summary.overruled:,} of them overruling the scorers'")


def text_lines(summary: Summary) -> list[str]:
    """What a terminal shows of people's verdicts (nothing without any)."""
    if not summary.reviewed:
        return []
    lines = [reviewed_line(summary)]
    for a in summary.agreement.values():
        lines += ["  " + agreement_line(a, summary.confidence), *("    " + line for line in matrix_lines(a))]
    return lines


def markdown_lines(summary: Summary, escape) -> list[str]:
    """A Markdown table of each scorer's agreement with people (nothing without any); ``escape``
    makes a scorer's id a cell's text."""
    if not summary.reviewed:
        return []
    lines = [f"People: {reviewed_line(summary)}.", "", "| scorer | n | agreement | kappa | person pass: scorer pass / fail |"
             " person fail: scorer pass / fail |", "|---|---:|---:|---:|---:|---:|"]
    for a in summary.agreement.values():
        (pp, pf), (fp, ff) = a.matrix
        kappa = _kappa(a, "-")
        lines.append(f"| {escape(a.scorer)} | {a.n} | {figures.percent(a.rate)}{_interval(a.rate_ci, figures.percent)}"
                     f" | {kappa} | {pp} / {pf} | {fp} / {ff} |")
    return lines + [""]


def reviewed_tile(summary: Summary) -> str:
    """``12 · 2 overruled``: the items counted with a person's verdict."""
    return f"{summary.reviewed:,} · {summary.overruled:,} overruled"


def html_view(summary: Summary) -> list[dict[str, Any]]:
    """Each scorer's agreement as report.html's panel shows it."""
    out = []
    for a in summary.agreement.values():
        (pp, pf), (fp, ff) = a.matrix
        out.append({"scorer": a.scorer, "n": f"{a.n:,}", "few": a.n < MIN_VERDICTS,
                    "rate": figures.percent(a.rate) + _interval(a.rate_ci, figures.percent),
                    "kappa": _kappa(a, "—"),
                    "matrix": [pp, pf, fp, ff]})
    return out
