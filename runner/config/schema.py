"""The structured-config schema Hydra validates every composed config against (a typo names its key), the
runner's resolvers, and what a sweep names its jobs after."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import (  # noqa: UP035 - OmegaConf needs typing generics
    Any,
)

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf

from runner.config.paths import PACKAGE
from runner.config.redact import redact_text

log = logging.getLogger("runner")


@dataclass
class ModelConfig:
    """A litellm endpoint: the model under test, or one judge of a panel."""

    name: str = MISSING
    """Short display name, used in results and file names."""
    model: str = MISSING
    """A litellm model string, e.g. `openai/gpt-4o-mini`."""
    api_base: str | None = None
    api_key: str | None = None
    """Leave null to use the provider's usual env var; else `${oc.env:VAR}` (never a literal key)."""
    concurrency: int = 16
    """Most requests in flight for this entry (a ceiling: see `adaptive`)."""
    adaptive: bool = True
    """Requests in flight follow the provider: start below `concurrency`, grow while calls succeed, halve on
    a 429 or an exhausted rate-limit window (runner/models/limiter.py); false keeps them at `concurrency`."""
    params: dict[str, Any] = field(default_factory=dict)
    """Passed to the provider (temperature, max_tokens, reasoning_effort, ...)."""
    drop_params: bool = False
    """A param litellm would not send to this model (the provider does not take it) stops the run before any
    request; true leaves such params out of every request and records them (results.json `params_dropped`)."""
    timeout: float = 120.0
    """Seconds per attempt."""
    max_retries: int = 5
    """Retries after the first attempt, for 429/5xx/timeouts/broken bodies."""
    backoff: float = 1.0
    """Seconds before the first retry; doubles each retry (with jitter), unless Retry-After says otherwise."""
    server: dict[str, Any] | None = None
    """An embedded server to start for this entry (`_target_` into runner.models.local_server)."""
    rubrics: dict[str, Any] = field(default_factory=dict)
    """As a judge: the rubrics it asks in place of a task's own, by file name, e.g. `{judge_refusal.j2:
    {rubric: judge_refusal_small.j2, structured: false}}` (keys of the task's judged scorer). The embedded
    demo judge needs questions a 135M model can answer (runner/run/build.py `panel_rubrics`)."""
    pricing: Any = None
    """`{input_per_mtok: X, output_per_mtok: Y}` (USD per million tokens): overrides litellm's prices.
    Typed Any because OmegaConf cannot merge a `model.pricing={...}` override into a null Optional[Dict];
    runner/models/accounting.py `parse_pricing` checks it."""
    batch: Any = False
    """`true`: send this entry's requests through the provider's batch API (about half the price, results within
    24 hours; docs/batch.md), or stop before any request where there is none; `auto`: batches where the provider
    has them, else direct calls; `false`: direct calls. Typed Any: true, false or the string auto."""
    batch_size: int = 10_000
    """With `batch`: the most requests in one batch (OpenAI takes up to 50,000, and 200 MB)."""
    batch_wait: float = 10.0
    """With `batch`: seconds a batch waits for more requests after its first before it is submitted."""


def open_map() -> DictConfig:
    """An empty map that takes any key without `+`, even in Hydra's struct mode (which closes every other map,
    including those typed dict[str, Any]): the run-level `params.<key>=value` a user sets from the command line.
    Its flag is set on the node itself, so it survives Hydra setting struct mode on the root."""
    return OmegaConf.create({}, flags={"struct": False})


def entry_defaults() -> dict[str, Any]:
    """Every key of a model or judge entry with its default (`ModelConfig`, the one list of those keys: the
    schema, the call layer's `endpoint_from_config` and rejudge's replayed endpoint all follow it)."""
    import dataclasses

    return {f.name: (f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default)
            for f in dataclasses.fields(ModelConfig) if f.default is not MISSING}


@dataclass
class JudgesConfig:
    """A judge panel: who grades."""

    panel: list[ModelConfig] = field(default_factory=list)


@dataclass
class CacheConfig:
    """The persistent response cache shared by all runs."""

    enabled: bool = True
    dir: str | None = None
    """Default: `$RUNNER_CACHE_DIR`, else `$XDG_CACHE_HOME/runner`, else `~/.cache/runner`."""


@dataclass
class StatsConfig:
    """How intervals and judge statistics are computed."""

    n_boot: int = 1000
    """Bootstrap resamples (seeded with the run's `seed`)."""


@dataclass
class BudgetConfig:
    """A hard limit on what one run spends."""

    max_usd: float | None = None
    """Once the cost this run spent (model and judges; cache hits are free) reaches it, no new request is
    sent; results.json says "stopped": "budget" and the exit status is 4; a re-run resumes."""


@dataclass
class AuditConfig:
    """Compare the judges with human labels at the end of the run (audit.json and audit.md)."""

    labels: str | None = None
    """A JSONL or CSV file of `id`, `task`, `label` rows (runner/outputs/audit.py)."""


