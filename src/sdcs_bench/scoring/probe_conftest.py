# SpecSnap scoring probe, installed as the scoring copy's only conftest.py. It records every
# import made by the code under test while the hidden tests run, including dynamic ones
# (importlib.import_module, __import__ with computed names), so boundary rules also see them.
import builtins
import importlib
import importlib.util
import json
import os
import sys

_ROOTS = tuple(json.loads(os.environ.get("SPECSNAP_ROOT_PACKAGES", "[]")))
_EDGES = set()
_real_import = builtins.__import__
_real_import_module = importlib.import_module


def _ours(name):
    return bool(name) and name.split(".")[0] in _ROOTS


def _record(importer, target, fromlist=()):
    if not (_ours(importer) and _ours(target)):
        return
    targets = [target] + [f"{target}.{f}" for f in fromlist or () if f"{target}.{f}" in sys.modules]
    for t in targets:
        if t != importer:
            _EDGES.add((importer, t))


def _absolute(name, package, level):
    if not level:
        return name
    return importlib.util.resolve_name("." * level + name, package)


def _import(name, globals=None, locals=None, fromlist=(), level=0):
    module = _real_import(name, globals, locals, fromlist, level)
    try:
        importer = (globals or {}).get("__name__")
        if _ours(importer):
            package = (globals or {}).get("__package__") or importer.rpartition(".")[0]
            _record(importer, _absolute(name, package, level), fromlist)
    except Exception:
        pass
    return module


def _import_module(name, package=None):
    module = _real_import_module(name, package)
    try:
        importer = sys._getframe(1).f_globals.get("__name__")
        target = importlib.util.resolve_name(name, package) if name.startswith(".") else name
        _record(importer, target)
    except Exception:
        pass
    return module


builtins.__import__ = _import
importlib.import_module = _import_module


def pytest_sessionfinish(session, exitstatus):
    out = os.environ.get("SPECSNAP_IMPORTS_OUT")
    if out:
        with open(out, "w") as fh:
            json.dump(sorted(_EDGES), fh)
