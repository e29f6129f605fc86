"""Where the test suite's CPU goes, per test and per file (docs/performance.md, "The test suite").

As a pytest plugin it appends one JSON row per test, `[nodeid, cpu_s, wall_s]`, to $SUITE_CPU_OUT: the CPU of the
test process (setup, call and teardown) plus that of every child it waited for (runs, forks, installs), so a test
that starts a runner is charged for it. Each xdist worker appends its own rows. Then the summary:

    rm -f /tmp/cpu.jsonl
    SUITE_CPU_OUT=/tmp/cpu.jsonl PYTHONPATH=bench /usr/bin/time -v .venv/bin/python -m pytest -p bench_suite_cpu \\
        -n 4 --dist loadgroup
    .venv/bin/python bench/bench_suite_cpu.py /tmp/cpu.jsonl [--top 30]

`/usr/bin/time` gives the whole (workers' start and collection included); the rows give the parts.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    out = os.environ.get("SUITE_CPU_OUT")
    cpu, wall = _cpu(), time.monotonic()
    yield
    if out:
        with open(out, "a", encoding="utf-8") as f:  # one short write per row: workers do not interleave
            f.write(json.dumps([item.nodeid, round(_cpu() - cpu, 3), round(time.monotonic() - wall, 3)]) + "\n")


def summary(rows: list[Any], top: int) -> str:
    by_file: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for nodeid, cpu, wall in rows:
        part = by_file[nodeid.split("::")[0]]
        part[0], part[1], part[2] = part[0] + cpu, part[1] + wall, part[2] + 1
    lines = [f"{len(rows)} tests, {sum(r[1] for r in rows):.0f} s of CPU in the tests themselves", "",
             "    CPU s    wall s  tests  file"]
    lines += [f"{c:9.1f} {w:9.1f} {int(n):6d}  {f}" for f, (c, w, n) in sorted(by_file.items(), key=lambda x: -x[1][0])
              [:top]]
    lines += ["", "    CPU s    wall s  test"]
    lines += [f"{c:9.1f} {w:9.1f}  {n}" for n, c, w in sorted(rows, key=lambda r: -r[1])[:top]]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("rows", type=Path, help="the file $SUITE_CPU_OUT named")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.rows.read_text(encoding="utf-8").splitlines() if line.strip()]
    print(summary(rows, args.top))


if __name__ == "__main__":
    main()
