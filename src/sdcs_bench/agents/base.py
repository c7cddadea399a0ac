"""The one interface every harness adapter implements.

The session runner owns everything around the agent (sandbox, private HOME, cleave watcher,
git guard, timeout); an adapter only says how to start its harness and how to read what it
spent. Real harnesses (Claude Code, Codex, ...) are further subclasses with the same shape.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from sdcs_bench.trial.arms import Arm
from sdcs_bench.trial.components import AgentConfig
from sdcs_bench.core.tokens import TokenUsage
from sdcs_bench.trial.workload_model import SessionSpec, Workload


@dataclass(frozen=True)
class SessionContext:
    trial_id: str
    index: int  # 1-based position in the schedule
    session: SessionSpec
    workload: Workload
    arm: Arm
    workdir: Path  # the sandbox repository
    home: Path  # a fresh, private HOME for this session only
    stage_dir: Path  # where the runner keeps this session's records
    endpoint: str | None = None  # the session's model proxy (real harnesses only)
    api_key: str | None = None  # the session's stand-in token (never the provider's key): environment only
    # The trial's continuation (docs/protocol.md#continuation-modes), for the modes that carry the
    # harness's own state: ``mode``, ``conversation`` (the id the conversation is started or resumed
    # under) and ``resume`` (true: continue that conversation, whose state was carried into ``home``).
    continuation: dict[str, Any] | None = None
    seed: int = 0  # the trial's seed (a stochastic reference policy draws from it)

    @property
    def conversation(self) -> str | None:
        return (self.continuation or {}).get("conversation")

    @property
    def resuming(self) -> bool:
        return bool((self.continuation or {}).get("resume"))

    @property
    def resume_id(self) -> str | None:
        """The id the harness itself gave the conversation it resumes (recorded by the session that
        left it; the ``conversation`` for a harness started under that id)."""
        return (self.continuation or {}).get("session_id") or self.conversation


@dataclass
class Invocation:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    stdin: bytes | None = None
    ro_binds: list[Path] = field(default_factory=list)  # extra read-only paths the harness needs
    network: bool = False


class Harness(ABC):
    name: ClassVar[str]
    # Does the harness stop itself at the cleave (a post-tool hook)? Then the watcher's kill waits
    # ``stop_grace_s`` for that clean exit; otherwise the watcher kills at once.
    exact_stop: ClassVar[bool] = False
    # Files the harness itself may write into the repository (its own memory), listed per session.
    repo_memory_globs: ClassVar[tuple[str, ...]] = ()

    def __init__(self, cfg: AgentConfig | dict[str, Any]) -> None:
        self.cfg = AgentConfig.of(cfg)

    @property
    def is_reference(self) -> bool:
        return self.cfg.reference

    @property
    def needs_model(self) -> bool:
        """Real harnesses talk to a model through the session's proxy; reference policies do not."""
        return not self.is_reference

    @property
    def meters_itself(self) -> bool:
        """A reference policy calls no model: it reports a deterministic meter per step through the
        sandbox's control directory instead, which token and turn cut rules count."""
        return self.is_reference

    @property
    def stop_grace_s(self) -> float:
        return self.cfg.stop_grace_s if self.exact_stop else 0.0

    @abstractmethod
    def invocation(self, ctx: SessionContext) -> Invocation:
        """The command, environment and input that start one headless session."""

    @abstractmethod
    def usage(self, ctx: SessionContext, transcript: Path) -> TokenUsage:
        """What the session spent, as disjoint components."""

    def turns(self, transcript: Path) -> int:
        """Agent turns of a harness that calls no model (a real harness's turns are its answered
        model calls, counted at the proxy, the same way for every harness)."""
        return 0

    def context_exposure(self, ctx: SessionContext) -> str:
        """How the arm's AGENTS.md reaches the harness (recorded on every session)."""
        return "none"

    def keep_records(self, ctx: SessionContext) -> list[str]:
        """Copy the harness's own records of the session (its transcript, rollout, chat files) from
        the private HOME, which is deleted after the session, into ``ctx.stage_dir / "native"``;
        return them relative to the stage directory. The event stream (``sdcs_bench.coherence``)
        is read from them. Default: nothing beyond ``transcript.jsonl``."""
        return []

    # The continuation modes (trial/continuation.py) this harness cannot do headless, each with why:
    # a grid asking for one is refused at plan time with that line. reset, trace and summary need
    # nothing of a harness (its prompt carries them); resume and compact need its own state.
    unsupported_continuations: ClassVar[dict[str, str]] = {
        "resume": "no headless resume of a killed conversation is known for it",
        "compact": "no headless resume of a killed conversation (and so no compaction of one) is known for it",
    }

    # What the harness's own compaction request (the compact mode) is known to say, so a replay
    # script's entry for it is recognised at plan time (its ``match``); None: no compaction to script.
    compaction_request: ClassVar[str | None] = None

    def carried_state(self, ctx: SessionContext) -> list[str]:
        """The files under ``ctx.home`` (relative to it) that resuming this session's conversation
        needs, read after the session; exactly these cross to the next session's HOME."""
        return []

    def session_id(self, ctx: SessionContext) -> str | None:
        """After a session: the id its harness gave the conversation, which ``resume`` names (the
        ``conversation`` for a harness started under that id)."""
        return ctx.conversation

    def compaction(self, ctx: SessionContext) -> dict[str, Any] | None:
        """The harness's own compaction in this session, from its own records (the ``compact``
        continuation): ``trigger``, ``tokens_before``, ``tokens_after`` and the ``summary`` it wrote;
        None when its records show none."""
        return None

    def native_dir(self, ctx: SessionContext) -> Path:
        return ctx.stage_dir / "native" / self.name
