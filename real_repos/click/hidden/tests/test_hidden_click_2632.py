# SPECSNAP-CANARY click 3f6a9d20-8b1e-4c57-a0d4-6e2b91c7f5a8
"""CLICK-2632: the help of a boolean on/off flag shows the default that is in
force, including one set through ``default_map``."""
import click


def _flag_command(default):
    @click.command()
    @click.option("--verbose/--quiet", default=default, show_default=True)
    def cli(verbose):
        click.echo(f"verbose={verbose}")

    return cli


def test_default_map_true_shown_in_flag_help(runner):
    cli = _flag_command(False)
    result = runner.invoke(cli, ["--help"], default_map={"verbose": True})
    assert result.exit_code == 0
    assert result.output.count("[default: verbose]") == 1
    assert result.output.count("[default: quiet]") == 0


def test_default_map_false_shown_in_flag_help(runner):
    cli = _flag_command(True)
    shown = runner.invoke(cli, ["--help"], default_map={"verbose": False})
    used = runner.invoke(cli, [], default_map={"verbose": False})
    plain = runner.invoke(cli, ["--help"])
    assert shown.output.count("[default: quiet]") == 1
    assert used.output == "verbose=False\n"
    assert plain.output.count("[default: verbose]") == 1
