"""The results table printed after a run: one row per task and metric (value, 95 % interval, counts) where the
terminal is wide enough for every cell whole, else the same figures stacked, a block per task. A name may
wrap; a digit is never cut (a number that is cut is a wrong number)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, TextIO

COLUMNS = ("task", "metric", "value", "95% CI", "n", "invalid", "errors")
Row = tuple[str, str, str, str, str, str, str]


def rows(results: Mapping[str, Any]) -> list[Row]:
    """The table's cells, each a string: a task's counts on its first row; the panel's Fleiss kappa after
    the metrics of a task judged by two or more judges."""
    out: list[Row] = []
    for task, block in (results.get("tasks") or {}).items():
        intervals = block.get("ci") or {}
        reliable = block.get("reliable") or {}
        counts = tuple(str(block.get(k, "")) for k in ("n", "n_invalid", "n_errors"))
        lines = [(metric, value, intervals.get(metric), reliable.get(metric, True))
                 for metric, value in (block.get("metrics") or {}).items()]
        if block.get("failed"):  # its metrics could not be computed: say so where they would be
            lines.append(("(failed)", None, None, True))
        share = truncated_share(block)
        if share:  # replies cut at the token limit: read only from an answer stated before the cut
            lines.append(("truncated", share, None, True))
        stats = block.get("judge_stats")
        if isinstance(stats, Mapping) and "fleiss_kappa" in stats:  # the panel's reliability
            lines.append(("fleiss_kappa", stats.get("fleiss_kappa"), stats.get("fleiss_kappa_ci"),
                          stats.get("reliable", True)))
        for i, (metric, value, interval, sure) in enumerate(lines):
            shown = counts if i == 0 else ("", "", "")
            if metric == "fleiss_kappa" and i and isinstance(stats, Mapping):  # over the samples all judges read
                shown = (str(stats.get("n", "")), "", "")
            text = interval_text(interval)
            out.append((task if i == 0 else "", metric, number(value),
                        text + (UNRELIABLE if sure is False and text != "—" else ""), *shown))
    return out


def truncated_share(block: Mapping[str, Any]) -> float | None:
    """The share of a task's scored replies cut at the token limit (None when none was, or nothing scored)."""
    cut, n, errors = block.get("n_truncated"), block.get("n"), block.get("n_errors") or 0
    if not isinstance(cut, int) or not cut or not isinstance(n, int) or n - errors <= 0:
        return None
    return cut / (n - errors)


UNRELIABLE = " *"
"""After an interval whose method does not hold its 95 % coverage at the task's n (results.json `reliable`)."""


def unreliable_note(cells: list[Row]) -> str | None:
    """The line under a table with an interval marked `UNRELIABLE`."""
    if not any(row[3].endswith(UNRELIABLE) for row in cells):
        return None
    return ("* too few samples for this interval to hold its 95 % coverage (docs/statistics.md): read it as a "
            "rough range")


def title(results: Mapping[str, Any]) -> str:
    demo = set(results.get("demo_endpoints") or [])
    text = str(results.get("benchmark"))
    if results.get("model"):
        text += f" · model {results['model']}" + (" (demo)" if results["model"] in demo else "")
    if results.get("judges"):
        text += " · judges " + ", ".join(j + (" (demo)" if j in demo else "") for j in results["judges"])
    return text


def wide_width(cells: list[Row]) -> int:
    """The columns a rich table of these cells needs: each column's widest cell (or header), one space of
    padding on each side, and a border between and around the columns."""
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(COLUMNS)]
    return sum(widths) + 2 * len(widths) + len(widths) + 1


def print_table(results: Mapping[str, Any], file: TextIO | None = None, width: int | None = None) -> None:
    """Print the results table to stdout (or `file`): wide when it fits `width` (the terminal's; 200 for a
    pipe or a log file), stacked otherwise; then the demo caveat where the demo model took part."""
    from rich.console import Console

    out = Console(file=file or sys.stdout, width=width)
    if not out.is_terminal and width is None:  # a log file or pipe: never cut metric names to 80 columns
        out = Console(file=file or sys.stdout, width=200)
    cells = rows(results)
    if wide_width(cells) <= out.width:
        from rich.table import Table

        table = Table(title=title(results), title_justify="left")
        for col in COLUMNS:
            table.add_column(col, justify="left" if col in ("task", "metric") else "right", no_wrap=True)
        task = None
        for row in cells:
            if row[0] and task is not None:
                table.add_section()
            task = row[0] or task
            table.add_row(*row)
        out.print(table)
    else:
        for line in stacked(results, cells, out.width):
            out.print(line, markup=False, highlight=False, soft_wrap=True)
    note = unreliable_note(cells)
    if note:
        out.print(note, markup=False, highlight=False)
    demo = sorted(set(results.get("demo_endpoints") or []))
    if demo:
        out.print(demo_caveat(demo), markup=False, highlight=False)


def stacked(results: Mapping[str, Any], cells: list[Row], width: int) -> list[str]:
    """The table as lines of at most `width` characters where the figures allow: a line per task with its
    counts, then a line per metric, its value and interval beside the name when they fit, else below it."""
    lines = [title(results)]
    name_width = max((len(r[1]) for r in cells), default=0)
    for task, metric, value, interval, n, invalid, errors in cells:
        if task:
            counts = f"n {n} · invalid {invalid} · errors {errors}"
            lines += ["", task if len(task) + len(counts) + 4 > width else f"{task}  ({counts})"]
            if len(task) + len(counts) + 4 > width:
                lines.append(f"  ({counts})")
        figures = f"{value:>8}  {interval}" + (f"  n {n}" if metric == "fleiss_kappa" and not task else "")
        if 2 + max(name_width, len(metric)) + 2 + len(figures) <= width:
            lines.append(f"  {metric:<{name_width}}  {figures}")
        else:
            lines += [f"  {metric}", f"    {figures.strip()}"]
    return lines


def demo_caveat(names: list[str]) -> str:
    """The line under a table whose model or judges are the embedded demo model."""
    return (f"DEMO: {', '.join(names)} = the embedded SmolLM2-135M model: these numbers show that the pipeline "
            "works, not what a model can do; for real scores: model=NAME judges=one")


def number(value: Any) -> str:
    if value is None:
        return "—"  # no scored sample: no number
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def interval_text(interval: Any) -> str:
    """`[lo, hi]` with 3 decimals; — when there is none (a null metric, or a run without intervals)."""
    if not isinstance(interval, (list, tuple)) or len(interval) != 2 or None in interval:
        return "—"
    return f"[{float(interval[0]):.3f}, {float(interval[1]):.3f}]"
