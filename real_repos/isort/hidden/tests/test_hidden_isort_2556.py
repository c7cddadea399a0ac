# SPECSNAP-CANARY isort 9c2e7b14-5d3a-4f86-b0e1-7a4c62d8e93f
"""Hidden tests for ISORT-2556: the NOQA wrap mode prepended another ``NOQA`` on every run
to an over-long import that also had its own comment."""
import isort
from isort.wrap_modes import WrapModes


def test_noqa_mode_is_idempotent_with_own_comment():
    source = (
        "from a import (  # leading\n"
        "    b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v, w, x, y, z\n"
        ")\n"
    )
    first = isort.code(source, multi_line_output=WrapModes.NOQA)
    second = isort.code(first, multi_line_output=WrapModes.NOQA)
    assert second == first
    assert second.count("NOQA") == 1


def test_noqa_mode_short_line_length_stable():
    source = "from pkg.sub import alpha, beta, gamma  # keep me\n"
    first = isort.code(source, multi_line_output=WrapModes.NOQA, line_length=30)
    assert first == "from pkg.sub import alpha, beta, gamma  # NOQA keep me\n"
    assert isort.code(first, multi_line_output=WrapModes.NOQA, line_length=30) == first
    assert isort.check_code(first, multi_line_output=WrapModes.NOQA, line_length=30) is True
