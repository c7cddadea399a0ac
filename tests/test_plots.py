"""The aggregate's plots: what each shows, that they are byte-for-byte reproducible, and that a
plot the study no longer supports does not linger."""

from __future__ import annotations

import json

import pandas as pd

from sdcs_bench.pipeline.board import make_board
from sdcs_bench.pipeline.plots import _survival_matrix, write_plots


def _card(trial: str, arm: str, agent: str, reqs: dict, **extra) -> dict:
    net = sum(reqs.values())
    return {"trial": trial, "workload": "tier_2", "arm": arm, "agent": agent, "agent_kind": "reference policy",
            "model": "none", "harness": "reference", "variant": "none", "n_requirements": len(reqs), "raw": net,
            "net": net, "tes": float(net), "tokens": 0, "s1_edit_survived": True, "expected_net": None,
            "matches_expected": None, "poison_survived": "", "valid": True, "invalid_reasons": "", "tampered": False,
            "tamper_evidence": "", "requirements": json.dumps(reqs, sort_keys=True), **extra}


def _cards() -> pd.DataFrame:
    return pd.DataFrame([
        _card("a0", "Vanilla", "p", {"R-1": True, "R-2": False}),
        _card("a1", "Vanilla", "p", {"R-1": True, "R-2": True}),
        _card("b0", "State_MD_Only", "p", {"R-1": False, "R-2": True}),
        _card("c0", "State_MD_Only", "p", {"R-1": True, "R-2": True}, valid=False),  # invalid: left out
    ])


def test_the_survival_map_is_the_share_of_valid_trials_passing_each_requirement():
    cards = _cards()
    mat = _survival_matrix(cards[cards["valid"]])
    assert mat.loc["p · Vanilla", "R-1"] == 1.0 and mat.loc["p · Vanilla", "R-2"] == 0.5
    assert mat.loc["p · State_MD_Only", "R-1"] == 0.0 and mat.loc["p · State_MD_Only", "R-2"] == 1.0


def test_plots_are_written_labelled_and_reproducible(tmp_path, monkeypatch):
    """The same files every time, drawn one by one or side by side in worker processes (the
    aggregate job's threads, as Snakemake gives them)."""
    cards = _cards()
    board = make_board(cards)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    first = write_plots(tmp_path / "one", cards, board, "s")
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    second = write_plots(tmp_path / "two", cards, board, "s")
    assert [p.name for p in first] == [p.name for p in second]
    names = sorted(p.name for p in first)
    assert names == sorted(f"{n}.{e}" for n in ("net_by_arm", "tokens_vs_net", "requirement_survival")
                           for e in ("png", "svg"))
    for a, b in zip(sorted(first), sorted(second)):
        assert a.read_bytes() == b.read_bytes(), a.name  # no dates, no random ids: DVC sees no false change
    svg = (tmp_path / "one" / "tokens_vs_net.svg").read_text()
    assert "reference policy" in svg and "call no model" in svg


def test_the_withholding_curve_sits_beside_the_published_prediction_and_goes_when_unsupported(tmp_path):
    cards = []
    for k in (0, 2, 4):
        cards.append(_card(f"k{k}", "Vanilla", "ref_every_fact", {"R-1": True}, variant=f"withhold_k{k}_stub",
                           withheld_k=k, withhold_mode="stub", withhold_when="before_s1", tests_passed=32 - 4 * k,
                           tests_total=32))
    cards = pd.DataFrame(cards)
    written = write_plots(tmp_path, cards, make_board(cards), "w")
    assert (tmp_path / "withholding.svg") in written
    svg = (tmp_path / "withholding.svg").read_text()
    assert "published: linear prediction" in svg and "ref_every_fact" in svg
    plain = _cards()
    write_plots(tmp_path, plain, make_board(plain), "w")  # the study no longer withholds: the curve goes
    assert not (tmp_path / "withholding.svg").exists() and not (tmp_path / "withholding.png").exists()


def test_the_survival_curve_draws_retention_against_each_kind_of_cut_point(tmp_path):
    from sdcs_bench.pipeline.plots import cut_points

    cards = [_card("u", "Vanilla", "p", {"R-1": True, "R-2": True}, variant="uninterrupted")]
    for n, passed in ((1, 0), (3, 1), (5, 2)):
        cards.append(_card(f"n{n}", "Vanilla", "p", {"R-1": passed >= 1, "R-2": passed >= 2}, variant=f"cut_nth_{n}",
                           cut_rule=f"nth_py_edit:{n}"))
    cards.append(_card("s", "Vanilla", "p", {"R-1": True, "R-2": False}, variant="cut_share_50",
                       cut_rule="after_token_share:50"))
    cards.append(_card("f", "Vanilla", "p", {"R-1": True, "R-2": False}, variant="none", cut_rule="first_py_edit"))
    cards = pd.DataFrame(cards)
    board = make_board(cards)
    points = cut_points(board)
    assert sorted(zip(points["cut_kind"], points["cut_at"], points["retention"])) == [
        ("after_token_share", 50, 0.5), ("nth_py_edit", 1, 0.0), ("nth_py_edit", 3, 0.5), ("nth_py_edit", 5, 1.0)]
    written = write_plots(tmp_path, cards, board, "cuts")
    assert {p.name for p in written} >= {"survival_curve.svg", "survival_curve.png"}
    svg = (tmp_path / "survival_curve.svg").read_text()
    assert "nth_py_edit" in svg and "after_token_share" not in svg  # one share point draws no curve
    assert "reference policy" in svg and "uninterrupted" in svg
    again = write_plots(tmp_path, cards[cards["variant"].isin(["uninterrupted", "none"])], make_board(
        cards[cards["variant"].isin(["uninterrupted", "none"])]), "cuts")
    assert "survival_curve.svg" not in {p.name for p in again} and not (tmp_path / "survival_curve.svg").exists()
