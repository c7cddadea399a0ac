# SPECSNAP-CANARY click 3f6a9d20-8b1e-4c57-a0d4-6e2b91c7f5a8
"""CLICK-2380: with ``standalone_mode=False``, the ``Abort`` raised for an
``EOFError`` or ``KeyboardInterrupt`` keeps that exception as its cause."""
import pytest

import click


def test_keyboard_interrupt_is_cause_of_abort():
    @click.command()
    def cli():
        raise KeyboardInterrupt()

    with pytest.raises(click.Abort) as exc_info:
        cli.main([], prog_name="cli", standalone_mode=False)
    assert isinstance(exc_info.value.__cause__, KeyboardInterrupt)
    assert type(exc_info.value.__cause__).__name__ == "KeyboardInterrupt"


def test_eof_error_is_cause_of_abort():
    @click.command()
    def cli():
        raise EOFError("input ended")

    with pytest.raises(click.Abort) as exc_info:
        cli.main([], prog_name="cli", standalone_mode=False)
    assert str(exc_info.value.__cause__) == "input ended"
