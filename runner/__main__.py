"""`python -m runner [overrides]`: compose the config with Hydra, run, and turn errors into one clear line."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

CONF_DIR = str(Path(__file__).resolve().parent.parent / "conf")


# Read before main() sets HYDRA_FULL_ERROR for its own use: did the *user* ask for tracebacks?
_DEBUG = bool(os.environ.get("RUNNER_DEBUG") or os.environ.get("HYDRA_FULL_ERROR"))


def _debug() -> bool:
    return _DEBUG


def _one_line(exc: BaseException) -> str:
    """Hydra and OmegaConf errors span several lines (and a cause); fold them into one."""
    parts: list[str] = []
    seen: BaseException | None = exc
    while seen is not None:
        for line in str(seen).splitlines():
            line = line.strip()
            if line and "HYDRA_FULL_ERROR" not in line and not line.startswith(("reference_type", "object_type")) \
                    and line not in parts:
                parts.append(line)
        seen = seen.__cause__
    return "; ".join(parts) or type(exc).__name__


def _fail(message: str, code: int) -> None:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(code)


def _redact_saved_config(run_dir: Path) -> None:
    """Hydra saved the composed config and the overrides as given; mask every secret in them."""
    from omegaconf import OmegaConf

    from runner.redact import MASK, is_secret_key, redact

    def mask_override(text: Any) -> Any:
        if isinstance(text, str) and "=" in text:
            key, _, _ = text.partition("=")
            if is_secret_key(key.lstrip("+~").split(".")[-1].split("[")[0]):
                return f"{key}={MASK}"
        return text

    def walk(obj: Any) -> Any:
        if isinstance(obj, dict):
            return {k: walk(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [walk(mask_override(v)) for v in obj]
        if isinstance(obj, str):
            return ",".join(mask_override(p) for p in obj.split(",")) if "=" in obj else obj
        return obj

    for name in ("config.yaml", "overrides.yaml", "hydra.yaml"):
        path = run_dir / ".hydra" / name
        if path.exists():
            data = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
            path.write_text(OmegaConf.to_yaml(OmegaConf.create(walk(redact(data)))), encoding="utf-8")


class _RedactingFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        from runner.redact import redact_text

        record.msg = redact_text(record.getMessage())
        record.args = None
        return True


def _job(cfg: Any) -> None:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from runner.errors import RunnerError

    hc = HydraConfig.get()
    run_dir = Path(hc.runtime.output_dir)
    for handler in logging.getLogger().handlers:
        handler.addFilter(_RedactingFilter())
    _redact_saved_config(run_dir)
    multirun = hc.mode == RunMode.MULTIRUN
    try:
        from runner.app import run

        run(cfg, run_dir, group=Path(hc.sweep.dir).name if multirun else None)
    except RunnerError as exc:
        if _debug():
            raise
        if multirun:  # one failed job must not stop the sweep; it says why and the sweep goes on
            logging.getLogger("runner").error("job %s failed: %s", hc.job.num, exc)
            (run_dir / "error.txt").write_text(f"{exc}\n", encoding="utf-8")
            return
        _fail(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        _fail("interrupted; finished samples are saved; re-run with "
              f"hydra.run.dir={run_dir} to resume", 130)


def main() -> None:
    """Console entry point."""
    # litellm (seconds to import) is imported on the first request that misses the cache, in a thread:
    # starting it here competes with config composition for the GIL (bench/bench_mcq.py measured it).
    import hydra
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from runner.schema import register

    register()
    app = hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")(_job)
    # Make Hydra raise instead of printing its multi-line report, so we can print one line.
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        app()
    except (HydraException, OmegaConfBaseException) as exc:
        if _debug():
            raise
        _fail(f"config: {_one_line(exc)}", 2)
    except Exception as exc:  # noqa: BLE001 - a bug: say so in one line; RUNNER_DEBUG=1 shows the traceback
        if _debug():
            raise
        _fail(f"internal error: {type(exc).__name__}: {_one_line(exc)} (run with RUNNER_DEBUG=1 for the "
              "traceback, and please report it)", 1)


if __name__ == "__main__":
    main()
