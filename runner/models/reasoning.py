"""A reply's reasoning, kept apart from its answer: a provider's reasoning field or thinking blocks, or a
`<think>` block the model wrote at the start of its content (Qwen3, DeepSeek-R1 served without a reasoning
parser). What is left is the answer, the only text readers and judges see; the reasoning is recorded beside it.

An unclosed leading `<think>` (a reply cut inside its reasoning) is all reasoning: the answer is empty. A
`</think>` with no opening tag (chat templates that put `<think>` in the prompt) ends the reasoning too.
"""

from __future__ import annotations

import re
from typing import Any

from runner.models.accounting import token_count

_OPEN = re.compile(r"\A\s*<(think|thinking|reasoning)>", re.I)
_CLOSE = {name: re.compile(rf"</{name}>", re.I) for name in ("think", "thinking", "reasoning")}
_DANGLING = re.compile(r"</(?:think|thinking|reasoning)>", re.I)
_ANY_OPEN = re.compile(r"<(?:think|thinking|reasoning)>", re.I)


def split_reasoning(content: str) -> tuple[str, str | None]:
    """(the answer, the reasoning or None) of a reply's content."""
    opened = _OPEN.match(content)
    if opened is not None:
        close = _CLOSE[opened[1].lower()].search(content, opened.end())
        if close is None:  # cut inside its reasoning: no answer was written
            return "", content[opened.end():].strip()
        return content[close.end():].lstrip(), content[opened.end():close.start()].strip()
    dangling = _DANGLING.search(content)
    if dangling is not None and not _ANY_OPEN.search(content, 0, dangling.start()):
        return content[dangling.end():].lstrip(), content[:dangling.start()].strip()
    return content, None


def provider_reasoning(message: Any) -> str | None:
    """The reasoning a provider returned beside the content: litellm's `reasoning_content` (OpenAI-compatible
    servers, DeepSeek, Gemini, and Anthropic's thinking joined), else the text of its thinking blocks."""
    text = getattr(message, "reasoning_content", None)
    if isinstance(text, str) and text.strip():
        return text
    blocks = getattr(message, "thinking_blocks", None) or []
    parts = [str(b.get("thinking") or "") for b in blocks if isinstance(b, dict)]
    joined = "\n\n".join(p for p in parts if p.strip())
    return joined or None


def reasoning_of(message: Any, content: str) -> tuple[str, str | None]:
    """(answer, reasoning) of a chat message whose content is `content`: the provider's reasoning and a
    leading `<think>` block, joined when a reply has both."""
    answer, inline = split_reasoning(content)
    given = provider_reasoning(message)
    parts = list(dict.fromkeys(p for p in (given, inline) if p))  # litellm may have copied the block already
    if not parts:
        return answer, None
    # litellm itself moves a leading <think> block of some providers into reasoning_content: the line break
    # that followed it is no part of the answer.
    return answer.lstrip(), "\n\n".join(parts)


def reasoning_tokens(usage: Any) -> int:
    """`completion_tokens_details.reasoning_tokens` of a reply's usage (0 when not reported or no count)."""
    details = getattr(usage, "completion_tokens_details", None)
    value = details.get("reasoning_tokens") if isinstance(details, dict) else \
        getattr(details, "reasoning_tokens", None)
    return token_count(value) or 0
