"""The study's plots, written by ``aggregate`` into ``results/<run>/plots/`` as PNG and SVG (and
declared as DVC plots):

- ``net_by_arm``: net retention (net / requirements) by arm, one bar per workload and variant, one
  panel per agent, each bar with its row's t-interval as an error bar (none below 5 trials; zero
  width for a deterministic reference policy on its closed form);
- ``tokens_vs_net``: every trial's tokens against its net retention;
- ``requirement_survival``: per workload, the share of valid trials in which each requirement
  passed, for each agent and arm (which requirement an arm loses);
- ``withholding``: tests passed against the number of withheld facts, beside the published linear
  prediction, when the study withholds facts;
- ``survival_curve``: net retention against the cut point, one panel per workload and kind of cut
  (the N-th edit, the N-th answered call, a share of the uninterrupted run's tokens, a token
  count), one line per arm and agent, the uninterrupted control's retention as its ceiling, when
  the study sweeps at least two cut points of one kind;
- ``resume_cost``: the cost of resuming (the tool events, and the tokens, before each continuation's
  first useful edit: docs/scoring.md) against net retention, one point per trial and a colour per
  arm, when any trial has a continuation session that reached a useful edit;
- ``continuation_modes``: per workload, net retention by continuation mode (one bar per arm, the
  mean over the agents), and the cost of resuming by mode (tool events and tokens before the first
  useful edit, the tokens the handoff put into the prompt), when the study compares at least two
  modes (docs/protocol.md#continuation-modes).

Every title says what produced its rows (reference policies are labelled as such). The files are
byte-for-byte reproducible: no dates, fixed SVG ids.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

PLOTS = ("net_by_arm", "tokens_vs_net", "requirement_survival", "withholding", "survival_curve", "resume_cost",
         "continuation_modes")
FORMATS = ("png", "svg")
CONTROL_VARIANT = "uninterrupted"  # the no-cleave control: left out of the survival map when cut runs exist


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams.update({"svg.hashsalt": "specsnap", "font.size": 9, "figure.dpi": 100})
    import matplotlib.pyplot as plt

    return plt


def _save(fig, out_dir: Path, name: str) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    paths = []
    for ext in FORMATS:
        path = out_dir / f"{name}.{ext}"
        meta = {"Date": None} if ext == "svg" else {"Software": None}
        fig.savefig(path, format=ext, metadata=meta, bbox_inches="tight")
        paths.append(path)
    from matplotlib import pyplot

    pyplot.close(fig)
    return paths


def _sources(frame: pd.DataFrame) -> str:
    return ", ".join(sorted(set(frame["source"]))) if "source" in frame else ""


def write_plots(out_dir: Path, scorecards: pd.DataFrame, board: pd.DataFrame, study: str) -> list[Path]:
    """Write every plot the study's data supports; returns the files written."""
    plt = _pyplot()
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.iterdir():  # a plot this study no longer supports must not linger
        if old.suffix.lstrip(".") in FORMATS and old.stem in PLOTS:
            old.unlink()
    if board.empty:
        return []
    from sdcs_bench.pipeline.labels import source_label

    scorecards = scorecards.assign(source=[source_label(*r) for r in
                                           scorecards[["agent_kind", "model", "harness"]].itertuples(index=False)])
    plots = [(_net_by_arm, (out_dir, board, study)), (_tokens_vs_net, (out_dir, scorecards, board, study)),
             (_requirement_survival, (out_dir, scorecards, study))]
    if board["withheld_k"].notna().any():
        plots.append((_withholding, (out_dir, board, study)))
    plots += [(_survival_curve, (out_dir, board, study)), (_resume_cost, (out_dir, scorecards, study)),
              (_continuation_modes, (out_dir, board, study))]
    written = [path for paths in _render_all(plt, plots) for path in paths]
    plt.close("all")
    return written


def _render_all(plt, plots: list) -> list[list[Path]]:
    """Draw each plot, in forked workers when more than one core is the job's (a plot is a second of
    matplotlib's layout; the files are the same either way)."""
    from sdcs_bench.core.forkmap import fork_map

    return list(fork_map(lambda plot: plot[0](plt, *plot[1]), plots))


