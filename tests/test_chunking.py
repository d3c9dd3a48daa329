"""The zero-width sentence split (docs/design.md, "Sentence chunks split at a position") and the demo's word split."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from widget_server.backends.demo import split_words
from widget_server.chunking import iter_sentences, split_sentences

_CHAR = st.characters(exclude_categories=("Cs",))
_PIECES = st.sampled_from(
    [".", "!", "?", "...", " ", "\n", "\n\n", "\t", "\r\n", "\u00a0", "\u2003", "a", "B", "- ", "é", "**"]
)
TEXT = st.one_of(st.text(_CHAR), st.lists(st.one_of(_PIECES, st.text(_CHAR, max_size=3)), max_size=30).map("".join))


def test_seed_improvisation_split_matches_fixture(seed_answers):
    seed = seed_answers["improvisation"]
    chunks = split_sentences(seed["answer"])
    assert chunks == seed["chunks_zero_width_split"]
    assert "".join(chunks) == seed["answer"]
    assert len(seed["answer"]) == seed["chars"]
    assert seed["answer"].count("\n") == seed["line_breaks"]
    # The bug the fixture guards against: list items merging into one
    # bullet because the split dropped the newline after the sentence end.
    assert all(chunk.endswith("\n") for chunk in chunks)


def test_seed_voicings_split_keeps_every_character(seed_answers):
    answer = seed_answers["voicings"]["answer"]
    chunks = split_sentences(answer)
    assert "".join(chunks) == answer
    assert len(answer) == seed_answers["voicings"]["chars"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("One.", ["One."]),
        ("One. Two.", ["One. ", "Two."]),
        ("One.  Two!\nThree? Four", ["One.  ", "Two!\n", "Three? ", "Four"]),
        ("Trailing space. ", ["Trailing space. "]),
        ("End.\n\n", ["End.\n\n"]),
        ("a.b c", ["a.b c"]),  # no whitespace after the dot: no boundary
        ("Wait... what?! Yes.", ["Wait... ", "what?! ", "Yes."]),
        ("- a.\n- b.\n", ["- a.\n", "- b.\n"]),
        ("Hi.\r\nThere", ["Hi.\r\n", "There"]),
        ("Hi.\u00a0There", ["Hi.\u00a0", "There"]),
        ("   ", ["   "]),
        (". x", [". ", "x"]),
    ],
)
def test_split_sentences_examples(text, expected):
    assert split_sentences(text) == expected
    assert list(iter_sentences(text)) == expected


@settings(max_examples=500, deadline=None)
@given(text=TEXT)
@example(text="")
@example(text=". . .")
@example(text="a. \n b")
def test_split_sentences_is_a_zero_width_partition(text):
    chunks = split_sentences(text)
    assert "".join(chunks) == text
    assert all(chunks), "no chunk may be empty"
    position = 0
    for chunk in chunks[:-1]:
        position += len(chunk)
        before, after = text[:position], text[position:]
        # Each boundary sits right after `[.!?]\s+` and before a non-space.
        assert re.search(r"[.!?]\s+\Z", before), (before, after)
        assert re.match(r"\S", after), (before, after)
    # And every such position is a boundary (nothing mergeable is left).
    expected_cuts = {m.end() for m in re.finditer(r"[.!?]\s+(?=\S)", text)}
    cuts, total = set(), 0
    for chunk in chunks[:-1]:
        total += len(chunk)
        cuts.add(total)
    assert cuts == expected_cuts


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("word", ["word"]),
        ("two words", ["two ", "words"]),
        ("  lead", ["  ", "lead"]),
        ("a\n\nb ", ["a\n\n", "b "]),
    ],
)
def test_split_words_examples(text, expected):
    assert split_words(text) == expected


@settings(max_examples=300, deadline=None)
@given(text=TEXT)
def test_split_words_joined_equals_input(text):
    chunks = split_words(text)
    assert "".join(chunks) == text
    assert all(chunks)
    for chunk in chunks[:-1]:
        assert re.search(r"\s\Z", chunk)
