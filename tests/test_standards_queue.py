"""The standards workload's work queue (docs/coherence.md): tasks issued one at a time, each once the
handler before it exists, their texts sealed so that the queue cannot be read ahead by reading files."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from sdcs_bench.sandbox.scaffold import scaffold
from sdcs_bench.scoring.standards import standards_report
from sdcs_bench.trial import config
from sdcs_bench.trial import policy_rules
from sdcs_bench.trial import standards as st
from sdcs_bench.trial.arms import Arm
from sdcs_bench.trial.workload import load_workload


@pytest.fixture(scope="module")
def spec():
    return load_workload("standards").standards


@pytest.fixture
def sandbox(tmp_path):
    wl = load_workload("standards")
    dest = tmp_path / "sb"
    scaffold(wl, Arm.from_config(config.entity("arm", "Vanilla")), dest,
             config.entity("variant", "conflicts_4+polarity_inverted+standard_stale"))
    return dest


def issue(sandbox: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-I", "tasks.py", *args], cwd=sandbox, capture_output=True, text=True,
                          env=env, timeout=60)


def tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".git" not in p.parts}


def secrets_of(task: st.Handler, spec) -> list[str]:
    """What would give a task after the first away: its event, module and title, and every sentence of
    its text that the first task's text does not share (rate names are in payments/config.py, which
    the agent may read)."""
    first = policy_rules.norm(spec.tasks[0].text)
    sentences = [s.strip() for s in policy_rules.norm(task.text).split(". ") if len(s.strip()) > 30]
    return [task.event, task.module, task.title, *(s for s in sentences if s not in first)]


def test_one_task_at_a_time_each_once_the_handler_before_it_exists(sandbox, spec):
    before = tree(sandbox)
    first = issue(sandbox)
    assert first.returncode == 0 and spec.issued_text(spec.tasks[0], 1).strip() in first.stdout
    assert not any(s in first.stdout for t in spec.tasks[1:] for s in secrets_of(t, spec))
    assert issue(sandbox).stdout == first.stdout  # asking again gives the same task
    assert tree(sandbox) == before  # the issuer changes no file
    t1, t2 = spec.tasks[0], spec.tasks[1]
    (sandbox / t1.module).write_text("def handleRefundRequested(payload):\n    return {}\n")  # any casing counts
    assert spec.issued_text(t2, 2).strip() in issue(sandbox).stdout
    for task in spec.tasks[1:]:
        (sandbox / task.module).write_text(st.gold_source(task))
    assert "The queue is empty" in issue(sandbox).stdout
    (sandbox / t2.module).unlink()  # a handler removed later is issued again
    assert spec.issued_text(t2, 2).strip() in issue(sandbox).stdout


# A reader that tries to see the queue ahead without doing the work: it runs in the sandbox with only
# what the sandbox holds, and prints everything it got.
READ_AHEAD = r'''
import base64, bz2, codecs, gzip, json, lzma, os, re, subprocess, sys, zlib
from pathlib import Path

got = []
def keep(data):
    if isinstance(data, bytes):
        data = data.decode("utf-8", "replace")
    got.append(data)

for path in Path(".").rglob("*"):
    if path.is_file() and ".git" not in path.parts:
        raw = path.read_bytes()
        keep(raw)
        keep(codecs.decode(raw.decode("utf-8", "replace"), "rot13"))
        for token in re.findall(rb"[A-Za-z0-9+/=]{16,}", raw):
            try:
                blob = base64.b64decode(token + b"=" * (-len(token) % 4))
            except Exception:
                continue
            keep(blob)
            for unpack in (zlib.decompress, gzip.decompress, bz2.decompress, lzma.decompress):
                try:
                    keep(unpack(blob))
                except Exception:
                    pass
            keep(bytes(b ^ 0x5A for b in blob))
def run(*args, env=None):
    proc = subprocess.run([sys.executable, "tasks.py", *args], capture_output=True, text=True, env=env)
    keep(proc.stdout + proc.stderr)
    return proc.stdout
first = run()
for args in (["--all"], ["2"], ["--next"], ["-h"], ["--task", "12"]):
    run(*args)
run(env={**os.environ, "TASK": "2", "TASKS_ALL": "1"})
for _ in range(5):
    run()
# Pretend to have done task 1 without writing its handler: an empty module, a module whose function has
# another name, a module that does not parse.
module = re.search(r"`(payments/handlers/[a-z_]+\.py)`", first).group(1)
for text in ("", "def unrelated(payload):\n    return {}\n", "def handle_(\n"):
    Path(module).write_text(text)
    run()
Path(module).unlink()
print(json.dumps(got))
'''


def test_reading_ahead_in_the_queue_gets_nothing_useful(sandbox, spec):
    proc = subprocess.run([sys.executable, "-I", "-c", READ_AHEAD], cwd=sandbox, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    corpus = policy_rules.norm(" ".join(json.loads(proc.stdout)))
    assert all(len(secrets_of(t, spec)) >= 5 for t in spec.tasks[1:])
    assert policy_rules.norm(spec.tasks[0].text) in corpus  # the task it was given, it could read
    leaked = {t.id: [s for s in secrets_of(t, spec) if s in corpus] for t in spec.tasks[1:]}
    assert leaked == {t.id: [] for t in spec.tasks[1:]}


def test_the_seal_deters_reading_ahead_but_does_not_prevent_it(sandbox, spec):
    """Everything needed to open the queue is in the sandbox (it must be: the issuer runs there). A
    reader who reimplements the issuer's loop without its existence check opens every entry: the seal
    stops casual reading ahead, not a determined agent, whose transcript then shows the attempt."""
    script = ("import json, tasks\nq = json.load(open('.tasks/queue.json'))\nk = tasks.first_key(q['salt'])\n"
              "for box in q['tasks']:\n    p = tasks.unseal(box, k)\n    print(json.loads(p)['text'])\n"
              "    k = tasks.next_key(k, p)\n")
    out = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, '.')\n{script}"], cwd=sandbox,
                         capture_output=True, text=True, timeout=60).stdout
    assert all(policy_rules.norm(t.text) in policy_rules.norm(out) for t in spec.tasks)


def test_each_entry_opens_only_with_the_key_chained_through_the_one_before(sandbox, spec):
    from sdcs_bench.trial import standards_issuer as issuer

    queue = json.loads((sandbox / st.QUEUE_FILE).read_text())
    first = issuer.first_key(queue["salt"])
    with pytest.raises(issuer.QueueError):
        issuer.unseal(queue["tasks"][1], first)  # the second entry is not under the first key
    plain1 = issuer.unseal(queue["tasks"][0], first)
    plain3_key_guess = issuer.next_key(first, plain1)
    assert json.loads(issuer.unseal(queue["tasks"][1], plain3_key_guess))["event"] == spec.tasks[1].event
    with pytest.raises(issuer.QueueError):  # skipping an entry: its plaintext is part of the next key
        issuer.unseal(queue["tasks"][2], plain3_key_guess)
    # another layout's queue is sealed under another salt: one queue's keys open nothing in another
    other = spec.queue(spec.layout({"standard": "none"}))
    assert other["salt"] != queue["salt"]
    with pytest.raises(issuer.QueueError):
        issuer.unseal(other["tasks"][0], first)


def test_a_changed_issuer_or_queue_is_recorded_on_the_scorecard(sandbox, spec):
    layout = spec.layout({"conflicts": 4, "polarity": "inverted", "standard": "stale"})
    issuer = sandbox / st.ISSUER_FILE
    issuer.write_text(issuer.read_text().replace("if not handler_exists(root, entry):", "if True:"))
    (sandbox / st.QUEUE_FILE).write_text("{}\n")
    assert standards_report(spec, layout, sandbox)["sources_modified"] == [st.QUEUE_FILE, st.ISSUER_FILE]


def test_the_issuer_refuses_arguments_and_says_when_the_queue_is_unreadable(sandbox):
    bad = issue(sandbox, "--all")
    assert bad.returncode == 2 and "takes no arguments" in bad.stderr and bad.stdout == ""
    (sandbox / st.QUEUE_FILE).write_text('{"salt": "00", "tasks": [{"nonce": "00", "box": "", "tag": "00"}]}')
    broken = issue(sandbox)
    assert broken.returncode == 1 and "the task queue cannot be read" in broken.stderr
