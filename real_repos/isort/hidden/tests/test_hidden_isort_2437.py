# SPECSNAP-CANARY isort 9c2e7b14-5d3a-4f86-b0e1-7a4c62d8e93f
"""Hidden tests for ISORT-2437: check_code(ignore_whitespace=True) reported a change when
the only difference was a blank line holding a tab character."""
import isort


def test_tab_only_blank_line_is_ignored(capsys):
    source = 'import os\nimport sys\n\n\t\ndef main():\n    print("hi")\n'
    assert isort.check_code(source, ignore_whitespace=True) is True
    out, err = capsys.readouterr()
    assert out + err == ""


def test_mixed_tab_and_space_blank_line_is_ignored():
    source = "import json\nimport re\n \t \n\nVALUE = 1\n"
    assert isort.check_code(source, ignore_whitespace=True) is True
    # a real ordering problem is still reported
    assert isort.check_code("import re\nimport json\n \t \n\nVALUE = 1\n", ignore_whitespace=True) is False
