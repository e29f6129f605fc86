"""The policy-judge plug-in: `benchmark.policy_judge=path/to/file.py`, a Python file of yours.

VAKRA's multi-hop, multi-source dialogues (capability_multiturn) come with a tool-use policy in
`additional_instructions`; VAKRA checks it first but does not publish that judge. Bring your own: the file
defines

    def judge_policy(dialogue: dict) -> bool | float | dict        # `async def` works too

called once per scored dialogue of the capabilities in `benchmark.policy_capabilities`, with

    uuid, domain, capability        the dialogue
    additional_instructions         the tool-use policy ("" when the dialogue has none)
    query, answer                   the last turn's query and the predicted answer
    ground_truth_answer             the last ground-truth turn's answer, as in the file
    tool_calls                      the predicted calls as replayed: [{name, arguments, response, error}]
    ground_truth_tool_calls         the last ground-truth turn's calls, as replayed

It returns True/False, a number in [0, 1] (1 = the policy was followed; anything lower fails the dialogue),
or {"score": <bool or number>, "explanation": "<why>"}. An exception, or any other return value, records
that dialogue as an error. See bundled/policy_example.py.
"""

from __future__ import annotations

import importlib.util
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runner.benchmarks.vakra.scoring import PolicyVerdict
from runner.errors import ConfigError

FUNCTION = "judge_policy"


def load_policy_judge(path: str | Path) -> Callable[[dict[str, Any]], Any]:
    """The file's `judge_policy` function; ConfigError (one line) if the file or the function is missing."""
    file = Path(path).expanduser()
    where = f"benchmark.policy_judge={path}"
    if not file.is_file():
        raise ConfigError(f"{where}: no such file; give the path of a Python file defining {FUNCTION}(dialogue)")
    spec = importlib.util.spec_from_file_location(f"vakra_policy_judge_{abs(hash(str(file.resolve())))}", file)
    if spec is None or spec.loader is None:
        raise ConfigError(f"{where}: cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - the user's file: say what broke, in one line
        raise ConfigError(f"{where}: importing it failed: {type(exc).__name__}: {exc}") from None
    function: object = getattr(module, FUNCTION, None)
    if not callable(function):
        raise ConfigError(f"{where}: the file defines no function {FUNCTION}(dialogue)")
    return function


async def run_policy_judge(function: Callable[[dict[str, Any]], Any], dialogue: dict[str, Any]) -> PolicyVerdict:
    """Call the plug-in and read its verdict; ValueError if the return value is not one of the documented forms."""
    value = function(dialogue)
    if inspect.isawaitable(value):
        value = await value
    explanation = ""
    if isinstance(value, dict):
        explanation = str(value.get("explanation") or "")
        value = value.get("score")
    if isinstance(value, bool):
        return PolicyVerdict(1.0 if value else 0.0, explanation)
    if isinstance(value, (int, float)) and 0.0 <= float(value) <= 1.0:
        return PolicyVerdict(float(value), explanation)
    raise ValueError(f"{FUNCTION} returned {value!r}; expected True/False, a number in [0, 1] or "
                     "{'score': ..., 'explanation': ...}")