def _grid(plt, n: int, width: float = 4.2, height: float = 3.0):
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    flat = list(axes.flat)
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def _net_by_arm(plt, out_dir: Path, board: pd.DataFrame, study: str) -> list[Path]:
    series = board["workload"] + " · " + board["variant"]
    if _modes(board)[1:]:  # several continuation modes: each its own bar
        series = series + " · " + board["continuation"]
    board = board.assign(retention=board["net"] / board["n_requirements"], series=series,
                         lo=board.get("net_lo", board["net"]) / board["n_requirements"],
                         hi=board.get("net_hi", board["net"]) / board["n_requirements"])
    agents = list(dict.fromkeys(board["agent"]))
    from sdcs_bench.pipeline.labels import arm_order

    arms = arm_order(board["arm"])
    series = list(dict.fromkeys(board["series"]))
    fig, axes = _grid(plt, len(agents))
    width = 0.8 / max(len(series), 1)
    for ax, agent in zip(axes, agents):
        rows = board[board["agent"] == agent]
        for i, name in enumerate(series):
            part = rows[rows["series"] == name].set_index("arm")
            mean = [part["retention"].get(arm, float("nan")) for arm in arms]
            # the row's t-interval as an error bar (none where the row has none: fewer than 5 trials)
            err = [[_extent(m, part[end].get(arm)) for arm, m in zip(arms, mean)] for end in ("lo", "hi")]
            ax.bar([a + i * width - 0.4 + width / 2 for a in range(len(arms))], mean, width=width, label=name,
                   yerr=err, capsize=2, error_kw={"elinewidth": 0.8})
        ax.set_xticks(range(len(arms)), arms, rotation=30, ha="right")
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("net / requirements")
        ax.set_title(f"{agent}\n({_sources(rows)})", fontsize=9)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.suptitle(f"Study {study}: net retention by arm (error bars: each mean's t-interval, from 5 trials)")
    fig.tight_layout()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0), ncol=min(len(series), 4), fontsize=7,
               title="workload · variant")
    return _save(fig, out_dir, "net_by_arm")


def _extent(mean: float, bound: float | None) -> float:
    """How far an interval's bound lies from the mean (0 where there is no interval)."""
    return 0.0 if bound is None or pd.isna(bound) or pd.isna(mean) else abs(bound - mean)


def _modes(board: pd.DataFrame) -> list[str]:
    """The continuation modes of the study, in the order of docs/protocol.md (reset first)."""
    if "continuation" not in board:
        return []
    from sdcs_bench.trial.continuation import MODES as order

    found = set(board["continuation"].fillna("reset"))
    return sorted(found, key=lambda m: (order.index(m.split(":")[0]) if m.split(":")[0] in order else 99, m))


def _continuation_modes(plt, out_dir: Path, board: pd.DataFrame, study: str) -> list[Path]:
    modes = _modes(board)
    if len(modes) < 2:
        return []
    from sdcs_bench.pipeline.labels import arm_order

    board = board.assign(retention=board["net"] / board["n_requirements"],
                         continuation=board["continuation"].fillna("reset"))
    workloads = list(dict.fromkeys(board["workload"]))
    fig, axes = plt.subplots(2, len(workloads), figsize=(5.2 * len(workloads), 7.0), squeeze=False)
    arms = arm_order(board["arm"])
    width = 0.8 / max(len(arms), 1)
    costs = (("resume_tool_events", "tool events before the first useful edit"),
             ("resume_tokens", "tokens before it"), ("context_tokens", "tokens the handoffs added to the prompts"))
    for col, workload in enumerate(workloads):
        part = board[board["workload"] == workload]
        top, bottom = axes[0][col], axes[1][col]
        for i, arm in enumerate(arms):
            means = part[part["arm"] == arm].groupby("continuation")["retention"].mean()
            top.bar([m + i * width - 0.4 + width / 2 for m in range(len(modes))],
                    [means.get(mode, float("nan")) for mode in modes], width=width, label=arm)
        top.set_xticks(range(len(modes)), modes, rotation=20, ha="right")
        top.set_ylim(0, 1.05)
        top.set_ylabel("net / requirements (mean over agents)")
        top.set_title(f"{workload} ({_sources(part)})", fontsize=9)
        top.legend(fontsize=7, title="arm")
        for key, label in costs:
            if key not in part or part[key].isna().all():
                continue
            means = part.groupby("continuation")[key].mean()
            bottom.plot(range(len(modes)), [means.get(mode, float("nan")) for mode in modes], marker="o", label=label)
        bottom.set_xticks(range(len(modes)), modes, rotation=20, ha="right")
        bottom.set_yscale("symlog")
        bottom.set_ylabel("mean over the mode's trials")
        bottom.legend(fontsize=7)
    fig.suptitle(f"Study {study}: net retention and the cost of resuming by continuation mode")
    return _save(fig, out_dir, "continuation_modes")


