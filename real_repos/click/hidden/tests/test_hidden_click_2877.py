# SPECSNAP-CANARY click 3f6a9d20-8b1e-4c57-a0d4-6e2b91c7f5a8
"""CLICK-2877: ``click.Path(allow_dash=True)`` compares a value only with the
dash of its own kind (``"-"`` for text, ``b"-"`` for bytes), so no bytes/str
comparison happens (which is an error under ``python -bb``)."""
import os
import subprocess
import sys

import click


class _WatchedStr(str):
    """A str that notes the type of everything it is compared with."""

    def __eq__(self, other):
        self.seen.append(type(other).__name__)
        return str.__eq__(self, other)

    __hash__ = str.__hash__


class _WatchedBytes(bytes):
    """A bytes value that notes the type of everything it is compared with."""

    def __eq__(self, other):
        self.seen.append(type(other).__name__)
        return bytes.__eq__(self, other)

    __hash__ = bytes.__hash__


def test_dash_text_not_compared_with_bytes():
    dash = _WatchedStr("-")
    dash.seen = []
    other = _WatchedStr("no-such-file-here.txt")
    other.seen = []
    path_type = click.Path(allow_dash=True)
    assert path_type.convert(dash, None, None) == "-"
    assert path_type.convert(other, None, None) == "no-such-file-here.txt"
    assert dash.seen.count("bytes") == 0
    assert other.seen.count("bytes") == 0


def test_dash_bytes_not_compared_with_text():
    value = _WatchedBytes(b"no-such-file-here.bin")
    value.seen = []
    click.Path(allow_dash=True).convert(value, None, None)
    assert value.seen.count("str") == 0


_BB_SCRIPT = """
import sys
sys.path.insert(0, sys.argv[1])
import click
path_type = click.Path(allow_dash=True)
print(path_type.convert("-", None, None))
print(path_type.convert(b"-", None, None).decode())
print(path_type.convert("no-such-file-here.txt", None, None))
"""


def test_allow_dash_under_python_bb():
    source_root = os.path.dirname(os.path.dirname(os.path.abspath(click.__file__)))
    proc = subprocess.run(
        [sys.executable, "-I", "-B", "-bb", "-c", _BB_SCRIPT, source_root],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["-", "-", "no-such-file-here.txt"]
