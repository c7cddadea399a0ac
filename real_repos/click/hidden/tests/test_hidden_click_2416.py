# SPECSNAP-CANARY click 3f6a9d20-8b1e-4c57-a0d4-6e2b91c7f5a8
"""CLICK-2416: ``@group.command`` used without parentheses works on a group
that sets ``command_class`` and gives the command that class."""
import click


class LoudCommand(click.Command):
    """A command class a group hands to its subcommands."""


class LoudGroup(click.Group):
    command_class = LoudCommand


def test_bare_group_command_uses_command_class(runner):
    grp = LoudGroup("grp")

    @grp.command
    def hello():
        click.echo("hi")

    assert isinstance(hello, LoudCommand)
    assert type(hello).__name__ == "LoudCommand"
    assert grp.commands["hello"] is hello
    result = runner.invoke(grp, ["hello"])
    assert result.output == "hi\n"


def test_bare_command_on_decorated_group(runner):
    @click.group(cls=LoudGroup)
    def cli():
        pass

    @cli.command
    def first():
        click.echo("one")

    @cli.command()
    def second():
        click.echo("two")

    assert sorted(cli.commands) == ["first", "second"]
    assert sum(isinstance(c, LoudCommand) for c in cli.commands.values()) == 2
    assert runner.invoke(cli, ["first"]).output == "one\n"
