"""A new project's files: evals.yaml from the starter template, a dataset of cases, an offline
runner plugin and the schema editors read (``yamleval init``)."""
from __future__ import annotations

import json
import os
from importlib import resources

from yamleval.config.schema import SCHEMA_FILE, schema_text
from yamleval.records.errors import UsageError

# What a new project holds besides evals.yaml (from a template) and the schema.
STARTER_FILES = ("datasets/cases.yaml", "plugins/__init__.py", "plugins/assistant.py")


def starter_files(base_url: str | None, model: str | None) -> dict[str, str]:
    """The files of a new project by name: one testing ``model`` at ``base_url``, or, without
    them, an offline stand-in for a model."""
    import jinja2

    if (base_url is None) != (model is None):
        raise UsageError("give --base-url and --model together: the endpoint and the model to ask there")
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        raise UsageError(f"--base-url {base_url!r} is no http:// or https:// URL; give the endpoint's, e.g."
                         " http://127.0.0.1:8080/v1")
    if "${" in (base_url or "") + (model or ""):
        raise UsageError("--base-url and --model are written into evals.yaml as given: give values, not ${VAR}")
    starter = resources.files("yamleval.config") / "starter"
    template = jinja2.Template((starter / "evals.yaml.j2").read_text(encoding="utf-8"), keep_trailing_newline=True)
    # JSON strings are YAML strings: a URL or name with any character stays one value
    files = {"evals.yaml": template.render(base_url=json.dumps(base_url), model=model and json.dumps(model))}
    files.update((name, (starter / name).read_text(encoding="utf-8")) for name in STARTER_FILES)
    files[SCHEMA_FILE] = schema_text()
    return files


def write_project(files: dict[str, str], folder: str = ".", force: bool = False) -> list[str]:
    """Write ``files`` into ``folder``; none of them when one is there already, unless ``force``."""
    paths = {name: os.path.join(folder, name) for name in files}
    there = [name for name, path in paths.items() if os.path.lexists(path)]
    if there and not force:
        raise UsageError(f"{', '.join(there)} already exist{'s' if len(there) == 1 else ''}; "
                         "nothing was written (--force overwrites)")
    for name, text in files.items():
        try:
            os.makedirs(os.path.dirname(paths[name]) or ".", exist_ok=True)
            with open(paths[name], "w", encoding="utf-8", newline="\n") as out:
                out.write(text)
        except OSError as exc:
            raise UsageError(f"cannot write {name}: {exc.strerror or exc}") from None
    return list(files)
