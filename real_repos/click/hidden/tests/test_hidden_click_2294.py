# SPECSNAP-CANARY click 3f6a9d20-8b1e-4c57-a0d4-6e2b91c7f5a8
"""CLICK-2294: one ``click.argument(..., cls=...)`` decorator used on several
commands must give every command the custom argument class."""
import click


class TaggedArgument(click.Argument):
    """An argument class that only marks where it was used."""


def test_reused_argument_keeps_class(runner):
    shared = click.argument("name", cls=TaggedArgument)

    @click.command()
    @shared
    def first(name):
        click.echo(f"first {name}")

    @click.command()
    @shared
    def second(name):
        click.echo(f"second {name}")

    assert isinstance(first.params[0], TaggedArgument)
    assert type(second.params[0]).__name__ == "TaggedArgument"
    result = runner.invoke(second, ["ada"])
    assert result.output == "second ada\n"


def test_reused_argument_keeps_class_and_other_settings():
    shared = click.argument("items", cls=TaggedArgument, nargs=-1)

    @click.command()
    @shared
    def one(items):
        click.echo(len(items))

    @click.command()
    @shared
    def two(items):
        click.echo(len(items))

    @click.command()
    @shared
    def three(items):
        click.echo(len(items))

    params = [cmd.params[0] for cmd in (one, two, three)]
    assert sum(isinstance(p, TaggedArgument) for p in params) == 3
    assert [p.nargs for p in params] == [-1, -1, -1]
