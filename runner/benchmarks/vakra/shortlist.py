"""Which of a domain's tools the agent is offered when the server has more than the provider accepts.

VAKRA's domains offer up to 328 tools and providers accept 128 (OpenAI's limit), so its baseline agent
offers the tools most similar to the query. Here: cosine similarity of sentence embeddings (the metrics
extra's offline model) when it is installed, else Okapi BM25 over each tool's name, description and
parameter names. Ties keep the server's order, so the shortlist is the same on every run.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from runner.benchmarks.vakra.mcp_env import Tool

METHODS = ("auto", "embedding", "bm25")
_K1, _B = 1.5, 0.75  # the usual BM25 constants


@dataclass(frozen=True)
class Shortlist:
    tools: list[Tool]
    method: str
    """`all` (nothing cut), `embedding` or `bm25`."""
    offered_of: int
    """How many tools the server had."""


def tool_text(tool: Tool) -> str:
    """What a tool is matched on: its name as words, its description and its parameters' names."""
    properties = tool.input_schema.get("properties") if isinstance(tool.input_schema, dict) else None
    params = " ".join(str(p) for p in properties) if isinstance(properties, dict) else ""
    return f"{tool.name.replace('_', ' ')}. {tool.description} {params.replace('_', ' ')}"


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def bm25_scores(query: str, documents: Sequence[str]) -> list[float]:
    """Okapi BM25 of `query` against each document (idf with the +1 that keeps it positive)."""
    docs = [Counter(words(d)) for d in documents]
    n = len(docs)
    avg = sum(sum(d.values()) for d in docs) / n if n else 0.0
    scores = [0.0] * n
    for term in set(words(query)):
        df = sum(1 for d in docs if term in d)
        if df == 0:
            continue
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        for i, d in enumerate(docs):
            tf = d.get(term, 0)
            if tf:
                length = sum(d.values())
                scores[i] += idf * tf * (_K1 + 1) / (tf + _K1 * (1 - _B + _B * length / avg))
    return scores


def embedding_scores(query: str, documents: Sequence[str], embedding_model: str | None = None) -> list[float]:
    from runner.metrics.reference import embed

    vectors = embed([query, *documents], embedding_model)
    q = vectors[0]
    return [sum(a * b for a, b in zip(q, v, strict=True)) for v in vectors[1:]]


def resolve(method: str, embedding_model: str | None = None) -> str:
    """`auto` as it runs here: `embedding` where its model is installed, else `bm25`."""
    if method != "auto":
        return method
    from runner.metrics.reference import embedding_available

    return "embedding" if embedding_available(embedding_model) else "bm25"


def shortlist(query: str, tools: Sequence[Tool], limit: int, method: str,
              embedding_model: str | None = None) -> Shortlist:
    """At most `limit` tools, the most similar to `query` first; all of them, in order, when they fit.
    `method` is already resolved (`embedding` or `bm25`)."""
    if len(tools) <= limit:
        return Shortlist(list(tools), "all", len(tools))
    documents = [tool_text(t) for t in tools]
    scores = embedding_scores(query, documents, embedding_model) if method == "embedding" \
        else bm25_scores(query, documents)
    order = sorted(range(len(tools)), key=lambda i: (-scores[i], i))
    return Shortlist([tools[i] for i in order[:limit]], method, len(tools))
