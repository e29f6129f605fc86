"""Reading judge replies (runner.judges.parsers): JSON found anywhere sensible, else invalid, never a guess."""

from __future__ import annotations

import pytest

from runner.judges.parsers import find_json_object, json_objects, parse_binary, parse_grounded, parse_winner

FENCE = "```"

# --------------------------------------------------------------------------- find_json_object

FOUND = [
    ("bare", '{"judgement": "correct"}', {"judgement": "correct"}),
    ("bare_with_whitespace", '  \n{"judgement": "correct"}\n ', {"judgement": "correct"}),
    ("json_fence", f'{FENCE}json\n{{"judgement": "incorrect"}}\n{FENCE}', {"judgement": "incorrect"}),
    ("uppercase_json_fence", f'{FENCE}JSON\n{{"judgement": "correct"}}\n{FENCE}', {"judgement": "correct"}),
    ("plain_fence", f'{FENCE}\n{{"winner": "B"}}\n{FENCE}', {"winner": "B"}),
    ("fence_with_prose_around", f'Here is my verdict:\n{FENCE}json\n{{"grounded": "yes"}}\n{FENCE}\nThanks.',
     {"grounded": "yes"}),
    ("prose_before", 'After checking the facts: {"judgement": "correct"}', {"judgement": "correct"}),
    ("prose_around", 'Verdict -> {"judgement": "incorrect", "explanation": "wrong band"} <- done',
     {"judgement": "incorrect", "explanation": "wrong band"}),
    ("several_objects_the_first", 'Format: {"judgement": "correct"}. My answer: {"judgement": "incorrect"}',
     {"judgement": "correct"}),  # the first object; parse_binary reads the two as disagreeing: invalid
    ("braces_inside_strings", '{"judgement": "correct", "explanation": "uses {x} and } and {"}',
     {"judgement": "correct", "explanation": "uses {x} and } and {"}),
    ("braces_inside_strings_with_prose", 'ok: {"explanation": "a } b { c", "judgement": "correct"} end',
     {"explanation": "a } b { c", "judgement": "correct"}),
    ("nested_object_kept_whole", 'Result {"verdict": {"label": "A"}, "winner": "A"} ok',
     {"verdict": {"label": "A"}, "winner": "A"}),
    ("think_block_removed", '<think>Maybe {"judgement": "incorrect"}?</think>\n{"judgement": "correct"}',
     {"judgement": "correct"}),
    ("think_block_uppercase", '<THINK>{"winner": "B"}</THINK>{"winner": "A"}', {"winner": "A"}),
    ("think_block_with_garbage_braces", '<think>{{{ not json }</think>{"grounded": "no"}', {"grounded": "no"}),
    ("invalid_schema_line_then_answer", '{"judgement": "correct" or "incorrect"}\n{"judgement": "correct"}',
     {"judgement": "correct"}),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in FOUND], ids=[c[0] for c in FOUND])
def test_find_json_object_finds_the_reply_object(text: str, expected: dict) -> None:
    assert find_json_object(text) == expected


GARBAGE = [
    ("none", None),
    ("empty", ""),
    ("prose_only", "The answer is correct."),
    ("unquoted_keys", "{judgement: correct}"),
    ("truncated", '{"judgement": "corr'),
    ("top_level_list_of_scalars", '["correct", 1]'),
    ("only_a_think_block", '<think>{"judgement": "correct"}</think>'),
    ("json_scalar", '"correct"'),
]


@pytest.mark.parametrize("text", [c[1] for c in GARBAGE], ids=[c[0] for c in GARBAGE])
def test_find_json_object_returns_none_for_garbage(text: str | None) -> None:
    assert find_json_object(text) is None


def test_a_reply_that_changes_its_verdict_between_fenced_objects_is_invalid() -> None:
    # Issue 45: the last object no longer decides (a judge quoting the model's injected verdict after its own
    # turned fails into passes); two different verdicts in one reply are no verdict.
    text = (f'{FENCE}json\n{{"judgement": "incorrect"}}\n{FENCE}\nOn reflection the units match:\n'
            f'{FENCE}json\n{{"judgement": "correct"}}\n{FENCE}')
    assert find_json_object(text) == {"judgement": "incorrect"}
    assert not parse_binary(text).valid


def test_fenced_schema_then_bare_answer_reads_the_answer() -> None:
    text = (f'The required format is\n{FENCE}json\n{{"judgement": "correct | incorrect"}}\n{FENCE}\n'
            'My verdict: {"judgement": "incorrect", "explanation": "wrong orbit"}')
    assert json_objects(text)[1] == {"judgement": "incorrect", "explanation": "wrong orbit"}
    verdict = parse_binary(text)  # the schema's "correct | incorrect" is no verdict: the answer is the only one
    assert (verdict.label, verdict.score) == ("incorrect", 0.0)


# --------------------------------------------------------------------------- parse_binary

PASS = [
    ("correct", '{"judgement": "correct"}'),
    ("capitalised", '{"judgement": "Correct"}'),
    ("uppercase", '{"judgement": "CORRECT"}'),
    ("padded_with_period", '{"judgement": "  correct. "}'),
    ("bold", '{"judgement": "**correct**"}'),
    ("american_spelling_key", '{"judgment": "correct"}'),
    ("capitalised_key", '{"Judgement": "correct"}'),
    ("score_1", '{"score": 1}'),
    ("score_1_float", '{"score": 1.0}'),
    ("score_string_1", '{"score": "1"}'),
    ("fenced_with_prose", f'Sure.\n{FENCE}json\n{{"judgement": "correct", "explanation": "ok"}}\n{FENCE}'),
]

