"""A run's spending over its invocations: results.json `totals` (every endpoint's usage summed),
`invocations.jsonl` (one line per invocation that wrote the run dir, so a resumed run counts every one,
with its room held from the start so a full disk still takes it) and the closing line printed after a run.
A money sum is null when any part's is (an unknown price), never 0."""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from runner.models.accounting import COUNT_KEYS, MONEY_KEYS


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def totals(usage: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """results.json `totals`: every count summed over the endpoints; a money sum is null when any
    endpoint's is (an unknown price)."""
    parts = list(usage.values())
    keys = list(dict.fromkeys([*COUNT_KEYS, *(k for u in parts for k in u)]))
    out: dict[str, Any] = {}
    for key in keys:
        values: list[Any] = [u.get(key) for u in parts]
        if key in MONEY_KEYS:
            out[key] = None if any(v is None for v in values) else float(sum(float(v) for v in values))
        elif key in COUNT_KEYS or (values and all(_is_count(v) for v in values)):
            out[key] = sum(int(v) for v in values if _is_count(v))
    for key in MONEY_KEYS:
        out.setdefault(key, 0.0)
    return out


INVOCATIONS = "invocations.jsonl"
"""One line per invocation that wrote the run dir: when, how long, how it ended, and what it spent."""


def merge_usage(parts: list[Mapping[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """Per-endpoint usage summed over invocations: counts added, money null once any part's is, served
    model ids united, role and model string as last seen."""
    out: dict[str, dict[str, Any]] = {}
    for usage in parts:
        for name, numbers in usage.items():
            into = out.setdefault(name, {})
            for key, value in numbers.items():
                if key in MONEY_KEYS:
                    into[key] = None if value is None or (key in into and into[key] is None) \
                        else float(into.get(key) or 0.0) + float(value)
                elif _is_count(value):
                    into[key] = int(into.get(key) or 0) + value
                elif key == "served_models":
                    into[key] = sorted({*into.get(key, []), *value})
                else:
                    into[key] = value
    return out


def by_name(entries: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
    """results.json `usage` from each endpoint's (role, name, usage): keyed by entry name, as the contract has it.
    Two roles of one name (the model under test judging itself: `model=gpt-4o-mini judges=one`) are one key
    whose counts and money are summed, with role `model+judge` and each role's own figures in `by_role`, so
    nothing one of them sent is dropped."""
    grouped: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for role, name, usage in entries:
        grouped.setdefault(name, []).append((role, usage))
    out: dict[str, Any] = {}
    for name, parts in grouped.items():
        if len(parts) == 1:
            out[name] = parts[0][1]
            continue
        merged = merge_usage([{name: usage} for _, usage in parts])[name]
        merged["role"] = "+".join(dict.fromkeys(role for role, _ in parts))
        merged["by_role"] = {role: usage for role, usage in parts}
        out[name] = merged
    return out


RESERVED_BYTES = 65536
"""Room an invocation holds in invocations.jsonl from its start (a placeholder line): given back just before its
line is written, so a disk that filled up during the run still takes it (~0.7 KB per endpoint)."""


class Invocation:
    """This invocation's share of a run dir. `record` appends it to `invocations.jsonl` and returns the
    usage and run times summed over every invocation so far, so a resumed run's tokens, cost and duration
    cover all of them, not only the last."""

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / INVOCATIONS
        self.started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        self._t0 = time.perf_counter()
        self.recorded = False
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            self._at = os.fstat(fd).st_size
            if self._at and os.pread(fd, 1, self._at - 1) != b"\n":
                os.pwrite(fd, b"\n", self._at)  # a torn line of a killed invocation must not swallow ours
                self._at += 1
            head = json.dumps({"started": self.started, "outcome": "running", "pid": os.getpid()})
            _write_at(fd, (head + " " * (RESERVED_BYTES - len(head) - 1) + "\n").encode(), self._at)
        finally:
            os.close(fd)

    def record(self, usage: Mapping[str, Any], outcome: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """Write this invocation's line (`outcome`: ok, failed, interrupted) in place of its placeholder and
        return (usage, run times) over every invocation of the run dir."""
        line = {"started": self.started, "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "duration_s": round(time.perf_counter() - self._t0, 3), "outcome": outcome, "usage": usage}
        data = (json.dumps(line, default=str) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY)
        try:
            os.ftruncate(fd, self._at)  # frees the placeholder: a line up to its size fits on a full disk
            _write_at(fd, data, self._at)
            os.fsync(fd)
        except OSError as exc:
            exc.filename = exc.filename or str(self.path)
            raise
        finally:
            os.close(fd)
        self.recorded = True
        lines = read_invocations(self.path.parent)
        return merge_usage([x.get("usage") or {} for x in lines]), {
            "started": lines[0].get("started"), "finished": line["finished"],
            "duration_s": round(sum(float(x.get("duration_s") or 0.0) for x in lines), 3),
            "invocations": len(lines), "last_duration_s": line["duration_s"]}


def _write_at(fd: int, data: bytes, offset: int) -> None:
    done = 0
    while done < len(data):
        done += os.pwrite(fd, data[done:], offset + done)


def read_invocations(run_dir: Path) -> list[dict[str, Any]]:
    """The run dir's invocation lines (a torn one, from a killed process, is skipped)."""
    path = Path(run_dir) / INVOCATIONS
    out = []
    if path.exists():
        for text in path.read_text(encoding="utf-8").splitlines():
            try:
                line = json.loads(text)
            except ValueError:
                continue
            if isinstance(line, dict) and line.get("outcome") != "running":  # a killed one's placeholder
                out.append(line)
    return out


def format_usd(value: float | None) -> str:
    """`$0.0312`; small amounts keep two significant digits (`$0.0000011`); None is `unknown`."""
    if value is None:
        return "cost unknown"
    if value == 0:
        return "$0.00"
    digits = max(4, 1 - math.floor(math.log10(abs(value))))
    return f"${value:.{digits}f}"


def closing_line(results: Mapping[str, Any]) -> str:
    """One line after a run: where results.json is, then its `totals` as they are (docs/outputs.md, "What is
    counted"): requests sent (retries included), replies from the cache (not sent, so not requests), tokens of
    the requests sent, cost and wall time, e.g.
    `done: outputs/x/results.json · 105 requests sent (3 retries) · 45 from the cache · 52,310 tokens · $0.0312
    · 42.1 s`.
    """
    run = results.get("run") or {}
    total = results.get("totals") or totals(results.get("usage") or {})
    path = Path(str(run["run_dir"])) / "results.json" if run.get("run_dir") else Path("results.json")
    sent = int(total.get("requests") or 0)
    cached = int(total.get("cached_requests", total.get("cache_hits", 0)) or 0)
    retries = int(total.get("retries") or 0)
    tokens = int(total.get("prompt_tokens") or 0) + int(total.get("completion_tokens") or 0)
    cost = total.get("cost_usd", total.get("cost"))
    parts = [f"done: {path}", f"{sent:,} request{'' if sent == 1 else 's'} sent"
             + (f" ({retries:,} retr{'y' if retries == 1 else 'ies'})" if retries else "")]
    if cached:
        parts.append(f"{cached:,} from the cache")
    # No reply asked for at all: no cost to state, not "$0.00" as if something had been bought for nothing.
    parts += [f"{tokens:,} tokens", "no cost" if sent == 0 and cached == 0 and not cost else
              format_usd(None if cost is None else float(cost))]
    duration = run.get("duration_s")
    if isinstance(duration, (int, float)):
        parts.append(f"{duration:.1f} s")
    if int(run.get("invocations") or 1) > 1:  # a resumed run: the figures add up all its invocations
        parts.append(f"over {run['invocations']} invocations")
    if results.get("stopped"):
        parts.append(f"stopped: {results['stopped']}")
    return " · ".join(parts)
