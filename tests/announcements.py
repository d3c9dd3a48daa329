"""Comparing what a browser announced with the expected script's sentences.

The expected script is computed in the browser (static/qa/expected.js); the
tests read back what the polite region really said and compare here.
"""

from __future__ import annotations


def sentences_heard(announcements: list[str], expected: list[str]) -> list[str]:
    """What was announced (batches of sentences joined by spaces), cut back into sentences.

    The expected sentences guide the cut: a batch that is consecutive expected
    sentences in order yields them; anything else is kept whole, so comparing
    the result with `expected` shows what was missing, extra or repeated.
    """
    heard: list[str] = []
    position = 0
    for batch in announcements:
        rest, taken = batch, []
        next_expected = position
        while rest and next_expected < len(expected):
            sentence = expected[next_expected]
            if rest == sentence:
                rest = ""
            elif rest.startswith(sentence + " "):
                rest = rest[len(sentence) + 1 :]
            else:
                break
            taken.append(sentence)
            next_expected += 1
        if rest:
            heard.append(batch)  # does not fit where the answer was: keep it whole
        else:
            heard.extend(taken)
            position = next_expected
    return heard
