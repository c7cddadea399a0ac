"""The docker backend's images (``containers/``), built without any image registry.

The root file system is Debian's own packages, installed by ``debootstrap`` from the mirror apt
already uses and imported with the docker SDK; every image under ``containers/<name>/`` is then
built ``FROM`` it with ``--network none``. An image's tag carries the SHA-256 of its build context
and of the rootfs fields, so a changed Dockerfile is a new image, and the image record (a JSON
file the ``build_image`` rule writes; the sessions that use the image take it as input) names the
exact image id a session runs in.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import yaml

from sdcs_bench.core.errors import SpecSnapError, unknown
from sdcs_bench.core.fsutil import atomic_write, sha256_file
from sdcs_bench.core.paths import project_root

LABEL = "org.specsnap.image"
PROVIDES = "org.specsnap.provides"  # the label of the host paths a generated image carries (JSON)
# The image provides the system: a path a harness names for its runtime (Node's prefix, /usr) is
# never mounted over it from the host, nor copied into a generated image.
SYSTEM_DIRS = frozenset({"/", "/usr", "/usr/local", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/opt", "/var"})
# Every container gets a private /tmp, which hides whatever an image holds there.
PRIVATE_TMP = Path("/tmp")


def carriable(path: Path | str) -> bool:
    """Whether an image can carry ``path`` (not under the containers' private /tmp)."""
    return not Path(path).resolve().is_relative_to(PRIVATE_TMP)


def containers_dir() -> Path:
    return project_root() / "containers"


def catalogue() -> dict[str, Any]:
    path = containers_dir() / "images.yaml"
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise SpecSnapError(f"{path} does not exist: this checkout has no image catalogue") from None
    except yaml.YAMLError as exc:
        raise SpecSnapError(f"{path}: invalid YAML: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("rootfs"), dict) or not isinstance(data.get("images"), dict):
        raise SpecSnapError(f"{path}: needs a `rootfs:` mapping and an `images:` mapping")
    return data


def image_names() -> list[str]:
    return sorted(catalogue()["images"])


def family_names() -> list[str]:
    """The generated images' families (``families:``): ``env-<workload>``, ``harness-<name>``."""
    return sorted(catalogue().get("families") or {})


def split_name(name: str) -> tuple[str, str] | None:
    """``(family, member)`` of a generated image's name (``env-click`` -> ``("env", "click")``)."""
    family, sep, member = name.partition("-")
    return (family, member) if sep and member and family in family_names() else None


def _unknown_image(name: str) -> SpecSnapError:
    return unknown("image", name, [*image_names(), *(f"{f}-<name>" for f in family_names())])


def context_dir(name: str) -> Path:
    generated = split_name(name)
    if name not in image_names() and generated is None:
        raise _unknown_image(name)
    path = containers_dir() / (generated[0] if generated else name)
    if not (path / "Dockerfile").is_file():
        raise SpecSnapError(f"image {name!r}: {path}/Dockerfile does not exist")
    return path


def context_files(name: str) -> list[Path]:
    """Every file of an image's build context (the inputs of its ``build_image`` job)."""
    return sorted(p for p in context_dir(name).rglob("*") if p.is_file())


def _rootfs_spec() -> dict[str, Any]:
    spec = catalogue()["rootfs"]
    return {"suite": str(spec.get("suite", "bookworm")), "variant": str(spec.get("variant", "minbase")),
            "include": sorted(map(str, spec.get("include") or []))}


def rootfs_tag() -> str:
    spec = _rootfs_spec()
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]
    return f"specsnap/rootfs:{spec['suite']}-{digest}"


def _entry(name: str) -> dict[str, Any]:
    context_dir(name)
    generated = split_name(name)
    if generated:
        return dict(catalogue()["families"][generated[0]] or {})
    return dict(catalogue()["images"][name] or {})


def parent_image(name: str) -> str | None:
    """The image ``name`` is built FROM (``from:``), or None for one built from the rootfs."""
    parent = _entry(name).get("from")
    if parent is not None:
        context_dir(str(parent))
    return str(parent) if parent else None


# Host files an image may copy in (``host_files:``), resolved when it is built.
HOST_FILES: dict[str, Callable[[], Path | None]] = {
    "node": lambda: Path(shutil.which("node")).resolve() if shutil.which("node") else None,
}


def host_files(name: str) -> list[Path]:
    files = []
    for key in _entry(name).get("host_files") or []:
        if key not in HOST_FILES:
            raise unknown(f"host file of image {name}", str(key), HOST_FILES)
        path = HOST_FILES[key]()
        if path is None or not path.is_file():
            raise SpecSnapError(f"image {name} needs the host's {key}, which is not installed here")
        files.append(path)
    return files


# What of the project a `project: true` image carries (the package, the workflow, the workloads).
PROJECT_PARTS = ("Snakefile", "pyproject.toml", "README.md", "src", "conf", "tiers", "real_repos", "workflow",
                 "harnesses", "containers")


def project_files(name: str) -> list[Path]:
    if not _entry(name).get("project"):
        return []
    root = project_root()
    files = []
    for part in PROJECT_PARTS:
        path = root / part
        candidates = [path] if path.is_file() else sorted(path.rglob("*")) if path.is_dir() else []
        files += [p for p in candidates if p.is_file() and "__pycache__" not in p.parts
                  and not any(x.endswith(".egg-info") for x in p.parts)]
    return files


@dataclass(frozen=True)
class Carried:
    """What a generated image (``env-<workload>``, ``harness-<name>``) carries from the host: the
    key of its contents (a repository environment's cache key, a harness's pin) and where they
    live (the environment's or the install's directory), both part of its digest, and the trees
    copied into it at their own paths (empty while not built or installed)."""

    key: str
    where: str
    trees: tuple[Path, ...] = ()


def image_digest(name: str, carried: Carried | None = None) -> str:
    """Over the rootfs fields, the parent image's digest, the build context, the host files, for
    an image that carries the project the project's files, and for a generated image the key of
    what it carries (not the trees' bytes: a key names exactly one environment or install)."""
    if split_name(name) and carried is None:
        raise SpecSnapError(f"image {name} is generated: its digest needs what it carries")
    parent = parent_image(name)
    h = hashlib.sha256((rootfs_tag() + (image_digest(parent) if parent else "")).encode())
    if carried is not None:
        h.update(b"carries\0" + carried.key.encode() + b"\0" + carried.where.encode() + b"\0")
    root = context_dir(name)
    for path in context_files(name):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    for path in host_files(name):  # large (Node is about 100 MB): streamed
        h.update(str(path).encode() + b"\0" + sha256_file(path).encode() + b"\0")
    for path in project_files(name):
        h.update(path.relative_to(project_root()).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def image_tag(name: str, digest: str | None = None) -> str:
    return f"specsnap/{name}:{(digest or image_digest(name))[:12]}"


def _copy_tree(path: Path, dest_root: Path) -> None:
    """``path`` (a file, a link or a directory) into the build context at ``dest_root``/<path>."""
    dest = dest_root / path.relative_to("/")
    dest.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir() and not path.is_symlink():
        shutil.copytree(path, dest, symlinks=True, dirs_exist_ok=True)
    else:
        shutil.copy2(path, dest, follow_symlinks=False)


# -- the engine -----------------------------------------------------------------------------------
def engine():
    """A client of the Docker engine (``DOCKER_HOST`` or the default socket), or one clear error."""
    try:
        import docker
    except ImportError:
        raise SpecSnapError("the docker backend needs the `docker` Python package (pip install docker)") from None
    try:
        client = docker.from_env(timeout=60)
        client.ping()
    except Exception as exc:  # the SDK raises DockerException, requests' and urllib3's errors alike
        raise SpecSnapError(
            f"no Docker engine answers ({type(exc).__name__}); start one (`containers/engine.sh start` "
            "as root) or choose another sandbox backend (sandbox.backend=bwrap)") from None
    return client


def _apt_mirror() -> str:
    """The Debian mirror apt already uses (deb822 sources first, then sources.list)."""
    for path in sorted(Path("/etc/apt/sources.list.d").glob("*.sources")):
        for line in path.read_text().splitlines():
            if line.startswith("URIs:") and "security" not in line:
                return line.split()[1]
    sources = Path("/etc/apt/sources.list")
    if sources.is_file():
        for line in sources.read_text().splitlines():
            m = re.match(r"deb\s+(?:\[[^]]*\]\s+)?(\S+)\s", line)
            if m and "security" not in m.group(1):
                return m.group(1)
    return "http://deb.debian.org/debian"


def ensure_rootfs(client, log: Callable[[str], None] = print) -> str:
    """The rootfs image's id, built with debootstrap and imported if the engine lacks it."""
    import docker

    tag = rootfs_tag()
    try:
        return client.images.get(tag).id
    except docker.errors.ImageNotFound:
        pass
    if shutil.which("debootstrap") is None:
        raise SpecSnapError("building the rootfs image needs debootstrap (Debian: apt-get install debootstrap)")
    spec = _rootfs_spec()
    with tempfile.TemporaryDirectory(prefix="specsnap-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        argv = ["debootstrap", f"--variant={spec['variant']}", f"--include={','.join(spec['include'])}",
                spec["suite"], str(rootfs), _apt_mirror()]
        log(f"building {tag}: {' '.join(argv)}")
        proc = subprocess.run(argv, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-5:])
            raise SpecSnapError(f"debootstrap failed (exit {proc.returncode}):\n{tail}")
        archive = Path(tmp) / "rootfs.tar"
        subprocess.run(["tar", "-C", str(rootfs), "-cf", str(archive), "."], check=True)
        repository, _, version = tag.partition(":")
        client.api.import_image_from_file(str(archive), repository=repository, tag=version,
                                          changes=[f'LABEL {LABEL}="rootfs"'])
    log(f"imported {tag}")
    return client.images.get(tag).id


def _wheels(name: str, context: Path, log: Callable[[str], None]) -> None:
    """Wheels of what the image installs (``wheels:``; ``project`` is the context's copy of the
    project), built on the host: the image build itself has no network."""
    import sys

    wanted = [str(context / w) if w.startswith("project") else str(w) for w in _entry(name).get("wheels") or []]
    if not wanted:
        return
    log(f"building wheels for {name}: {' '.join(map(str, _entry(name)['wheels']))}")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check",
                           "--wheel-dir", str(context / "wheels"), *wanted], capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-8:])
        raise SpecSnapError(f"image {name}: pip wheel failed (exit {proc.returncode}):\n{tail}")


