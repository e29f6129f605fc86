"""Log an evaluation run to Weights & Biases; the only module in the project that imports wandb."""

from __future__ import annotations

import contextlib
import json
import logging
import netrc
import os
import re
import uuid
from pathlib import Path
from typing import Any, Literal, cast
from urllib.parse import urlparse

from runner.config.redact import redact, redact_text
from runner.outputs.table import truncated_share

log = logging.getLogger("runner.outputs.tracking")

_MODES = ("auto", "online", "offline", "disabled")
WandbMode = Literal["online", "offline", "disabled", "shared"]
_PROMPT_CHARS = 4000


def resolve_mode(mode: str) -> str:
    """The wandb mode to run in: WANDB_MODE wins, then an explicit mode, then login detection.

    "auto" means online only when credentials are already on this machine, so a fresh checkout
    never prompts for a login or blocks on the network; no network call is made to decide.
    """
    env_mode = os.environ.get("WANDB_MODE", "").strip()
    if env_mode:
        return env_mode
    if mode != "auto":
        return mode
    return "online" if _logged_in() else "offline"


def _logged_in() -> bool:
    """True when WANDB_API_KEY is set or the netrc file has an entry for the W&B API host."""
    if os.environ.get("WANDB_API_KEY"):
        return True
    host = urlparse(os.environ.get("WANDB_BASE_URL") or "https://api.wandb.ai").hostname
    path = Path(os.environ.get("NETRC") or Path.home() / ".netrc")
    try:
        # Passing the path explicitly skips netrc's ownership check, which would otherwise
        # reject a readable-but-loose file and make a logged-in user look logged out.
        return bool(path.is_file() and host and netrc.netrc(str(path)).authenticators(host))
    except (OSError, netrc.NetrcParseError):
        return False


def render_prompt(prompt: Any) -> str:
    """Chat messages as "role: content" blocks separated by blank lines; anything else as text."""
    if isinstance(prompt, list) and all(isinstance(m, dict) and "role" in m for m in prompt):
        text = "\n\n".join(f"{m['role']}: {_text(m.get('content'))}" for m in prompt)
    else:
        text = _text(prompt)
    if len(text) <= _PROMPT_CHARS:
        return text
    # The question comes last (after the system prompt and the few-shot turns): what must be shortened is
    # kept from the end, and says how much was left out.
    note = f"[{len(text) - _PROMPT_CHARS} earlier characters left out; samples/<task>.jsonl has every one]\n…"
    return note + text[len(text) - _PROMPT_CHARS + len(note):]


