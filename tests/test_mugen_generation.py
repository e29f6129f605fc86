"""MUGEN generation against the fake server: the fixture with generated audio (local rows and a hub-layout
folder read by `datasets`), every clip sent in order under its label, nothing answer-revealing sent,
self-consistency over shuffled orders, missing splits, and a resumed run that re-judges only."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import read_jsonl, run_in_process
from test_mugen_runs import judge_requests, model_requests, overrides, rubric_judge

from runner.benchmarks.mugen.fixture import FIXTURE_TASKS, tone, write_fixture

TASKS = f"benchmark.tasks=[{','.join(FIXTURE_TASKS)}]"


def _parts(body: dict[str, Any]) -> list[dict[str, Any]]:
    (message,) = body["messages"]
    assert message["role"] == "user"
    return message["content"]


def _clips(body: dict[str, Any]) -> list[bytes]:
    return [base64.b64decode(p["input_audio"]["data"]) for p in _parts(body) if p["type"] == "input_audio"]


def audio_model(gold: set[bytes], fallback: dict[str, Any]):
    """A fake audio model that 'listens': it names the candidate whose bytes are a gold clip, by its
    position in the order it was shown ("Audio k"). Judge requests go to the rubric judge."""
    def reply(body: dict[str, Any]) -> str:
        if body["model"] != "fake-model":
            return rubric_judge(body)
        candidates, after_reference = [], False
        for part in _parts(body):
            if part["type"] == "text":
                after_reference = part["text"].endswith("Reference audio:")
            elif not after_reference:
                candidates.append(base64.b64decode(part["input_audio"]["data"]))
        hits = [i for i, c in enumerate(candidates) if c in gold]
        return f"It is Audio {hits[0] + 1}." if hits else fallback["text"]
    return reply


def _gold_clips(root: Path, rows: dict[str, list[dict[str, Any]]]) -> set[bytes]:
    out = set()
    for task_rows in rows.values():
        for row in task_rows:
            if "answer" in row:
                out.add((root / row[f"audio{' ABCDE'.index(row['answer'][1])}"]).read_bytes())
    return out


def test_generation_sends_every_clip_in_order_and_writes_mugen_predictions(fake_llm, tmp_path):
    data, run = tmp_path / "data", tmp_path / "run"
    rows = write_fixture(data)
    fake_llm.default = audio_model(_gold_clips(data, rows), {"text": "no idea"})
    results = run_in_process(overrides(fake_llm, run, f"benchmark.data_dir={data}", TASKS), run)

    asked = model_requests(fake_llm)
    expected = {}
    for task_rows in rows.values():
        for row in task_rows:
            if "answer" not in row:
                continue
            files = ([row["reference_audio"]] if row.get("reference_audio") else []) + \
                    [row[f"audio{k}"] for k in range(1, 6) if row[f"audio{k}"]]
            expected[row["instruction"] + str(row.get("id", row.get("qid")))] = [(data / f).read_bytes() for f in files]
    sent = [_clips(b) for b in asked]
    assert len(asked) == 7 and sorted(map(len, sent)) == [4, 5, 5, 5, 5, 5, 6]
    assert sorted(sent) == sorted(expected.values())  # every clip of every row, in option order
    er = next(b for b in asked if len(_clips(b)) == 4)  # the reference row with three candidates
    assert [p["type"] for p in _parts(er)] == ["text", "input_audio"] * 4 + ["text"]
    assert [p["text"] for p in _parts(er) if p["type"] == "text"] == [
        "Reference audio:", "Candidate audio clips, in order:\nAudio 1, option (A):", "Audio 2, option (B):",
        "Audio 3, option (C):", "Which candidate speaker sounds as cheerful as the reference?"]
    everything = json.dumps(asked)
    for revealing in ("happy", "sad", "fourth-is-longest", "9.5", "(B)\"", "audio1_emotion"):
        assert revealing not in everything, revealing  # side columns and answers never reach the model

    tasks = results["tasks"]
    assert {t: (r["n"], r["n_errors"], r["metrics"]["accuracy"]) for t, r in tasks.items()} == {
        "Keyword_Spotting": (3, 0, 1.0), "Emotion_Recognition": (2, 0, 1.0), "Max_Attribute_Selection": (3, 1, 1.0)}
    assert tasks["Max_Attribute_Selection"]["error_ids"] == [102]  # its row has no answer
    error = next(r for r in read_jsonl(run / "samples" / "Max_Attribute_Selection.jsonl") if r["id"] == 102)
    assert "missing column(s) answer" in error["error"]
    assert "UklGR" not in (run / "samples" / "Keyword_Spotting.jsonl").read_text()  # no base64 WAV on disk

    preds = json.loads((run / "predictions" / "Keyword_Spotting" / "output.json").read_text())
    assert preds == [{"id": r["id"], "instruction": r["instruction"], "answer": r["answer"],
                      "response": f"It is Audio {' ABCDE'.index(r['answer'][1])}."} for r in rows["Keyword_Spotting"]]
    judged = json.loads((run / "Keyword_Spotting" / "llm_judge_results.json").read_text())
    assert [{k: v for k, v in r.items() if k not in ("Explanation", "Judgement")} for r in judged] == preds
    assert {r["Judgement"] for r in judged} == {"correct"}
    mas = json.loads((run / "predictions" / "Max_Attribute_Selection" / "output.json").read_text())
    assert [r["id"] for r in mas] == [100, 101]  # qid stands in for id; the failed row has no prediction


def test_self_consistency_shuffles_candidates_and_votes_in_dataset_letters(fake_llm, tmp_path):
    data, run = tmp_path / "data", tmp_path / "run"
    rows = write_fixture(data)
    fake_llm.default = audio_model(_gold_clips(data, rows), {"text": "no idea"})
    results = run_in_process(overrides(fake_llm, run, f"benchmark.data_dir={data}", "benchmark.self_consistency=3",
                                       "benchmark.tasks=[Keyword_Spotting]"), run)
    assert len(model_requests(fake_llm)) == 9 and results["tasks"]["Keyword_Spotting"]["metrics"]["accuracy"] == 1.0
    records = {r["id"]: r for r in read_jsonl(run / "samples" / "Keyword_Spotting.jsonl")}
    orders = [tuple(g["order"]) for r in records.values() for g in r["extra"]["self_consistency"]]
    assert len(set(orders)) > 1  # the candidates really were shown in different orders
    for row in rows["Keyword_Spotting"]:
        rec, gold = records[row["id"]], row["answer"][1]
        # The model named the gold clip by its shown position each time; mapped back, every vote is gold.
        assert [g["choice"] for g in rec["extra"]["self_consistency"]] == [gold] * 3
        assert rec["response"] == f"({gold})" and rec["scores"] == {"accuracy": 1.0}
    preds = json.loads((run / "predictions" / "Keyword_Spotting" / "output.json").read_text())
    assert all(len(p["generations"]) == 3 for p in preds)


def _parquet(path: Path, rows: list[dict[str, Any]], n: int) -> None:
    """A hub-layout parquet file whose audio columns are `datasets` Audio features (bytes embedded)."""
    features = {"id": {"dtype": "int64", "_type": "Value"}, "instruction": {"dtype": "string", "_type": "Value"},
                "answer": {"dtype": "string", "_type": "Value"},
                **{f"audio{k}": {"_type": "Audio", "sampling_rate": 8000} for k in range(1, n + 1)}}
    audio = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    schema = pa.schema([("id", pa.int64()), ("instruction", pa.string()), ("answer", pa.string())]
                       + [(f"audio{k}", audio) for k in range(1, n + 1)],
                       metadata={"huggingface": json.dumps({"info": {"features": features}})})
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)


def test_hub_layout_audio_features_load_through_datasets_and_missing_splits_are_skipped(fake_llm, tmp_path):
    data, run = tmp_path / "data", tmp_path / "run"
    clips = []
    for k in range(4):
        tone(tmp_path / f"c{k}.wav", 300 + 50 * k)
        clips.append((tmp_path / f"c{k}.wav").read_bytes())
    two = [{"id": i, "instruction": f"Which clip says 'kite' ({i})?", "answer": "(A)" if i else "(B)",
            "audio1": {"bytes": clips[2 * i], "path": f"{i}_1.wav"},
            "audio2": {"bytes": clips[2 * i + 1], "path": f"{i}_2.wav"}} for i in range(2)]
    _parquet(data / "Keyword_Spotting" / "data" / "test_2-00000-of-00001.parquet", two, 2)
    _parquet(data / "Keyword_Spotting" / "data" / "test-00000-of-00001.parquet", two[:1], 2)
    _parquet(data / "Intent_Classification" / "data" / "test-00000-of-00001.parquet", two[:1], 2)
    fake_llm.default = audio_model({clips[1], clips[2]}, {"text": "no idea"})
    results = run_in_process(overrides(fake_llm, run, f"benchmark.data_dir={data}", "benchmark.split=test_2",
                                       "benchmark.tasks=[Keyword_Spotting,Intent_Classification]"), run)
    assert sorted(_clips(b) for b in model_requests(fake_llm)) == sorted([clips[0:2], clips[2:4]])
    assert results["tasks"]["Keyword_Spotting"]["metrics"]["accuracy"] == 1.0
    assert results["tasks"]["Intent_Classification"]["n"] == 0
    (problem,) = results["summary"]["problems"]
    assert problem.startswith("Intent_Classification: dataset") and "no split 'test_2'" in problem
    assert list(results["summary"]["dimensions"]) == ["Semantics & Pragmatics"]


def test_a_resumed_run_rejudges_invalid_judgements_without_asking_the_model_again(fake_llm, tmp_path):
    data, run = tmp_path / "data", tmp_path / "run"
    rows = write_fixture(data)
    model = audio_model(_gold_clips(data, rows), {"text": "no idea"})

    def flaky_judge(body: dict[str, Any]) -> str:
        if body["model"] == "judge1" and "lantern" in body["messages"][0]["content"]:
            return "I would rather not say."
        return model(body)

    fake_llm.default = flaky_judge
    args = overrides(fake_llm, run, f"benchmark.data_dir={data}", "benchmark.tasks=[Keyword_Spotting]")
    first = run_in_process(args, run)["tasks"]["Keyword_Spotting"]
    assert (first["invalid_ids"], first["metrics"]["accuracy"]) == ([1], pytest.approx(2 / 3))

    fake_llm.reset()
    fake_llm.default = model
    second = run_in_process(args, run)["tasks"]["Keyword_Spotting"]
    assert not model_requests(fake_llm) and len(judge_requests(fake_llm)) == 1  # the kept reply is judged again
    assert (second["invalid_ids"], second["metrics"]["accuracy"]) == ([], 1.0)
    record = {r["id"]: r for r in read_jsonl(run / "samples" / "Keyword_Spotting.jsonl")}[1]
    assert record["extra"]["reused_response"] is True and record["response"] == "It is Audio 1."