def _build(client, name: str, log: Callable[[str], None], digest: str | None = None,
           carried: Carried | None = None):
    """The image ``name`` (its parent first), built unless the engine has its tag already."""
    import docker

    tag = image_tag(name, digest)
    try:
        image = client.images.get(tag)
        log(f"{tag} is already built ({image.id})")
        return image
    except docker.errors.ImageNotFound:
        pass
    parent = parent_image(name)
    args = {"ROOTFS": rootfs_tag(), **({"BASE": _build(client, parent, log).id} if parent else {})}
    hidden = [str(p) for p in (carried.trees if carried else ()) if not carriable(p)]
    if hidden:
        raise SpecSnapError(f"image {name} would carry {hidden[0]}, under /tmp, which every container's private /tmp "
                            "hides: keep the results directory and SPECSNAP_HARNESS_HOME outside /tmp")
    if carried is not None and not carried.trees:
        raise SpecSnapError(f"image {name} carries {carried.key}, which is not on this machine yet: "
                            + ("build the environment first (`specsnap build-env`)" if name.startswith("env-")
                               else "install it first (`specsnap install-harnesses`)"))
    with tempfile.TemporaryDirectory(prefix="specsnap-context-") as tmp:
        context = Path(tmp) / "context"
        shutil.copytree(context_dir(name), context, symlinks=True)
        for path in host_files(name):
            _copy_tree(path, context / "host")
        for path in project_files(name):
            dest = context / "project" / path.relative_to(project_root())
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest)
        for path in carried.trees if carried else ():
            _copy_tree(path, context / "host")
        (context / "host").mkdir(exist_ok=True)
        _wheels(name, context, log)
        log(f"building {tag} from {context_dir(name)}")
        labels = {PROVIDES: json.dumps([str(p) for p in carried.trees])} if carried else {}
        try:
            image, output = client.images.build(path=str(context), tag=tag, network_mode="none", buildargs=args,
                                                rm=True, forcerm=True, pull=False, labels=labels)
        except docker.errors.BuildError as exc:
            lines = [c.get("stream", c.get("error", "")).rstrip() for c in exc.build_log if isinstance(c, dict)]
            raise SpecSnapError(f"image {name} failed to build: {exc.msg}\n" + "\n".join(lines[-10:])) from None
    for chunk in output:
        if isinstance(chunk, dict) and chunk.get("stream", "").strip():
            log(chunk["stream"].rstrip())
    return image


