"""``leaderboard.md``: the leaderboard, its family tables, the paired differences and the checks
against truth, in Markdown."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

import pandas as pd

from sdcs_bench.pipeline import stats
from sdcs_bench.pipeline.board import interval_texts
from sdcs_bench.pipeline.checks import TruthCheck
from sdcs_bench.pipeline.labels import REFERENCE_NOTICE, REPLAY_NOTICE
from sdcs_bench.pipeline.rows import LIST_PRICE_COLUMN
from sdcs_bench.trial.components import REFERENCE_KIND, REPLAY_KIND


# The warnings at the top of leaderboard.md: (column counting the trials, head, what it means).
WARNINGS = (
    ("invalid", "INVALID", "failed the integrity check** (a cleaved edit was committed, or an edit went unseen by the "
     "watcher). They are counted in `invalid` and left out of every score; `scorecards.csv` gives the reasons."),
    ("budget_exhausted", "BUDGET", "stopped by the run's budget** (the proxy refused a model call once the budget was "
     "reached). They are neither results nor the agent's failures: counted in `budget_exhausted`, left out of every "
     "score. A rerun with a larger budget (`--config budget_max_usd=...`) continues them (docs/cost.md)."),
    ("limit_exceeded", "LIMIT", "ended by a limit of the sandbox** (memory, processes, disk, files, output or the "
     "watcher's watches: `sandbox.limits`). They are counted in `limit_exceeded` and left out of every score; "
     "`scorecards.csv` says which limit (docs/sandboxes.md)."),
    ("tampered", "TAMPERED", "forged test verdicts** (a sentinel test got the wrong verdict, the report or exit status "
     "was changed, the test tree or the runner was modified). They score zero and count in every mean; "
     "`scorecards.csv` gives the evidence."),
)


def to_markdown(board: pd.DataFrame, study: str, paired: pd.DataFrame | None = None,
                settings: stats.Settings = stats.Settings(), truth: list[TruthCheck] = (), run: str | None = None,
                no_cleave: Mapping[str, bool | None] | None = None,
                not_applicable: Sequence[Mapping[str, str]] = ()) -> str:
    """``leaderboard.md``, rendered from ``data/markdown/leaderboard.md.j2``: the notices, the main
    table, the arms not applicable, the family tables that apply, the paired differences and the
    checks against truth. Headed by the ``run`` (its directory under ``results/``), with the study
    beside it where it is another name. ``no_cleave``: the trials a cut never reached, each with
    whether its reference policy's closed form predicts that (None: no closed form), said under the
    main table. ``not_applicable``: the (workload, arm) cells the plan skipped (its ``study.json``)."""
    notices = []
    if (board["agent_kind"] == REFERENCE_KIND).any():
        notices.append(REFERENCE_NOTICE)
    if (board["agent_kind"] == REPLAY_KIND).any():
        notices.append(REPLAY_NOTICE)
    for column, head, text in WARNINGS:
        count = int(board[column].sum())
        if count:
            notices.append(f"**{head}: {count} trial{'s' if count != 1 else ''} {text}")
    tampered, stopped = int(board["tampered"].sum()), int(board["budget_exhausted"].sum())
    level = f"{settings.level:.0%}"
    intro = (f"`net` is the mean over the row's `n` valid trials; `net {level} CI` its {level} t-interval (full marks "
             f"and S1-edit survival: Wilson, in leaderboard.csv), printed from n = {stats.MIN_INTERVAL_N}, where its "
             "simulated coverage is at least 93%; below, the cell says too few. A deterministic reference policy's is "
             "its closed form, zero width from two trials. `expected_mean`: a stochastic reference policy's true "
             "mean (docs/statistics.md).")
    cols = ["workload", "arm", "agent", "agent_kind", "variant", "trials", "invalid", "tampered", "n", "raw", "net",
            f"net {level} CI", "n_requirements",
            "tes", "tokens", "s1_edit_survived", "expected_net", "matches_expected"]
    board = board.rename(columns={"net_interval": f"net {level} CI"})
    if board["expected_mean"].notna().any():
        cols.insert(cols.index("matches_expected"), "expected_mean")
    if (board["continuation"] != "reset").any():
        cols.insert(cols.index("trials"), "continuation")
    if board["variant"].str.startswith("poison").any():
        cols.insert(cols.index("s1_edit_survived"), "defects_survived")
    if tampered:
        cols.append("tamper_evidence")  # the first piece of evidence of each tampered trial
    if stopped:
        cols.insert(cols.index("n"), "budget_exhausted")
    if int(board["limit_exceeded"].sum()):
        cols.insert(cols.index("n"), "limit_exceeded")
    if (board["agent_kind"] != REFERENCE_KIND).any():  # what a model's trials cost (docs/cost.md)
        cost_cols = ["cost_usd", "cost_usd_total", *([LIST_PRICE_COLUMN] if (board["agent_kind"] == REPLAY_KIND).any()
                                                     else [])]
        cols[cols.index("tokens") + 1:cols.index("tokens") + 1] = cost_cols
    sections = [not_applicable_section(not_applicable)] if not_applicable else []
    for rows, title, text, renames, shown_cols in _family_sections(board):
        if len(rows):
            # (a column renamed onto another's name replaces it: the trial's tokens give way to the
            # tokens before the first useful edit in the cost-of-resuming table)
            shown = rows.drop(columns=[c for c in renames.values() if c in rows and c not in renames])
            sections.append({"title": title, "text": text, "table": _table(shown.rename(columns=renames), shown_cols)})
    return _template().render(
        title=run_title(study, run), notices=notices, intro=intro, cost_line=cost_line(board),
        main_table=_table(cost_cells(board), cols), no_cleave=no_cleave_line(no_cleave or {}),
        sections=sections, paired=_paired_tables(paired, settings) if paired is not None and len(paired) else [],
        truth=[c.line() for c in truth], truth_text=TRUTH_TEXT)


def run_title(study: str, run: str | None) -> str:
    """What a run's Markdown is headed by: the run (``results/<run>``), and its study where that is
    another name (a run with overrides, or named with ``--config name=``)."""
    run = run or study
    return f"run `{run}`" + (f" (study `{study}`)" if study != run else "")


NOT_APPLICABLE_TITLE = "Arms not applicable"


def not_applicable_section(records: Sequence[Mapping[str, str]]) -> dict[str, str]:
    """The (workload, arm) cells the plan skipped, as a section: a line each, with the file and why."""
    from sdcs_bench.core.errors import HINTS_DOC

    n = len(records)
    them = "them" if n != 1 else "it"
    text = (f"{n} (workload, arm) cell{'s were' if n != 1 else ' was'} not run: the arm places a file of the "
            f"workload's own directory that the workload does not have, so the planner skipped {them} and ran the "
            f"rest ({HINTS_DOC} says how to write a hint file). No row of this leaderboard stands for {them}.")
    cols = ["workload", "arm", "file", "reason"]
    return {"title": NOT_APPLICABLE_TITLE, "text": text,
            "table": _table(pd.DataFrame([{c: r.get(c, "") for c in cols} for r in records], columns=cols), cols)}


NO_CLEAVE_SHOWN = 10  # the trial ids the no_cleave line names (scorecards.csv has them all)


def no_cleave_line(no_cleave: Mapping[str, bool | None]) -> str:
    """The trials whose cut never came, in one line (empty when there are none): a session that
    should have been cut ran to its end, so the trial measured no interruption there."""
    if not no_cleave:
        return ""
    ids = sorted(no_cleave)
    named = ", ".join(ids[:NO_CLEAVE_SHOWN]) + (f" and {len(ids) - NO_CLEAVE_SHOWN} more" if len(ids) > NO_CLEAVE_SHOWN
                                                else "")
    n = len(ids)
    text = (f"**{n} trial{'s' if n != 1 else ''} never reached {'their' if n != 1 else 'its'} cut (no_cleave)**: {named}. "
            "A session that should have been cut ran to its end uncut: no interruption was measured there "
            "(`no_cleave` in scorecards.csv).")
    predicted = sum(1 for v in no_cleave.values() if v)
    if predicted:
        text += (f" {predicted} of them as {'its' if predicted == 1 else 'their'} reference policy's closed form "
                 "predicts.")
    return text


TRUTH_TEXT = ("The stochastic reference policies' rows have a known truth (docs/statistics.md): where no difference "
              "is real, and where one was planted, with the power the test has for it.")


@cache
def _template() -> Any:
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(loader=PackageLoader("sdcs_bench", "data/markdown"), autoescape=False,  # (Markdown, not HTML)
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, undefined=StrictUndefined)
    return env.get_template("leaderboard.md.j2")


def cost_line(board: pd.DataFrame) -> str:
    """The study's cost in one line (docs/cost.md): what its model calls cost at the price table's
    prices, or that it is unknown, with the tokens no price covers. Reference policies and replays
    paid nothing: $0, said so; a replay's calls at list prices follow, labelled hypothetical."""
    trials = int(board["trials"].sum())
    kinds = board["agent_kind"]
    replay, reference = kinds == REPLAY_KIND, kinds == REFERENCE_KIND
    paid = board[~replay & ~reference]
    unpriced = int(paid["cost_unpriced_tokens"].fillna(0).sum())
    known = paid["cost_usd_total"].dropna()
    free = [what for what, present in (("reference policies call no model", reference.any()),
                                        ("replays answer from a script, calling no model", replay.any())) if present]
    free_text = f"{' and '.join(free)}: $0, nothing paid" if free else ""
    if not len(paid):
        text = f"**Cost of the study**: $0 over {trials} trials: no trial called a paid model ({free_text})."
    elif len(known) == len(paid):
        text = (f"**Cost of the study**: ${known.sum():.4f} over {trials} trials (model calls at conf/prices.yaml's "
                f"prices{'; ' + free_text if free else ''}).")
    else:
        text = (f"**Cost of the study**: unknown: {unpriced:,} tokens were spent by models conf/prices.yaml has no price "
                f"for (counted, not priced); the rows with a price cost ${known.sum():.4f}"
                f"{' (' + free_text + ')' if free else ''}.")
    if replay.any():
        listed = board.loc[replay, LIST_PRICE_COLUMN] if LIST_PRICE_COLUMN in board else pd.Series(dtype=float)
        if len(listed) and listed.notna().all():
            text += (f" Hypothetical, never paid: at the list prices of the models the harnesses were told they talk "
                     f"to, the replayed calls would have cost ${listed.sum():.4f}.")
        else:
            text += (" Hypothetical, never paid: at list prices the replayed calls' cost is unknown (a replayed model "
                     f"has no price; the replay rows with one come to ${listed.dropna().sum():.4f}).")
    return text


