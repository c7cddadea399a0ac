# SPECSNAP-CANARY isort 9c2e7b14-5d3a-4f86-b0e1-7a4c62d8e93f
"""Hidden tests for ISORT-2282: the inline comment of one ``from pkg import ...`` line was
copied onto another ``from pkg import ...`` line emitted after an aliased import."""
import isort


def test_inline_comment_is_not_copied_to_later_from_line():
    source = "from pkg import alpha, beta  # keep\nfrom pkg import gamma as g\nfrom pkg import zeta\n"
    result = isort.code(source)
    assert result.count("# keep") == 1
    assert result == source


def test_comment_not_copied_after_each_aliased_import():
    source = (
        "from pkg import a, b  # keep\n"
        "from pkg import c as cc\n"
        "from pkg import d\n"
        "from pkg import e as ee\n"
        "from pkg import f\n"
    )
    assert isort.code(source) == source
    assert isort.check_code(source) is True
