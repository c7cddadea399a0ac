"""What one shell command line did to the workspace's files, read from its text alone.

Harnesses run most of an agent's work through a shell tool, so the event stream has to know
which files a command line reads, which it writes (and how: a redirect, a heredoc, ``sed -i``,
``tee``, a copy), which it restores from git, which tests it runs and which scripts it runs.
The line is parsed with tree-sitter's bash grammar, which accepts any input (a line it cannot
make sense of yields an error node, never an exception), so a hostile or garbled command costs
nothing but the actions it hides.

Only the text is read: nothing is executed and the file system is never consulted. Paths come
back as the command wrote them, joined to the working directory the line had reached (``cd``
inside the line is followed); the caller decides whether they lie inside the workspace.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from functools import cache

MAX_COMMAND_CHARS = 200_000  # longer command lines are cut before parsing

READERS = {"cat", "head", "tail", "less", "more", "nl", "bat", "wc", "sort", "uniq", "diff", "cmp", "tac", "od",
           "xxd", "hexdump", "strings", "md5sum", "sha256sum", "grep", "egrep", "fgrep", "rg", "awk", "cut"}
PATTERN_FIRST = {"grep", "egrep", "fgrep", "rg", "awk"}  # the first operand is a pattern or program
INTERPRETERS = re.compile(r"^(python[0-9.]*|bash|sh|zsh|node|ruby|perl|php)$")
PY_WRITE_TARGETS = (
    # open("path", "w"...) / open('path', mode='a')
    re.compile(r"""open\(\s*(['"])([^'"\n]+)\1\s*,\s*(?:mode\s*=\s*)?(['"])[^'"\n]*[wax+][^'"\n]*\3"""),
    # Path("path").write_text(...) / .write_bytes(...)
    re.compile(r"""Path\(\s*(['"])([^'"\n]+)\1\s*\)\s*\.\s*write_(?:text|bytes)\("""),
)
PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$", re.MULTILINE)
PYTEST_FAILED = re.compile(r"\b(\d+) (?:failed|errors?)\b")
PYTEST_PASSED = re.compile(r"\b(\d+) passed\b")


@dataclass(frozen=True)
class Read:
    path: str
    lines: tuple[int, int] | str | None = "all"  # (first, last), "all", or None: some part, unknown


@dataclass(frozen=True)
class Write:
    path: str | None  # None: a script wrote something this line does not name
    kind: str  # create | modify | delete | unknown
    script: str  # how: redirect, heredoc, tee, sed_in_place, copy, move, touch, remove, patch, inline, agent_file
    content: str | None = None  # the full new content, when the line carries it (a heredoc)
    runs: str | None = None  # the script file run, for an ``agent_file`` write


@dataclass(frozen=True)
class RunScript:
    path: str  # a script file the line runs with an interpreter (or as ./path)


@dataclass(frozen=True)
class Inline:
    code: str  # code the line hands an interpreter directly (python -c / python - <<EOF)


@dataclass(frozen=True)
class Revert:
    paths: tuple[str, ...] | None  # None: every changed file (reset --hard, stash, checkout .)
    restored: str  # what the files were restored to (HEAD, a ref, the index)


@dataclass(frozen=True)
class Test:
    command: str


@dataclass(frozen=True)
class Commit:
    pass


Action = Read | Write | RunScript | Inline | Revert | Test | Commit


@dataclass
class _Simple:
    name: str
    args: list[str]
    redirects: list[tuple[str, str]] = field(default_factory=list)  # (operator, target)
    heredoc: str | None = None
    text: str = ""


@cache
def _parser():
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


def _unquote(node) -> str:
    text = node.text.decode("utf-8", "replace")
    if node.type == "raw_string" and len(text) >= 2:
        return text[1:-1]
    if node.type == "string" and len(text) >= 2:
        return text[1:-1]
    if node.type == "concatenation":
        return "".join(_unquote(c) for c in node.children)
    return text


