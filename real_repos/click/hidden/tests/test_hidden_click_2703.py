# SPECSNAP-CANARY click 3f6a9d20-8b1e-4c57-a0d4-6e2b91c7f5a8
"""CLICK-2703: zsh completion escapes ``:`` in the value of items that carry a
help text (they go through ``_describe``), and leaves items without help as
they are (they go through ``compadd``)."""
import click
from click.shell_completion import CompletionItem
from click.shell_completion import ZshComplete


def _targets(ctx, param, incomplete):
    return [
        CompletionItem("host:80", help="web"),
        CompletionItem("unix:/tmp/sock"),
    ]


def _zsh(cli):
    return ZshComplete(cli, {}, "cli", "_CLI_COMPLETE")


def test_zsh_escapes_colon_in_described_value():
    comp = _zsh(click.Command("cli"))
    text = comp.format_completion(CompletionItem("a:b:c", help="pick it"))
    lines = text.split("\n")
    assert len(lines) == 3
    assert lines[0] == "plain"
    assert lines[1].count("\\:") == 2
    assert lines[1].replace("\\:", "|") == "a|b|c"
    assert lines[2] == "pick it"


def test_zsh_complete_output_escapes_only_described_values(monkeypatch):
    @click.command()
    @click.option("--target", shell_complete=_targets)
    def cli(target):
        click.echo(target)

    monkeypatch.setenv("COMP_WORDS", "cli --target ")
    monkeypatch.setenv("COMP_CWORD", "2")
    out = _zsh(cli).complete()
    lines = out.split("\n")
    assert out.count("\\:") == 1
    assert lines[1].replace("\\:", "|") == "host|80"
    assert lines[4] == "unix:/tmp/sock"
    assert lines[5] == "_"
