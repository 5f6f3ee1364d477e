import pytest

from yamleval.builtins.tools import Tool, ToolError, build_tools


def test_builtin_names(tmp_path):
    tools = build_tools(["calculator", "python_exec", "file_ops", "web_fetch"], str(tmp_path))
    assert [t.name for t in tools] == ["calculator", "python_exec", "file_ops", "web_fetch"]
    spec = tools[0].spec()
    assert spec["type"] == "function"
    assert spec["function"]["name"] == "calculator"
    assert spec["function"]["parameters"]["required"] == ["expression"]
    # options and the sandbox are bound, never offered to the model
    assert list(tools[1].parameters["properties"]) == ["code"]
    assert list(tools[2].parameters["properties"]) == ["action", "path", "content"]
    assert tools[0].call({"expression": "2 + 3"}) == "5"


def test_custom_tool_schema_from_signature_and_docstring(tmp_path):
    (tool,) = build_tools([{"uses": "tools.sample_tools:lookup"}], str(tmp_path))
    assert tool.name == "lookup"
    assert tool.description == "Price of an item in the shop."
    assert tool.parameters == {
        "type": "object",
        "properties": {
            "item": {"type": "string", "description": "the fruit's name, lower case."},
            "quantity": {"type": "integer", "description": "how many to price.", "default": 1},
            "unit": {"enum": ["each", "dozen"], "type": "string", "default": "each"},
            "note": {"type": ["string", "null"], "default": None},
            "tags": {"type": ["array", "null"], "items": {"type": "string"}, "default": None},
        },
        "required": ["item"],
        "additionalProperties": False,
    }
    assert tool.call({"item": "apple", "quantity": 2, "unit": "dozen"}) == '{"item": "apple", "total": 30.0}'
    assert tool.call('{"item": "pear"}') == '{"item": "pear", "total": 2.0}'


def test_custom_tool_errors_become_tool_errors(tmp_path):
    (tool,) = build_tools(["tools.sample_tools:lookup"], str(tmp_path))
    with pytest.raises(ToolError, match="lookup: bad arguments: 'item' is a required property"):
        tool.call({})
    with pytest.raises(ToolError, match="lookup: bad arguments: quantity: 'two' is not of type 'integer'"):
        tool.call({"item": "apple", "quantity": "two"})
    with pytest.raises(ToolError, match="lookup failed: KeyError: 'plum'"):
        tool.call({"item": "plum"})
    with pytest.raises(ToolError, match="not valid JSON"):
        tool.call("{item")


def test_with_options_and_sandbox_are_bound(tmp_path):
    (tool,) = build_tools([{"uses": "tools.sample_tools:greet", "name": "say_hi",
                            "description": "Say hi.", "with": {"greeting": "ahoy"}}], str(tmp_path))
    assert (tool.name, tool.description) == ("say_hi", "Say hi.")
    assert list(tool.parameters["properties"]) == ["name"]
    assert tool.call({"name": "Ann"}) == f"ahoy Ann from {tmp_path}"


def test_explicit_parameters_win(tmp_path):
    parameters = {"type": "object", "properties": {"item": {"type": "string", "enum": ["apple"]}},
                  "required": ["item"]}
    (tool,) = build_tools([{"uses": "tools.sample_tools:lookup", "parameters": parameters}],
                          str(tmp_path))
    assert tool.parameters == parameters
    with pytest.raises(ToolError, match="'pear' is not one of"):
        tool.call({"item": "pear"})
    assert isinstance(tool, Tool)


@pytest.mark.parametrize("entries, message", [
    (["calculater"], "tools[0]: unknown tool 'calculater' (did you mean 'calculator'?)"),
    (["shell"], "tools[0]: unknown tool 'shell' (built-in tools: calculator, file_ops, python_exec, "
                "web_fetch, web_search; or use package.module:function)"),
    (["calculator", {"uses": "python_exec", "with": {"timout": 3}}],
     "tools[1]: unknown option 'timout' in `with:` (did you mean 'timeout'? It accepts: code, timeout, "
     "memory_mb, max_output, max_file_mb)"),
    ([{"uses": "calculator", "with": {"digits": 3}}],
     "tools[0]: unknown option 'digits' in `with:` (it accepts: expression)"),
    ([{"uses": "calculator", "use": 1}], "tools[0]: unknown key 'use' (did you mean 'uses'?)"),
    ([{"name": "x"}], "tools[0]: a tool needs `uses:`"),
    ([3], "tools[0]: a tool is a name or a mapping with `uses:`, not int"),
    (["tools.sample_tools:lokup"], "tools[0]: tool 'tools.sample_tools:lokup': module 'tools.sample_tools' has no "
                                   "attribute 'lokup' (did you mean 'tools.sample_tools:lookup'?)"),
    (["tools.no_such_module:f"], "tools[0]: tool 'tools.no_such_module:f': no module named 'tools.no_such_module'"),
    (["calculator", "calculator"], "tools[1]: a second tool named 'calculator'"),
    ([{"uses": "calculator", "name": "two words"}], "tools[0]: tool name 'two words' must be"),
])
def test_bad_entries(tmp_path, entries, message):
    with pytest.raises(ValueError) as raised:
        build_tools(entries, str(tmp_path))
    assert str(raised.value).startswith(message)
