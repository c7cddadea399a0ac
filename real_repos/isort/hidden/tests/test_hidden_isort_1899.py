# SPECSNAP-CANARY isort 9c2e7b14-5d3a-4f86-b0e1-7a4c62d8e93f
"""Hidden tests for ISORT-1899: a comment written at column 0 right before an indented
import block lost its first characters (the block's indent width was cut off it)."""
import isort


def test_column_zero_comment_before_indented_import_is_kept():
    source = "import sys\n\nif True:\n# this will get cut off\n    import os\n"
    assert isort.code(source) == source


def test_column_zero_comment_in_try_block_is_kept():
    source = (
        "import os\n\ntry:\n# optional speedup\n    import ujson as json\n"
        "except ImportError:\n    import json\n"
    )
    result = isort.code(source)
    assert result.count("# optional speedup\n") == 1
    assert result == source


def test_indented_imports_still_sorted_below_column_zero_comment():
    source = "import sys\n\nif True:\n# keep me whole\n    import re\n    import os\n"
    assert isort.code(source) == (
        "import sys\n\nif True:\n# keep me whole\n    import os\n    import re\n"
    )
