"""The config side of the runner: the schema (schema.py), what a config may build (targets.py) and the
lines that name a key the config does not have (keys.py). Everything is re-exported here, so callers import
`from runner.config import ...`."""

from runner.config.keys import group_option_problem, schema_key_problem, unknown_key_problem
from runner.config.schema import (
    AuditConfig,
    BudgetConfig,
    CacheConfig,
    JudgesConfig,
    ModelConfig,
    RunnerConfig,
    StatsConfig,
    job_dir,
    package_dir,
    plain,
    register,
    swept,
)
from runner.config.targets import CALLBACKS, allow_code, hydra_callback_problem, instantiate, target_class

__all__ = ["CALLBACKS", "AuditConfig", "BudgetConfig", "CacheConfig", "JudgesConfig", "ModelConfig", "RunnerConfig",
           "StatsConfig", "allow_code", "group_option_problem", "hydra_callback_problem", "instantiate", "job_dir",
           "package_dir", "plain", "register", "schema_key_problem", "swept", "target_class", "unknown_key_problem"]
