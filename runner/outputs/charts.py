"""PNG charts: small functions that each take plain data and a path, draw one figure, and return the path.

The only module importing matplotlib, lazily (it takes a while) and without pyplot: each figure gets
its own Agg canvas, so nothing needs a display and no global figure state is shared between calls.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

COLOR_A, COLOR_TIE, COLOR_B = "#4C72B0", "#B0B0B0", "#DD8452"


def _figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Any, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150, bbox_inches="tight")  # legends placed outside the axes included
    return path


def win_rate_chart(shares: Mapping[str, tuple[float, float, float]], model_a: str, model_b: str, path: Path,
                   title: str = "") -> Path:
    """Two panels for one pairwise comparison, one row per judge.

    `shares[judge] = (A's wins, ties, B's wins)` as fractions of that judge's valid judgements. Left:
    the three stacked to 100 %. Right: each model's alpaca win rate (wins + ½ ties) against the dashed
    50 % line, where 50 % means the two models are level.
    """
    from matplotlib.ticker import PercentFormatter

    labels = list(shares)[::-1]  # first judge on top
    rows = [shares[label] for label in labels]
    y = list(range(len(labels)))
    fig = _figure(11, 1.6 + 0.55 * max(len(labels), 1))
    stacked, alpaca = fig.subplots(1, 2, sharey=True)
    left = [0.0] * len(rows)
    for i, (name, color) in enumerate(((f"{model_a} wins", COLOR_A), ("tie", COLOR_TIE),
                                       (f"{model_b} wins", COLOR_B))):
        widths = [r[i] for r in rows]
        bars = stacked.barh(y, widths, left=left, color=color, label=name, height=0.6)
        stacked.bar_label(bars, labels=[f"{w:.0%}" if w >= 0.06 else "" for w in widths], label_type="center",
                          fontsize=8)
        left = [lft + w for lft, w in zip(left, widths, strict=True)]
    stacked.set_xlim(0, 1)
    stacked.set_yticks(y, labels)
    stacked.set_xlabel("share of valid judgements")
    stacked.set_title("wins / ties / losses per judge", fontsize=10)
    stacked.legend(loc="lower center", bbox_to_anchor=(0.5, 1.08), ncol=3, fontsize=8, frameon=False)

    height = 0.35
    for offset, model, color, pick in ((height / 2, model_a, COLOR_A, 0), (-height / 2, model_b, COLOR_B, 2)):
        values = [r[pick] + r[1] / 2 for r in rows]
        bars = alpaca.barh([v + offset for v in y], values, height=height, color=color, label=model)
        alpaca.bar_label(bars, labels=[f"{v:.0%}" for v in values], fontsize=8, padding=2)
    alpaca.axvline(0.5, color="black", linestyle="--", linewidth=1)
    alpaca.set_xlim(0, 1.1)
    alpaca.set_xlabel("alpaca win rate (ties count ½); dashed: level at 50 %")
    alpaca.set_title("win rate per judge", fontsize=10)
    alpaca.legend(loc="lower center", bbox_to_anchor=(0.5, 1.08), ncol=2, fontsize=8, frameon=False)
    for ax in (stacked, alpaca):
        ax.xaxis.set_major_formatter(PercentFormatter(1.0))
    if title:
        fig.suptitle(title, fontsize=11)
    return _save(fig, path)


# Rows that are no metric of the task itself (the panel's reliability, beside its scores).
_NOT_HEADLINE = ("fleiss_kappa",)


def headline_metrics(rows: list[dict[str, Any]]) -> dict[str, str]:
    """`benchmark/task` -> its headline metric: the first metric the task reports in results.json, as in
    `summary.headline` and the sweep's pairs; a task whose headline is no rate in [0, 1] (a count) has none."""
    picked: dict[str, str] = {}
    for r in rows:
        key = f"{r['benchmark']}/{r['task']}"
        if key not in picked and r["metric"] not in _NOT_HEADLINE:
            picked[key] = r["metric"]
    values = {key: [_num(r["value"]) for r in rows if f"{r['benchmark']}/{r['task']}" == key
                    and r["metric"] == metric] for key, metric in picked.items()}
    return {key: metric for key, metric in picked.items()
            if all(v != v or 0.0 <= v <= 1.0 for v in values[key])}


