# SPECSNAP-CANARY click 3f6a9d20-8b1e-4c57-a0d4-6e2b91c7f5a8
"""CLICK-2368: a help text that is empty once cut at the form feed adds no
blank paragraph to the help page."""
import click


def test_form_feed_only_help_adds_no_blank_lines(runner):
    @click.command(help="\n\f\nInternal notes only.")
    def cli():
        pass

    result = runner.invoke(cli, ["--help"])
    lines = result.output.splitlines()
    assert len(lines) == 4
    assert lines[0] == "Usage: cli [OPTIONS]"
    assert lines[1] == ""
    assert lines[2] == "Options:"
    assert "Internal" not in result.output


def test_docstring_after_form_feed_adds_no_blank_lines(runner):
    @click.command()
    @click.option("--level", type=int, default=1, help="How much.")
    def cli(level):
        """
        \f
        :param level: documented for the API only.
        """

    result = runner.invoke(cli, ["--help"])
    assert result.output.count("\n\n") == 1
    assert "documented" not in result.output
    assert result.output.splitlines()[2] == "Options:"
