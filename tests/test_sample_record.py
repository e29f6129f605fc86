"""SampleRecord.to_dict is the samples file's line: the same keys, order and values as dataclasses.asdict."""

from __future__ import annotations

import json
from dataclasses import asdict, fields

from runner.run.store import dumps
from runner.types import Judgement, SampleRecord


def test_to_dict_gives_what_asdict_gives_for_every_field():
    judged = Judgement(judge="j1", status="ok", verdict="correct", score=1.0, explanation="fits", raw="correct")
    record = SampleRecord(
        id=7, task="mcqa", prompt=[{"role": "system", "content": "s"}, {"role": "user", "content": "q?"}],
        reference=["A", "C"], response="A, C", answer=["A", "C"], judgements=[judged.to_dict()],
        scores={"accuracy": 1.0}, status="ok", error=None, model="m",
        usage={"model": {"prompt_tokens": 3, "cost_usd": None}, "judges": {"j1": {"prompt_tokens": 9}}},
        extra={"turns": [{"tool": "t", "args": {"x": 1}}]}, epoch=1, fingerprint="data=ab task=cd")
    out = record.to_dict()
    assert list(out) == [f.name for f in fields(SampleRecord)]
    assert out == asdict(record)
    assert json.loads(dumps(out)) == json.loads(json.dumps(asdict(record)))