def cost_cells(board: pd.DataFrame) -> pd.DataFrame:
    """The leaderboard's cost columns as its markdown table shows them: "unknown" where a model has
    no price; on a reference policy's and a replay's rows, $0 and why (nothing was paid); a replay's
    list-price equivalent labelled hypothetical."""
    kinds = board["agent_kind"]
    why = pd.Series("", index=board.index).mask(kinds == REFERENCE_KIND, "0 (no model called)") \
        .mask(kinds == REPLAY_KIND, "0 (replay: nothing paid)")

    def shown(column: str) -> pd.Series:
        values = board[column].astype(object).where(board[column].notna(), "unknown")
        return values.mask(why != "", why)

    out = board.assign(cost_usd=shown("cost_usd"), cost_usd_total=shown("cost_usd_total"))
    if LIST_PRICE_COLUMN in board:
        listed = board[LIST_PRICE_COLUMN].map(lambda v: "unknown" if pd.isna(v) else f"{v:.4f}")
        out[LIST_PRICE_COLUMN] = listed.where(kinds == REPLAY_KIND, "").map(
            lambda v: f"{v} (hypothetical, not paid)" if v else v)
    else:
        out[LIST_PRICE_COLUMN] = ""
    return out


ADJUST_NAMES = {"holm": "Holm-adjusted", "bh": "Benjamini-Hochberg-adjusted", "none": "unadjusted"}


