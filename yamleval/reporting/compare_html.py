"""``yamleval compare --format html``: two stored runs compared on one self-contained page.

The paired verdicts with their intervals come first, then the items that flipped, base and
candidate side by side. Jinja2 (autoescaped) writes every value as text; the page has no
script at all, and its Content-Security-Policy allows only its own stylesheet (report.css).
"""
from __future__ import annotations

from typing import Iterable, Sequence

from yamleval.analysis import compare
from yamleval.records import figures
from yamleval.reporting import comparison
from yamleval.reporting.html import asset, csp_hash, template
from yamleval.reporting.html_data import field_text
from yamleval.reporting.text import clean_text
from yamleval.records.types import ExperimentResult, ItemResult

FLIPS_SHOWN = 200  # of an experiment, side by side; the text and JSON formats list them all


def _change_row(name: str, change: compare.PairedChange, alpha: float) -> dict:
    d, p = change.difference, change.p_value
    return {"name": name, "verdict": change.verdict, "pairs": change.pairs, "worse": change.worse,
            "better": change.better, "p_value": "–" if p is None else f"{p:.2g}" if p else "< 1e-300",
            "mean": comparison.signed(d.mean),
            "interval": f"{comparison.signed(d.interval[0])} to {comparison.signed(d.interval[1])}" if d.interval else "–",
            "level": figures.level(1 - alpha)}


def _shown(value) -> str | None:
    """A field as the page shows it: capped as in report.html, without the control characters
    and escape sequences an HTML page cannot show as text."""
    text = field_text(value)
    return None if text is None else clean_text(text, limit=len(text) * 4)


def _side(result: ItemResult | None) -> dict:
    if result is None:
        return {"status": "–", "output": None, "error": None}
    return {"status": result.status, "output": _shown(result.output), "error": _shown(result.error)}


def _flipped(flips: Sequence[compare.Flip], base: Iterable[ItemResult], candidate: Iterable[ItemResult]) -> list:
    """The first FLIPS_SHOWN flips with both runs' items, read from each run once."""
    shown = {f.item_id: f for f in flips[:FLIPS_SHOWN]}
    before = {r.item.id: r for r in base if r.item.id in shown}
    after = {r.item.id: r for r in candidate if r.item.id in shown}
    return [{"id": _shown(item_id), "regression": f.regression, "input": _shown(after[item_id].item.input)
             if item_id in after else None, "base": _side(before.get(item_id)), "candidate": _side(after.get(item_id))}
            for item_id, f in shown.items()]


def render(c: compare.Comparison, base: Sequence[ExperimentResult], candidate: Sequence[ExperimentResult]) -> str:
    """The comparison as one complete HTML document; ``base`` and ``candidate``: the runs' results
    that ``c`` compares, whose items the flips are read from."""
    from markupsafe import Markup

    before = {r.experiment_id: r for r in base}
    after = {r.experiment_id: r for r in candidate}
    experiments = []
    for e in c.experiments:
        rows = [_change_row(name, change, c.alpha) for name, change in compare.named_changes(e)]
        base_id, candidate_id = e.stored_as or (e.experiment_id, e.experiment_id)  # two variants: each its own id
        flips = _flipped(e.flips, before[base_id].items, after[candidate_id].items) if e.flips else []
        experiments.append({"id": e.experiment_id, "only_in": e.only_in, "changes": rows, "flips": flips,
                            "more_flips": max(0, len(e.flips) - FLIPS_SHOWN), "added": list(e.added),
                            "removed": list(e.removed), "pass_rate": comparison.signed(e.summary_deltas.get("pass_rate"), True),
                            "mean_score": comparison.signed(e.summary_deltas.get("mean_score")),
                            "headline": None if e.only_in else comparison.headline(e, c.alpha),
                            "errored": comparison.errored_text(e)})
    style = asset("report.css")
    csp = ("default-src 'none'; style-src " + csp_hash(style) + "; img-src data:; connect-src 'none';"
           " form-action 'none'; base-uri 'none'; object-src 'none'")
    return template("compare.html").render(
        c=c, verdict=comparison.verdict_line(c), unfinished=c.unfinished, experiments=experiments,
        config_diff=clean_text("\n".join(c.config_diff), limit=10 ** 9), csp=csp, style=Markup(style), regressions=len(c.regressions))
