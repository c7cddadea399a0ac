"""Fetching a real repository's pinned source (``sdcs_bench.trial.repo.SourcePin``) once, verified every time.

A pin is data in the repository's ``workload.yaml`` (docs/real_repos.md):

- ``{kind: sdist, name, version, sha256}``: a source distribution from the package index. Its file
  URL is read from the index's simple API (no build, no metadata step: some sdists, isort 5.10.1
  among them, cannot build their metadata with today's tools), downloaded, and its SHA-256
  checked against the pin on every download and every later use.
- ``{kind: git, url, commit}``: a repository cloned and checked out at one full commit id, whose
  tree is archived; the commit id is the hash.

The fetched archive is kept in a directory of its own (the pipeline's is
``<results>/_cache/sources/<pin>/``, shared by every study and trial that uses the pin), and unpacked
beside it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.archive import safe_extract
from sdcs_bench.core.fsutil import atomic_path, atomic_write, sha256_file
from sdcs_bench.trial.repo import SourcePin, source_tree

INDEX_URL = "https://pypi.org/simple"  # the package index (SPECSNAP_INDEX_URL overrides it)
RECORD = "source.json"


def download_cache() -> Path:
    """Verified archives kept across result directories and fresh checkouts (a CI machine
    downloads each pin once): ``$SPECSNAP_DOWNLOAD_CACHE``, else ``~/.cache/specsnap/downloads``,
    one directory per SHA-256. An archive taken from it is verified again like a download."""
    return Path(os.environ.get("SPECSNAP_DOWNLOAD_CACHE") or Path.home() / ".cache" / "specsnap" / "downloads")


def _keep(archive: Path, kept: Path) -> None:
    """Copy a verified archive into the download cache (best effort: a read-only or full cache only
    means downloading again next time)."""
    if kept.is_file():
        return
    try:
        kept.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(kept) as tmp:
            shutil.copyfile(archive, tmp)
    except OSError:
        pass


def _index_url() -> str:
    return os.environ.get("SPECSNAP_INDEX_URL", INDEX_URL).rstrip("/")


def _index_files(name: str, what: str) -> tuple[str, list[dict[str, Any]]]:
    """(the project's API URL, its files) from the index's simple API in its JSON form (PEP 691),
    which every index and mirror serves."""
    import urllib.error
    import urllib.request  # (here: every stage imports this module, only a first fetch downloads)

    api = f"{_index_url()}/{re.sub(r'[-_.]+', '-', name).lower()}/"
    request = urllib.request.Request(api, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as resp:  # noqa: S310 (an https or file URL)
            info = json.load(resp)
    except urllib.error.HTTPError as exc:
        raise SpecSnapError(f"{what}: the package index answered {exc.code} for {api}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise SpecSnapError(f"{what}: cannot read the package index ({api}): "
                            f"{getattr(exc, 'reason', exc)}; fetching a source needs the network once, "
                            "after which it is cached") from None
    return api, list(info.get("files", []))


def _sdists(files: list[dict[str, Any]], name: str, version: str) -> list[dict[str, Any]]:
    """The sdists of one version, whatever spelling of the name their file uses (``Click-8.1.3``)."""
    want = re.sub(r"[-_.]+", "-", name).lower()
    found = []
    for f in files:
        filename = f.get("filename", "")
        for ext in (".tar.gz", ".zip"):
            if filename.endswith(ext):
                stem = filename[: -len(ext)]
                project, sep, ver = stem.rpartition("-")
                if sep and ver == version and re.sub(r"[-_.]+", "-", project).lower() == want:
                    found.append(f)
    return found


def sdist_pin(name: str, version: str) -> SourcePin:
    """The pin of a release's sdist as the index lists it (its file's own spelling of the name, and
    the SHA-256 the index gives; the download is checked against it)."""
    _, files = _index_files(name, f"{name}=={version}")
    sdists = [f for f in _sdists(files, name, version) if f.get("hashes", {}).get("sha256")]
    if not sdists:
        versions = sorted({f.get("filename", "").rsplit("-", 1)[-1].removesuffix(".tar.gz").removesuffix(".zip")
                           for f in files if f.get("filename", "").endswith((".tar.gz", ".zip"))})
        raise SpecSnapError(f"{name}=={version}: the index lists no sdist of that version", versions[-20:])
    chosen = sorted(sdists, key=lambda f: not f["filename"].endswith(".tar.gz"))[0]
    project = chosen["filename"].rpartition("-" + version)[0]
    return SourcePin("sdist", name=project, version=version, sha256=chosen["hashes"]["sha256"])


def _sdist_url(pin: SourcePin) -> tuple[str, str]:
    """(file name, download URL) of the pin's sdist, from the index's simple API."""
    api, files = _index_files(pin.name, f"source {pin.describe()}")
    sdists = [f for f in files if f.get("filename", "").endswith((".tar.gz", ".zip"))
              and f["filename"].startswith(f"{pin.name}-{pin.version}.")]
    matching = [f for f in sdists if f.get("hashes", {}).get("sha256") == pin.sha256]
    if not matching:
        listed = ", ".join(f"{f['filename']} ({f.get('hashes', {}).get('sha256', '?')[:12]}…)" for f in sdists)
        raise SpecSnapError(f"source {pin.describe()}: the index lists no sdist with that SHA-256 "
                            f"(it lists: {listed or 'none'}); the pin is wrong or the release was replaced")
    from urllib.parse import urljoin

    return matching[0]["filename"], urljoin(api, matching[0]["url"])


def _download(url: str, target: Path) -> None:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=120) as resp, atomic_path(target) as tmp:  # noqa: S310
            with open(tmp, "wb") as out:
                shutil.copyfileobj(resp, out)
    except (urllib.error.URLError, OSError) as exc:
        raise SpecSnapError(f"cannot download {url}: {getattr(exc, 'reason', exc)}") from None


def _git_archive(pin: SourcePin, target: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="specsnap-git-") as tmp:
        clone = Path(tmp) / "clone"
        steps = [["git", "init", "-q", str(clone)],
                 ["git", "-C", str(clone), "fetch", "-q", "--depth", "1", pin.url, pin.commit],
                 ["git", "-C", str(clone), "archive", "--format=tar", "-o", str(Path(tmp) / "a.tar"), pin.commit]]
        for argv in steps:
            proc = subprocess.run(argv, capture_output=True, text=True)
            if proc.returncode != 0:
                raise SpecSnapError(f"source {pin.describe()}: `{' '.join(argv[:4])} …` failed: "
                                    f"{proc.stderr.strip() or proc.stdout.strip()}")
        shutil.move(str(Path(tmp) / "a.tar"), target)


def _unpack(archive: Path, dest: Path, strip_top: bool) -> None:
    """Unpack ``archive`` into ``dest`` (its single top directory stripped, for an sdist), refusing
    any member that would land outside ``dest`` or is not a plain file, directory or symlink."""
    with tempfile.TemporaryDirectory(prefix="specsnap-unpack-", dir=dest.parent) as tmp:
        out = Path(tmp) / "x"
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                for member in zf.namelist():
                    if Path(member).is_absolute() or ".." in Path(member).parts:
                        raise SpecSnapError(f"{archive.name}: member {member!r} leaves the archive")
                zf.extractall(out)
        else:
            with tarfile.open(archive) as tar:
                safe_extract(tar, out, "data")
        root = out
        if strip_top:
            tops = list(out.iterdir())
            if len(tops) != 1 or not tops[0].is_dir():
                raise SpecSnapError(f"{archive.name}: an sdist holds one top directory, this one holds "
                                    f"{', '.join(sorted(p.name for p in tops))}")
            root = tops[0]
        shutil.rmtree(dest, ignore_errors=True)
        root.rename(dest)


def _sdist(pin: SourcePin, source_dir: Path) -> tuple[Path, str]:
    """The pin's sdist in ``source_dir``, verified: taken from the download cache when it holds it
    (no network), else downloaded from the URL the index lists for its SHA-256 and then kept."""
    kept = [p for p in sorted((download_cache() / pin.sha256).glob(f"{pin.name}-*"))
            if p.is_file() and sha256_file(p) == pin.sha256]
    if kept:
        archive = source_dir / kept[0].name
        shutil.copyfile(kept[0], archive)
        return archive, kept[0].as_uri()
    filename, url = _sdist_url(pin)
    archive = source_dir / filename
    _download(url, archive)
    got = sha256_file(archive)
    if got != pin.sha256:
        archive.unlink(missing_ok=True)
        raise SpecSnapError(f"source {pin.describe()}: {filename} downloaded from {url} has SHA-256 {got}, "
                            f"not the pinned {pin.sha256}; nothing was kept")
    _keep(archive, download_cache() / pin.sha256 / filename)
    return archive, url


def fetch_source(pin: SourcePin, source_dir: Path) -> dict[str, Any]:
    """Fetch ``pin`` into ``source_dir`` unless a verified copy is there; return its record
    (written last, as ``source.json``: its presence means the source is complete)."""
    source_dir = Path(source_dir)
    record_path = source_dir / RECORD
    if record_path.is_file():
        record = json.loads(record_path.read_text())
        archive = source_dir / record["archive"]
        if archive.is_file() and sha256_file(archive) == record["sha256"] and source_tree(source_dir).is_dir() \
                and (pin.kind == "git" or record["sha256"] == pin.sha256):
            return record
    source_dir.mkdir(parents=True, exist_ok=True)
    if pin.kind == "sdist":
        archive, url = _sdist(pin, source_dir)
    else:
        archive = source_dir / f"{pin.name}-{pin.commit[:12]}.tar"
        _git_archive(pin, archive)
        url = pin.url
    _unpack(archive, source_tree(source_dir), strip_top=pin.kind == "sdist")
    record = {"pin": pin.to_dict(), "archive": archive.name, "sha256": sha256_file(archive), "url": url,
              "bytes": archive.stat().st_size}
    atomic_write(record_path, json.dumps(record, indent=2))
    return record


def verified_tree(pin: SourcePin, source_dir: Path) -> Path:
    """The unpacked tree of a fetched source, after checking its record against the pin (a stage
    uses a source only through this)."""
    record_path = Path(source_dir) / RECORD
    if not record_path.is_file():
        raise SpecSnapError(f"source {pin.describe()} is not fetched ({record_path} is missing); "
                            "the pipeline's source rule fetches it, or run `specsnap fetch-source`")
    record = json.loads(record_path.read_text())
    if pin.kind == "sdist" and record.get("sha256") != pin.sha256:
        raise SpecSnapError(f"source {pin.describe()}: the cached archive has SHA-256 {record.get('sha256')}, "
                            "not the pin's; remove the cache directory and fetch again")
    return source_tree(source_dir)
