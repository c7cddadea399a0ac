"""No credential reaches results/, and every host-side walk or read of what an agent wrote is bounded.

The attacks are scripted agents (``hostile_support.run_hostile``, under bwrap) that were handed a key
(the test sets it in the environment the redaction pass reads, and writes it into the agent's
script: the credential reached the agent). The first writes the key raw and encoded into the tree,
its git objects (loose and packed) and ``.git``; nothing under the stage directory may then hold
any form of it, with every archive unpacked and every zlib stream in it inflated. The others plant
what no host-side reader may take whole: a path deeper than PATH_MAX, a sparse file of 4 GiB, a
FIFO, a file past the per-file cap, more entries than a snapshot holds.
"""

from __future__ import annotations

import base64
import io
import json
import os
import secrets as random_secrets
import string
import tarfile
import zlib
from pathlib import Path

import pytest
from hostile_support import run_hostile

from sdcs_bench.core.archive import Caps, restore_tree, write_tree
from sdcs_bench.core.secretscan import mask, scanner
from sdcs_bench.pipeline.stages import restore_snapshot, write_snapshot
from sdcs_bench.sandbox.bwrap import BwrapBackend
from sdcs_bench.session.carry import pack_state, read_state, redact_state
from sdcs_bench.session.redact import redact_fields, redact_session

needs_bwrap = pytest.mark.skipif(not BwrapBackend.available(), reason="bwrap is not usable here")


def _key() -> str:
    return "sk-proj-" + "".join(random_secrets.choice(string.ascii_letters + string.digits) for _ in range(48))


def _forms(key: str) -> list[bytes]:
    """What the test looks for, written independently of the scanner: the key raw, reversed, hex
    (both cases), base64 (standard and URL-safe, as ``base64`` writes it), its halves, and base64
    of the key behind a 1- and a 2-byte prefix (its key-only characters)."""
    raw = key.encode()
    out = [raw, raw[::-1], raw.hex().encode(), raw.hex().upper().encode(), raw[:28], raw[28:],
           base64.b64encode(raw)[:-4], base64.urlsafe_b64encode(raw)[:-4]]
    for prefix in (b"x", b"xx"):
        enc = base64.b64encode(prefix + raw)
        out.append(enc[4:-4])
    return out


def _inflated(data: bytes) -> list[bytes]:
    """Every zlib (and gzip) stream that starts anywhere in ``data``, inflated (bounded): a loose
    object, each object of a pack, a gzip file."""
    out = []
    for i in range(len(data) - 1):
        b0, b1 = data[i], data[i + 1]
        wbits = None
        if b0 & 0x0F == 8 and b0 >> 4 <= 7 and ((b0 << 8) | b1) % 31 == 0:
            wbits = 15
        elif b0 == 0x1F and b1 == 0x8B:
            wbits = 31
        if wbits is None:
            continue
        d = zlib.decompressobj(wbits)
        try:
            text = d.decompress(data[i:], 64 << 20)
        except zlib.error:
            continue
        if text:
            out.append(text)
    return out


def _blobs(root: Path):
    """(where, bytes) of every file under ``root``, every member of every tar.gz in it, and every
    zlib stream in any of them, inflated."""
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.is_symlink():
            continue
        data = path.read_bytes()
        yield str(path), data
        for i, text in enumerate(_inflated(data)):
            yield f"{path} (stream {i})", text
        if path.name.endswith(".tar.gz"):
            with tarfile.open(path) as tar:
                for member in tar.getmembers():
                    yield f"{path}:{member.name} (name)", member.name.encode() + member.linkname.encode()
                    if member.isfile():
                        content = tar.extractfile(member).read()
                        yield f"{path}:{member.name}", content
                        for i, text in enumerate(_inflated(content)):
                            yield f"{path}:{member.name} (stream {i})", text


