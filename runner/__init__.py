"""runner: a Hydra-configured experiment runner that evaluates LLMs through litellm.

The public names below are the types a benchmark author needs; everything else is reached through
the config tree (`conf/`), not imported.
"""

from runner.benchmarks.base import Benchmark, Context, Task
from runner.benchmarks.generative import GenerativeTask, Scored
from runner.types import Judgement, ModelOutput, Sample, SampleRecord, TaskResult, Usage

__version__ = "0.1.0"

__all__ = ["Benchmark", "Context", "GenerativeTask", "Judgement", "ModelOutput", "Sample", "SampleRecord",
           "Scored", "Task", "TaskResult", "Usage", "__version__"]
