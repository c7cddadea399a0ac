# SPECSNAP-CANARY click 3f6a9d20-8b1e-4c57-a0d4-6e2b91c7f5a8
"""CLICK-2500: ``show_default=True`` with an empty string default shows the
default as ``""`` in the help instead of nothing."""
import click


def test_empty_string_default_shown(runner):
    @click.command()
    @click.option("--name", default="", show_default=True, help="Who to greet.")
    def cli(name):
        click.echo(name)

    result = runner.invoke(cli, ["--help"])
    assert result.exit_code == 0
    assert result.output.count('[default: ""]') == 1


def test_empty_string_default_shown_from_context_setting():
    @click.command(context_settings={"show_default": True})
    @click.option("--sep", default="", help="Separator.")
    @click.option("--mode", default="fast", help="Mode.")
    def cli(sep, mode):
        click.echo(sep + mode)

    with click.Context(cli, show_default=True) as ctx:
        sep_record = cli.params[0].get_help_record(ctx)
        mode_record = cli.params[1].get_help_record(ctx)
    assert sep_record[1] == 'Separator.  [default: ""]'
    assert mode_record[1] == "Mode.  [default: fast]"
