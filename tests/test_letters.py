"""Reading multiple-choice replies: runner.scorers.letters."""

from __future__ import annotations

import pytest

from runner.scorers.letters import extract_choice, extract_choices

YES_NO = ["Yes", "No"]

# (id, reply, n_choices, option_texts, expected letter)
SINGLE = [
    ("bare_letter", "B", 4, None, "B"),
    ("lowercase_bare_letter", "b", 4, None, "B"),
    ("padded_letter_with_period", " B. ", 4, None, "B"),
    ("parenthesised_letter", "(B)", 4, None, "B"),
    ("bracketed_letter", "[B]", 4, None, "B"),
    ("bold_letter", "**B**", 4, None, "B"),
    ("letter_with_closing_paren", "B)", 4, None, "B"),
    ("letter_colon_option_text", "B: 10 meters", 4, None, "B"),
    ("letter_period_option_text", "B. 10 meters", 4, None, "B"),
    ("the_answer_is", "The answer is B.", 4, None, "B"),
    ("parenthesised_letter_after_answer_is", "The answer is (B).", 4, None, "B"),
    ("answer_colon", "Answer: B", 4, None, "B"),
    ("lowercase_answer_colon", "answer: b", 4, None, "B"),
    ("bold_parenthesised_correct_option", "The correct option is **(C)**", 4, None, "C"),
    ("sentence_initial_pronoun_is_not_an_option", "I believe it is B", 4, None, "B"),
    ("i_think_the_answer_is", "I think the answer is D", 4, None, "D"),
    ("article_a_is_not_an_option", "A good choice would be C.", 4, None, "C"),
    ("bare_a_is_an_option", "A", 4, None, "A"),
    ("bare_a_with_period_is_an_option", "A.", 4, None, "A"),
    ("option_keyword", "Option C", 4, None, "C"),
    ("lowercase_option_is_correct", "option c is correct", 4, None, "C"),
    ("choice_colon", "Choice: D", 4, None, "D"),
    ("committed_letter_not_explanation_letter", "C is correct because A is wrong", 4, None, "C"),
    ("answer_line_then_explanation", "Answer: B\nExplanation: A is incorrect because ...", 4, None, "B"),
    ("hedge_a_or_b", "A or B", 4, None, None),
    ("hedge_either_or", "either A or C", 4, None, None),
    ("hedge_or_maybe", "B or maybe D", 4, None, None),
    ("hedge_in_prose", "I'm not sure, A or B", 4, None, None),
    ("hedge_after_answer_is", "The answer is A or B.", 4, None, None),
    ("yes_without_options_is_nothing", "Yes", 4, None, None),
    ("no_without_options_is_nothing", "No", 4, None, None),
    ("dont_know_is_nothing", "I don't know", 4, None, None),
    ("empty_reply_is_nothing", "", 4, None, None),
    ("none_reply_is_nothing", None, 4, None, None),
    ("option_text_yes", "Yes", 2, YES_NO, "A"),
    ("option_text_no_with_period", "No.", 2, YES_NO, "B"),
    ("option_text_yes_in_sentence", "yes, it is hallucinated", 2, YES_NO, "A"),
    ("option_text_no_in_sentence", "No, the answer is accurate", 2, YES_NO, "B"),
    ("letter_beyond_n_choices_ignored", "E", 4, None, None),
    ("answer_beyond_n_choices_ignored", "The answer is E.", 4, None, None),
    (
        "final_answer_statement_beats_reasoning",
        "Let's think. Option A mentions X... Option B ...\nTherefore, the answer is B.",
        4, None, "B",
    ),
    ("last_answer_statement_wins", "The answer is A.\nWait, re-reading: the answer is C.", 4, None, "C"),
    ("think_block_ignored", "<think>A seems right... no</think> The answer is C", 4, None, "C"),
    # Our own.
    ("unclosed_think_block_is_nothing", "<think>The answer is A, surely", 4, None, None),
    ("dangling_think_close_tag", "A looks plausible...</think>\nAnswer: D", 4, None, "D"),
    ("answer_is_a_lowercase_article_is_prose", "The answer is a tricky one.", 4, None, None),
    ("answer_on_next_line", "The answer is:\n\n**B**", 4, None, "B"),
    ("two_selected_letters_is_not_one", "The answers are A and C.", 4, None, None),
    ("quoted_option_text", "10 meters", 4, ["5 meters", "10 meters", "100 meters", "1 meter"], "B"),
    ("quoted_option_text_in_sentence", "It falls 10 meters.", 4, ["5 meters", "10 meters", "100 meters"], "B"),
    ("two_option_texts_are_ambiguous", "Yes and no", 2, YES_NO, None),
    ("letter_beats_option_text", "B: Yes", 2, YES_NO, "B"),
    ("unmatched_text_returns_no_raw_text", "Maybe later", 2, YES_NO, None),
    ("bold_letter_in_prose", "After weighing everything, my pick is **D** here.", 4, None, "D"),
    ("go_with", "I'd go with B.", 4, None, "B"),
    ("many_choices", "The answer is J", 10, None, "J"),
]