def paired_summary(rows: pd.DataFrame, settings: stats.Settings) -> str:
    """One table's comparisons in words: how many, how many tested and marked, how many had too few
    pairs or are closed forms, and what marking means (the adjustment; what chance alone would mark)."""
    made = len(rows)
    tested = int(rows["p"].notna().sum())
    marked = int(rows["marked"].sum())
    few = int(rows["test"].str.startswith("too few").sum())
    closed = int((rows["test"] == stats.CLOSED_FORM).sum())
    alpha = settings.alpha
    text = (f"**{made} comparison{'s' if made != 1 else ''}**, {tested} tested, {marked} marked `*` (two-sided sign-flip "
            f"test, {ADJUST_NAMES[settings.adjust]} p <= {alpha:g} across the table's {tested} test"
            f"{'s' if tested != 1 else ''})")
    extra = []
    if few:
        extra.append(f"{few} with too few pairs to test ({stats.min_pairs(alpha)} needed at this level)")
    if closed:
        extra.append(f"{closed} of deterministic reference policies (a closed form: no test)")
    text += ("; " + "; ".join(extra) if extra else "") + ". "
    if settings.adjust == "none":
        text += (f"Not adjusted for the number of tests: with no true difference anywhere, up to about "
                 f"{tested * alpha:.1f} of {tested} would be marked by chance.")
    elif settings.adjust == "holm":
        text += f"With no true difference anywhere, the chance of any mark in this table is at most {alpha:g}."
    else:
        text += f"Of the marked comparisons, at most a share {alpha:g} are expected to be false discoveries."
    return text


