"""W&B as a resumed run and a long prompt leave it (issue 35, point 6), in real offline runs read back from
the files wandb writes: each invocation of a run dir goes on with the history steps where the last one
stopped (so `wandb sync` keeps them and the tables update), and a prompt that must be shortened keeps its
end, where the question is."""

from __future__ import annotations

from pathlib import Path

from test_wandb_tracker import _run_once, offline_env, read_offline_run  # noqa: F401 - offline_env: a fixture

from runner.outputs.tracking.wandb_tracker import _PROMPT_CHARS, render_prompt


def test_a_resumed_run_goes_on_with_its_history_steps(offline_env: Path) -> None:  # noqa: F811
    run_dir = offline_env / "outputs" / "resumed"
    first = read_offline_run(_run_once(run_dir, "eve-qwen", failed=True))
    second = read_offline_run(_run_once(run_dir, "eve-qwen"))
    steps = [[row["_step"] for row in run["history"] if "_step" in row] for run in (first, second)]
    assert steps[0] and steps[1]
    assert min(steps[1]) > max(steps[0])  # no step of the second invocation repeats one of the first
    assert steps[1] == sorted(steps[1])


def test_a_long_prompt_keeps_its_question() -> None:
    shots = [{"role": "user", "content": f"shot {i}: " + "x" * 900} for i in range(8)]
    question = {"role": "user", "content": "Which satellite carries SAR-C? A. Sentinel-1 B. Sentinel-2"}
    shown = render_prompt([{"role": "system", "content": "You answer with a letter."}, *shots, question])
    assert len(shown) == _PROMPT_CHARS
    assert shown.endswith("user: Which satellite carries SAR-C? A. Sentinel-1 B. Sentinel-2")
    assert shown.startswith("[") and "earlier characters left out" in shown.split("\n")[0]
    short = render_prompt([question])
    assert short == "user: " + question["content"]
