# SPECSNAP-CANARY tier_3 467009d6-25ad-4df6-9015-503f8d3daf8e
import pytest

from rbac.policy import AccessDenied, Subject
from rbac.roles import Registry, Role


def _registry() -> Registry:
    return Registry(
        [
            Role("clerk", frozenset({"approve:refund:5000", "approve:refund:abc", "approve:refunds:90000"})),
            Role(
                "manager",
                frozenset({"approve:refund:25000", "approve:refund:+70000", "approve:refund:12.5", "approve:refund", "approve:refund:"}),
                ("clerk",),
            ),
        ]
    )


MANAGER = Subject("m", ("manager",))
CLERK = Subject("c", ("clerk", "ghost"))


def test_largest_limit_wins_including_inherited():
    from rbac.policy import approval_limit

    assert approval_limit(_registry(), MANAGER, "refund") == 25_000
    assert approval_limit(_registry(), CLERK, "refund") == 5_000


def test_action_must_match_exactly():
    from rbac.policy import approval_limit

    assert approval_limit(_registry(), CLERK, "refunds") == 90_000
    assert approval_limit(_registry(), CLERK, "writeoff") == 0
    assert approval_limit(_registry(), Subject("n", ()), "refund") == 0


def test_only_plain_digit_amounts_count():
    from rbac.policy import approval_limit

    reg = Registry([Role("r", frozenset({"approve:refund:+70000", "approve:refund:-5", "approve:refund:1e9"}))])
    assert approval_limit(reg, Subject("u", ("r",)), "refund") == 0


def test_amount_equal_to_limit_is_allowed():
    from rbac.policy import ensure_can_approve

    ensure_can_approve(_registry(), MANAGER, "refund", 25_000)
    ensure_can_approve(_registry(), Subject("n", ()), "refund", 0)


def test_amount_above_limit_denied():
    from rbac.policy import ensure_can_approve

    with pytest.raises(AccessDenied) as err:
        ensure_can_approve(_registry(), MANAGER, "refund", 25_001)
    assert str(err.value) == "m may approve refund up to 25000, not 25001"
    with pytest.raises(AccessDenied) as err:
        ensure_can_approve(_registry(), CLERK, "writeoff", 1)
    assert str(err.value) == "c may approve writeoff up to 0, not 1"


def test_listed_in_all():
    import rbac.policy

    assert {"approval_limit", "ensure_can_approve"} <= set(rbac.policy.__all__)
