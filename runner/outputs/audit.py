"""Each judge, and the panel vote, against human labels (`audit.labels=FILE`, `python -m runner.audit`).

Reads a finished run's samples files (no request is sent) and a labels file (JSONL or CSV rows `id`,
`task`, `label`), and writes `audit.json` and `audit.md` into the run dir (CONTRACT.md, "Statistics"):
per labelled task, per judge and for the panel vote, over the samples with both a label and a valid
verdict, the agreement, Cohen's kappa with a seeded bootstrap interval, the confusion matrix and every
disagreement with the judge's explanation.

A task's labels use one vocabulary, which also says what is compared:
- correctness: `correct`/`incorrect` (`1`/`0`, `true`/`false` too); a judgement's verdict when it is one of those, else
  its `score` of 1/0;
- groundedness: `yes`/`no` (`partial`/`unsure` too), compared with the verdict as given;
- pairwise: `A`/`B`/`tie` or a model's name; `A` and `B` stand for the task's model_a and model_b, as
  the records name the winner.
Where a record has several judgements by one judge, those whose `rubric` names the vocabulary count, the
last one deciding. The panel vote of correctness labels is the task's own (`judge_voting`'s rule: each
record's `judge_vote`); of groundedness and pairwise labels the most common valid verdict (a tie for the most
common is no vote). With epochs the sample is the unit: each reply is compared with its sample's label, `n`
counts samples and the interval resamples samples.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from runner.errors import DataError
from runner.metrics.agreement import cohen_kappa
from runner.metrics.core import majority_vote
from runner.metrics.intervals import IntArray, bootstrap_statistic
from runner.metrics.samples import sample_key
from runner.metrics.uncertainty import RELIABLE_FROM
from runner.run.store import record_key, write_json
from runner.types import Judgement

Record = Mapping[str, Any]
Labels = dict[tuple[str, str], str]
Verdict = tuple[str | None, str]
"""A judge's verdict on one sample in the labels' vocabulary (None: invalid or none) and its explanation."""

CORRECTNESS, GROUNDEDNESS, PAIRWISE = "correctness", "groundedness", "pairwise"
TIE = "tie"
KINDS = {"correct": CORRECTNESS, "incorrect": CORRECTNESS, "yes": GROUNDEDNESS, "partial": GROUNDEDNESS,
         "no": GROUNDEDNESS, "unsure": GROUNDEDNESS, "A": PAIRWISE, "B": PAIRWISE, TIE: PAIRWISE}
ALIASES = {"1": "correct", "0": "incorrect", "true": "correct", "false": "incorrect", "a": "A", "b": "B",
           "draw": TIE}
ORDER = ("correct", "incorrect", "yes", "partial", "no", "unsure", "A", "B")
COLUMNS = ("id", "task", "label")
VOCABULARY = "correct/incorrect (correctness), yes/no/partial/unsure (groundedness) or A/B/tie (pairwise)"


# ----------------------------------------------------------------------------------------------- labels


def normalise_label(value: Any, models: Collection[str] = ()) -> str | None:
    """A label in the audit's vocabulary (a model name as given), or None when it is none of them."""
    if value is None:
        return None
    text = ("true" if value else "false") if isinstance(value, bool) else str(value).strip()
    if text in models:
        return text
    label = ALIASES.get(text.lower(), text.lower())
    return label if label in KINDS else None