def _paired_tables(paired: pd.DataFrame, settings: stats.Settings) -> list[dict[str, str]]:
    """The paired differences: one table per axis, the net rows (tokens: paired.csv)."""
    tables = []
    level = f"{settings.level:.0%}"
    for axis, rows in paired[paired["metric"] == "net"].groupby("axis", sort=False):
        base = rows["baseline"].iloc[0]
        text = (f"Over trials that share workload, variant, {'continuation' if axis == 'arm' else 'arm'}, agent and "
                f"seed: the mean of `{axis} - {base}` over the `pairs`, the effect size (mean / SD of the "
                f"differences), its {level} t-interval (from {stats.MIN_INTERVAL_N} pairs), the sign-flip test's p "
                f"and the adjusted p ({settings.adjust}). " + paired_summary(rows, settings))
        shown = rows.assign(interval=interval_texts(rows, "pairs", "difference", "lo", "hi"),
                            mark=[_mark(r) for r in rows.itertuples(index=False)])
        other = "continuation" if axis == "arm" else "arm"
        table = _table(shown.rename(columns={"baseline_mean": base, "compared_mean": "mean", "effect_size": "effect",
                                             "p_adjusted": f"p ({settings.adjust})"}),
                       ["workload", "variant", other, "agent", axis, "pairs", base, "mean", "difference", "effect",
                        "interval", "p", f"p ({settings.adjust})", "mark"])
        tables.append({"title": f"Each {axis} against {base} (net)", "text": text, "table": table})
    return tables


def _mark(row: Any) -> str:
    """A paired row's mark: ``*`` where the adjusted p reaches the level; else why there is no test."""
    if row.marked:
        return "*"
    return "" if row.test.startswith("sign-flip") else row.test


def _table(board: pd.DataFrame, cols: list[str]) -> str:
    """A Markdown table of ``cols``, one line per row (no line end after the last)."""
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in board[cols].itertuples(index=False):
        lines.append("| " + " | ".join("" if pd.isna(v) else str(v).replace("|", "\\|") for v in row) + " |")
    return "\n".join(lines)


