"""runner: a Hydra-configured experiment runner that evaluates LLMs through litellm.

The public names below are the types a benchmark author needs; everything else is reached through
the config tree (`conf/`), not imported. A task is `Task` (data + solver + scorers + metrics, from YAML);
`BaseTask` is for a task whose asking and scoring fit no solver and scorer (MUGEN, VAKRA, win rate).
"""

from runner.benchmarks.base import Benchmark
from runner.tasks.base import BaseTask, Context
from runner.tasks.task import Scorer, Solver, Task
from runner.types import Judgement, ModelOutput, Sample, SampleRecord, Scored, TaskResult, Usage

__version__ = "0.1.0"

__all__ = ["BaseTask", "Benchmark", "Context", "Judgement", "ModelOutput", "Sample", "SampleRecord", "Scored",
           "Scorer", "Solver", "Task", "TaskResult", "Usage", "__version__"]