def _bytes_read() -> int:
    """What this process has read so far (every read and pread, sparse or not)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar")


def _open_deep(root: Path, parts: list[str]) -> int:
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for part in parts:
        nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        os.close(fd)
        fd = nxt
    return fd


# -- the scanner ---------------------------------------------------------------------------------------

def test_every_form_of_a_key_is_found_and_masked_and_nothing_else():
    key = _key()
    scan = scanner([key])
    for form in _forms(key) + ["".join(f"%{b:02X}" for b in key.encode()).encode(),
                               base64.b64encode(b"z" + key.encode()[:30]), base64.b64encode(key.encode()[30:])]:
        data = b"before " + form + b" after"
        red, hits = scan.redact(data)
        assert hits and form not in red and mask(key).encode() in red, form
        assert red.startswith(b"before ") and red.endswith(b" after")
    other = _key()  # another key of the same kind (the same "sk-proj-" prefix) is not this one
    assert not scan.found(other.encode() + other.encode().hex().encode() + base64.b64encode(other.encode()))
    assert not scan.found(key.encode()[:12] + b" " + key.encode()[12:24])  # parts shorter than a window
    assert scanner([]) is None and scanner(None) is None  # no key: no pass at all


def test_a_key_across_a_chunk_boundary_is_found_when_streamed():
    from sdcs_bench.core.secretscan import CHUNK

    key = _key()
    scan = scanner([key])
    for at in (CHUNK - 30, CHUNK - 1, CHUNK, 2 * CHUNK - 7):
        data = b"a" * at + key.encode() + b"b" * 100
        out = io.BytesIO()
        assert scan.stream(io.BytesIO(data).read, out.write) == 1
        assert key.encode() not in out.getvalue() and out.getvalue().count(mask(key).encode()) == 1
        assert scan.stream(io.BytesIO(data).read) == 1


def test_a_record_is_masked_in_every_encoding_and_says_where():
    key = _key()
    record = {"cleave": {"diff": "+TOKEN = '" + base64.b64encode(key.encode()).decode() + "'\n"},
              "files": {f"notes/{key.encode().hex()}.txt": 1}, "ok": "nothing here", "n": 3}
    new, hits = redact_fields(record, [key])
    text = json.dumps(new)
    assert all(f.decode() not in text for f in _forms(key)[:8] if len(f) >= 20)
    assert hits == ["cleave.diff", f"files.notes/{mask(key)}.txt"] and new["ok"] == "nothing here" and new["n"] == 3


def test_the_carried_state_is_masked(tmp_path):
    key = _key()
    home = tmp_path / "home"
    (home / ".tool").mkdir(parents=True)
    (home / ".tool" / "conv.jsonl").write_text(json.dumps({"said": key[::-1]}) + "\n")
    (home / ".tool" / "clean.jsonl").write_text("{}\n")
    carry = tmp_path / "carry.tar.gz"
    pack_state(home, [".tool/conv.jsonl", ".tool/clean.jsonl"], carry)
    rec = redact_state(carry, [key])
    assert rec["credential_leak"] == [".tool/conv.jsonl"]
    state = read_state(carry)
    assert key[::-1].encode() not in state[".tool/conv.jsonl"] and mask(key).encode() in state[".tool/conv.jsonl"]
    assert state[".tool/clean.jsonl"] == b"{}\n"


# -- a hostile agent that holds its key ----------------------------------------------------------------

def _leaking_script(key: str) -> str:
    return "; ".join([
        f"K='{key}'",
        "printf 'key=%s\\n' \"$K\" > notes_raw.txt",
        "printf %s \"$K\" | base64 > notes_b64.txt",
        "printf %s \"$K\" | base64 | tr '+/' '-_' > notes_b64url.txt",
        "printf 'xx%s' \"$K\" | base64 -w 0 > notes_b64_shifted.txt",
        "printf %s \"$K\" | od -An -tx1 | tr -d ' \\n' > notes_hex.txt",
        "printf %s \"$K\" | od -An -tx1 | tr -d ' \\n' | tr a-f A-F > notes_HEX.txt",
        "printf %s \"$K\" | rev > notes_rev.txt",
        "mkdir -p sub",
        "printf '%s\\n' \"$(printf %s \"$K\" | cut -c1-28)\" > sub/part_a.txt",
        "printf 'rest: %s\\n' \"$(printf %s \"$K\" | cut -c29-)\" > sub/part_b.txt",
        "printf %s \"$K\" | gzip > notes.gz",
        "printf x > \"name_$K.txt\"",  # a key in a name
        "echo \"$K\"; printf %s \"$K\" | base64",  # into the transcript
        "git add -A && git commit -qm \"notes $K\"",
        "git gc -q --prune=now",
        "printf %s \"$K\" | git hash-object -w --stdin",  # a loose object after the pack
        "printf 'url=%s\\n' \"$K\" > .git/leak_note",
        "git count-objects -v >&2",
    ])


@needs_bwrap
def test_a_key_the_agent_wrote_everywhere_never_reaches_the_stage_directory(tmp_path, monkeypatch):
    from hostile_support import backend_named, inspect_git

    key = _key()
    monkeypatch.setenv("OPENAI_API_KEY", key)
    h = run_hostile(tmp_path, [_leaking_script(key)], backend_named("bwrap"))
    assert inspect_git(h.workdir, "log", "-1", "--format=%s").strip() == f"notes {key}", "the attack committed"
    assert any(p.suffix == ".pack" for p in (h.workdir / ".git" / "objects" / "pack").iterdir())
    stage = tmp_path / "s1"
    snap = write_snapshot(h.workdir, stage)  # (the keys to look for: this process's environment)

    # what the session stage records: the session's redaction pass, then the snapshot's
    leaks = set(h.record["credential_leak"]) | {f"tree:{p}" for p in snap["credential_leak"]}
    for name in ("notes_raw.txt", "notes_b64.txt", "notes_b64url.txt", "notes_b64_shifted.txt", "notes_hex.txt",
                 "notes_HEX.txt", "notes_rev.txt", "sub/part_a.txt", "sub/part_b.txt", "notes.gz"):
        assert f"tree:{name}" in leaks, (name, sorted(leaks))
    assert "stage:transcript.jsonl" in leaks
    assert any(p.endswith(".pack") for p in snap["credential_leak"]), snap
    assert any(p.startswith(".git/objects/") and not p.startswith(".git/objects/pack") for p in snap["credential_leak"])
    assert ".git/leak_note" in snap["redacted"] and "notes_raw.txt" not in snap["credential_leak"]  # (done before)
    assert {"notes.gz", f"name_{mask(key)}.txt", ".git/index"} <= {e["path"] for e in snap["left_out"]}, snap

    forms = _forms(key)
    checked = 0
    for where, data in _blobs(stage):
        for form in forms:
            assert form not in data, (where, form)
        checked += 1
    assert checked > 40
    for form in forms:
        assert form.decode() not in json.dumps(h.record)

    # What the snapshot kept restores: the redacted notes, masked; the tree without the pack
    restored = tmp_path / "restored"
    restore_snapshot(stage, restored)
    assert (restored / "notes_raw.txt").read_text() == f"key={mask(key)}\n"
    assert key not in (restored / ".git" / "leak_note").read_text()
    assert not (restored / "notes.gz").exists()


@needs_bwrap
def test_what_no_reader_may_take_whole_leaves_the_snapshot_and_the_redaction_finishing(tmp_path, monkeypatch):
    from hostile_support import backend_named

    key = _key()
    monkeypatch.setenv("OPENAI_API_KEY", key)
    deep = ["d" * 250] * 20  # 5,000 characters: past PATH_MAX
    script = "; ".join([
        f"K='{key}'",
        # (a shell's `cd` keeps the whole path and stops short of PATH_MAX; chdir by one name does not)
        f"python3 -c 'import os, sys\nfor _ in range({len(deep)}):\n    os.mkdir(\"{deep[0]}\"); os.chdir(\"{deep[0]}\")\n"
        "open(\"deep.txt\", \"w\").write(\"deep %s\\n\" % sys.argv[1]); os.mkfifo(\"deep_fifo\")' \"$K\"",
        "mkfifo pipe",
        "head -c 3000000 /dev/urandom > big.bin",
        "mkdir many && i=0; while [ $i -lt 400 ]; do : > many/f$i; i=$((i+1)); done",
    ])
    h = run_hostile(tmp_path, [script], backend_named("bwrap"))
    # A sparse file of 4 GiB (no disk): planted from outside, as the sandbox's file-size limit stops
    # the agent's own `truncate` (the snapshot must hold whatever the backend let through)
    with open(h.workdir / "sparse.bin", "wb") as fh:
        fh.truncate(4 << 30)
    deep_file = "/".join(deep) + "/deep.txt"
    assert deep_file in h.record["redacted_files"] and f"tree:{deep_file}" in h.record["credential_leak"]

    stage = tmp_path / "snap"
    before = _bytes_read()
    snap = write_snapshot(h.workdir, stage, caps=Caps(file_bytes=2 << 20))
    assert _bytes_read() - before < 1 << 30, "the sparse file (or something as large) was read"
    why = {e["path"]: e["why"] for e in snap["left_out"]}
    assert set(why) >= {"sparse.bin", "big.bin", "pipe", "/".join(deep) + "/deep_fifo"}, why
    assert "FIFO" in why["pipe"] and "not read" in why["sparse.bin"]
    assert snap["limit"] == "disk" and "file_bytes" in snap["limits"]
    assert (stage / "snapshot.tar.gz").stat().st_size < 1 << 20

    restored = tmp_path / "restored"
    rec = restore_snapshot(stage, restored)
    assert rec["left_out_count"] == 0
    fd = _open_deep(restored, deep)
    try:
        with os.fdopen(os.open("deep.txt", os.O_RDONLY, dir_fd=fd), "rb") as fh:
            assert fh.read() == f"deep {mask(key)}\n".encode()
    finally:
        os.close(fd)
    assert not (restored / "sparse.bin").exists() and not (restored / "pipe").exists()
    assert len(os.listdir(restored / "many")) == 400

    few = write_snapshot(h.workdir, tmp_path / "few", caps=Caps(entries=100))
    assert few["limit"] == "disk" and "entries" in few["limits"] and 0 < few["entries"] <= 100
    with tarfile.open(tmp_path / "few" / "snapshot.tar.gz") as tar:
        assert len(tar.getmembers()) == few["entries"]


def test_the_session_redaction_pass_walks_past_path_max_and_leaves_large_files_unread(tmp_path):
    """Without a sandbox: the pass over the stage directory and the tree, with a deep path, a sparse
    file, a FIFO and a file past the cap in each."""
    key = _key()
    stage, work = tmp_path / "stage", tmp_path / "work"
    for root in (stage, work):
        root.mkdir()
        fd = os.open(root, os.O_RDONLY)
        for _ in range(20):
            os.mkdir("e" * 250, dir_fd=fd)
            nxt = os.open("e" * 250, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nxt
        with os.fdopen(os.open("k.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as fh:
            fh.write(key[::-1])
        os.close(fd)
        with open(root / "sparse.bin", "wb") as fh:
            fh.truncate(4 << 30)
        os.mkfifo(root / "fifo")
    (stage / "transcript.jsonl").write_text(json.dumps({"text": key}) + "\n")
    before = _bytes_read()
    record = redact_session(stage, work, [key], {"index": 1, "note": key})
    assert _bytes_read() - before < 1 << 30
    deep = "/".join(["e" * 250] * 20) + "/k.txt"
    assert set(record["credential_leak"]) == {"record:note", "stage:transcript.jsonl", f"stage:{deep}", f"tree:{deep}"}
    assert key not in (stage / "transcript.jsonl").read_text() and record["note"] == mask(key)
    # a stage file past the cap is cut to it (what is kept is checked), and stays sparse; the tree's is left
    assert "sparse.bin" in record["redaction"]["truncated"]
    st = os.stat(stage / "sparse.bin")
    assert st.st_size == Caps().file_bytes and st.st_blocks * 512 < 1 << 20
    assert os.stat(work / "sparse.bin").st_size == 4 << 30


def test_a_restore_keeps_sparse_files_sparse(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    with open(src / "holes.bin", "wb") as fh:
        fh.seek(64 << 20)
        fh.write(b"end")
    (src / "d").mkdir()
    (src / "d" / "f.txt").write_text("x")
    os.symlink("../holes.bin", src / "d" / "link")
    os.link(src / "d" / "f.txt", src / "hard.txt")
    rec = write_tree(src, tmp_path / "s.tar.gz")
    assert rec["left_out_count"] == 0 and rec["credential_leak"] == []
    out = tmp_path / "out"
    restore_tree(tmp_path / "s.tar.gz", out)
    st = os.stat(out / "holes.bin")
    assert st.st_size == (64 << 20) + 3 and st.st_blocks * 512 < 1 << 20, "the restore made the file dense"
    assert (out / "holes.bin").read_bytes()[-3:] == b"end"
    assert os.readlink(out / "d" / "link") == "../holes.bin"
    assert os.stat(out / "hard.txt").st_ino == os.stat(out / "d" / "f.txt").st_ino


def test_a_restore_never_writes_through_a_link_an_archive_planted(tmp_path):
    archive = tmp_path / "evil.tar.gz"
    outside = tmp_path / "outside"
    outside.mkdir()
    with tarfile.open(archive, "w:gz") as tar:
        link = tarfile.TarInfo("a")
        link.type, link.linkname = tarfile.SYMTYPE, str(outside)
        tar.addfile(link)
        f = tarfile.TarInfo("a/pwned.txt")
        f.size = 1
        tar.addfile(f, io.BytesIO(b"x"))
        up = tarfile.TarInfo("../up.txt")
        up.size = 1
        tar.addfile(up, io.BytesIO(b"x"))
    rec = restore_tree(archive, tmp_path / "dest")
    assert list(outside.iterdir()) == [] and not (tmp_path / "up.txt").exists()
    assert {e["path"] for e in rec["left_out"]} == {"a/pwned.txt", "../up.txt"}
