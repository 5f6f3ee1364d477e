"""The Eval Center's own pages (``yamleval serve``): the runs, newest first, with filters and
paging, and the sign-in page. Every other page it serves is a report's (``html.served_page``,
``compare_html``, ``history_html``). Jinja2 autoescapes every value; neither page has a script.
"""
from __future__ import annotations

import urllib.parse
from typing import Any, Sequence

from yamleval.reporting import html
from yamleval.reporting.html import asset, template
from yamleval.reporting.text import clean_text


def page_csp(style: str) -> str:
    """A page without a script whose forms send to the server itself."""
    return html.page_csp((), style, form_action="'self'")


def run_href(run_id: str) -> str:
    return "/runs/" + urllib.parse.quote(run_id, safe="")


def _query(filters: dict[str, Any], **changed: Any) -> str:
    wanted = {k: v for k, v in {**filters, **changed}.items() if v not in (None, "", 0)}
    return "/?" + urllib.parse.urlencode(wanted) if wanted else "/"


def runs_page(listed: Sequence[dict[str, Any]], total: int, filters: dict[str, Any], limit: int, store: str,
              statuses: Sequence[str]) -> str:
    """``listed``: the runs of this page, each as ``/api/runs`` lists it; ``filters``: tag,
    experiment, status and offset as asked; ``statuses``: those the status filter offers."""
    from markupsafe import Markup

    style = asset("report.css")
    offset = filters.get("offset") or 0
    rows = []
    for run in listed:
        progress = run["progress"]
        planned = progress["planned"]
        rows.append({
            "id": clean_text(run["run_id"], limit=200), "href": run_href(run["run_id"]), "verdict": run["verdict"],
            "started": (run["started_at"] or "")[:19].replace("T", " "),
            "finished": f"{progress['finished']:,}", "planned": "?" if planned is None else f"{planned:,}",
            "done": round(progress["done"], 2), "experiments": [clean_text(e, limit=200) for e in run["experiments"]],
            "tags": [{"name": clean_text(t, limit=200), "href": _query({"tag": t})} for t in run["tags"]],
            "commit": clean_text((run["git_commit"] or "—")[:12], limit=20)})
    pages = {"shown": f"{offset + 1:,}–{offset + len(listed):,} of {total:,}" if listed else f"none of {total:,}",
             "previous": _query(filters, offset=max(0, offset - limit)) if offset else None,
             "next": _query(filters, offset=offset + limit) if offset + limit < total else None}
    return template("runs.html").render(
        csp=page_csp(style), style=Markup(style), runs=rows, pages=pages, filters=filters, statuses=statuses,
        store=clean_text(store, limit=1000), served={"run_href": None, "results": "/api/runs"})


def sign_in_page(wrong: bool, next_path: str) -> str:
    from markupsafe import Markup

    style = asset("report.css")
    return template("sign_in.html").render(csp=page_csp(style), style=Markup(style), wrong=wrong, next=next_path)


def message_page(title: str, message: str) -> str:
    """A page that says why a request was not answered (no run by that id, a store that cannot be read)."""
    from markupsafe import Markup

    style = asset("report.css")
    return template("message.html").render(csp=page_csp(style), style=Markup(style), title=title,
                                           message=clean_text(message, limit=5000))