def kind_of(label: str) -> str:
    """The vocabulary a normalised label belongs to (a model's name is a pairwise label)."""
    return KINDS.get(label, PAIRWISE)


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, row with lower-cased keys) of a JSONL or CSV labels file."""
    how = f"pass a JSONL or CSV file with columns {', '.join(COLUMNS)}"
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise DataError(f"cannot read the labels file {path} ({reason}); {how}") from None
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson", ".json") or (suffix != ".csv" and text.lstrip().startswith("{")):
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise DataError(f"{path}:{lineno}: not JSON ({exc}); write one object per line with "
                                f"{', '.join(COLUMNS)}") from None
            if not isinstance(row, dict):
                raise DataError(f"{path}:{lineno}: not a JSON object; write one object per line with "
                                f"{', '.join(COLUMNS)}")
            yield lineno, {str(k).strip().lower(): v for k, v in row.items()}
        return
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        header = [str(h).strip().lower() for h in reader.fieldnames or []]
        missing = [c for c in COLUMNS if c not in header]
        if missing:
            raise DataError(f"{path}: no {', '.join(missing)} column (header: {', '.join(header) or 'none'}); "
                            f"the first line must name the columns {', '.join(COLUMNS)}")
        reader.fieldnames = header
        for row in reader:
            yield reader.line_num, dict(row)
    except csv.Error as exc:
        raise DataError(f"{path}:{reader.line_num}: unreadable CSV ({exc}); {how}") from None


def read_labels(path: Path | str, *, models: Collection[str] = ()) -> Labels:
    """{(task, sample id as a string): normalised label} from a JSONL or CSV labels file.

    `models` are the names accepted as pairwise labels besides A/B/tie. A DataError (one line: what,
    where, what to do) for an unreadable file, a missing column or value, an unknown label, a task whose
    labels mix vocabularies, or a sample labelled twice differently.
    """
    path = Path(path)
    labels: Labels = {}
    kinds: dict[str, str] = {}
    names = f", or a model's name ({', '.join(sorted(models))})" if models else ""
    for lineno, row in _rows(path):
        where = f"{path}:{lineno}"
        missing = [c for c in COLUMNS if row.get(c) is None or str(row.get(c)).strip() == ""]
        if missing:
            raise DataError(f"{where}: no {' or '.join(missing)}; every row needs an id, a task and a label")
        task, sid = str(row["task"]).strip(), record_key(row["id"]).strip()
        label = normalise_label(row["label"], models)
        if label is None:
            raise DataError(f"{where}: unknown label {row['label']!r} (task {task}, id {sid}); "
                            f"use {VOCABULARY}{names}")
        kind = kinds.setdefault(task, kind_of(label))
        if kind != kind_of(label):
            raise DataError(f"{where}: task {task} mixes {kind} and {kind_of(label)} labels ({label!r} here); "
                            f"label each task in one vocabulary")
        old = labels.setdefault((task, sid), label)
        if old != label:
            raise DataError(f"{where}: task {task} id {sid} is labelled twice, {old!r} then {label!r}; "
                            f"keep one label per sample")
    if not labels:
        raise DataError(f"{path} holds no labels; write one row per sample with columns {', '.join(COLUMNS)}")
    return labels


def pairwise_models(records: Mapping[str, Sequence[Record]]) -> list[str]:
    """The model names pairwise tasks record (`extra.model_a`/`model_b`): valid labels besides A/B/tie."""
    names = {str(r["extra"][k]) for rs in records.values() for r in rs if isinstance(r.get("extra"), Mapping)
             for k in ("model_a", "model_b") if r["extra"].get(k) is not None}
    return sorted(names)


# ------------------------------------------------------------------------------------------------ audit


def _pair(record: Record) -> tuple[str, str] | None:
    extra = record.get("extra")
    if isinstance(extra, Mapping) and extra.get("model_a") is not None and extra.get("model_b") is not None:
        return str(extra["model_a"]), str(extra["model_b"])
    return None


def _human(task: str, record: Record, label: str, kind: str) -> str:
    """The label as the records name it: A/B become the pairwise task's model names."""
    if kind != PAIRWISE:
        return label
    pair = _pair(record)
    allowed = (*pair, TIE) if pair else ("A", "B", TIE)
    if pair and label in ("A", "B"):
        return pair[0] if label == "A" else pair[1]
    if label not in allowed:
        raise DataError(f"labels: task {task} id {record.get('id')} is labelled {label!r}, which is none of "
                        f"{', '.join(allowed)}; label it A, B or tie")
    return label


def _in_kind(judgement: Record, kind: str, record: Record) -> str | None:
    """A valid judgement's verdict in the labels' vocabulary, or None when it has none there."""
    verdict = judgement.get("verdict")
    text = None if verdict is None else str(verdict).strip()
    if kind == CORRECTNESS:
        if text is not None and text.lower() in ("correct", "incorrect"):
            return text.lower()
        score = judgement.get("score")
        if isinstance(score, int | float) and not isinstance(score, bool) and score in (0, 1):
            return "correct" if score == 1 else "incorrect"
        return None
    if kind == GROUNDEDNESS:
        return text.lower() if text is not None and KINDS.get(text.lower()) == GROUNDEDNESS else None
    pair = _pair(record)
    return text if text in ((*pair, TIE) if pair else ("A", "B", TIE)) else None


