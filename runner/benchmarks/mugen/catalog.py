"""MUGEN's 35 tasks and 7 dimensions, as the benchmark's data card lists them (names are the hub names).

Dimension names are the full names the CONTRACT keys `summary.dimensions` by. The task order is the
data card's; conf/benchmark/mugen.yaml lists its task specs in the same order (a test checks it).
"""

from __future__ import annotations

import difflib

DIMENSIONS: dict[str, tuple[str, ...]] = {
    "Semantics & Pragmatics": (
        "Keyword_Spotting", "Intent_Classification", "Language_Identification"),
    "Speaker & Demographics": (
        "Speaker_Verification", "Gender_Classification", "Accent_Identification", "Dysarthria_Detection"),
    "Affective & Paralinguistic State": (
        "Emotion_Recognition", "Emotion_Intensity_Comparison", "Pitch_Level_Distinction",
        "Vocal_Effort_Recognition", "Vocal_Fry_Detection", "Disfluency_Detection", "Prosodic_Stress_Matching",
        "Prosody_Semantic_Mismatch"),
    "Temporal Awareness": (
        "Duration_Extremes_Extraction", "Duration_Ordinal_Selection", "Duration_Precise_Selection",
        "Speaking_Rate_Extremes", "Ordinal_Speaking_Rate"),
    "Acoustic Scene & Event Analysis": (
        "Noise_Environment_Classification", "Interruption_Detection", "Speech_Concurrent_Event_Detection",
        "Cocktail_Party_Extraction", "Signal_to_Noise_Comparison"),
    "Music Analysis": (
        "Music_Tagging", "Genre_Classification", "Key_Detection", "Instrument_Classification",
        "Vocal_Technique_Detection"),
    "Compositional Acoustic Reasoning": (
        "Gender_Emotion_Filtering", "Accent_Tempo_Filtering", "Specific_Speaker_State",
        "Negative_Constraint_Filtering", "Max_Attribute_Selection"),
}

ABBREVIATIONS = {"Semantics & Pragmatics": "S&P", "Speaker & Demographics": "S&D",
                 "Affective & Paralinguistic State": "A&P", "Temporal Awareness": "TA",
                 "Acoustic Scene & Event Analysis": "AS&E", "Music Analysis": "MA",
                 "Compositional Acoustic Reasoning": "CA"}
"""The leaderboard's column names."""

TASKS: tuple[str, ...] = tuple(t for tasks in DIMENSIONS.values() for t in tasks)

DIMENSION_OF: dict[str, str] = {t: dim for dim, tasks in DIMENSIONS.items() for t in tasks}

REFERENCE_TASKS = frozenset({
    "Accent_Identification", "Emotion_Recognition", "Gender_Classification", "Intent_Classification",
    "Language_Identification", "Noise_Environment_Classification", "Speaker_Verification",
    "Specific_Speaker_State", "Speech_Concurrent_Event_Detection", "Vocal_Effort_Recognition"})
"""Tasks whose rows carry a `reference_audio` column (the loader uses the column wherever it is present)."""

PAPER_NAMES = {"Target_Speaker_Extraction": "Cocktail_Party_Extraction",
               "SNR_Assessment": "Signal_to_Noise_Comparison",
               "Spatiotemporal_Attribute_Selection": "Max_Attribute_Selection"}
"""Display names the paper uses for three tasks, mapped to their hub names (only used for hints)."""

HUB_ORG = "MUGEN-Benchmark"
CANDIDATE_COLUMNS = ("audio1", "audio2", "audio3", "audio4", "audio5")
REFERENCE_COLUMN = "reference_audio"


def hub_dataset(task: str) -> str:
    """The hub dataset of a task, e.g. `MUGEN-Benchmark/Keyword_Spotting`."""
    return f"{HUB_ORG}/{task}"


def name_hint(name: str) -> str:
    """' (did you mean X?)' for a folder or task name that is close to a MUGEN task name, else ''."""
    key = name.replace(" ", "_").replace("-", "_")
    folded = {t.lower(): t for t in TASKS}
    guess = PAPER_NAMES.get(key) or folded.get(key.lower())
    if guess is None:
        close = difflib.get_close_matches(key, TASKS, n=1, cutoff=0.7)
        guess = close[0] if close else None
    return f" (did you mean {guess}?)" if guess else ""
