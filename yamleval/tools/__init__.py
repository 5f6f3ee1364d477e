"""Tools an agent under test can call: the built-ins and ``package.module:function`` ones."""
from yamleval.tools.build import build_tools
from yamleval.tools.tool import Tool, ToolError

__all__ = ["Tool", "ToolError", "build_tools"]