def _text(value: Any) -> str:
    """Strings unchanged, None as "", everything else as JSON (readable, and one column type)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def table_columns_and_rows(records: list[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    """The samples table: fixed columns, then verdict/explanation per judge in first-seen order.

    Every cell is a string (or None) because wandb.Table infers one type per column and rejects
    a later row of another type, and fields such as `answer` or `id` vary between tasks.
    """
    judges: list[str] = []
    for rec in records:
        for j in rec.get("judgements") or []:
            if j.get("judge") not in judges:
                judges.append(j.get("judge"))
    scores: list[str] = []
    for rec in records:
        for name in rec.get("scores") or {}:
            if name not in scores:
                scores.append(name)
    epochs = any(rec.get("epoch") for rec in records)
    # Reasoning models: the reasoning beside the reply, and why replies ended where any was cut.
    thought = any(rec.get("reasoning") for rec in records)
    cut = any(rec.get("finish_reason") == "length" for rec in records)
    columns = ["id", *(["epoch"] if epochs else []), "prompt", "reference", "response",
               *(["reasoning"] if thought else []), *(["finish_reason"] if cut else []), "answer", "status", "error"]
    columns += [f"score/{name}" for name in scores]
    columns += [f"{name}/{part}" for name in judges for part in ("verdict", "explanation")]
    rows = []
    for rec in records:
        by_judge = {j.get("judge"): j for j in rec.get("judgements") or []}
        row = [_text(rec.get("id")), *([int(rec.get("epoch") or 0)] if epochs else []),
               render_prompt(rec.get("prompt")), _text(rec.get("reference")),
               rec.get("response"), *([_text(rec.get("reasoning") or "")] if thought else []),
               *([_text(rec.get("finish_reason") or "")] if cut else []),
               None if rec.get("answer") is None else _text(rec.get("answer")),
               rec.get("status"), redact_text(rec["error"]) if isinstance(rec.get("error"), str) else None]
        # Numbers, so W&B can sort, filter and chart by score (None where the sample has none).
        row += [_score((rec.get("scores") or {}).get(name)) for name in scores]
        for name in judges:
            j = by_judge.get(name)
            if j is None:
                row += [None, None]
            elif j.get("status") == "ok":
                row += [_text(j.get("verdict")) or None, j.get("explanation") or ""]
            else:  # an invalid or failed judgement: show why, and the raw reply that did not parse
                row += [j.get("status"), j.get("raw") or ""]
        rows.append(row)
    return columns, rows


def _score(value: Any) -> float | None:
    return float(value) if _number(value) else None


def flatten_scalars(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dict -> {"a/b/c": scalar}; keeps JSON scalars only and drops None."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten_scalars(value, f"{name}/"))
        elif isinstance(value, (str, int, float, bool)):
            flat[name] = value
    return flat


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _bounds(name: str, interval: Any) -> dict[str, float]:
    """{name_ci_low: lo, name_ci_high: hi} for a [lo, hi] interval; nothing for a null one."""
    if isinstance(interval, (list, tuple)) and len(interval) == 2 and all(_number(x) for x in interval):
        return {f"{name}_ci_low": float(interval[0]), f"{name}_ci_high": float(interval[1])}
    return {}


def task_values(task: str, result: dict[str, Any]) -> dict[str, Any]:
    """A task's numbers for W&B: each metric and its 95 % interval (`<task>/<metric>_ci_low`, `_ci_high`),
    and, on a task judged by two or more judges, `<task>/fleiss_kappa` (+ interval) and
    `<task>/judge_invalid_rate/<judge>`."""
    values: dict[str, Any] = {}
    intervals = result.get("ci") or {}
    for metric, value in (result.get("metrics") or {}).items():
        if _number(value):
            values[f"{task}/{metric}"] = value
            values.update(_bounds(f"{task}/{metric}", intervals.get(metric)))
    stats = result.get("judge_stats") or {}
    if _number(stats.get("fleiss_kappa")):
        values[f"{task}/fleiss_kappa"] = stats["fleiss_kappa"]
        values.update(_bounds(f"{task}/fleiss_kappa", stats.get("fleiss_kappa_ci")))
    for judge, rate in (stats.get("invalid_rate") or {}).items():
        if _number(rate):
            values[f"{task}/judge_invalid_rate/{judge}"] = rate
    return values


RUN_ID_FILE = "wandb-run-id"
"""In the run dir: the id of its W&B run, so every invocation into the run dir logs to the same run."""


def run_id(run_dir: Path) -> str:
    """The run dir's W&B run id, made (and kept in the run dir) on first use."""
    path = Path(run_dir) / RUN_ID_FILE
    try:
        known = path.read_text(encoding="utf-8").strip()
    except OSError:
        known = ""
    if re.fullmatch(r"[a-z0-9]{8,64}", known):
        return known
    new = uuid.uuid4().hex[:16]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(new + "\n", encoding="utf-8")
    return new