def _simple_commands(node, out: list[_Simple]) -> None:
    """Every simple command under ``node``, in source order, with the redirects and heredoc that
    apply to it (a redirect on a list or pipeline applies to its last command)."""
    if node.type == "redirected_statement":
        body = node.child_by_field_name("body") or (node.children[0] if node.children else None)
        start = len(out)
        if body is not None:
            _simple_commands(body, out)
        redirects, heredoc = [], None
        for child in node.children:
            if child.type == "file_redirect":
                op = next((c.text.decode() for c in child.children if c.type in (">", ">>", "&>", "&>>", ">|", "<",
                                                                                 ">&", "<&")), "")
                dest = child.child_by_field_name("destination")
                target = _unquote(dest) if dest is not None else ""
                redirects.append((op, target))
            elif child.type == "heredoc_redirect":
                body_node = next((c for c in child.children if c.type == "heredoc_body"), None)
                heredoc = body_node.text.decode("utf-8", "replace") if body_node is not None else ""
                for c in child.children:  # `cat <<EOF > file`: the redirect is inside the heredoc node
                    if c.type == "file_redirect":
                        op = next((x.text.decode() for x in c.children if x.type in (">", ">>", "&>", ">|")), "")
                        dest = c.child_by_field_name("destination")
                        redirects.append((op, _unquote(dest) if dest is not None else ""))
        if len(out) > start:
            out[-1].redirects += redirects
            if heredoc is not None:
                out[-1].heredoc = heredoc
        return
    if node.type == "command":
        name_node = node.child_by_field_name("name")
        name = _unquote(name_node) if name_node is not None else ""
        args = [_unquote(c) for c in node.children_by_field_name("argument")]
        out.append(_Simple(name, args, text=node.text.decode("utf-8", "replace")))
        stack = list(node.children)  # commands inside $(...) anywhere in this one run too
        while stack:
            child = stack.pop(0)
            if child.type in ("command_substitution", "process_substitution"):
                _simple_commands(child, out)
            else:
                stack[:0] = list(child.children)
        return
    for child in node.children:
        _simple_commands(child, out)


def _join(cwd: str, path: str) -> str:
    if not path or path.startswith("~"):  # the shell makes ~ the HOME: never the workspace
        return path
    return posixpath.normpath(posixpath.join(cwd, path))


def _operands(args: list[str]) -> list[str]:
    """Arguments that are not options (everything after ``--`` is an operand)."""
    out, rest = [], False
    for a in args:
        if rest or not a.startswith("-") or a == "-":
            out.append(a)
        elif a == "--":
            rest = True
    return out


def _sed(args: list[str], cwd: str) -> list[Action]:
    in_place = any(a == "-i" or (a.startswith("-i") and not a.startswith("--")) or a.startswith("--in-place")
                   for a in args)
    has_e = any(a in ("-e", "--expression", "-f") or a.startswith(("-e", "--expression=")) for a in args)
    kept, skip = [], False
    for a in args:  # drop the in-place flag and every option's argument (-e SCRIPT, -f FILE)
        if skip:
            skip = False
        elif a in ("-e", "--expression", "-f", "--file"):
            skip = True
        elif not a.startswith("-i"):
            kept.append(a)
    ops = _operands(kept)
    files = ops if has_e else ops[1:]
    if in_place:
        return [Write(_join(cwd, f), "modify", "sed_in_place") for f in files]
    lines: tuple[int, int] | None = None
    if not has_e and ops and "-n" in args:
        m = re.fullmatch(r"(\d+)(?:,(\d+))?p", ops[0].strip())
        if m:
            lines = (int(m.group(1)), int(m.group(2) or m.group(1)))
    return [Read(_join(cwd, f), lines) for f in files]


