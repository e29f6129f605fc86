"""MUGEN pieces without a server: judge readers, the clip-choice reader, audio parts, the catalog and
config, and the summary checked against the paper's published per-dimension correct counts."""

from __future__ import annotations

import io
import json
import wave

import pytest
from conftest import compose

from runner.benchmarks.mugen import judging
from runner.benchmarks.mugen.audio import audio_format, load_clip, wav_bytes
from runner.benchmarks.mugen.benchmark import MugenBenchmark
from runner.benchmarks.mugen.catalog import ABBREVIATIONS, DIMENSIONS, REFERENCE_TASKS, TASKS, name_hint
from runner.benchmarks.mugen.choice import read_choice
from runner.benchmarks.mugen.prompting import build_messages, letter_in_original_order, shuffled_order
from runner.config import instantiate
from runner.errors import ConfigError
from runner.types import TaskResult

# ----------------------------------------------------------------------------- judge replies

# (reply, strict label, lenient label): the strict column follows the original parser's rule
# (reference notes §2.6), the lenient one our forgiving reading.
REPLIES = [
    ("Explanation: The reply picks Audio 2, which is (B).\nJudgement: correct", "correct", "correct"),
    ("Explanation: Two options are given.\nJudgement: incorrect", "incorrect", "incorrect"),
    ("Explanation: fine\nJudgement: correct\n", "correct", "correct"),          # one final newline
    ("Explanation: fine\nJudgement: correct\n\nThat is all.", "correct", "correct"),  # blank line ends it
    ("Explanation: fine\nJudgement: Correct ", "correct", "correct"),            # case and spaces
    ("Explanation: fine\n**Judgement:** correct", None, "correct"),              # markdown
    ("Explanation: fine\nJudgement:correct", None, "correct"),                   # no space after colon
    ("Explanation: fine\nJudgment: correct", None, "correct"),                   # American spelling
    ('Explanation: fine\nJudgement: "correct"', None, "correct"),                # quoted value
    ("Explanation: fine\nJudgement: correct\nNote: sure", None, "correct"),      # text on the next line
    ("Judgement: incorrect", None, "incorrect"),                                 # no Explanation line
    ("The reply is right.", None, None),                                         # no block at all
    ("", None, None),
    (None, None, None),
    ('{"explanation": "picks (B)", "judgement": "correct"}', None, "correct"),   # CONTRACT JSON
    ('Sure:\n```json\n{"judgement": "incorrect", "explanation": "hedges"}\n```', None, "incorrect"),
    ("Explanation: echo\nJudgement: correct or incorrect", None, None),          # the format echoed back
    # two judgement lines that disagree: no verdict (the first line no longer loses to a later, quoted one)
    ("Explanation: a\nJudgement: correct\nExplanation: no, two clips\nJudgement: incorrect", None, None),
]


@pytest.mark.parametrize(("reply", "strict", "lenient"), REPLIES)
def test_judge_replies_read_strictly_and_leniently(reply, strict, lenient):
    assert judging.read_strict(reply).verdict.label == strict
    assert judging.read_lenient(reply).verdict.label == lenient
    assert judging.reader(True)(reply).label == strict and judging.reader(False)(reply).label == lenient


def test_incorrect_is_never_read_as_correct():
    for reply in ("Explanation: x\nJudgement: incorrect", "Explanation: x\nJudgement: **Incorrect**",
                  '{"judgement": "incorrect"}', "Judgment - not correct"):
        assert judging.read_lenient(reply).verdict.score == 0.0, reply


def test_strict_mode_stores_the_raw_captured_fields_and_the_sentinels():
    quoted = judging.read_strict('Explanation: because\nJudgement: "correct"')
    assert (quoted.explanation, quoted.judgement) == ("because", '"correct"')
    trailing = judging.read_strict("Explanation: because\nJudgement: correct\nNote: x")
    assert trailing.judgement == "correct\nNote: x"  # the capture runs to the end: invalid
    missing = judging.read_strict("**Judgement:** correct")
    assert (missing.explanation, missing.judgement) == ("No extracted explanation", "No extracted judgement")
    assert judging.read_lenient("Explanation: picks B\n**Judgement:** Correct").judgement == "correct"