class WandbTracker:
    """`tracker=wandb`: one W&B run per evaluation run, offline unless the user is logged in."""

    def __init__(self, project: str = "runner", entity: str | None = None, mode: str = "auto",
                 tags: list[str] | None = None, table_rows: int = 1000, log_artifact: bool = True,
                 dir: str | None = None) -> None:
        if mode not in _MODES:
            raise ValueError(f"wandb mode must be one of {_MODES}, got {mode!r}")
        self.project = project
        self.entity = entity
        self.mode = mode
        self.tags = list(tags or [])
        self.table_rows = table_rows
        self.log_artifact = log_artifact
        self.dir = dir
        self._run: Any = None
        self._run_dir: Path | None = None

    def start(self, *, run_dir: Path, name: str, config: dict[str, Any], group: str | None,
              tags: list[str], job_type: str | None = None) -> None:
        """Open the W&B run (`job_type`: eval, rejudge or report). Errors propagate: a misconfigured tracker
        should stop the run early."""
        # wandb advertises Weave when it sees litellm loaded; the runner logs its own samples table.
        os.environ.setdefault("WANDB_DISABLE_WEAVE", "true")
        import wandb  # lazily: importing wandb takes over a second

        # `config` comes masked (runner.run.app.resolved_config) and is logged as given; the run's name and group
        # are made of what a sweep varied, which may be a key typed in an override.
        name, tags = redact_text(name), [redact_text(t) for t in tags]
        group = redact_text(group) if group else group
        self._run_dir = Path(run_dir)
        # wandb needs an existing absolute directory (a relative or missing one makes its git
        # probe print a warning) and puts its `wandb/` folder inside it.
        wandb_root = Path(self.dir or run_dir).expanduser().resolve()
        wandb_root.mkdir(parents=True, exist_ok=True)
        all_tags = list(dict.fromkeys([*self.tags, *tags]))  # dedupe, keep order
        self._run = wandb.init(
            project=self.project, entity=self.entity, name=name, group=group, tags=all_tags,
            # One W&B run per run dir: a resumed or re-run invocation continues it (offline, each invocation
            # writes its own offline-run-*-<id> folder; `wandb sync` uploads them in order as one run).
            id=run_id(self._run_dir), resume="allow",
            # What kind of run this is, for W&B's filters: an evaluation, or a re-judging of one.
            job_type=job_type or ("rejudge" if config.get("rejudge") else "eval"),
            # cast: WANDB_MODE may also hold the aliases wandb's settings accept (dryrun, run).
            config=config, dir=str(wandb_root), mode=cast(WandbMode, resolve_mode(self.mode)),
            # Hydra multiruns run jobs one after another in this process: always start a fresh
            # run, closing any run a previous job failed to finish instead of returning it.
            reinit="finish_previous",
            # Progress goes through `logging`; wandb's banners and console capture would be noise.
            # x_disable_meta: wandb's metadata record stores sys.argv verbatim (and the git remote
            # URL), so an API key passed as a Hydra override would bypass the config redaction.
            settings=wandb.Settings(silent=True, console="off", x_disable_meta=True),
        )
        if self._run.settings.mode == "online":
            log.info("W&B run: %s", self._run.url)

    def _log(self, values: dict[str, Any]) -> None:
        """One history step, numbered after every step any invocation of this run dir logged: offline, each
        invocation writes its own files, and `wandb sync` drops a resumed run's steps that start at 0 again
        (its tables would never update)."""
        assert self._run is not None and self._run_dir is not None
        step = max(int(getattr(self._run, "step", 0) or 0), _read_step(self._run_dir))
        self._run.log(values, step=step)
        _write_step(self._run_dir, step + 1)

    def log_task(self, task: str, records: list[dict[str, Any]], result: dict[str, Any]) -> None:
        """Log a task's metrics (with their intervals), judge statistics and counts under "<task>/..." and
        its first samples as a table."""
        if self._run is None:
            return
        try:
            import wandb

            values = task_values(task, result)
            for count in ("n", "n_invalid", "n_errors"):
                if isinstance(result.get(count), int):
                    values[f"{task}/{count}"] = result[count]
            if result.get("n_truncated"):  # replies cut at the token limit, and their share
                values[f"{task}/n_truncated"] = result["n_truncated"]
                values[f"{task}/truncated_share"] = truncated_share(result)
            columns, rows = table_columns_and_rows(records[: self.table_rows])
            if len(records) > self.table_rows:
                log.warning("W&B: the samples table of %s holds the first %d of its %d records (raise "
                            "tracker.table_rows to log more; every record is in samples/%s.jsonl)", task,
                            self.table_rows, len(records), task)
            values[f"samples/{task}/rows_logged"] = len(rows)
            table = wandb.Table(columns=list[str | int](columns), data=rows, allow_mixed_types=True)
            self._log({**values, f"samples/{task}": table})
            self._run.summary.update(values)
        except Exception as exc:  # the results are on disk already; a tracking hiccup must not
            log.warning("W&B: could not log task %s: %s", task, exc)  # abort the remaining tasks

    def log_extra(self, *, tables: dict[str, tuple[list[str], list[list[Any]]]] | None = None,
                  images: dict[str, Path] | None = None) -> None:
        """Log extra tables ({name: (columns, rows)}) and PNG files ({name: path}): reports, charts."""
        if self._run is None:
            return
        try:
            import wandb

            payload: dict[str, Any] = {}
            for name, (columns, rows) in (tables or {}).items():
                payload[name] = wandb.Table(columns=list[str | int](columns), data=rows, allow_mixed_types=True)
            for name, path in (images or {}).items():
                if Path(path).is_file():
                    payload[name] = wandb.Image(str(path))
            if payload:
                self._log(payload)
        except Exception as exc:
            log.warning("W&B: could not log %s: %s", ", ".join([*(tables or {}), *(images or {})]), exc)

    def finish(self, summary: dict[str, Any], *, failed: bool) -> None:
        """Log the summary and the result files, then close the run. Never raises."""
        run, self._run = self._run, None  # a second call, or one after a failed start, is a no-op
        if run is None:
            return
        try:
            run.summary.update(flatten_scalars(redact(summary)))
            if self.log_artifact and self._run_dir is not None:
                self._upload_results(run, self._run_dir)
        except Exception as exc:
            log.warning("W&B: could not log the run summary or results: %s", exc)
        try:
            run.finish(exit_code=1 if failed else 0)
        except Exception as exc:
            log.warning("W&B: could not finish the run: %s", exc)
            return
        if run.settings.mode in ("offline", "dryrun"):  # "dryrun" is wandb's old name for offline
            folder = Path(run.settings.sync_dir).parent
            log.info("W&B offline run saved in %s; look at it here with: wandb leet %s; upload it with: "
                     "wandb sync %s", run.settings.sync_dir, folder, folder / f"offline-run-*-{run.id}")

    @staticmethod
    def _upload_results(run: Any, run_dir: Path) -> None:
        """Attach results.json and samples/*.jsonl (if present) as one eval-results artifact."""
        import wandb

        files = [p for p in [run_dir / "results.json", *sorted(run_dir.glob("samples/*.jsonl"))]
                 if p.is_file()]
        if not files:
            return
        # Artifact names allow only letters, digits, "-", "_" and "."; the run id keeps it unique.
        artifact = wandb.Artifact(re.sub(r"[^\w.-]", "-", f"eval-results-{run.id}"),
                                  type="eval-results")
        for path in files:
            artifact.add_file(str(path), name=str(path.relative_to(run_dir)))
        run.log_artifact(artifact)


STEP_FILE = "runner-step"
"""In the run dir's wandb/ folder: the next history step of the run's W&B run."""


def _read_step(run_dir: Path) -> int:
    try:
        return max(0, int((run_dir / "wandb" / STEP_FILE).read_text(encoding="utf-8").strip() or 0))
    except (OSError, ValueError):
        return 0


def _write_step(run_dir: Path, step: int) -> None:
    with contextlib.suppress(OSError):  # the history then restarts at the run's own step: a warning at sync
        (run_dir / "wandb").mkdir(parents=True, exist_ok=True)
        (run_dir / "wandb" / STEP_FILE).write_text(f"{step}\n", encoding="utf-8")
