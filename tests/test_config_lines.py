"""Config errors that teach (issue 35, point 5): a param a provider takes but the entry does not set says how to
add it (`+`), and a config group option that does not exist says which ones do, with the close match."""

from __future__ import annotations

import pytest
from conftest import cli, compose, one_line_error

from runner.config import group_option_problem


@pytest.mark.parametrize("override, plus", [
    ("model.params.top_p=0.9", "+model.params.top_p=..."),
    ("benchmark.specs.mcqa_single_answer.params.top_p=0.9", "+benchmark.specs.mcqa_single_answer.params.top_p=..."),
])
def test_a_param_the_entry_does_not_set_is_added_with_plus(override, plus, tmp_path):
    proc = cli([override, "dry_run=true", f"hydra.run.dir={tmp_path}"], timeout=60)
    assert proc.returncode == 2 and plus in one_line_error(proc)
    key = plus.removesuffix("=...").lstrip("+")
    cfg = compose([f"+{override}"])  # and that form is taken as the param
    node = cfg
    for part in key.split("."):
        node = node[part]
    assert node == 0.9


def test_a_typo_in_a_group_option_names_the_close_one_and_the_options():
    from hydra.errors import MissingConfigException

    with pytest.raises(MissingConfigException) as raised:
        compose(["benchmark=eve_smaple"])
    line = group_option_problem(raised.value)
    assert line is not None and line.startswith("benchmark=eve_smaple is not an option of benchmark")
    assert "did you mean benchmark=eve_sample?" in line
    assert "eve, eve_sample, eve_self_consistency, mugen, vakra, win_rate" in line
