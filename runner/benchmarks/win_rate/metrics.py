"""Win-rate metrics from pairwise sample records alone: per-judge tallies, then the CONTRACT's rates.

Every rate is a fraction over a judge's *valid* judgements: an invalid reply is counted (the sample is
listed in `invalid_ids`) and left out of every denominator, never a tie. A rate over nothing (a judge with
no valid judgement, a position model A was never shown in, no sample every judge judged) is None (null),
never 0. A judge call that keeps failing makes the whole sample an error, so it is in no record's judgements.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

TIE = "tie"


@dataclass
class Tally:
    """One judge's counts over a task's records."""

    wins_a: int = 0
    wins_b: int = 0
    ties: int = 0
    invalid: int = 0
    """Judgements whose reply did not parse (with both orders: either call's)."""
    a_first: int = 0
    """Calls (of valid judgements) that showed model A first ..."""
    a_first_wins: int = 0
    """... and how many of them model A won."""
    a_second: int = 0
    a_second_wins: int = 0
    two_orders: int = 0
    """Valid judgements made in both orders ..."""
    flips: int = 0
    """... whose two verdicts differ."""

    @property
    def valid(self) -> int:
        """Judgements that count: wins of either model and ties."""
        return self.wins_a + self.wins_b + self.ties

    def share(self, count: float) -> float | None:
        """`count` over the valid judgements (None when there are none)."""
        return count / self.valid if self.valid else None

    @property
    def a_win_rate_first(self) -> float | None:
        """Model A's win rate in the calls that showed it first (None if it never was)."""
        return self.a_first_wins / self.a_first if self.a_first else None

    @property
    def a_win_rate_second(self) -> float | None:
        """Model A's win rate in the calls that showed it second (None if it never was)."""
        return self.a_second_wins / self.a_second if self.a_second else None

    @property
    def position_bias(self) -> float | None:
        """|A's win rate shown first − shown second|; None when A was never shown in one of the positions."""
        first, second = self.a_win_rate_first, self.a_win_rate_second
        return None if first is None or second is None else abs(first - second)

    @property
    def flip_rate(self) -> float | None:
        """Share of both-order judgements whose verdict changed with the order (None without any)."""
        return self.flips / self.two_orders if self.two_orders else None


def judgement_of(record: Mapping[str, Any], judge: str) -> Mapping[str, Any] | None:
    """The record's judgement entry for `judge` (None if that judge has none)."""
    return next((j for j in record.get("judgements") or [] if j.get("judge") == judge), None)


def tally(records: Sequence[Mapping[str, Any]], judge: str, model_a: str, model_b: str) -> Tally:
    """Count one judge's verdicts and its per-position results (from its own calls)."""
    t = Tally()
    for record in records:
        j = judgement_of(record, judge)
        if j is None:
            continue
        if j.get("status") != "ok":
            t.invalid += 1
            continue
        verdict = j.get("verdict")
        t.wins_a += verdict == model_a
        t.wins_b += verdict == model_b
        t.ties += verdict == TIE
        calls = j.get("calls") or []
        for call in calls:
            won = call.get("verdict") == model_a
            if call.get("shown_first") == model_a:
                t.a_first += 1
                t.a_first_wins += won
            else:
                t.a_second += 1
                t.a_second_wins += won
        if len(calls) == 2:
            t.two_orders += 1
            t.flips += calls[0].get("verdict") != calls[1].get("verdict")
    return t


def agreement(records: Sequence[Mapping[str, Any]], judges: Sequence[str]) -> float | None:
    """Share of samples on which every judge gave a valid verdict and all verdicts are the same.

    Only samples where every judge's judgement is valid count (EVE's script divided by all rows); None
    when there is no such sample.
    """
    rows = []
    for record in records:
        entries = [judgement_of(record, name) for name in judges]
        if all(e is not None and e.get("status") == "ok" for e in entries):
            rows.append(len({e["verdict"] for e in entries if e is not None}) == 1)
    return _mean(float(r) for r in rows)


def _mean(values: Iterable[float | None]) -> float | None:
    """The mean of the values that exist; None when none does."""
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def pairwise_metrics(records: Sequence[Mapping[str, Any]], judges: Sequence[str], model_a: str,
                     model_b: str) -> dict[str, float | None]:
    """The task's metrics, named as in the CONTRACT (plus per-judge `flip_rate` when both orders ran).

    Per judge: `win_rate/<j>/<model>`, `win_rate/<j>/tie`, `alpaca_win_rate/<j>/<model>` (wins + ½ ties),
    `position_bias/<j>`. Pooled over judges: `aggregate/<model>_win_rate` and
    `aggregate/<model>_alpaca_win_rate` (Σ over judges / Σ valid judgements); averaged over judges with
    at least one valid judgement: `aggregate/avg_<model>_win_rate`, `aggregate/avg_<model>_alpaca_win_rate`.
    Then `judge_agreement`.
    """
    tallies = {name: tally(records, name, model_a, model_b) for name in judges}
    # Both orders ran when any judgement holds two calls (even if every one of them was invalid).
    both = any(len(j.get("calls") or []) == 2 for r in records for j in r.get("judgements") or [])
    out: dict[str, float | None] = {}
    for name, t in tallies.items():
        out[f"win_rate/{name}/{model_a}"] = t.share(t.wins_a)
        out[f"win_rate/{name}/{model_b}"] = t.share(t.wins_b)
        out[f"win_rate/{name}/{TIE}"] = t.share(t.ties)
        out[f"alpaca_win_rate/{name}/{model_a}"] = t.share(t.wins_a + t.ties / 2)
        out[f"alpaca_win_rate/{name}/{model_b}"] = t.share(t.wins_b + t.ties / 2)
        out[f"position_bias/{name}"] = t.position_bias
        if both:
            out[f"flip_rate/{name}"] = t.flip_rate
    valid = sum(t.valid for t in tallies.values())
    ties = sum(t.ties for t in tallies.values())
    judged = [t for t in tallies.values() if t.valid]
    wins: dict[str, Callable[[Tally], int]] = {model_a: lambda t: t.wins_a, model_b: lambda t: t.wins_b}
    for model, won in wins.items():
        out[f"aggregate/{model}_win_rate"] = sum(map(won, tallies.values())) / valid if valid else None
    for model, won in wins.items():
        total = sum(map(won, tallies.values())) + ties / 2
        out[f"aggregate/{model}_alpaca_win_rate"] = total / valid if valid else None
    for model, won in wins.items():
        out[f"aggregate/avg_{model}_win_rate"] = _mean(t.share(won(t)) for t in judged)
    for model, won in wins.items():
        out[f"aggregate/avg_{model}_alpaca_win_rate"] = _mean(t.share(won(t) + t.ties / 2) for t in judged)
    out["judge_agreement"] = agreement(records, judges)
    return out
