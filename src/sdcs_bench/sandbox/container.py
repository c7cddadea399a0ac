"""docker: each command in a fresh container of an image from ``containers/``, removed after it.

What a container sees: the image's read-only root (Debian's userland), a private ``/tmp``, the
sandbox and the session's HOME (writable; run as root, the container runs as the sandbox's own host
uid, :mod:`.owner`, and they are handed over to it while it runs), and read-only at their host paths
the run's own interpreter and the sdcs_bench package (as bwrap re-admits them) and the paths a
harness or the scorer names, except what the image carries itself (a generated image: a
repository's environment, a harness CLI). The project tree, hidden tests, gold, results, the
invoking user's HOME and other sandboxes are not mounted at all. Every capability is dropped, no
new privileges, the system calls of :mod:`.syscalls` refused, ``--network none`` (a command that
needs its model endpoint reaches exactly that port, relayed), and the session's limits from
``sandbox.limits`` in the config (:mod:`.limits`): memory and swap, tasks, CPU, the private /tmp
and /dev/shm, file size, descriptors.
"""

from __future__ import annotations

import os
import sys
from functools import cache
from pathlib import Path
from typing import Any

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.sandbox.base import Backend, relay_scratch, runtime_roots, sandbox_marker
from sdcs_bench.sandbox import syscalls
from sdcs_bench.sandbox.images import PRIVATE_TMP, SYSTEM_DIRS
from sdcs_bench.sandbox.limits import Limits
from sdcs_bench.sandbox.owner import account_files, host_uid

SHIM = Path(__file__).with_name("container_shim.py")
SANDBOX_LABEL = "org.specsnap.sandbox"


def _limits(limits: Limits) -> dict[str, Any]:
    """The docker engine's form of a sandbox's limits (:mod:`.limits`)."""
    return {"mem_limit": limits.memory, "memswap_limit": limits.memory + limits.swap,
            "nano_cpus": int(limits.cpus * 1e9), "pids_limit": limits.processes, "shm_size": limits.tmp,
            "ulimits": [{"Name": "fsize", "Soft": limits.file_size, "Hard": limits.file_size},
                        {"Name": "nofile", "Soft": limits.open_files, "Hard": limits.open_files},
                        {"Name": "core", "Soft": 0, "Hard": 0}]}


def report_path(workdir: Path) -> Path:
    """Where the shim says how the container ended (``oom_killed``), for :meth:`DockerBackend.limit_events`."""
    import tempfile

    return Path(tempfile.gettempdir()) / f"specsnap-report-{sandbox_marker(workdir)}.json"


