import os

import pytest

from yamleval.builtins.tools import ToolError, build_tools


@pytest.fixture
def file_ops(tmp_path):
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    (tool,) = build_tools(["file_ops"], str(sandbox))
    return lambda **arguments: tool.call(arguments)


def test_write_read_list_delete(file_ops, tmp_path):
    assert file_ops(action="write", path="notes/a.txt", content="héllo") == "wrote 6 bytes to notes/a.txt"
    assert (tmp_path / "sandbox" / "notes" / "a.txt").read_text(encoding="utf-8") == "héllo"
    assert file_ops(action="read", path="notes/a.txt") == "héllo"
    assert file_ops(action="list") == "notes/"
    assert file_ops(action="list", path="notes") == "a.txt  6 bytes"
    assert file_ops(action="delete", path="notes/a.txt") == "deleted notes/a.txt"
    assert file_ops(action="list", path="notes") == "notes is empty"
    assert file_ops(action="delete", path="notes") == "deleted folder notes"
    assert not (tmp_path / "sandbox" / "notes").exists()


@pytest.mark.parametrize("path", ["../x", "notes/../../x", "/etc/passwd", "~/x"])
@pytest.mark.parametrize("action", ["read", "write", "list", "delete"])
def test_paths_out_of_the_sandbox_are_refused(file_ops, tmp_path, path, action):
    (tmp_path / "x").write_text("outside")
    with pytest.raises(ToolError, match="is refused"):
        file_ops(action=action, path=path, content="overwritten")
    assert (tmp_path / "x").read_text() == "outside"


def test_a_symlink_to_etc_inside_the_sandbox_is_refused(file_ops, tmp_path):
    os.symlink("/etc", tmp_path / "sandbox" / "etc")
    for action, path in [("list", "etc"), ("read", "etc/passwd"), ("write", "etc/x"),
                         ("delete", "etc"), ("delete", "etc/passwd")]:
        with pytest.raises(ToolError, match="leads outside the sandbox"):
            file_ops(action=action, path=path, content="x")
    assert os.path.exists("/etc/passwd")


def test_a_symlink_inside_the_sandbox_is_followed(file_ops, tmp_path):
    (tmp_path / "sandbox" / "real.txt").write_text("data")
    os.symlink("real.txt", tmp_path / "sandbox" / "link.txt")
    assert file_ops(action="read", path="link.txt") == "data"


def test_errors_and_size_caps(tmp_path):
    (tool,) = build_tools([{"uses": "file_ops", "with": {"max_bytes": 10}}], str(tmp_path))
    with pytest.raises(ToolError, match="more than the 10 allowed"):
        tool.call({"action": "write", "path": "big", "content": "x" * 11})
    (tmp_path / "big").write_text("y" * 20)
    assert tool.call({"action": "read", "path": "big"}).startswith("y" * 10 + "\n[truncated")
    with pytest.raises(ToolError, match="no file 'missing'"):
        tool.call({"action": "read", "path": "missing"})
    with pytest.raises(ToolError, match="write needs `content`"):
        tool.call({"action": "write", "path": "a"})
    with pytest.raises(ToolError, match="cannot be deleted"):
        tool.call({"action": "delete", "path": "."})
    with pytest.raises(ToolError, match="bad arguments: action: 'move' is not one of"):
        tool.call({"action": "move", "path": "a"})