@dataclass
class RunnerConfig:
    """The root config composed from conf/config.yaml."""

    benchmark: Any = MISSING
    model: ModelConfig = MISSING
    judges: JudgesConfig = MISSING
    tracker: Any = MISSING
    cache: CacheConfig = field(default_factory=CacheConfig)
    stats: StatsConfig = field(default_factory=StatsConfig)
    audit: AuditConfig = field(default_factory=AuditConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    params: Any = field(default_factory=open_map)
    """Request params for the whole run (`params.max_tokens=4096`): sent with every request of the model under
    test, over each task's params, which are over the model entry's; judges keep their entries' own. A value a
    task `requires` may not be contradicted (the run stops before any request)."""
    seed: int = 0
    epochs: int = 1
    """Ask every sample this many times, as independent requests (records carry `epoch`; providers that
    take a `seed` get seed + epoch); metrics are over all epochs, intervals clustered by sample."""
    workers: int | None = None
    """Processes that share one run's pending samples (each with its own event loop and connections);
    null picks from the cores and the work, 1 keeps everything in this process."""
    progress: bool = True
    """Show rich progress bars (they turn off by themselves when stderr is not a terminal)."""
    resume: str = "auto"
    """`auto`: a re-run into the same run dir keeps finished samples whose fingerprint matches and stops
    if any differs; `refresh`: ask exactly the samples whose fingerprint differs again."""
    fail_on_error: float = 0.0
    """The share of samples (in [0, 1]) that may end as errors with exit status 0."""
    allow_code: list[str] = field(default_factory=list)
    """Packages besides runner.* whose classes `_target_` may name (your own solvers, scorers, trackers)."""
    rejudge: str | None = None
    """Set by `python -m runner.rejudge SRC`: the model's replies come from SRC's records, not the model."""
    dry_run: bool = False
    """Send nothing: print what the run would send and cost, and write only plan.json (runner/run/dry_run.py)."""
    preflight: bool = True
    """Before the model's first sample, one `max_tokens: 1` request to each endpoint the run will call (when it
    has judges or several endpoints), so a refused key stops the run (exit 3) before the samples are paid for."""
    pricing_file: str | None = None
    """A JSON file in litellm's model-prices format, merged over litellm's price map for this run
    (accounting, dry runs, budgets); an entry's own `pricing` still wins (runner/models/prices.py)."""


def package_dir(relative: str) -> str:
    """`${runner.package_dir:benchmarks/eve/sample}`: a folder shipped inside the runner package."""
    return str(PACKAGE / relative)


def swept(sweep_dir: str | Path, job_overrides: list[str]) -> str:
    """What this job of a -m sweep was given of what the sweep varies, e.g. `openai-a` for the job
    `model.model=openai/a` of `-m model.model=openai/a,openai/b`: the values of the sweep's swept keys
    (read from the sweep's `multirun.yaml`), joined by `,`, safe as a folder name; "" when none."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        saved = OmegaConf.load(Path(sweep_dir) / "multirun.yaml")
        parser = OverridesParser.create()
        keys = [o.key_or_group for o in parser.parse_overrides(list(saved.hydra.overrides.task))
                if o.is_sweep_override()]
        mine = {o.key_or_group: o.get_value_element_as_str() for o in parser.parse_overrides(job_overrides)}
    except Exception:  # noqa: BLE001 - no sweep file (a job run by hand): nothing is known to vary
        return ""
    # A swept value may hold a key (an inline judges.panel): folder and W&B run names show it masked.
    values = [_safe(redact_text(f"{k}={mine[k]}").partition("=")[2]) for k in keys if k in mine]
    return ",".join(v for v in values if v)[:80]


def _safe(value: str) -> str:
    return re.sub(r"[^\w.,=+-]+", "-", value).strip("-")


def job_dir(*, _root_: Any) -> str:
    """`hydra.sweep.subdir` (conf/config.yaml): the job number and what the sweep varies, so two jobs of
    `-m model=openai-compatible model.model=a,b` are `0_a` and `1_b`; the model choice when nothing varies."""
    hydra = _root_.hydra
    varied = swept(str(hydra.sweep.dir), list(hydra.overrides.task))
    return f"{hydra.job.num}_{varied or hydra.runtime.choices.get('model')}"


def register() -> None:
    """Make the schema and resolvers known to Hydra (idempotent); conf/config.yaml lists the schema first."""
    ConfigStore.instance().store(name="runner_schema", node=RunnerConfig)
    if not OmegaConf.has_resolver("runner.package_dir"):
        OmegaConf.register_new_resolver("runner.package_dir", package_dir)
    if not OmegaConf.has_resolver("runner.job_dir"):
        OmegaConf.register_new_resolver("runner.job_dir", job_dir)


def plain(cfg: Any) -> Any:
    """A config node as plain Python (resolved); anything else as it is."""
    return OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else cfg