def _tokens_vs_net(plt, out_dir: Path, cards: pd.DataFrame, board: pd.DataFrame, study: str) -> list[Path]:
    cards = cards[cards["valid"].astype(bool)]
    cards = cards.assign(retention=cards["net"] / cards["n_requirements"])
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    from sdcs_bench.pipeline.labels import arm_order

    groups = dict(list(cards.groupby("arm")))
    for arm, rows in ((arm, groups[arm]) for arm in arm_order(groups)):
        ax.scatter(rows["tokens"], rows["retention"], label=arm, alpha=0.7, s=24)
    ax.set_xlabel("tokens per trial (proxy ledger)")
    ax.set_ylabel("net / requirements")
    ax.set_ylim(-0.05, 1.05)
    if (cards["tokens"] == 0).all():
        ax.text(0.5, 0.5, "no trial spent tokens: reference policies call no model", transform=ax.transAxes,
                ha="center", fontsize=8, color="0.4")
    ax.legend(fontsize=7, title="arm")
    ax.set_title(f"Study {study}: tokens against net retention\n({_sources(cards)})", fontsize=9)
    return _save(fig, out_dir, "tokens_vs_net")


def _survival_matrix(cards: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for card in cards.itertuples(index=False):
        reqs = json.loads(card.requirements) if isinstance(card.requirements, str) else {}
        for req, passed in reqs.items():
            if isinstance(passed, bool):
                rows.append({"row": f"{card.agent} · {card.arm}", "requirement": req, "passed": passed})
    if not rows:
        return pd.DataFrame()
    frame = pd.DataFrame(rows)
    order = list(dict.fromkeys(frame["requirement"]))
    return frame.pivot_table(index="row", columns="requirement", values="passed", aggfunc="mean")[order]


def _requirement_survival(plt, out_dir: Path, cards: pd.DataFrame, study: str) -> list[Path]:
    cards = cards[cards["valid"].astype(bool)]
    if (cards["variant"] != CONTROL_VARIANT).any():
        cards = cards[cards["variant"] != CONTROL_VARIANT]
    mats = [(w, m) for w, part in cards.groupby("workload", sort=True) if not (m := _survival_matrix(part)).empty]
    if not mats:
        return []
    height = sum(max(len(m), 2) * 0.32 + 1.2 for _, m in mats)
    width = max(6.0, max(len(m.columns) for _, m in mats) * 0.45 + 3.5)
    fig, axes = plt.subplots(len(mats), 1, figsize=(width, height), squeeze=False)
    for ax, (workload, mat) in zip(axes[:, 0], mats):
        image = ax.imshow(mat.to_numpy(dtype=float), vmin=0, vmax=1, cmap="RdYlGn", aspect="auto")
        ax.set_xticks(range(len(mat.columns)), mat.columns, rotation=60, ha="right", fontsize=7)
        ax.set_yticks(range(len(mat.index)), mat.index, fontsize=7)
        ax.set_title(f"{workload}: share of valid trials passing each requirement", fontsize=9)
        if mat.size <= 400:
            for (i, j), value in pd.DataFrame(mat.to_numpy()).stack().items():
                ax.text(j, i, f"{value:.0%}" if value not in (0, 1) else ("✓" if value == 1 else "✗"),
                        ha="center", va="center", fontsize=6)
        fig.colorbar(image, ax=ax, fraction=0.03)
    variants = ", ".join(sorted(set(cards["variant"])))
    fig.suptitle(f"Study {study}: which requirement each arm loses\n(variants: {variants}; {_sources(cards)})",
                 fontsize=10)
    return _save(fig, out_dir, "requirement_survival")


def _withholding(plt, out_dir: Path, board: pd.DataFrame, study: str) -> list[Path]:
    from sdcs_bench.pipeline.leaderboard import published

    rows = board[board["withheld_k"].notna()]
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for (agent, arm, mode, when), part in rows.groupby(["agent", "arm", "withhold_mode", "withhold_when"], dropna=False):
        part = part.sort_values("withheld_k")
        ax.plot(part["withheld_k"], part["tests_passed"], marker="o", label=f"{agent} · {arm} · {mode} · {when}")
    table = next((t for t in published()["tables"] if "withholding" in t["title"]), None)
    if table is not None:
        cols = table["columns"]
        k, pred = cols.index("k withheld"), cols.index("linear prediction")
        ax.plot([r[k] for r in table["rows"]], [r[pred] for r in table["rows"]], "k--", lw=1,
                label="published: linear prediction")
    ax.set_xlabel("motif secrets withheld (k)")
    ax.set_ylabel("hidden tests passed (mean)")
    ax.legend(fontsize=7)
    ax.set_title(f"Study {study}: the withholding curve\n({_sources(rows)})", fontsize=9)
    return _save(fig, out_dir, "withholding")


# kind of cut -> what its x axis counts (docs/protocol.md#cut-points)
CUT_AXES = {"nth_py_edit": "cut at the N-th .py edit", "after_turns": "cut at the N-th answered model call",
            "after_token_share": "cut at this % of the uninterrupted run's tokens",
            "after_tokens": "cut once the session's tokens reach"}


def cut_points(board: pd.DataFrame) -> pd.DataFrame:
    """The board's rows cut by a rule with a count (``cut_kind``, ``cut_at``), with their net
    retention; a study's survival curve."""
    if "cut_rule" not in board:
        return pd.DataFrame()
    rules = board["cut_rule"].fillna("").astype(str)
    kind = rules.str.partition(":")[0]
    at = pd.to_numeric(rules.str.partition(":")[2], errors="coerce")
    rows = board.assign(cut_kind=kind, cut_at=at, retention=board["net"] / board["n_requirements"])
    return rows[rows["cut_kind"].isin(list(CUT_AXES)) & rows["cut_at"].notna()]


def _survival_curve(plt, out_dir: Path, board: pd.DataFrame, study: str) -> list[Path]:
    points = cut_points(board)
    panels = [(w, k) for (w, k), part in points.groupby(["workload", "cut_kind"], sort=True)
              if part["cut_at"].nunique() >= 2]
    if not panels:
        return []
    control = board[board["variant"] == CONTROL_VARIANT].assign(
        retention=lambda b: b["net"] / b["n_requirements"]).set_index(["workload", "arm", "agent"])["retention"]
    from sdcs_bench.pipeline.labels import arm_order

    fig, axes = _grid(plt, len(panels), width=4.6, height=3.4)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (workload, kind) in zip(axes, panels):
        part = points[(points["workload"] == workload) & (points["cut_kind"] == kind)]
        lines = [(arm, agent) for arm in arm_order(part["arm"]) for agent in sorted(set(part[part["arm"] == arm]["agent"]))]
        for i, (arm, agent) in enumerate(lines):
            line = part[(part["arm"] == arm) & (part["agent"] == agent)].sort_values("cut_at")
            colour = colours[i % len(colours)]
            ax.plot(line["cut_at"], line["retention"], marker="o", color=colour, label=f"{arm} · {agent}")
            ceiling = control.get((workload, arm, agent))
            if ceiling is not None and ceiling == ceiling:
                ax.axhline(ceiling, color=colour, linestyle="--", linewidth=0.8, alpha=0.6)
        ax.set_ylim(-0.05, 1.05)
        if kind != "after_token_share":
            from matplotlib.ticker import MaxNLocator

            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel(CUT_AXES[kind], fontsize=8)
        ax.set_ylabel("net / requirements")
        ax.set_title(f"{workload} · {kind} ({_sources(part)})", fontsize=9)
        ax.legend(fontsize=6, title="arm · agent (dashed: uninterrupted)", title_fontsize=6)
    fig.suptitle(f"Study {study}: survival against the cut point")
    return _save(fig, out_dir, "survival_curve")


def _resume_cost(plt, out_dir: Path, cards: pd.DataFrame, study: str) -> list[Path]:
    if "resume_tool_events" not in cards:
        return []
    cards = cards[cards["valid"].astype(bool)]
    cards = cards.assign(retention=cards["net"] / cards["n_requirements"])
    reached = cards[cards["resume_tool_events"].notna() | cards["resume_tokens"].notna()]
    if reached.empty:
        return []
    from sdcs_bench.pipeline.labels import arm_order

    fig, axes = plt.subplots(1, 2, figsize=(10, 4.0), squeeze=False)
    groups = dict(list(reached.groupby("arm")))
    never = cards[cards["resume_reached"].notna() & (cards["resume_reached"] == 0)]
    for ax, (col, label) in zip(axes[0], (("resume_tool_events", "tool events before the first useful edit"),
                                           ("resume_tokens", "tokens before it (reference policies: their meter)"))):
        for arm in arm_order(groups):
            # Trials at the same point (deterministic policies often are) are one marker, its area
            # growing with their number, which is written beside it.
            points = groups[arm].groupby([col, "retention"]).size().reset_index(name="trials")
            ax.scatter(points[col], points["retention"], label=arm, alpha=0.6, s=24 * points["trials"] ** 0.5)
            for x, y, n in points[[col, "retention", "trials"]].itertuples(index=False):
                if n > 1:
                    ax.annotate(f"{n}", (x, y), xytext=(4, 4), textcoords="offset points", fontsize=6)
        ax.set_xlabel(label + " (mean over a trial's continuations)", fontsize=8)
        ax.set_ylabel("net / requirements")
        ax.set_ylim(-0.05, 1.05)
    axes[0][0].legend(fontsize=7, title="arm")
    note = f"; {len(never)} trial(s) whose continuations made no useful edit are not shown" if len(never) else ""
    fig.suptitle(f"Study {study}: the cost of resuming against net retention\n({_sources(cards)}{note})", fontsize=9)
    return _save(fig, out_dir, "resume_cost")
