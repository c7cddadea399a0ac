# SPECSNAP-CANARY isort 9c2e7b14-5d3a-4f86-b0e1-7a4c62d8e93f
"""Hidden tests for ISORT-2330: api.find_imports_in_file raised on a file that cannot be
opened (a dangling symlink) instead of warning about it and yielding nothing."""
import warnings

from isort import api


def test_dangling_symlink_warns_instead_of_raising(tmp_path):
    link = tmp_path / "dangling.py"
    link.symlink_to(tmp_path / "missing.py")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = list(api.find_imports_in_file(link))
    assert len(found) == 0
    assert any("dangling.py" in str(warning.message) for warning in caught)


def test_find_imports_in_paths_skips_dangling_symlink(tmp_path):
    (tmp_path / "good.py").write_text("import json\nfrom os import path\n")
    (tmp_path / "dangling.py").symlink_to(tmp_path / "missing.py")
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        modules = sorted(found.module for found in api.find_imports_in_paths([tmp_path]))
    assert modules == ["json", "os"]
