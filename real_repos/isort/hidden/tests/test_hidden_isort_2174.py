# SPECSNAP-CANARY isort 9c2e7b14-5d3a-4f86-b0e1-7a4c62d8e93f
"""Hidden tests for ISORT-2174: the hanging-indent wrap mode (backslash continuations)
appended a trailing comma when include_trailing_comma was set, which is a syntax error."""
import isort
from isort.wrap_modes import WrapModes

SOURCE = "from collections import ChainMap, OrderedDict, defaultdict, deque, namedtuple\n"


def _compiles(code: str) -> bool:
    try:
        compile(code, "<isort output>", "exec")
    except SyntaxError:
        return False
    return True


def test_hanging_indent_with_trailing_comma_is_valid_python():
    result = isort.code(
        SOURCE,
        multi_line_output=WrapModes.HANGING_INDENT,
        line_length=40,
        include_trailing_comma=True,
    )
    assert result == (
        "from collections import ChainMap, \\\n"
        "    OrderedDict, defaultdict, deque, \\\n"
        "    namedtuple\n"
    )
    assert _compiles(result)


def test_trailing_comma_setting_does_not_change_hanging_indent_output():
    with_comma = isort.code(
        SOURCE, multi_line_output=WrapModes.HANGING_INDENT, line_length=40, include_trailing_comma=True
    )
    without_comma = isort.code(
        SOURCE, multi_line_output=WrapModes.HANGING_INDENT, line_length=40, include_trailing_comma=False
    )
    assert with_comma == without_comma


def test_hanging_indent_with_comment_and_trailing_comma_compiles():
    source = (
        "from collections import ChainMap, OrderedDict, defaultdict, deque, namedtuple"
        "  # used below\n"
    )
    result = isort.code(
        source,
        multi_line_output=WrapModes.HANGING_INDENT,
        line_length=40,
        include_trailing_comma=True,
    )
    assert _compiles(result)
    assert result.count("# used below") == 1