def test_strict_invalid_count_matches_the_original_rule_on_a_batch():
    replies = [r for r, _, _ in REPLIES]
    # Hand count of the strict column above: 5 valid (rows 1-5), 13 invalid.
    assert sum(not judging.read_strict(r).verdict.valid for r in replies) == 13
    assert sum(not judging.read_lenient(r).verdict.valid for r in replies) == 5


# ----------------------------------------------------------------------------- reading a chosen clip

@pytest.mark.parametrize(("reply", "choice"), [
    ("(B)", "B"), ("b", "B"), ("**B**", "B"), ("The answer is B.", "B"),
    ("Audio 2", "B"), ("The word is in Audio 2.", "B"), ("It is the second clip; the speaker is calm.", "B"),
    ("I pick the third recording.", "C"), ("clip #4", "D"), ("audio two", "B"), ("The last clip.", "E"),
    ("Audio 2 (B)", "B"), ("The answer is Audio 2; Audio 1 is too quiet.", "B"),
    ("(A) and (B)", None), ("Audio 1 and Audio 3 both fit.", None), ("Maybe (A), or possibly (C).", None),
    ("Audio 1 or Audio 2", None), ("Audio 2 (C)", None), ("Both recordings contain a man.", None),
    ("", None), (None, None), ("Audio 7", None),
])
def test_a_reply_names_one_clip_or_none(reply, choice):
    assert read_choice(reply, 5) == choice


def test_shuffled_orders_are_seeded_and_map_back_to_dataset_letters():
    order = shuffled_order(5, "0:Keyword_Spotting:3:1")
    assert sorted(order) == [0, 1, 2, 3, 4] and order == shuffled_order(5, "0:Keyword_Spotting:3:1")
    # Shown position p holds dataset option order[p]: choosing shown (A) means dataset letter order[0].
    assert letter_in_original_order("A", order) == "ABCDE"[order[0]]
    assert letter_in_original_order("B", [2, 0, 1]) == "A" and letter_in_original_order(None, [0]) is None


# ----------------------------------------------------------------------------- audio parts

def test_the_request_labels_each_clip_and_the_hint_is_optional():
    clip = load_clip({"array": [0.0], "sampling_rate": 8000}, None, "audio1")
    plain, kept = build_messages("Which clip is loudest?", [clip, clip], None)
    texts = [p["text"] for p in plain[0]["content"] if p["type"] == "text"]
    assert texts == ["Candidate audio clips, in order:\nAudio 1, option (A):", "Audio 2, option (B):",
                     "Which clip is loudest?"]
    assert kept[0]["content"][1] == clip.describe("audio1") and "data" not in json.dumps(kept)
    hinted, _ = build_messages("Which clip is loudest?", [clip, clip], None, answer_hint=True)
    assert hinted[0]["content"][-1]["text"].endswith("state its option letter, for example (B).")


def test_decoded_arrays_become_wav_and_formats_come_from_the_bytes(tmp_path):
    data = wav_bytes([0.0, 0.5, -0.5, 1.0], 16000)
    with wave.open(io.BytesIO(data)) as w:
        frames = w.readframes(4)
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (16000, 1, 2)
    # 0.5 * 32767 = 16383.5 -> 16384 (round half to even); -0.5 -> -16384; 1.0 -> 32767
    assert [int.from_bytes(frames[i:i + 2], "little", signed=True) for i in range(0, 8, 2)] == \
           [0, 16384, -16384, 32767]
    assert load_clip({"array": [0.1, 0.2], "sampling_rate": 8000}, None, "audio1").format == "wav"
    assert [audio_format(b) for b in (b"fLaC\0", b"OggS\0", b"ID3\3", b"\xff\xfb\x90")] == ["flac", "ogg", "mp3", "mp3"]
    (tmp_path / "a.wav").write_bytes(data)
    assert load_clip("a.wav", tmp_path, "audio1").data == data
    assert load_clip({"bytes": data, "path": "x.flac"}, None, "audio1").format == "wav"  # bytes win over names
    with pytest.raises(ValueError, match="leaves the data dir"):
        load_clip("../secret.wav", tmp_path, "audio2")
    with pytest.raises(ValueError, match="audio3: audio file 'missing.wav' not found"):
        load_clip("missing.wav", tmp_path, "audio3")