def comparison_bars(rows: list[dict[str, Any]], path: Path) -> Path | None:
    """Sweep report: one group of bars per task (its headline metric), one bar per model, with intervals.

    `rows` are report rows (model, benchmark, task, metric, value, ci_low, ci_high), each task's metrics in
    results.json order. None when no task has a headline metric in [0, 1].
    """
    picked = headline_metrics(rows)
    if not picked:
        return None
    models = list(dict.fromkeys(r["model"] for r in rows))
    tasks = list(picked)
    fig = _figure(max(6.0, 1.2 + 0.9 * len(tasks) * max(1, len(models)) / 2), 4.5)
    ax = fig.subplots()
    width = 0.8 / max(1, len(models))
    for i, model in enumerate(models):
        values: list[float] = []
        errs: list[list[float]] = [[], []]
        for task in tasks:
            bench, name = task.split("/", 1)
            row = next((r for r in rows if r["model"] == model and r["benchmark"] == bench and r["task"] == name
                        and r["metric"] == picked[task]), None)
            value = _num(row["value"]) if row else math.nan  # NaN draws no bar: a null is not a 0
            values.append(value)
            low = row.get("ci_low") if row else None
            high = row.get("ci_high") if row else None
            errs[0].append(value - low if low is not None and value == value else 0.0)
            errs[1].append(high - value if high is not None and value == value else 0.0)
        xs = [t + (i - (len(models) - 1) / 2) * width for t in range(len(tasks))]
        ax.bar(xs, values, width=width, label=str(model), yerr=errs, capsize=3)
    ax.set_xticks(range(len(tasks)), [f"{t}\n({picked[t]})" for t in tasks], fontsize=7, rotation=20, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("score (95 % interval)")
    _legend_below(ax, len(models))
    ax.set_title("headline metric per task and model", fontsize=10)
    return _save(fig, path)


def judge_agreement_bars(rows: list[dict[str, Any]], path: Path) -> Path | None:
    """Sweep report: judge agreement per judged task and model; None when no task was judged by a panel."""
    found = [r for r in rows if r["metric"] == "judge_agreement"]
    if not found:
        return None
    models = list(dict.fromkeys(r["model"] for r in found))
    tasks = list(dict.fromkeys(r["task"] for r in found))
    fig = _figure(max(6.0, 1.5 + 0.8 * len(tasks) * max(1, len(models)) / 2), 4.0)
    ax = fig.subplots()
    width = 0.8 / max(1, len(models))
    for i, model in enumerate(models):
        values = [next((_num(r["value"]) for r in found if r["model"] == model and r["task"] == t), math.nan)
                  for t in tasks]
        ax.bar([t + (i - (len(models) - 1) / 2) * width for t in range(len(tasks))], values, width=width,
               label=str(model))
    ax.set_xticks(range(len(tasks)), tasks, fontsize=8, rotation=15, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("share of samples where all judges agree")
    _legend_below(ax, len(models))
    ax.set_title("judge agreement", fontsize=10)
    return _save(fig, path)


def forest_plot(rows: list[dict[str, Any]], path: Path, few: int = 10) -> Path | None:
    """Sweep report: each paired difference (model_a - model_b) as a dot with its 95 % interval, one line per
    task and pair, against the dashed line of no difference. `rows` are pairs.csv rows; a pair of fewer than
    `few` samples is drawn grey. None when no row has a difference."""
    drawn = [r for r in rows if r.get("diff") is not None][::-1]  # first row on top
    if not drawn:
        return None
    fig = _figure(8, 1.2 + 0.4 * len(drawn))
    ax = fig.subplots()
    for y, r in enumerate(drawn):
        low, high = r.get("ci_low"), r.get("ci_high")
        diff = float(r["diff"])
        xerr = [[diff - low], [high - diff]] if low is not None and high is not None else None
        color = COLOR_TIE if int(r.get("n") or 0) < few else COLOR_A
        ax.errorbar([diff], [y], xerr=xerr, fmt="o", color=color, capsize=3, markersize=4)
    ax.axvline(0.0, color="black", linestyle="--", linewidth=1)
    ax.set_yticks(range(len(drawn)), [f"{r['task']} ({r['metric']})\n{r['model_a']} − {r['model_b']}, n={r['n']}"
                                      for r in drawn], fontsize=7)
    ax.set_ylim(-0.7, len(drawn) - 0.3)
    ax.set_xlabel(f"difference model_a − model_b (95 % interval; grey: fewer than {few} paired samples)")
    ax.set_title("paired differences per task", fontsize=10)
    return _save(fig, path)


def _num(value: Any) -> float:
    """A chart value: a null metric (no scored sample) becomes NaN, which draws nothing."""
    return math.nan if value is None or value == "" else float(value)


def _legend_below(ax: Any, entries: int) -> None:
    """The legend under the plot, outside the axes: inside it covered the bars of the first tasks."""
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.32), ncol=min(4, max(1, entries)), fontsize=8,
              frameon=False)