def _family_sections(board: pd.DataFrame) -> list[tuple[pd.DataFrame, str, str, dict[str, str], list[str]]]:
    """The tables ``leaderboard.md`` adds after the main one, each for the rows it concerns: (rows,
    title, what the columns mean, the columns renamed, the columns shown)."""
    key = ["workload", "arm", "agent", "agent_kind"]
    return [
        (board[board["family"] == "standards"], "Standards workload: decisions",
         "Each surface of each handler is one decision where exactly one form is written. `better_share` is "
         "the share written the objectively better way; `followed_standard` is, on the surfaces where "
         "STYLE.md and the existing code disagree, the share that followed STYLE.md (empty where none "
         "disagree). Means over the row's trials; `expected` is the reference policy's closed form.",
         {"std_decisions": "decisions", "std_better_share": "better_share",
          "std_followed_standard_share": "followed_standard", "std_expected_better_share": "expected"},
         [*key, "variant", "trials", "decisions", "better_share", "followed_standard", "expected", "matches_expected"]),
        (board[board["family"] == "real_repo"], "Real repositories: bugs resolved",
         "`resolved` counts bugs whose hidden tests pass (the mean over trials); `predicted` is what was "
         "predicted for the arm before the run (the workload's `predicted_resolved`); the `vs_vanilla` "
         "columns divide by the same agent's Vanilla row (empty where that is 0).",
         {"n_requirements": "bugs", "raw": "resolved", "predicted_resolved": "predicted"},
         [*key, "variant", "trials", "bugs", "predicted", "resolved", "baseline_kept", "net", "turns", "tokens",
          "tokens_vs_vanilla", "resolved_vs_vanilla", "expected_net", "matches_expected"]),
        (board[board["withheld_k"].notna()], "Withholding authored facts: tests passed",
         "Coherence workloads (docs/coherence.md) score in hidden tests, four per motif. `k` motifs had "
         "their secret withheld (`mode`: deleted or replaced by a same-length stub), before session 1 or "
         "after its cleave; `tests_passed` is the mean over trials, `expected_tests` the reference "
         "policy's closed form; `abstention` is what the classifier made of the trials' records "
         "(fabricated in any session, else the last session's class), `expected_abstention` what the "
         "policy's closed form says it should be.",
         {"withheld_k": "k", "withhold_mode": "mode", "withhold_when": "when"},
         [*key, "k", "mode", "when", "trials", "tests_passed", "tests_total", "expected_tests", "abstention",
          "expected_abstention", "matches_expected"]),
        (board[board["resume_reached"].notna()], "The cost of resuming",
         "Over each row's continuation sessions (every session after the first): `reached`, the share that "
         "made a useful edit (a write to a source file whose added lines are all still there at the end); "
         "before it, as means over those that did, the answered model `calls`, their `tokens`, the `tool "
         "events` and the share of the earlier sessions' files read again (docs/scoring.md; the wall time "
         "is per session in `ledger.csv`). "
         "A reference policy's calls and tokens are its meter, not a model's.",
         {"resume_reached": "reached", "resume_calls": "calls", "resume_tokens": "tokens",
          "resume_tool_events": "tool_events", "resume_reread_share": "reread_share"},
         [*key, "variant", "continuation", "trials", "net", "reached", "calls", "tokens", "tool_events",
          "reread_share", "matches_expected"]),
        (board if (board["continuation"] != "reset").any() else board.iloc[0:0], "Continuation modes",
         "How each session after the first continued (docs/protocol.md#continuation-modes): `reset` (no "
         "history), `trace:<budget>` (the earlier sessions' events, cut to the budget), `summary` (the "
         "previous session summarised by a model), `notes` (structured notes in a versioned schema), `resume` "
         "(the harness's own conversation) and `compact` (that conversation compacted). `context_tokens`: "
         "what the handoffs put into the prompts; `handoff_calls`/`handoff_tokens`: what the summaries and "
         "notes cost (a reference policy's summariser: its meter), separate from the sessions' own tokens; "
         "`invalid_notes`: notes that failed the schema (they carried nothing), per trial; `reached`, "
         "`tool_events`, `tokens`: the cost of resuming, as in the table above.",
         {"resume_reached": "reached", "resume_tokens": "tokens", "resume_tool_events": "tool_events"},
         [*key, "variant", "continuation", "trials", "net", "reached", "tool_events", "tokens", "context_tokens",
          "handoff_calls", "handoff_tokens", "invalid_notes", "matches_expected"]),
    ]
