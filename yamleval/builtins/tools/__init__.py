"""Tools an agent under test can call: the built-ins and ``package.module:function`` ones."""
from yamleval.builtins.tools.build import build_tools
from yamleval.builtins.tools.tool import Tool, ToolError

__all__ = ["Tool", "ToolError", "build_tools"]