def _verdict(record: Record, judge: str, kind: str) -> Verdict:
    """`judge`'s verdict on `record` in the vocabulary `kind` (the last judgement of that rubric)."""
    mine = [j for j in record.get("judgements") or [] if j.get("judge") == judge and j.get("rubric", kind) == kind]
    if not mine:
        return None, ""
    last = mine[-1]
    explanation = str(last.get("explanation") or "")
    return (_in_kind(last, kind, record) if last.get("status") == "ok" else None), explanation


def _vote(judges: Sequence[str], verdicts: Sequence[Verdict]) -> Verdict:
    """The most common valid verdict (None on a tie for the most common) and every judge's reasons: the panel
    vote of groundedness and pairwise labels, whose verdicts are no pass or fail."""
    valid = [(j, v, e) for j, (v, e) in zip(judges, verdicts, strict=True) if v is not None]
    counts = Counter(v for _, v, _ in valid).most_common(2)
    if not counts or (len(counts) == 2 and counts[0][1] == counts[1][1]):
        return None, ""
    return counts[0][0], " | ".join(f"{j} ({v}): {e}" for j, v, e in valid)


def _task_vote(record: Record, judges: Sequence[str], verdicts: Sequence[Verdict]) -> Verdict:
    """The panel vote of correctness labels, by the task's own rule: the record's `judge_vote` score (what its
    `judge_voting` averages: a majority of passes, an invalid reply failing, or unanimity, as the task's scorer
    says), else the majority of passes (MUGEN's rule, and a panel whose vote is `each`); None with no judgement or
    no valid verdict."""
    given = [j for j in record.get("judgements") or [] if j.get("judge") in judges]
    if not given or all(v is None for v, _ in verdicts):
        # No judge gave a valid verdict: the panel voted nothing (the metric counts that as a fail; compared
        # with a human label it is no vote, so a panel is never "in agreement" over replies none could read).
        return None, ""
    vote = (record.get("scores") or {}).get("judge_vote")
    if not isinstance(vote, (int, float)) or isinstance(vote, bool):
        vote = majority_vote([Judgement.from_dict(j).passed for j in given])
    reasons = " | ".join(f"{j} ({v}): {e}" for j, (v, e) in zip(judges, verdicts, strict=True) if v is not None)
    return ("correct" if vote == 1 else "incorrect"), reasons


def _ordered(categories: Collection[str]) -> list[str]:
    """Categories in reading order: the vocabulary's, then model names, `tie` last."""
    return sorted(categories, key=lambda c: (c == TIE, ORDER.index(c) if c in ORDER else len(ORDER), c))


def _kappa_ci(human: Sequence[str], judged: Sequence[str], clusters: Sequence[str], n_boot: int,
              seed: int) -> list[float] | None:
    if n_boot < 1:
        return None

    def statistic(indices: IntArray) -> dict[str, float | None]:
        return {"cohen_kappa": cohen_kappa([human[int(i)] for i in indices], [judged[int(i)] for i in indices])}

    interval = bootstrap_statistic(len(human), statistic, clusters, n_boot, seed, expand=True)["cohen_kappa"]
    return None if interval is None else [interval[0], interval[1]]


