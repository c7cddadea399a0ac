# SPECSNAP-CANARY isort 9c2e7b14-5d3a-4f86-b0e1-7a4c62d8e93f
"""Hidden tests for ISORT-1971: with float_to_top and add_imports, check_code reported
a file as unsorted even though the import to add was already there."""
import isort

SETTINGS = {"float_to_top": True, "add_imports": ["import os"]}


def test_output_of_code_passes_check_code():
    sorted_code = isort.code("print('hi')\n", **SETTINGS)
    assert sorted_code == "import os\n\nprint('hi')\n"
    assert isort.check_code(sorted_code, **SETTINGS) is True


def test_already_present_import_is_not_a_change(capsys):
    assert isort.check_code("import os\nimport sys\n\nx = 1\n", **SETTINGS) is True
    out, err = capsys.readouterr()
    assert out + err == ""


def test_missing_import_is_still_reported():
    assert isort.check_code("import sys\n\nx = 1\n", **SETTINGS) is False
    assert isort.check_code("import os\n\nx = 1\n", **SETTINGS) is True