def _git(args: list[str], cwd: str) -> list[Action]:
    if not args:
        return []
    sub, rest = args[0], args[1:]
    if sub == "commit":
        return [Commit()]
    if sub == "checkout":
        if "--" in rest:
            ref = rest[: rest.index("--")]
            paths = rest[rest.index("--") + 1 :]
            return [Revert(tuple(_join(cwd, p) for p in paths) or None, ref[0] if ref else "index")]
        ops = _operands(rest)
        if ops == ["."]:
            return [Revert(None, "index")]
        paths = [p for p in ops if "/" in p or "." in p]  # a branch name has neither, as a rule
        return [Revert(tuple(_join(cwd, p) for p in paths), "index")] if paths else []
    if sub == "restore":
        if "--staged" in rest and "--worktree" not in rest and "-W" not in rest:
            return []
        source = next((a.split("=", 1)[1] for a in rest if a.startswith("--source=")), "index")
        ops = [p for p in _operands(rest)]
        if ops == ["."]:
            return [Revert(None, source)]
        return [Revert(tuple(_join(cwd, p) for p in ops), source)] if ops else []
    if sub == "reset" and "--hard" in rest:
        ops = _operands(rest)
        return [Revert(None, ops[0] if ops else "HEAD")]
    if sub == "stash" and (not rest or rest[0] in ("push", "save", "-u", "--include-untracked")):
        return [Revert(None, "HEAD")]
    if sub == "show":
        out: list[Action] = []
        for op in _operands(rest):
            if ":" in op and not op.endswith(":"):
                out.append(Read(_join(cwd, op.split(":", 1)[1]), "all"))
        return out
    return []


def _is_test(cmd: _Simple) -> bool:
    base = posixpath.basename(cmd.name)
    if base in ("pytest", "py.test", "tox", "nox"):
        return True
    if INTERPRETERS.match(base) and base.startswith("python"):
        ops = cmd.args
        for i, a in enumerate(ops[:-1]):
            if a == "-m" and ops[i + 1] in ("pytest", "unittest", "tox", "nox"):
                return True
    return base == "make" and any(a in ("test", "tests", "check") for a in cmd.args)


def _interpreter(cmd: _Simple, cwd: str) -> list[Action]:
    args = cmd.args
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-c", "-e") and i + 1 < len(args):
            return [Inline(args[i + 1])]
        if a == "-m":
            return []
        if a == "-" or (not a.startswith("-")):
            if a == "-":
                return [Inline(cmd.heredoc)] if cmd.heredoc else []
            return [RunScript(_join(cwd, a))]
        i += 1
    return [Inline(cmd.heredoc)] if cmd.heredoc else []


def _one(cmd: _Simple, cwd: str) -> list[Action]:
    base = posixpath.basename(cmd.name)
    args = cmd.args
    actions: list[Action] = []
    if _is_test(cmd):
        actions.append(Test(cmd.text.strip()))
    elif base == "apply_patch" and cmd.heredoc is not None:
        actions += patch_writes(cmd.heredoc, cwd)
    elif base == "sed":
        actions += _sed(args, cwd)
    elif base == "perl" and any(a.startswith("-") and "i" in a[1:] and not a.startswith("--") for a in args):
        ops = _operands(args)
        actions += [Write(_join(cwd, f), "modify", "sed_in_place") for f in ops[1:]]
    elif base == "git":
        actions += _git(args, cwd)
    elif base == "tee":
        actions += [Write(_join(cwd, f), "modify" if "-a" in args else "create", "tee") for f in _operands(args)]
    elif base in ("cp", "install"):
        ops = _operands(args)
        if len(ops) >= 2:
            actions += [Read(_join(cwd, s)) for s in ops[:-1]]
            actions.append(Write(_join(cwd, ops[-1]), "create", "copy"))
    elif base == "mv":
        ops = _operands(args)
        if len(ops) >= 2:
            actions += [Write(_join(cwd, s), "delete", "move") for s in ops[:-1]]
            actions.append(Write(_join(cwd, ops[-1]), "create", "move"))
    elif base == "rm":
        actions += [Write(_join(cwd, f), "delete", "remove") for f in _operands(args)]
    elif base == "touch":
        actions += [Write(_join(cwd, f), "create", "touch") for f in _operands(args)]
    elif base in READERS:
        ops = _operands(args)
        if base in PATTERN_FIRST:
            ops = ops[1:]
        lines: tuple[int, int] | str | None = "all"
        if base == "head":
            n = next((int(args[i + 1]) for i, a in enumerate(args[:-1]) if a == "-n" and args[i + 1].isdigit()), None)
            n = n or next((int(a[1:]) for a in args if re.fullmatch(r"-\d+", a)), None) or 10
            lines = (1, n)
            ops = [o for o in ops if not o.isdigit()]
        elif base in ("tail", "grep", "egrep", "fgrep", "rg", "awk", "cut"):
            lines = None  # some part of the file, not which
            ops = [o for o in ops if not o.isdigit()]
        actions += [Read(_join(cwd, f), lines) for f in ops]
    elif INTERPRETERS.match(base):
        actions += _interpreter(cmd, cwd)
    elif "/" in cmd.name and not any(c in cmd.name for c in "$`*?"):
        actions.append(RunScript(_join(cwd, cmd.name)))
    for op, target in cmd.redirects:
        if op in (">", ">|", "&>"):
            if not _is_device(target):
                script = "heredoc" if cmd.heredoc is not None and base == "cat" else "redirect"
                content = cmd.heredoc if script == "heredoc" else None
                actions.append(Write(_join(cwd, target), "create", script, content))
        elif op in (">>", "&>>"):
            if not _is_device(target):
                actions.append(Write(_join(cwd, target), "modify", "redirect"))
        elif op == "<" and target:
            actions.append(Read(_join(cwd, target)))
    return actions