def _compare(labelled: Sequence[tuple[Record, str]], verdicts: Sequence[Verdict], n_unlabelled: int, *,
             n_boot: int, seed: int) -> dict[str, Any]:
    """One rater against the labels, over the labelled samples it gave a valid verdict on.

    The sample is the unit: with epochs each of its replies is compared with its label, `n` counts samples,
    `agreement` is the mean over samples of each one's share of agreeing replies, and kappa's interval
    resamples samples; `confusion` counts replies."""
    rows = [(r, h, v, e) for (r, h), (v, e) in zip(labelled, verdicts, strict=True) if v is not None]
    human, judged = [h for _, h, _, _ in rows], [str(v) for _, _, v, _ in rows]
    clusters = [sample_key(r) for r, _, _, _ in rows]
    kappa = cohen_kappa(human, judged)
    categories = _ordered(set(human) | set(judged))
    confusion = {h: dict.fromkeys(categories, 0) for h in categories}
    shares: dict[str, list[bool]] = {}
    for h, v, c in zip(human, judged, clusters, strict=True):
        confusion[h][v] += 1
        shares.setdefault(c, []).append(h == v)
    return {
        "n": len(shares),
        "agreement": sum(sum(s) / len(s) for s in shares.values()) / len(shares) if shares else None,
        "cohen_kappa": kappa,
        "cohen_kappa_ci": None if kappa is None else _kappa_ci(human, judged, clusters, n_boot, seed),
        "reliable": len(shares) >= RELIABLE_FROM["kappa"],
        "confusion": confusion,
        "disagreements": [{"id": r.get("id"), **({"epoch": r["epoch"]} if r.get("epoch") else {}), "label": h,
                           "verdict": v, "explanation": e} for r, h, v, e in rows if h != v],
        "n_invalid": len({sample_key(r) for r, _ in labelled}) - len(shares),
        "n_unlabelled": n_unlabelled,
    }


def _audit_task(task: str, records: Sequence[Record], labels: Mapping[str, str], *, n_boot: int,
                seed: int) -> dict[str, Any]:
    kind = kind_of(next(iter(labels.values())))
    judges = list(dict.fromkeys(str(j.get("judge")) for r in records for j in r.get("judgements") or []))
    labelled = [(r, _human(task, r, labels[record_key(r["id"])], kind)) for r in records
                if record_key(r["id"]) in labels]
    verdicts = {j: [_verdict(r, j, kind) for r, _ in labelled] for j in judges}
    given = sorted({str(j.get("verdict")) for r, _ in labelled for j in r.get("judgements") or []
                    if j.get("status") == "ok" and j.get("verdict") is not None})
    if given and all(v is None for vs in verdicts.values() for v, _ in vs):
        raise DataError(f"labels: task {task} has {kind} labels, but its judges' verdicts are "
                        f"{', '.join(given[:6])}; label it in its judges' vocabulary ({VOCABULARY})")
    vote = _task_vote if kind == CORRECTNESS else (lambda _r, js, vs: _vote(js, vs))
    panel = [vote(r, judges, [verdicts[j][i] for j in judges]) for i, (r, _) in enumerate(labelled)]
    samples = {sample_key(r) for r in records}
    n_unlabelled = len(samples - {sample_key(r) for r, _ in labelled})
    unmatched = sorted(set(labels) - samples)
    return {
        "kind": kind,
        "n_labels": len(labels),
        "n_labels_unmatched": len(unmatched),
        "unmatched_ids": unmatched,
        "judges": {j: _compare(labelled, verdicts[j], n_unlabelled, n_boot=n_boot, seed=seed) for j in judges},
        "panel": _compare(labelled, panel, n_unlabelled, n_boot=n_boot, seed=seed),
    }


def audit(records: Mapping[str, Sequence[Record]], labels: Mapping[tuple[str, str], str], *, n_boot: int,
          seed: int) -> dict[str, Any]:
    """The audit of every labelled task of a run ({task: its records}) against `labels` (`read_labels`).

    {"n_boot", "seed", "tasks": {task: {"kind", "n_labels", "n_labels_unmatched", "unmatched_ids",
    "judges": {judge: block}, "panel": block}}, "unmatched_tasks"}, each block `n`, `agreement`,
    `cohen_kappa`, `cohen_kappa_ci`, `confusion` ({human: {rater: count}}), `disagreements`, `n_invalid`
    (labelled samples without a valid verdict or vote) and `n_unlabelled`. With n_boot 0 no interval.
    """
    by_task: dict[str, dict[str, str]] = {}
    for (task, sid), label in labels.items():
        by_task.setdefault(task, {})[record_key(sid)] = label
    present = [t for t in records if t in by_task]
    if not present:
        raise DataError(f"labels: the labels name tasks {', '.join(sorted(by_task))}, none of which the run has "
                        f"({', '.join(records) or 'no task'}); the task column must name the run's tasks")
    return {
        "n_boot": n_boot,
        "seed": seed,
        "tasks": {t: _audit_task(t, records[t], by_task[t], n_boot=n_boot, seed=seed) for t in present},
        "unmatched_tasks": sorted(set(by_task) - set(records)),
    }


