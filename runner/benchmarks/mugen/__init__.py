"""MUGEN: multi-audio understanding of large audio-language models (35 tasks, 7 dimensions).

benchmark.py (data, prediction folders, the summary), task.py (ask, judge), scores.py (the micro
averages per dimension and overall), judging.py (strict and lenient judge readers), choice.py (reading
a reply's chosen clip), prompting.py and audio.py (the audio request), predictions.py (reading the MUGEN
layout), catalog.py (tasks and dimensions), fixture.py (a tiny offline data dir with generated audio),
prompts/ (the Jinja templates). MUGEN's files and console lines: runner/benchmarks/mugen/reporter.py.
"""
