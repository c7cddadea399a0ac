"""A stochastic reference policy with a known distribution (docs/statistics.md): the statistics'
ground truth.

A gold-patch policy whose ``policy.keep`` is set *keeps* each requirement with probability ``p``:
it is told only the kept requirements (its briefing leaves the others out, as a model that lacks
them would), decided from the trial's seed. Each requirement's draw is a uniform number made from
the seed and the requirement's id (SHA-256), so a trial is reproducible, its closed form exact, and
trials of different seeds independent. ``keep.by_arm`` gives an arm its own ``p``: two arms draw
the same uniforms for the same seed, so a difference planted between them is a *paired* one (the
requirements kept under the lower ``p`` are kept under the higher one too). ``keep.draws:
independent`` makes each arm draw its own uniforms instead (the arm's name is hashed in too): two
arms of the same ``p`` are then two independent samples of one distribution, the known null a test
of the paired difference is checked against (the ``null_check`` study), where paired draws would
make every difference exactly zero.

Over seeds, the number of kept requirements is Binomial(n, p), its mean ``n * p``; with every kept
requirement passing (the oracle's behaviour: it knows the whole kept sprint in every session) that
is the net score's distribution. With paired draws the difference between arms of ``p1 < p2`` is
Binomial(n, p2 - p1); with independent draws it is the difference of two independent binomials
(mean ``n * (p2 - p1)``, variance ``n * (p1 (1 - p1) + p2 (1 - p2))``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.trial.components import Keep, Policy


def _keep(policy: Policy | Mapping[str, Any]) -> Keep | None:
    return policy.keep if isinstance(policy, Policy) else Keep.from_dict(policy.get("keep"))


def keep_probability(policy: Policy | Mapping[str, Any], arm: str) -> float | None:
    """The policy's ``p`` under ``arm`` (None: a deterministic policy)."""
    keep = _keep(policy)
    if keep is None:
        return None
    p = keep.probability_for(arm)
    if not 0 <= p <= 1:
        raise SpecSnapError(f"policy.keep: probability {p} for arm {arm!r} is not between 0 and 1")
    return p


DRAWS = ("paired", "independent")


def draw(seed: int, requirement: str, arm: str | None = None) -> float:
    """The uniform number in [0, 1) of one requirement in the trial of ``seed`` (of ``arm`` too,
    for independent draws)."""
    key = f"specsnap-keep:{int(seed)}:{requirement}" + ("" if arm is None else f":{arm}")
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _draws(policy: Policy | Mapping[str, Any]) -> str:
    keep = _keep(policy)
    draws = keep.draws if keep is not None else "paired"
    if draws not in DRAWS:
        raise SpecSnapError(f"policy.keep.draws: {draws!r} is not one of {', '.join(DRAWS)}")
    return draws


def dropped(policy: Policy | Mapping[str, Any], arm: str, seed: int, requirements: Iterable[str]) -> frozenset[str]:
    """The requirements the policy does not keep in the trial of ``seed`` under ``arm``."""
    p = keep_probability(policy, arm)
    if p is None:
        return frozenset()
    own = arm if _draws(policy) == "independent" else None
    return frozenset(r for r in requirements if draw(seed, r, own) >= p)


def distribution(policy: Policy | Mapping[str, Any], arm: str, n: int) -> dict[str, Any] | None:
    """The known distribution of the number of kept requirements (the net score of a policy that
    passes every requirement it keeps)."""
    p = keep_probability(policy, arm)
    if p is None:
        return None
    return {"kind": "binomial", "n": n, "p": p, "mean": n * p, "sd": (n * p * (1 - p)) ** 0.5}