def _is_device(target: str) -> bool:
    return not target or target.isdigit() or target.startswith("/dev/") or target == "-"


def patch_writes(patch: str, cwd: str) -> list[Write]:
    """The files a Codex/opencode-style patch (``*** Add File: path`` ...) writes."""
    out = []
    for m in PATCH_FILE.finditer(patch):
        if m.group(3):
            out.append(Write(_join(cwd, m.group(3)), "create", "patch"))
            continue
        kind = {"Add": "create", "Update": "modify", "Delete": "delete"}[m.group(1)]
        out.append(Write(_join(cwd, m.group(2)), kind, "patch"))
    return out


def python_write_targets(code: str) -> list[str]:
    """Files a piece of Python code names as literals in a write (``open(p, "w")``,
    ``Path(p).write_text``): best effort, the only window onto what a script wrote."""
    found = []
    for pattern in PY_WRITE_TARGETS:
        for m in pattern.finditer(code):
            if m.group(2) not in found:
                found.append(m.group(2))
    return found


def analyse(command: str, cwd: str = ".") -> list[Action]:
    """The file actions of one shell command line, in order. ``cwd`` is the directory the line
    starts in (relative paths are joined to it); ``cd DIR`` inside the line moves it."""
    if not isinstance(command, str) or not command.strip():
        return []
    command = command[:MAX_COMMAND_CHARS]
    tree = _parser().parse(command.encode("utf-8", "replace"))
    simple: list[_Simple] = []
    try:
        _simple_commands(tree.root_node, simple)
    except RecursionError:  # absurdly nested input: what was found so far
        pass
    actions: list[Action] = []
    for cmd in simple:
        if posixpath.basename(cmd.name) == "cd":
            ops = _operands(cmd.args)
            if ops and not ops[0].startswith("~"):
                cwd = _join(cwd, ops[0])
            continue
        if posixpath.basename(cmd.name) in ("bash", "sh") and len(cmd.args) >= 2 and cmd.args[0] == "-c":
            actions += analyse(cmd.args[1], cwd)
            continue
        actions += _one(cmd, cwd)
    return actions


def test_verdict(output: str | None, exit_code: int | None) -> str | None:
    """pass / fail from a test command's summary line (pytest's counts), else its exit status."""
    if output:
        tail = output[-4000:]
        if PYTEST_FAILED.search(tail):
            return "fail"
        if PYTEST_PASSED.search(tail):
            return "pass"
    if exit_code is None:
        return None
    return "pass" if exit_code == 0 else "fail"
