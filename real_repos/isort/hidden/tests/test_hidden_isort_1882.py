# SPECSNAP-CANARY isort 9c2e7b14-5d3a-4f86-b0e1-7a4c62d8e93f
"""Hidden tests for ISORT-1882: in the FUTURE section a plain ``import __future__`` was
placed above ``from __future__ import ...``, which Python rejects."""
import isort


def _compiles(code: str) -> bool:
    try:
        compile(code, "<isort output>", "exec")
    except SyntaxError:
        return False
    return True


def test_from_future_import_goes_before_plain_future_import():
    result = isort.code("import __future__\nfrom __future__ import annotations\n")
    assert result == "from __future__ import annotations\nimport __future__\n"


def test_future_section_output_compiles():
    source = "import sys\nimport __future__\nfrom __future__ import division, annotations\n"
    result = isort.code(source)
    assert _compiles(result)
    assert result == (
        "from __future__ import annotations, division\nimport __future__\n\nimport sys\n"
    )


def test_aliased_plain_future_import_goes_after_from_import():
    result = isort.code("import __future__ as fut\nfrom __future__ import annotations\n")
    assert result.splitlines()[0] == "from __future__ import annotations"