# (id, reply, n_choices, option_texts, expected letters)
MULTI = [
    ("comma_list", "A, C", 4, None, ("A", "C")),
    ("comma_list_no_spaces", "A,C,D", 4, None, ("A", "C", "D")),
    ("lowercase_and_list", "a and c", 4, None, ("A", "C")),
    ("parenthesised_list", "(A), (C)", 4, None, ("A", "C")),
    ("ampersand_list", "A & C", 4, None, ("A", "C")),
    ("bold_list", "**A**, **C**", 4, None, ("A", "C")),
    ("answers_are", "The answers are A and C.", 4, None, ("A", "C")),
    ("trailing_explanation_letters_not_added", "Answer: A, C\nBecause B is wrong", 4, None, ("A", "C")),
    ("single_letter_is_a_one_element_set", "B", 4, None, ("B",)),
    ("bullet_list", "- A\n- C", 4, None, ("A", "C")),
    ("restated_option_lines", "A. text of A\nC. text of C", 4, None, ("A", "C")),
    ("sentence_initial_pronoun_is_not_an_option_in_list", "I think A and C", 4, None, ("A", "C")),
    ("none_is_nothing", "None", 4, None, ()),
    ("dont_know_is_nothing", "I don't know", 4, None, ()),
    ("empty_is_nothing", "", 4, None, ()),
    ("letters_beyond_n_choices_dropped", "A, C, E", 4, None, ("A", "C")),
    # Our own.
    ("unsorted_duplicates_are_sorted_unique", "C, A, C", 4, None, ("A", "C")),
    ("hedge_selects_nothing", "A or B", 4, None, ()),
    ("answers_colon_then_bullets", "Answers:\n- B\n- D\nThese are right because A is off.", 4, None, ("B", "D")),
    ("several_assertions", "A is correct and C is correct, B is wrong.", 4, None, ("A", "C")),
    ("none_reply", None, 4, None, ()),
]


@pytest.mark.parametrize(("text", "n", "options", "expected"), [c[1:] for c in SINGLE], ids=[c[0] for c in SINGLE])
def test_extract_choice(text, n, options, expected):
    assert extract_choice(text, n, options) == expected


@pytest.mark.parametrize(("text", "n", "options", "expected"), [c[1:] for c in MULTI], ids=[c[0] for c in MULTI])
def test_extract_choices(text, n, options, expected):
    assert extract_choices(text, n, options) == expected


@pytest.mark.parametrize(("text", "n", "options", "expected"), [c[1:] for c in SINGLE], ids=[c[0] for c in SINGLE])
def test_single_reading_agrees_with_set_reading(text, n, options, expected):
    letters = extract_choices(text, n, options)
    assert extract_choice(text, n, options) == (letters[0] if len(letters) == 1 else None)


# Regressions of the original EVE kit's extraction.
EVE_REGRESSIONS = [
    ("parenthesised_letter_after_answer_is_recognised", "The answer is (B).", "B"),
    ("lowercase_letter_recognised", "answer: b", "B"),
    ("pronoun_i_not_read_as_option", "I believe it is B", "B"),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in EVE_REGRESSIONS], ids=[c[0] for c in EVE_REGRESSIONS])
def test_eve_kit_regressions(text, expected):
    assert extract_choice(text, 4) == expected


def test_trailing_explanation_letters_not_added_to_multi_answer_set():
    assert extract_choices("Answer: A, C\nBecause B is wrong and D is irrelevant", 4) == ("A", "C")


# Replies that were misread before: (reply, letter set). A set of two is never a single answer.
MISREAD = [
    ("A and C are correct.", ("A", "C")),
    ("Both A and C", ("A", "C")),
    ("C.\n\nOLCI is on Sentinel-3 (not A or B).", ("C",)),
    ("Correct: C", ("C",)),
    ("Option C is the one.", ("C",)),
    ("Clearly C", ("C",)),
    ("Definitely B", ("B",)),
    ("The answer is C, not A", ("C",)),
    ("C (B is a distractor)", ("C",)),
    ("Correct answers: A, C", ("A", "C")),
]


@pytest.mark.parametrize(("text", "letters"), MISREAD, ids=[t for t, _ in MISREAD])
def test_previously_misread_replies(text, letters):
    assert extract_choices(text, 4) == letters
    assert extract_choice(text, 4) == (letters[0] if len(letters) == 1 else None)


@pytest.mark.parametrize(
    "text",
    ["Yes", "The answer is hallucinated", "I don't know", "Paris", "It is E", "answer: z", "42", "None of these"],
)
@pytest.mark.parametrize("options", [None, ["Paris", "London", "Rome"], YES_NO])
def test_only_valid_letters_are_ever_returned(text, options):
    n = len(options) if options else 3
    valid = "ABC"[:n]
    choice = extract_choice(text, n, options)
    assert choice is None or choice in valid
    assert all(x in valid for x in extract_choices(text, n, options))


def test_zero_choices_reads_nothing():
    assert extract_choice("A", 0) is None
    assert extract_choices("A", 0) == ()
