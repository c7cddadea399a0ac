# SPECSNAP-CANARY isort 9c2e7b14-5d3a-4f86-b0e1-7a4c62d8e93f
"""Hidden tests for ISORT-2001: the CLI's ``--src`` with a glob pattern (``"*/src/"``)
crashed with a TypeError instead of expanding the pattern."""
import json
from pathlib import Path

from isort import main


def _project(tmp_path):
    (tmp_path / ".git").mkdir()  # keep isort's config search inside tmp_path
    for service in ("svc_a", "svc_b"):
        (tmp_path / service / "src").mkdir(parents=True)
    (tmp_path / "lib").mkdir()
    (tmp_path / "app.py").write_text("import os\n")


def test_src_glob_is_expanded_in_show_config(tmp_path, monkeypatch, capsys):
    _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    main.main(["app.py", "--src", "*/src/", "--show-config"])
    out, _ = capsys.readouterr()
    src_paths = {Path(path).resolve() for path in json.loads(out)["src_paths"]}
    assert len(src_paths) == 2
    assert (tmp_path / "svc_a" / "src").resolve() in src_paths
    assert (tmp_path / "svc_b" / "src").resolve() in src_paths


def test_src_glob_combined_with_plain_path(tmp_path, monkeypatch, capsys):
    _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    main.main(["app.py", "--src", "*/src", "--src", "lib", "--show-config"])
    out, _ = capsys.readouterr()
    src_paths = {Path(path).resolve() for path in json.loads(out)["src_paths"]}
    assert src_paths == {
        (tmp_path / "svc_a" / "src").resolve(),
        (tmp_path / "svc_b" / "src").resolve(),
        (tmp_path / "lib").resolve(),
    }


def test_src_glob_makes_packages_first_party(tmp_path, monkeypatch, capsys):
    _project(tmp_path)
    (tmp_path / "svc_a" / "src" / "mypkg").mkdir()
    (tmp_path / "svc_a" / "src" / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "app.py").write_text("import requests\nimport mypkg\nimport os\n")
    monkeypatch.chdir(tmp_path)
    main.main(["app.py", "--src", "*/src", "--stdout"])
    out, _ = capsys.readouterr()
    assert out == "import os\n\nimport requests\n\nimport mypkg\n"