# ----------------------------------------------------------------------------- catalog and config

def test_catalog_has_35_tasks_in_7_dimensions_with_the_data_card_sizes():
    assert len(TASKS) == len(set(TASKS)) == 35
    assert [len(t) for t in DIMENSIONS.values()] == [3, 4, 8, 5, 5, 5, 5]  # 150/200/400/250/... problems
    assert set(ABBREVIATIONS) == set(DIMENSIONS) and len(REFERENCE_TASKS) == 10 and set(TASKS) >= REFERENCE_TASKS
    assert name_hint("Target_Speaker_Extraction") == " (did you mean Cocktail_Party_Extraction?)"
    assert name_hint("keyword_spotting") == " (did you mean Keyword_Spotting?)"


def test_benchmark_config_lists_every_task_in_catalog_order():
    cfg = compose(["benchmark=mugen"])
    assert list(cfg.benchmark.specs) == list(TASKS)
    tasks = instantiate(cfg.benchmark, "benchmark").build_tasks()
    assert [t.dataset for t in tasks[:2]] == ["MUGEN-Benchmark/Keyword_Spotting",
                                              "MUGEN-Benchmark/Intent_Classification"]
    assert {t.split for t in tasks} == {"test"} and all(t.needs_model and t.needs_judges for t in tasks)


def test_judge_preset_is_the_papers_judge_at_temperature_zero():
    (judge,) = compose(["judges=mugen"]).judges.panel
    assert judge.model == "anthropic/claude-haiku-4-5-20251001" and judge.params.temperature == 0.0


@pytest.mark.parametrize(("override", "message"), [
    ("benchmark.split=train", "benchmark.split"), ("benchmark.self_consistency=0", "self_consistency"),
    ("benchmark.num_fewshot=2", "few-shot"), ("benchmark.tasks=[Keyword_Spoting]", "did you mean 'Keyword_Spotting'"),
])
def test_bad_mugen_settings_are_one_line_config_errors(override, message):
    with pytest.raises(ConfigError, match=message):
        instantiate(compose(["benchmark=mugen", override]).benchmark, "benchmark")


# ----------------------------------------------------------------------------- the paper's numbers

# Published per-dimension scores (%) and the correct counts they imply (reference notes §3), in the
# order S&P, S&D, A&P, TA, AS&E, MA, CA; dimension sizes 150/200/400/250/250/250/250.
PAPER = {
    "DeSTA2.5-Audio": ([70, 44, 87, 43, 76, 45, 71], [46.67, 22.00, 21.75, 17.20, 30.40, 18.00, 28.40], 24.91),
    "Qwen2.5-Omni": ([105, 24, 130, 38, 27, 133, 45], [70.00, 12.00, 32.50, 15.20, 10.80, 53.20, 18.00], 28.69),
    "Audio Flamingo 3": ([38, 45, 60, 53, 58, 3, 48], [25.33, 22.50, 15.00, 21.20, 23.20, 1.20, 19.20], 17.43),
    "Voxtral-Mini-3B": ([89, 51, 120, 50, 56, 62, 59], [59.33, 25.50, 30.00, 20.00, 22.40, 24.80, 23.60], 27.83),
    "Voxtral-Small-24B": ([97, 55, 130, 57, 56, 64, 42], [64.67, 27.50, 32.50, 22.80, 22.40, 25.60, 16.80], 28.63),
    "Phi-4-MM": ([78, 42, 84, 70, 62, 62, 62], [52.00, 21.00, 21.00, 28.00, 24.80, 24.80, 24.80], 26.29),
    "Gemini-3-pro Low": ([134, 136, 308, 120, 139, 174, 173], [89.33, 68.00, 77.00, 48.00, 55.60, 69.60, 69.20], 67.66),
    "Gemini-3-pro High": ([136, 143, 310, 134, 142, 171, 182],
                          [90.67, 71.50, 77.50, 53.60, 56.80, 68.40, 72.80], 69.60),
    "ASR+LLM Low": ([113, 40, 108, 72, 66, 65, 45], [75.33, 20.00, 27.00, 28.80, 26.40, 26.00, 18.00], 29.09),
    "ASR+LLM High": ([124, 33, 111, 72, 65, 65, 56], [82.67, 16.50, 27.75, 28.80, 26.00, 26.00, 22.40], 30.06),
}


