# SPECSNAP-CANARY isort 9c2e7b14-5d3a-4f86-b0e1-7a4c62d8e93f
"""Hidden tests for ISORT-1917: an import whose parenthesis is never closed made isort
loop forever waiting for the closing ``)``.

A SIGALRM watchdog turns a hang into an ordinary test failure.  Either outcome that ends
is accepted: returning a result, or refusing the input with an isort error.
"""
import signal

import isort
from isort import api
from isort.exceptions import ISortError

WATCHDOG_SECONDS = 5


class _Hung(Exception):
    pass


def _outcome(call, *args, **kwargs) -> str:
    """Run ``call``; "finished" if it returned or raised an isort error, "hung" on timeout."""

    def _on_alarm(signum, frame):
        raise _Hung()

    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(WATCHDOG_SECONDS)
    try:
        call(*args, **kwargs)
    except _Hung:
        return "hung"
    except ISortError:
        return "finished"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return "finished"


def test_unclosed_parenthesis_returns():
    assert _outcome(isort.code, "from os import (") == "finished"


def test_unclosed_parenthesis_after_other_imports_in_check_code():
    source = "import sys\nfrom os import (\n    path,\n"
    assert _outcome(isort.check_code, source) == "finished"


def test_unclosed_parenthesis_in_file_leaves_file_alone(tmp_path):
    target = tmp_path / "broken.py"
    target.write_text("import sys\nfrom os import (path,\n")
    assert _outcome(api.sort_file, target) == "finished"
    assert target.read_text() == "import sys\nfrom os import (path,\n"