def build_image(name: str, record: Path, log: Callable[[str], None] = print, digest: str | None = None,
                carried: Carried | None = None) -> dict[str, Any]:
    """Build ``containers/<name>`` (once: an image with its tag already in the engine is reused)
    and write its record. ``digest``: the image's, if the caller worked it out already;
    ``carried``: what a generated image carries."""
    digest = digest or image_digest(name, carried)
    client = engine()
    rootfs_id = ensure_rootfs(client, log)
    image = _build(client, name, log, digest, carried)
    data = {"name": name, "tag": image_tag(name, digest), "id": image.id, "digest": digest,
            "rootfs": rootfs_tag(), "rootfs_id": rootfs_id, "parent": parent_image(name),
            "carries": carried.key if carried else None,
            "provides": json.loads((image.labels or {}).get(PROVIDES, "[]")),
            "built": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    record.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(record, json.dumps(data, indent=2) + "\n")
    return data


def read_record(record: Path) -> dict[str, Any]:
    try:
        data = json.loads(Path(record).read_text())
        return {"name": data["name"], "tag": data["tag"], "id": data["id"], "provides": list(data.get("provides") or [])}
    except FileNotFoundError:
        name = Path(record).parent.name  # images/<name>/<digest>.json
        raise SpecSnapError(f"image record {record} does not exist: build the image first "
                            f"(`specsnap build-image {name}`, or run the study through Snakemake)") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise SpecSnapError(f"image record {record} is unreadable ({exc}); delete it and rebuild") from None