@pytest.fixture(scope="module")
def mugen() -> tuple[MugenBenchmark, list]:
    """The composed benchmark and its 35 tasks (composed once: Hydra composition takes a while)."""
    bench = instantiate(compose(["benchmark=mugen"]).benchmark, "benchmark")
    return bench, bench.build_tasks()


def _results(counts: list[int]) -> dict[str, TaskResult]:
    """50 problems per task; a dimension's correct count spread over its tasks (none above 50)."""
    out = {}
    for tasks, total in zip(DIMENSIONS.values(), counts, strict=True):
        for i, task in enumerate(tasks):
            c = total // len(tasks) + (1 if i < total % len(tasks) else 0)
            out[task] = TaskResult(n=50, n_invalid=0, invalid_ids=[], metrics={"accuracy": c / 50})
    return out


@pytest.mark.parametrize("model", list(PAPER))
def test_summary_reproduces_the_published_dimension_scores_and_overall(model, mugen, capsys, tmp_path):
    counts, published, overall = PAPER[model]
    results = _results(counts)
    summary = mugen[0].summary(mugen[1], results)
    assert [round(100 * summary["dimensions"][d], 2) for d in DIMENSIONS] == published
    # Overall is the micro average: e.g. DeSTA 436/1750 = 24.91 %, not the mean of the 7 scores (26.35).
    assert summary["n_correct"] == sum(counts) and summary["n_judged"] == 1750
    assert round(100 * summary["accuracy"], 2) == overall
    assert capsys.readouterr().out == ""  # the summary is data; the benchmark's reporter prints MUGEN's lines
    (reporter,) = mugen[0].reporters
    assert reporter.report(mugen[1], {}, results, tmp_path) is None
    lines = capsys.readouterr().out.splitlines()
    assert f"Overall | Accuracy: {overall:.2f}% ({sum(counts)}/1750)" in lines
    assert f"Dimension: Semantics & Pragmatics (S&P) | Accuracy: {published[0]:.2f}% ({counts[0]}/150)" in lines


def test_dimensions_cover_only_the_tasks_present_and_leave_out_errors(mugen):
    results = {
        # 10 samples, 2 failed calls (not judged): accuracy 6/8; micro over the dimension: (6 + 1) / (8 + 4)
        "Keyword_Spotting": TaskResult(n=10, n_invalid=1, invalid_ids=[3], metrics={"accuracy": 6 / 8},
                                       n_errors=2, error_ids=[8, 9]),
        "Intent_Classification": TaskResult(n=4, n_invalid=0, invalid_ids=[], metrics={"accuracy": 0.25}),
        "Music_Tagging": TaskResult(n=5, n_invalid=0, invalid_ids=[], metrics={"accuracy": 0.6}),  # 3/5
    }
    summary = mugen[0].summary(mugen[1], results)
    assert summary["dimensions"] == pytest.approx({"Semantics & Pragmatics": 7 / 12, "Music Analysis": 3 / 5})
    assert summary["accuracy"] == pytest.approx((6 + 1 + 3) / (8 + 4 + 5))  # 10/17
    # Each judged item is an independent 0/1 score: Wilson's interval of 10/17 and of each dimension.
    from scipy.stats import binomtest

    def wilson(k: int, n: int) -> list[float]:
        ci = binomtest(k, n).proportion_ci(method="wilson")
        return [ci.low, ci.high]

    assert summary["ci"]["accuracy"] == pytest.approx(wilson(10, 17))
    assert summary["ci"]["dimensions"] == pytest.approx({"Semantics & Pragmatics": wilson(7, 12),
                                                         "Music Analysis": wilson(3, 5)})
