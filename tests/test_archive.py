"""Unpacking an archive an agent's files went into: nothing lands outside the directory, the same
way on every interpreter (Python's own extraction filters exist only from 3.11.4)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from sdcs_bench.core.archive import safe_extract
from sdcs_bench.core.errors import SpecSnapError


def _archive(tmp_path: Path, *members: tarfile.TarInfo) -> Path:
    path = tmp_path / "a.tar"
    with tarfile.open(path, "w") as tar:
        for m in members:
            tar.addfile(m, io.BytesIO(b"x" * m.size) if m.isfile() else None)
    return path


def _file(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = 1
    return info


def _link(name: str, target: str, kind=tarfile.SYMTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


def _extract(tmp_path: Path, policy: str, *members: tarfile.TarInfo) -> Path:
    dest = tmp_path / "dest"
    dest.mkdir()
    with tarfile.open(_archive(tmp_path, _file("pkg/ok.py"), *members)) as tar:
        safe_extract(tar, dest, policy)
    return dest


@pytest.mark.parametrize("policy", ["tar", "data"])
@pytest.mark.parametrize("member", [_file("../escape.txt"), _file("pkg/../../escape.txt"),
                                    _link("pkg/h", "../outside", tarfile.LNKTYPE)], ids=["parent", "nested", "hard link"])
def test_a_member_landing_outside_is_refused_before_anything_is_written(policy, member, tmp_path):
    with pytest.raises(SpecSnapError, match="outside"):
        _extract(tmp_path, policy, member)
    assert not (tmp_path / "escape.txt").exists()
    assert not (tmp_path / "dest" / "pkg").exists(), "nothing of a refused archive is unpacked"


def test_an_absolute_name_lands_inside(tmp_path):
    dest = _extract(tmp_path, "tar", _file("/specsnap-absolute.txt"))
    assert (dest / "specsnap-absolute.txt").is_file() and not Path("/specsnap-absolute.txt").exists()


@pytest.mark.parametrize("target", ["../../etc", "/etc/passwd"])
def test_a_link_out_is_restored_faithfully_from_a_snapshot_and_refused_from_a_download(target, tmp_path):
    dest = _extract(tmp_path / "snap", "tar", _link("pkg/out", target)) if (tmp_path / "snap").mkdir() is None else None
    assert (dest / "pkg" / "out").is_symlink() and str((dest / "pkg" / "out").readlink()) == target
    (tmp_path / "dl").mkdir()
    with pytest.raises(SpecSnapError, match="points outside"):
        _extract(tmp_path / "dl", "data", _link("pkg/out", target))


def test_set_uid_bits_are_cleared_and_an_inner_link_unpacks(tmp_path):
    setuid = _file("pkg/tool")
    setuid.mode = 0o4755
    dest = _extract(tmp_path, "data", setuid, _link("pkg/b.py", "ok.py"))
    assert (dest / "pkg" / "tool").stat().st_mode & 0o7777 == 0o755
    assert (dest / "pkg" / "b.py").read_text() == "x"
