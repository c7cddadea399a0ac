# SPECSNAP-CANARY click 3f6a9d20-8b1e-4c57-a0d4-6e2b91c7f5a8
"""CLICK-2746: a flag option with its own ``flag_value`` that is switched on
through its environment variable (``1``, ``true``, ...) gets its flag value,
not the raw text of the variable."""
import click


def _case_command():
    @click.command()
    @click.option("--upper", "case", flag_value="upper", envvar="HIDDEN_CASE_UPPER")
    def cli(case):
        click.echo(f"case={case}")

    return cli


def test_flag_value_from_envvar_one(runner):
    cli = _case_command()
    result = runner.invoke(cli, [], env={"HIDDEN_CASE_UPPER": "1"})
    assert result.exit_code == 0
    assert result.output == "case=upper\n"


def test_flag_value_from_envvar_true_words(runner):
    cli = _case_command()
    from_true = runner.invoke(cli, [], env={"HIDDEN_CASE_UPPER": "true"})
    from_yes = runner.invoke(cli, [], env={"HIDDEN_CASE_UPPER": "yes"})
    unset = runner.invoke(cli, [], env={"HIDDEN_CASE_UPPER": None})
    given = runner.invoke(cli, ["--upper"], env={"HIDDEN_CASE_UPPER": None})
    assert from_true.output == "case=upper\n"
    assert from_yes.output == "case=upper\n"
    assert unset.output == "case=None\n"
    assert given.output == "case=upper\n"


def test_int_flag_value_from_envvar(runner):
    @click.command()
    @click.option("--answer", "number", flag_value=42, envvar="HIDDEN_ANSWER")
    def cli(number):
        click.echo(repr(number))

    result = runner.invoke(cli, [], env={"HIDDEN_ANSWER": "1"})
    assert result.exit_code == 0
    assert result.output.strip() == "42"
