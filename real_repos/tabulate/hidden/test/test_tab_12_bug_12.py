# SPECSNAP-CANARY tabulate c6aaa900-1764-40d0-83c5-8370bd6819ff
"""Options of the command line utility that the parser did not accept."""

import io
import sys

import tabulate as tabulate_module


class _KeptOpen(io.StringIO):
    # the utility closes its output stream when it is done
    def close(self):
        pass


def _run_cli(monkeypatch, args):
    out = _KeptOpen()
    monkeypatch.setattr(sys, "argv", ["tabulate"] + args)
    monkeypatch.setattr(sys, "stdout", out)
    code = 0
    try:
        tabulate_module._main()
    except SystemExit as exc:  # the parser reports bad options with sys.exit
        code = exc.code or 0
    return code, out.getvalue()


def test_cli_accepts_short_int_option(tmp_path, monkeypatch):
    src = tmp_path / "words.txt"
    src.write_text("name kind\nbolt metal\n")
    code, out = _run_cli(monkeypatch, ["-1", "-I", ",", "-f", "plain", str(src)])
    assert code == 0
    assert out == "name    kind\nbolt    metal\n"


def test_cli_long_output_option_takes_a_file_name(tmp_path, monkeypatch):
    src = tmp_path / "in.txt"
    src.write_text("p 1\nq 2\n")
    dest = tmp_path / "table.txt"
    code, out = _run_cli(monkeypatch, ["--output", str(dest), str(src)])
    assert code == 0
    assert dest.read_text().splitlines() == ["-  -", "p  1", "q  2", "-  -"]


def test_cli_long_colalign_option(tmp_path, monkeypatch):
    src = tmp_path / "in.txt"
    src.write_text("x 1000\nyy 2\n")
    code, out = _run_cli(monkeypatch, ["--colalign", "right left", "-f", "plain", str(src)])
    assert code == 0
    assert out == " x  1000\nyy  2\n"
