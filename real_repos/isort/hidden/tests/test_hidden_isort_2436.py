# SPECSNAP-CANARY isort 9c2e7b14-5d3a-4f86-b0e1-7a4c62d8e93f
"""Hidden tests for ISORT-2436: when the first non-empty line ended with a form feed, the
form feed was taken as part of the detected line ending (and then written out as such,
e.g. on the blank line isort puts between an import section and a cimport section)."""
import isort


def test_form_feed_before_crlf_is_not_part_of_line_ending():
    source = "# tools\x0c\r\nimport numpy\r\nimport abc\r\n\r\ncimport cython\r\n"
    assert isort.code(source) == (
        "# tools\x0c\r\nimport abc\r\n\r\nimport numpy\r\n\r\ncimport cython\r\n"
    )


def test_form_feed_before_lf_is_not_copied_into_output():
    source = "#\x0c\nimport os\n\ncimport cython\n"
    result = isort.code(source)
    assert result.count("\x0c") == 1
    assert result == source
    assert isort.check_code(source) is True
