"""A comparison of two stored runs (``analysis.compare``) as the terminal, Markdown and JSON
show it: the verdict line, each experiment's changes beyond chance, flips, added and removed
items, and the start of the configuration's diff."""
from __future__ import annotations

import json

from yamleval.records import figures
from yamleval.analysis.compare import (IMPROVED, NO_CHANGE, RANK, REGRESSED, Comparison, ExperimentDiff,
                                       PairedChange, named_changes)
from yamleval.reporting.text import terminal_block, terminal_line

CONFIG_DIFF_LINES = 40  # of the diff printed; the JSON has all of it


def signed(value: float | None, percent: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value * 100:+.1f} pp" if percent else f"{value:+.3f}"


def to_text(c: Comparison, markdown: bool = False) -> str:
    lines = [f"{'## ' if markdown else ''}{c.base} ({c.base_status}) → {c.candidate} ({c.candidate_status}): "
             f"{figures.count(len(c.regressions), 'regression')}"]
    lines.append(verdict_line(c))
    if c.unfinished:
        lines.append(c.unfinished)
    lines += _config_lines(c, markdown)
    for e in c.experiments:
        lines.append("")
        lines.append(f"{'### ' if markdown else ''}{e.experiment_id}")
        if e.only_in:
            lines.append(f"only in the {e.only_in} run")
            continue
        lines.append(headline(e, c.alpha))
        if e.errored:
            lines.append(errored_text(e))
        lines.append(f"mean score {signed(e.summary_deltas['mean_score'])}")
        if e.change:
            lines.append(change_text(e.change, c.alpha, markdown))
        for sid, delta in e.score_deltas.items():
            change = e.scorer_changes.get(sid)
            lines.append(f"{'- ' if markdown else '  '}{sid}: mean {signed(delta)}"
                         + (f" · {change_text(change, c.alpha, markdown)}" if change else ""))
        for f in e.flips:
            mark = "regressed" if f.regression else "improved" if RANK[f.after] > RANK[f.before] else "changed"
            item = f"`{f.item_id}`" if markdown else terminal_line(f.item_id, 200)
            lines.append(f"{'- ' if markdown else '  '}{item}: {f.before} → {f.after} ({mark})")
        if e.added:
            lines.append(f"{'- ' if markdown else '  '}added: {', '.join(e.added)}")
        if e.removed:
            lines.append(f"{'- ' if markdown else '  '}removed: {', '.join(e.removed)}")
    return "\n".join(lines) + "\n"


def _config_lines(c: Comparison, markdown: bool) -> list[str]:
    """``same configuration``, or the start of the diff, safe to print (control characters
    removed, each line indented: a code block in Markdown)."""
    if c.same_run:
        return ["variants of one run: its configuration, each with its own overrides"]
    if not c.config_diff:
        return ["same configuration"]
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
        "regressions": len(c.regressions), "config_diff": list(c.config_diff), **_verdicts_json(c),
        "experiments": [{"id": e.experiment_id, "only_in": e.only_in, **changes_json(e),
                         "flips": [{"item": f.item_id, "before": f.before, "after": f.after,
                                    "regression": f.regression} for f in e.flips],
                         "added": list(e.added), "removed": list(e.removed), "score_deltas": e.score_deltas,
                         "summary_deltas": e.summary_deltas} for e in c.experiments],
    }, indent=2, ensure_ascii=False) + "\n"


POWER = 0.8  # of the power estimate: how many items would show a difference this size


def headline(e: ExperimentDiff, alpha: float) -> str:
    """``pass rate 10.0% → 30.0% (+20.0 pp): better, not proven with 20 items (about 59 items in
    each run would show a difference this size)``: both rates, and ``verdict_words``."""
    before, after = e.pass_rates
    rates = f"pass rate {figures.percent(before)} → {figures.percent(after)} ({signed(e.summary_deltas['pass_rate'], True)})"
    words = verdict_words(e, alpha, "run" if e.stored_as is None else "variant")
    return f"{rates}: {words}" if words else rates


