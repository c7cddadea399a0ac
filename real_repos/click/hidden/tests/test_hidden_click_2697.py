# SPECSNAP-CANARY click 3f6a9d20-8b1e-4c57-a0d4-6e2b91c7f5a8
"""CLICK-2697: the "is a directory" error of ``click.Path`` shows the name
quoted and escaped like the other Path errors, so control characters in the
name do not reach the terminal."""
import pytest

import click


def test_directory_error_escapes_newline(tmp_path, monkeypatch):
    (tmp_path / "two\nlines").mkdir()
    monkeypatch.chdir(tmp_path)
    path_type = click.Path(dir_okay=False)
    with pytest.raises(click.BadParameter) as exc_info:
        path_type.convert("two\nlines", None, None)
    message = exc_info.value.format_message()
    assert message.count("\n") == 0
    assert message.endswith("'two\\nlines' is a directory.")


def test_directory_error_escapes_terminal_codes(tmp_path, monkeypatch):
    (tmp_path / "red\x1b[31mdir").mkdir()
    monkeypatch.chdir(tmp_path)
    path_type = click.Path(file_okay=True, dir_okay=False)
    with pytest.raises(click.BadParameter) as exc_info:
        path_type.convert("red\x1b[31mdir", None, None)
    message = exc_info.value.format_message()
    assert message.count("\x1b") == 0
    assert "\\x1b[31m" in message


def test_directory_error_through_command(runner, tmp_path, monkeypatch):
    (tmp_path / "a\tb").mkdir()
    monkeypatch.chdir(tmp_path)

    @click.command()
    @click.argument("target", type=click.Path(dir_okay=False))
    def cli(target):
        click.echo(target)

    result = runner.invoke(cli, ["a\tb"])
    assert result.exit_code == 2
    assert "'a\\tb' is a directory." in result.output
