# SPECSNAP-CANARY click 3f6a9d20-8b1e-4c57-a0d4-6e2b91c7f5a8
"""CLICK-3487: echoing empty bytes to a binary file writes a binary newline
instead of trying to write text to it."""
import io

import click


def test_echo_empty_bytes_to_bytesio():
    out = io.BytesIO()
    click.echo(b"", file=out)
    assert len(out.getvalue()) == 1
    assert out.getvalue() == b"\n"


def test_echo_empty_bytes_between_other_writes():
    out = io.BytesIO()
    click.echo(b"ab", file=out)
    click.echo(b"", file=out)
    click.echo(bytearray(), file=out)
    click.echo(b"", file=out, nl=False)
    click.echo(b"cd", file=out)
    assert out.getvalue().count(b"\n") == 4
    assert out.getvalue().decode("ascii").split() == ["ab", "cd"]


def test_echo_none_and_empty_text_still_write_text_newline():
    out = io.StringIO()
    click.echo(None, file=out)
    click.echo("", file=out)
    click.echo(b"", file=io.BytesIO())
    assert out.getvalue().count("\n") == 2
