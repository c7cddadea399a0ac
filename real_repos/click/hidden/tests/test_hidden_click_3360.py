# SPECSNAP-CANARY click 3f6a9d20-8b1e-4c57-a0d4-6e2b91c7f5a8
"""CLICK-3360: a usage line with no arguments still names the program."""
import click


def test_write_usage_program_only():
    formatter = click.HelpFormatter()
    formatter.write_usage("Program")
    assert formatter.getvalue().count("Program") == 1
    assert formatter.getvalue() == "Usage: Program\n"


def test_write_usage_program_only_custom_prefix_and_args_unchanged():
    bare = click.HelpFormatter()
    bare.write_usage("tool", prefix="Run: ")
    with_args = click.HelpFormatter()
    with_args.write_usage("tool", "[OPTIONS] SRC")
    assert bare.getvalue().rstrip("\n") == "Run: tool"
    assert with_args.getvalue().rstrip("\n") == "Usage: tool [OPTIONS] SRC"


def test_command_without_params_has_usage():
    cmd = click.Command("bare", options_metavar="", add_help_option=False)
    with click.Context(cmd, info_name="bare") as ctx:
        usage = cmd.get_usage(ctx)
    assert usage == "Usage: bare"