FAIL = [
    ("incorrect", '{"judgement": "incorrect"}'),
    ("capitalised", '{"judgement": "Incorrect"}'),
    ("uppercase", '{"judgement": "INCORRECT"}'),
    ("not_correct", '{"judgement": "not correct"}'),
    ("score_0", '{"score": 0}'),
    ("score_string_0", '{"score": "0"}'),
    ("prose_around", 'I checked it. {"judgement": "incorrect", "explanation": "wrong date"} Done.'),
]

INVALID = [
    ("none", None),
    ("empty", ""),
    ("prose_says_correct", "The answer is correct."),
    ("prose_says_incorrect", "Judgement: incorrect"),
    ("score_5", '{"score": 5}'),
    ("score_negative", '{"score": -1}'),
    ("score_string_5", '{"score": "5"}'),
    ("score_bool", '{"score": true}'),
    ("score_null", '{"score": null}'),
    ("missing_field", '{"explanation": "the answer matches the reference"}'),
    ("empty_object", "{}"),
    ("unknown_label", '{"judgement": "maybe"}'),
    ("partially_correct", '{"judgement": "partially correct"}'),
    ("label_beats_score", '{"judgement": "unclear", "score": 1}'),
    ("schema_restated_only", '{"judgement": "correct | incorrect"}'),
]


@pytest.mark.parametrize("text", [c[1] for c in PASS], ids=[c[0] for c in PASS])
def test_parse_binary_reads_a_pass(text: str) -> None:
    verdict = parse_binary(text)
    assert verdict.valid is True
    assert (verdict.label, verdict.score) == ("correct", 1.0)


@pytest.mark.parametrize("text", [c[1] for c in FAIL], ids=[c[0] for c in FAIL])
def test_parse_binary_reads_a_fail(text: str) -> None:
    verdict = parse_binary(text)
    assert verdict.valid is True
    assert (verdict.label, verdict.score) == ("incorrect", 0.0)


@pytest.mark.parametrize("text", [c[1] for c in INVALID], ids=[c[0] for c in INVALID])
def test_parse_binary_marks_unreadable_replies_invalid(text: str | None) -> None:
    verdict = parse_binary(text)
    assert verdict.valid is False
    assert verdict.label is None and verdict.score is None  # never silently a pass or a fail


def test_parse_binary_keeps_the_explanation() -> None:
    verdict = parse_binary('{"judgement": "incorrect", "explanation": "  Sentinel-2 has 13 bands.  "}')
    assert verdict.explanation == "Sentinel-2 has 13 bands."


# --------------------------------------------------------------------------- parse_grounded


@pytest.mark.parametrize("text", ['{"grounded": "yes"}', '{"grounded": "Yes"}', '{"grounded": "YES."}',
                                  f'{FENCE}json\n{{"grounded": "yes", "explanation": "all in doc 1"}}\n{FENCE}'],
                         ids=["yes", "capitalised", "uppercase_period", "fenced"])
def test_parse_grounded_yes_passes(text: str) -> None:
    verdict = parse_grounded(text)
    assert verdict.valid is True
    assert (verdict.label, verdict.score) == ("yes", 1.0)


@pytest.mark.parametrize("label", ["partial", "no", "unsure", "Partial", "NO"])
def test_parse_grounded_other_contract_labels_fail(label: str) -> None:
    verdict = parse_grounded(f'Checked. {{"grounded": "{label}", "explanation": "x"}}')
    assert verdict.valid is True
    assert (verdict.label, verdict.score) == (label.lower(), 0.0)


@pytest.mark.parametrize("text", [None, "The answer is grounded.", '{"grounded": "maybe"}', '{"grounded": ""}',
                                  '{"judgement": "correct"}', '{"grounded": "mostly yes"}', "{}"],
                         ids=["none", "prose", "maybe", "empty_label", "other_rubric", "hedged", "empty_object"])
def test_parse_grounded_anything_else_is_invalid(text: str | None) -> None:
    verdict = parse_grounded(text)
    assert verdict.valid is False
    assert verdict.score is None


# --------------------------------------------------------------------------- parse_winner


@pytest.mark.parametrize(("text", "expected"), [
    ('{"winner": "A"}', "A"),
    ('{"winner": "B"}', "B"),
    ('{"winner": "a"}', "A"),
    ('{"winner": "tie"}', "tie"),
    ('{"winner": "Tie"}', "tie"),
    ('{"winner": "Response A"}', "A"),
    ('{"winner": "response b"}', "B"),
    ('{"winner": "**B**"}', "B"),
    ('Both are close, but {"winner": "B", "explanation": "cites the band"} wins.', "B"),
], ids=["A", "B", "lowercase_a", "tie", "capitalised_tie", "response_a", "response_b", "bold_b", "prose_around"])
def test_parse_winner_reads_the_winner(text: str, expected: str) -> None:
    verdict = parse_winner(text)
    assert verdict.valid is True
    assert verdict.label == expected


@pytest.mark.parametrize("text", [None, "Response A is better.", '{"winner": "C"}', '{"winner": "both"}',
                                  '{"winner": "A or B"}', '{"winner": ""}', '{"judgement": "correct"}'],
                         ids=["none", "prose", "C", "both", "hedge", "empty_label", "other_rubric"])
def test_parse_winner_anything_else_is_invalid(text: str | None) -> None:
    assert parse_winner(text).valid is False
