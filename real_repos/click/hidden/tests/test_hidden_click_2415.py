# SPECSNAP-CANARY click 3f6a9d20-8b1e-4c57-a0d4-6e2b91c7f5a8
"""CLICK-2415: ``click.echo`` must not fail when the standard stream it would
write to is missing (``sys.stdout`` / ``sys.stderr`` set to ``None``)."""
import io
import sys

import click


def test_echo_with_stdout_none_is_silent(monkeypatch):
    spare_err = io.StringIO()
    monkeypatch.setattr(sys, "stdout", None)
    monkeypatch.setattr(sys, "stderr", spare_err)
    click.echo("dropped text")
    click.echo(b"dropped bytes")
    click.echo()
    click.echo("kept", err=True)
    assert sys.stdout is None
    assert spare_err.getvalue().rstrip("\n") == "kept"
    assert spare_err.getvalue().count("\n") == 1


def test_echo_with_stderr_none_is_silent(monkeypatch):
    spare_out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", None)
    monkeypatch.setattr(sys, "stdout", spare_out)
    click.echo("dropped", err=True)
    click.echo("shown")
    assert spare_out.getvalue().rstrip("\n") == "shown"
    assert spare_out.getvalue().count("\n") == 1
