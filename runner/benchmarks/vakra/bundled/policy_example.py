"""An example policy judge for `benchmark.policy_judge=` (see runner/benchmarks/vakra/policy.py).

The bundled multi-turn dialogues carry policies such as "Search the library documents before answering
questions about library rules." This judge checks the one thing such a policy makes checkable: when the
policy asks for a document search, the predicted turn must have called a retriever (`query_<domain>`).
"""

from __future__ import annotations

from typing import Any


def judge_policy(dialogue: dict[str, Any]) -> dict[str, Any]:
    """Pass unless the policy asks for a document search and no retriever was called."""
    policy = dialogue["additional_instructions"].lower()
    if "document" not in policy:
        return {"score": True, "explanation": "no document-search policy to check"}
    searched = [c["name"] for c in dialogue["tool_calls"] if c["name"].startswith("query_")]
    if searched:
        return {"score": True, "explanation": f"searched the documents ({', '.join(searched)})"}
    return {"score": False, "explanation": "answered without the document search its policy asks for"}
