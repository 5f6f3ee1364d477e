"""``file_ops``: read, write, list and delete files inside the item's sandbox folder only."""
from __future__ import annotations

import os
import shutil
from typing import Literal, Optional

from yamleval.builtins.tools.tool import ToolError

MAX_ENTRIES = 500


def _inside(sandbox: str, path: str) -> str:
    """The real path of ``path`` in the sandbox; a ToolError if it leads out of it."""
    if "\x00" in path:
        raise ToolError(f"path {path!r} is refused: it holds a NUL character")
    if os.path.isabs(path) or path.startswith("~"):
        raise ToolError(f"path '{path}' is refused: use a path relative to the sandbox folder")
    root = os.path.realpath(sandbox)
    # realpath follows every symlink, so a link to /etc inside the sandbox resolves to /etc.
    target = os.path.realpath(os.path.join(root, path))
    if os.path.commonpath([root, target]) != root:
        raise ToolError(f"path '{path}' is refused: it leads outside the sandbox folder")
    return target


def _single_link(target: str, path: str) -> None:
    """Refuse a file with a second name: realpath cannot see where a hard link leads, and code
    run in the sandbox could have linked any file it can reach (a fresh sandbox has no others)."""
    if os.path.isfile(target) and os.stat(target).st_nlink > 1:
        raise ToolError(f"path '{path}' is refused: it is a hard link, which may lead outside the sandbox folder")


def _read(target: str, path: str, max_bytes: int) -> str:
    if not os.path.isfile(target):
        raise ToolError(f"no file '{path}'" + (" (it is a folder)" if os.path.isdir(target) else ""))
    _single_link(target, path)
    with open(target, "rb") as f:
        data = f.read(max_bytes + 1)
    text = data[:max_bytes].decode("utf-8", errors="replace")
    if len(data) > max_bytes:
        text += f"\n[truncated: the file has {os.path.getsize(target)} bytes, shown {max_bytes}]"
    return text


def _write(target: str, path: str, content: Optional[str], max_bytes: int) -> str:
    if content is None:
        raise ToolError("write needs `content`")
    data = content.encode("utf-8")
    if len(data) > max_bytes:
        raise ToolError(f"content is {len(data)} bytes, more than the {max_bytes} allowed")
    if os.path.isdir(target):
        raise ToolError(f"'{path}' is a folder")
    _single_link(target, path)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "wb") as f:
        f.write(data)
    return f"wrote {len(data)} bytes to {path}"


def _list(target: str, path: str) -> str:
    if os.path.isfile(target):
        return f"{path}  {os.path.getsize(target)} bytes"
    if not os.path.isdir(target):
        raise ToolError(f"no file or folder '{path}'")
    names = sorted(os.listdir(target))
    lines = []
    for name in names[:MAX_ENTRIES]:
        full = os.path.join(target, name)
        if os.path.isdir(full):
            lines.append(f"{name}/")
        else:
            lines.append(f"{name}  {os.path.getsize(full) if os.path.isfile(full) else 0} bytes")
    if len(names) > MAX_ENTRIES:
        lines.append(f"[{len(names) - MAX_ENTRIES} more entries]")
    return "\n".join(lines) if lines else f"{path} is empty"


def _delete(target: str, path: str, sandbox: str) -> str:
    if target == os.path.realpath(sandbox):
        raise ToolError("the sandbox folder itself cannot be deleted")
    if os.path.isdir(target):
        shutil.rmtree(target)  # removes links inside, never what they point to
        return f"deleted folder {path}"
    if not os.path.lexists(target):
        raise ToolError(f"no file or folder '{path}'")
    os.remove(target)
    return f"deleted {path}"


def file_ops(action: Literal["read", "write", "list", "delete"], path: str = ".",
             content: Optional[str] = None, *, sandbox: str, max_bytes: int = 1_000_000) -> str:
    """Read, write, list or delete files in your working folder.

    Args:
        action: "read", "write", "list" or "delete".
        path: a path relative to the working folder; "." is the folder itself.
        content: the text to write (for "write" only).
    """
    target = _inside(sandbox, path)
    if action == "read":
        return _read(target, path, max_bytes)
    if action == "write":
        return _write(target, path, content, max_bytes)
    if action == "list":
        return _list(target, path)
    if action == "delete":
        return _delete(target, path, sandbox)
    raise ToolError(f"unknown action '{action}': use read, write, list or delete")