# ----------------------------------------------------------------------------------------------- output


def _cell(value: Any, width: int = 300) -> str:
    text = "" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= width else text[: width - 1] + "…"


def _markdown(result: Mapping[str, Any]) -> str:
    lines = ["# Judge audit against human labels", "",
             f"Cohen's kappa intervals: 95 % expanded percentile bootstrap over samples, {result['n_boot']} "
             f"resamples, seed {result['seed']} (*: below the n at which it holds its coverage, "
             "docs/statistics.md). `n` counts the labelled samples with a valid verdict (or vote); `invalid` "
             "the labelled ones without.", ""]
    if result["unmatched_tasks"]:
        lines += [f"Labels of tasks the run does not have: {', '.join(result['unmatched_tasks'])}.", ""]
    for task, block in result["tasks"].items():
        raters = {**block["judges"], "panel vote": block["panel"]}
        unlabelled = block["panel"]["n_unlabelled"]
        lines += [f"## {task} ({block['kind']})", "",
                  f"{block['n_labels']} labels, {block['n_labels_unmatched']} of them for no sample of the run; "
                  f"{unlabelled} samples without a label.", "",
                  "| rater | n | agreement | Cohen's kappa | 95 % CI | invalid |", "|---|---:|---:|---:|---|---:|"]
        for name, r in raters.items():
            ci = r["cohen_kappa_ci"]
            lines.append(f"| {_cell(name)} | {r['n']} | {_cell(r['agreement'])} | {_cell(r['cohen_kappa'])} | "
                         f"{'' if ci is None else f'[{ci[0]:.3f}, {ci[1]:.3f}]'}"
                         f"{'' if ci is None or r.get('reliable', True) else '*'} | {r['n_invalid']} |")
        for name, r in raters.items():
            columns = list(r["confusion"])
            lines += ["", f"### {_cell(name)}: confusion (rows: human, columns: {_cell(name)})", "",
                      "| human | " + " | ".join(_cell(c) for c in columns) + " |",
                      "|---|" + "---:|" * len(columns)]
            lines += [f"| {_cell(h)} | " + " | ".join(str(row[c]) for c in columns) + " |"
                      for h, row in r["confusion"].items()]
        lines += ["", "### Disagreements", ""]
        rows = [(name, d) for name, r in raters.items() for d in r["disagreements"]]
        if not rows:
            lines.append("None.")
        else:
            lines += ["| rater | id | human | verdict | explanation |", "|---|---|---|---|---|"]
            lines += [f"| {_cell(name)} | {_cell(d['id'])} | {_cell(d['label'])} | {_cell(d['verdict'])} | "
                      f"{_cell(d['explanation'])} |" for name, d in rows]
        lines.append("")
    return "\n".join(lines)


def write_audit(result: Mapping[str, Any], run_dir: Path | str) -> tuple[Path, Path]:
    """Write `audit.json` (the result) and `audit.md` (tables per task and rater) into `run_dir`."""
    run_dir = Path(run_dir)
    json_path, md_path = run_dir / "audit.json", run_dir / "audit.md"
    try:
        write_json(json_path, result)
        md_path.write_text(_markdown(result), encoding="utf-8")
    except OSError as exc:
        raise DataError(f"cannot write the audit into {run_dir} ({exc.strerror or exc}); "
                        f"check that the run dir exists and is writable") from None
    return json_path, md_path


def audit_run(records: Mapping[str, Sequence[Record]], labels_path: Path | str, run_dir: Path | str, *,
              n_boot: int, seed: int) -> tuple[Path, Path]:
    """Read the labels (model names of the run's pairwise tasks accepted), audit, write both files."""
    labels = read_labels(labels_path, models=pairwise_models(records))
    return write_audit(audit(records, labels, n_boot=n_boot, seed=seed), run_dir)