class DockerBackend(Backend):
    name = "docker"
    isolated = True
    enforces_read_only = True

    def __init__(self, image_record: Path | None = None, limits: Limits | None = None) -> None:
        from sdcs_bench.sandbox.images import engine, read_record

        super().__init__(limits)

        self.client = engine()
        if image_record is None:
            from sdcs_bench.sandbox.images import image_tag

            tag = image_tag("base")
            try:
                image_id = self.client.images.get(tag).id
            except Exception:
                raise SpecSnapError(f"image {tag} is not built: run `specsnap build-image base` "
                                    "(or the study through Snakemake, which builds it)") from None
            self.image = {"name": "base", "tag": tag, "id": image_id, "provides": []}
        else:
            self.image = read_record(image_record)
            try:
                self.client.images.get(self.image["id"])
            except Exception:
                raise SpecSnapError(f"image record {image_record} names {self.image['id']}, which the engine "
                                    "does not have: delete the record and rerun to rebuild it") from None

    @classmethod
    @cache
    def available(cls) -> bool:
        try:
            from sdcs_bench.sandbox.images import engine

            engine()
            return True
        except SpecSnapError:
            return False

    def wrap(self, argv: list[str], *, workdir: Path, home: Path, network: bool, ro_binds: list[Path],
             read_only: list[Path] = (), pass_fds: tuple[int, ...] = (), ports: tuple[int, ...] = ()) -> list[str]:
        import json

        workdir, home = workdir.resolve(), home.resolve()
        mounts: dict[str, dict[str, Any]] = {}
        provided = [Path(p) for p in self.image.get("provides", [])]
        for path in [*runtime_roots(), *(p.resolve() for p in ro_binds if not self._provided(p.resolve(), provided))]:
            if path.exists() and str(path) not in SYSTEM_DIRS:
                mounts[str(path)] = {"type": "bind", "source": str(path), "target": str(path), "read_only": True}
        for path in (workdir, home):
            mounts[str(path)] = {"type": "bind", "source": str(path), "target": str(path), "read_only": False}
        for path in (p.resolve() for p in read_only):  # nested in the sandbox: mounted after it, read-only
            mounts[str(path)] = {"type": "bind", "source": str(path), "target": str(path), "read_only": True}
        mounts[str(PRIVATE_TMP)] = {"type": "tmpfs", "target": str(PRIVATE_TMP), "size": self.limits.tmp}
        uid = self.sandbox_uid(workdir)
        if uid is not None:  # (a passwd and group naming the sandbox's uid; the image's own otherwise)
            for name, path in account_files(uid).items():
                mounts[f"/etc/{name}"] = {"type": "bind", "source": str(path), "target": f"/etc/{name}", "read_only": True}
        uid, gid = (os.getuid(), os.getgid()) if uid is None else (uid, uid)
        spec = {
            "engine": os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock"),  # as engine() found it
            "image": self.image["id"],
            "workdir": str(workdir),
            "user": f"{uid}:{gid}",
            "labels": {SANDBOX_LABEL: sandbox_marker(workdir)},
            # Never the host's network: a command that names its ports (a harness and its model
            # proxy) gets exactly those, relayed through a unix socket.
            "network": "none",
            "ports": list(ports) if network else [],
            "mounts": sorted(mounts.values(), key=lambda m: m["target"].count("/")),
            "limits": _limits(self.limits),
            "seccomp": syscalls.docker_profile(),
            "tmp_size": self.limits.tmp,
            "report": str(report_path(workdir)),
            "pass_fds": list(pass_fds),
            "python": sys.executable,  # mounted at the same path (a runtime root)
            "relay_prefix": f"{relay_scratch(workdir).name}-",
        }
        return [sys.executable, "-I", "-B", str(SHIM), json.dumps(spec), "--", *argv]

    def sandbox_uid(self, workdir: Path) -> int | None:
        # (no user namespace: without one, the container's uid 0 would be the host's root)
        return host_uid(sandbox_marker(workdir))

    @staticmethod
    def _provided(path: Path, provided: list[Path]) -> bool:
        """Whether the image carries ``path``, or part of it (a harness's package in the shared npm
        prefix): mounting the host's copy over it would hide the image's."""
        return any(path == p or path.is_relative_to(p) or p.is_relative_to(path) for p in provided)

    def reap(self, workdir: Path) -> list[str]:
        """Remove every container of this sandbox still there (its shim was killed) and the
        shim's descriptor relays; then what every backend reaps (the work tree handed back)."""
        import shutil
        import tempfile

        for scratch in Path(tempfile.gettempdir()).glob(f"{relay_scratch(workdir).name}-*"):
            shutil.rmtree(scratch, ignore_errors=True)
        report_path(workdir).unlink(missing_ok=True)
        gone = []
        for container in self.client.containers.list(all=True, filters={"label": f"{SANDBOX_LABEL}={sandbox_marker(workdir)}"}):
            try:
                container.remove(force=True)
                gone.append(container.short_id)
            except Exception:
                pass
        return gone + super().reap(workdir)

    # The engine keeps the container's cgroups: what it stopped is what the shim reported.
    def confinement(self, workdir: Path, extra: list[str] = ()) -> list[str]:
        return []

    def enforced(self, workdir: Path) -> list[str]:
        return ["memory", "processes", "cpus", "tmp", "file_size", "open_files"]

    def limit_events(self, workdir: Path) -> dict[str, int]:
        import json

        try:
            report = json.loads(report_path(workdir).read_text())
        except (OSError, ValueError):
            report = {}
        return {"oom_kills": int(bool(report.get("oom_killed"))), "fork_refusals": 0}

    def memory_now(self, workdir: Path) -> int | None:
        return None
