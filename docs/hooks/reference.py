"""Build the YAML reference page from schema/yamleval.schema.json when the manual is built,
so the reference says what the schema says and cannot drift from it."""
from __future__ import annotations

import json
import os

MARKER = "<!-- schema reference -->"
PAGE = "reference.md"

# The definitions with keys of their own, in reading order; any other object is listed after.
SECTIONS = [
    ("project_file", "Project file"), ("experiment_keys", "Experiment"), ("defaults", "defaults:"),
    ("model", "models: entry"), ("rate_limit", "rate_limit:"), ("dataset", "dataset:"), ("item", "Dataset item"),
    ("criterion", "pass_criteria: entry"), ("variant", "variants: entry"), ("budget", "budget:"),
    ("cache", "cache:"), ("reports", "reports:"), ("executor", "executor:"),
]


def on_page_markdown(markdown, page, config, files):
    """Put the generated reference where the page holds the marker."""
    if page.file.src_uri != PAGE or MARKER not in markdown:
        return markdown
    path = os.path.join(os.path.dirname(config.config_file_path), "schema", "yamleval.schema.json")
    with open(path, encoding="utf-8") as file:
        schema = json.load(file)
    return markdown.replace(MARKER, render(schema))


def render(schema: dict) -> str:
    """The reference as Markdown: a table of keys per definition, then the built-in plugins."""
    defs = schema["$defs"]
    named = dict(SECTIONS)
    named.update({key: f"{key}:" for key, node in defs.items()
                  if key not in named and node.get("properties") and key not in ("experiment_file",)})
    out = []
    for key, title in named.items():
        node = defs[key]
        out += [f"## {title} {{#{_anchor(key)}}}", ""]
        if node.get("description"):
            out += [_cell(node["description"]), ""]
        required = set(node.get("required", []))
        out += ["| key | type | default | allowed values | description |", "|---|---|---|---|---|"]
        for name, prop in node["properties"].items():
            mark = " (required)" if name in required else ""
            out.append(f"| `{name}`{mark} | {_type(prop, defs)} | {_default(prop, defs)} | "
                       f"{_allowed(prop, defs)} | {_cell(_description(prop, defs))} |")
        out.append("")
    out += _plugins(defs, "runner", "Built-in runners")
    out += _plugins(defs, "scorer", "Built-in scorers")
    return "\n".join(out)


def _anchor(key: str) -> str:
    return "def-" + key.replace("_", "-")


def _ref(prop: dict, defs: dict) -> tuple[str | None, dict]:
    name = prop.get("$ref", "").rsplit("/", 1)[-1] or None
    return name, (defs.get(name, {}) if name else prop)


def _type(prop: dict, defs: dict) -> str:
    name, target = _ref(prop, defs)
    if name in ("runner", "scorer"):
        return f"[{name}](#builtin-{name}s)"
    if name and "$ref" in target and not target.get("properties"):
        name, target = _ref(target, defs)
    if name and target.get("properties"):
        return f"[{name}](#{_anchor(name)})"
    if "const" in target:
        return "constant"
    kinds = target.get("type")
    if kinds:
        kinds = kinds if isinstance(kinds, list) else [kinds]
        text = " or ".join(kinds)
        items = target.get("items")
        if "array" in kinds and isinstance(items, dict):
            text += f" of {_type(items, defs)}"
        return text
    branches = target.get("anyOf") or target.get("oneOf")
    if branches:
        return " or ".join(dict.fromkeys(_type(branch, defs) for branch in branches))
    if "enum" in target:
        return "one of the values"
    return f"see {name}" if name else "any"


def _default(prop: dict, defs: dict) -> str:
    _, target = _ref(prop, defs)
    for node in (prop, target):
        if "default" in node:
            return f"`{json.dumps(node['default'])}`"
    return ""


def _allowed(prop: dict, defs: dict) -> str:
    _, target = _ref(prop, defs)
    if "const" in target:
        return f"`{json.dumps(target['const'])}`"
    enum = target.get("enum") or next((b["enum"] for b in target.get("anyOf", []) if "enum" in b), None)
    if enum:
        return ", ".join(f"`{value}`" for value in enum)
    bounds = [f"{word} {target[key]}" for key, word in
              (("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤"), ("exclusiveMaximum", "<")) if key in target]
    return ", ".join(bounds)


def _description(prop: dict, defs: dict) -> str:
    name, target = _ref(prop, defs)
    return prop.get("description") or target.get("description") or ""


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _plugins(defs: dict, kind: str, title: str) -> list[str]:
    """Each built-in of a kind: what it does and the arguments its `with:` takes."""
    uses = defs[f"{kind}_uses"]
    [listed] = [branch for branch in uses["anyOf"] if "enum" in branch]
    about = dict(zip(listed["enum"], listed.get("enumDescriptions", [])))
    arguments = {}
    for rule in defs[f"{kind}_with"].get("allOf", []):
        name = rule.get("if", {}).get("properties", {}).get("uses", {}).get("const")
        spec = rule.get("then", {}).get("properties", {}).get("with")
        if name and spec:
            arguments[name] = spec
    [entry] = [branch for branch in defs[kind]["anyOf"] if branch.get("type") == "object"]
    keys = ", ".join(f"`{key}`" for key in entry["properties"])
    out = [f"## {title} {{#builtin-{kind}s}}", "",
           f"A {kind} is a name (`uses:` alone) or a mapping with the keys {keys}. "
           + _cell(uses.get("description", "")), "",
           f"| `uses:` | what it does | `with:` arguments (default) |", "|---|---|---|"]
    for name in listed["enum"]:
        spec = arguments.get(name, {})
        required = set(spec.get("required", []))
        args = []
        for arg, node in spec.get("properties", {}).items():
            text = f"`{arg}`"
            if arg in required:
                text += " (required)"
            elif "default" in node:
                text += f" ({json.dumps(node['default'])})"
            args.append(text)
        out.append(f"| `{name}` | {_cell(about.get(name, ''))} | {', '.join(args) or 'none'} |")
    out.append("")
    return out
