"""``yamleval history --html``: how each experiment has moved, on one self-contained page.

Per experiment, a chart of the pass rate and the mean score over the runs with their
intervals, drawn as SVG when the page is written: the page has no script at all, and its
Content-Security-Policy allows only its own stylesheet. A point links to its run's report
when that report is beside the page, as ``RUN_ID/report.html``. Then the items whose verdict
changed most often. Jinja2 (autoescaped) writes every stored value as text.
"""
from __future__ import annotations

import os
import urllib.parse
from typing import Callable, Sequence

from yamleval.records import figures
from yamleval.analysis.history import ExperimentHistory, Point
from yamleval.reporting.html import asset, csp_hash, template
from yamleval.reporting.text import clean_text

WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 720, 244, 44, 40, 12, 52
SERIES = (("pass rate", "pass_rate", "pass_rate_ci"), ("mean score", "mean_score", "mean_score_ci"))
AXIS_LABELS = 8  # at most, so that they never overlap; the newest run always has one
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _y(value: float) -> float:
    return round(TOP + (1 - min(1.0, max(0.0, value))) * (HEIGHT - TOP - BOTTOM), 1)


def _x(at: int, count: int) -> float:
    inner = WIDTH - LEFT - RIGHT
    return round(LEFT + (inner / 2 if count == 1 else inner * at / (count - 1)), 1)


def _link(folder: str, run_id: str) -> str | None:
    """The run's report beside the page, as a relative link, if it is there."""
    if os.path.isfile(os.path.join(folder, run_id, "report.html")):
        return urllib.parse.quote(run_id, safe="") + "/report.html"
    return None


def _label(point: Point) -> str:
    s = point.summary
    level = figures.level(s.confidence)
    parts = [f"run {point.run.run_id}", point.run.started_at[:19].replace("T", " ") + " UTC",
             "passed" if point.passed else "failed"]
    for name, key, ci in SERIES:
        value, interval = getattr(s, key), getattr(s, ci)
        shown = figures.number(value) if key == "mean_score" else figures.percent(value)
        if interval:
            low, high = (figures.number(v) if key == "mean_score" else figures.percent(v) for v in interval)
            shown += f" ({level} {low}–{high})"
        parts.append(f"{name} {shown}")
    return clean_text(" · ".join(parts), limit=2000)


def _axis_label(point: Point, x: float) -> dict:
    """Under a run's point: the day and time it started (UTC) and its first tag."""
    started = point.run.started_at
    day = f"{MONTHS[int(started[5:7]) - 1]} {int(started[8:10])}" if len(started) >= 16 else started
    tag = point.tags[0] if point.tags else ""
    return {"x": x, "date": f"{day} {started[11:16]}", "tag": clean_text(tag if len(tag) <= 14 else tag[:13] + "…", limit=20)}


def _chart(history: ExperimentHistory, link) -> dict:
    count = len(history.points)
    series = []
    for index, (name, key, ci) in enumerate(SERIES):
        points = []
        for at, point in enumerate(history.points):
            value = getattr(point.summary, key)
            if value is None:
                continue
            interval = getattr(point.summary, ci)
            points.append({"x": _x(at, count), "y": _y(value), "low": _y(interval[0]) if interval else None,
                           "high": _y(interval[1]) if interval else None, "label": _label(point),
                           "href": link(point.run.run_id), "failed": not point.passed})
        series.append({"name": name, "class": f"series-{index}", "points": points,
                       "path": " ".join(f"{'M' if i == 0 else 'L'}{p['x']},{p['y']}" for i, p in enumerate(points))})
    ticks = [{"y": _y(v), "label": f"{v:g}"} for v in (0, 0.25, 0.5, 0.75, 1)]
    step = -(-count // AXIS_LABELS)
    labelled = sorted(range(count - 1, -1, -step))  # counted back from the newest, which is on the right
    axis = [_axis_label(history.points[at], _x(at, count)) for at in labelled]
    return {"width": WIDTH, "height": HEIGHT, "left": LEFT, "right": WIDTH - RIGHT, "series": series, "ticks": ticks,
            "axis": axis, "axis_y": HEIGHT - BOTTOM + 16}


def _view(history: ExperimentHistory, link) -> dict:
    last = history.points[-1]
    return {
        "id": clean_text(history.experiment_id, limit=1000), "chart": _chart(history, link), "runs": len(history.points),
        "latest": {"run": last.run.run_id, "pass_rate": figures.percent(last.summary.pass_rate),
                   "mean_score": figures.number(last.summary.mean_score), "passed": last.passed},
        "rows": [{"run": clean_text(p.run.run_id, limit=200), "href": link(p.run.run_id),
                  "started": p.run.started_at[:19].replace("T", " "), "status": p.run.status, "passed": p.passed,
                  "pass_rate": figures.percent(p.summary.pass_rate), "mean_score": figures.number(p.summary.mean_score),
                  "count": p.summary.completed, "tags": ", ".join(p.tags)} for p in reversed(history.points)],
        "churn": [{"id": clean_text(c.item_id, limit=1000), "changes": c.changes,
                   "statuses": [s or "–" for s in c.statuses]} for c in history.churn],
    }


def render(histories: Sequence[ExperimentHistory], path: str, store_name: str,
           link: Callable[[str], str | None] | None = None, items_title: str = "Items whose verdict changes most") -> str:
    """The page for ``histories``, to be written at ``path`` (the folder its links start from);
    ``link``: a run's address instead (the Eval Center's), for a run id."""
    from markupsafe import Markup

    folder = os.path.dirname(os.path.abspath(path))
    link = link or (lambda run_id: _link(folder, run_id))
    style = asset("report.css") + asset("history.css")
    csp = ("default-src 'none'; style-src " + csp_hash(style) + "; img-src data:; connect-src 'none';"
           " form-action 'none'; base-uri 'none'; object-src 'none'")
    return template("history.html").render(experiments=[_view(h, link) for h in histories], csp=csp,
                                           style=Markup(style), store=clean_text(store_name, limit=1000),
                                           items_title=items_title)


def write(path: str, histories: Sequence[ExperimentHistory], store_name: str) -> None:
    """The page written at ``path`` (whole, or not at all); UsageError when it cannot be."""
    from yamleval.records.errors import UsageError, display_path
    from yamleval.reporting.files import atomic_output

    text = render(histories, path, store_name)
    try:
        with atomic_output(path) as out:
            out.write(text)
    except OSError as exc:
        raise UsageError(f"cannot write {display_path(path)}: {exc.strerror or exc}; choose another --html file"
                         " or make its folder writable") from None