def verdict_words(e: ExperimentDiff, alpha: float, sides: str = "run") -> str | None:
    """``better, not proven with 20 items (about 59 items in each run would show ...)``: a plain
    verdict on the paired test of the items' verdicts (McNemar), with how many items a difference
    this size needs when it is not proven; None without pairs. ``sides``: what is compared (run, variant)."""
    from yamleval.analysis import stats

    before, after = e.pass_rates
    change = e.change
    if before is None or after is None or change is None or not change.pairs:
        return None
    pairs = figures.count(change.pairs, "item")
    if change.verdict != NO_CHANGE:
        return f"{'better' if change.verdict == IMPROVED else 'worse'}, beyond chance over {pairs}"
    if change.worse == change.better:
        return f"no difference over {pairs}"
    direction = "better" if change.better > change.worse else "worse"
    needed = stats.items_for_power(before, after, alpha, POWER)
    estimate = "" if needed is None or needed <= change.pairs else (
        f" (about {needed:,} items in each {sides} would show a difference of this size, {POWER:.0%} of the time)")
    return f"{direction}, not proven with {pairs}{estimate}"


ERRORED_NAMED = 10  # errored items named in a line; the JSON names them all


def errored_text(e: ExperimentDiff) -> str | None:
    """``2 items errored on either side, left out of the pairs: a, b``; None when none did."""
    if not e.errored:
        return None
    named = ", ".join(terminal_line(item_id, 200) for item_id in e.errored[:ERRORED_NAMED])  # ids are data: safe to print
    more = len(e.errored) - ERRORED_NAMED
    return (f"{figures.count(len(e.errored), 'item')} errored on either side, left out of the pairs: {named}"
            + (f" and {more:,} more" if more > 0 else ""))


def verdict_line(c: Comparison) -> str:
    """What changed beyond chance, in one line."""
    named = {verdict: [name for e in c.experiments for name, change in named_changes(e) if change.verdict == verdict]
             for verdict in (REGRESSED, IMPROVED)}
    found = "; ".join(f"{verdict}: {', '.join(names)}" for verdict, names in named.items() if names)
    return f"paired verdict ({c.rule}): {found or NO_CHANGE}"


def change_text(change: PairedChange, alpha: float, markdown: bool) -> str:
    """``no significant change: 3 pairs, 1 pass → fail, ...``: the paired verdict and its figures."""
    verdict = f"**{change.verdict}**" if markdown and change.verdict != NO_CHANGE else change.verdict
    return f"{verdict}: {change_details(change, alpha)}"


def change_details(change: PairedChange, alpha: float, pairs: bool = True) -> str:
    """The figures of a paired verdict: its pairs (``pairs``: counted here, not in words before) and
    flips with McNemar's p, and the mean score's difference."""
    parts, p, d = [], change.p_value, change.difference
    if change.pairs:
        parts.append(f"{figures.count(change.pairs, 'pair') + ', ' if pairs else ''}{change.worse} pass → fail, {change.better} fail → pass, "
                     f"McNemar p {f'= {p:.2g}' if p else '< 1e-300'}")
    if d.mean is not None:
        low, high = d.interval or (None, None)
        interval = f" ({figures.level(1 - alpha)} {signed(low)} to {signed(high)})" if d.interval else ""
        parts.append(f"mean score {signed(d.mean)}{interval}")
    return '; '.join(parts) or 'no item judged or scored in both runs'


def _verdicts_json(c: Comparison) -> dict:
    return {"alpha": c.alpha, "margin": c.margin, "significant_regressions": c.significant_regressions}


def _change_json(change: PairedChange) -> dict:
    d = change.difference
    return {"verdict": change.verdict, "pairs": change.pairs, "pass_to_fail": change.worse,
            "fail_to_pass": change.better, "p_value": change.p_value, "score_pairs": d.pairs,
            "mean_difference": d.mean, "mean_difference_ci": list(d.interval) if d.interval else None,
            "ci_method": d.method}


def changes_json(e: ExperimentDiff) -> dict:
    return {"change": _change_json(e.change) if e.change else None, "errored": list(e.errored),
            "scorer_changes": {sid: _change_json(change) for sid, change in e.scorer_changes.items()}}
