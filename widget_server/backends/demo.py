"""The demo backend: the embedded default, and the scenarios QA and tests play.

It truly streams: each chunk is yielded after a pause (`DEMO_DELAY_SECONDS`),
so the first words leave before the last are produced. Whole texts are cut
with the zero-width sentence split (widget_server.chunking) or, for the
token-like scenarios, at word starts; joined chunks always equal the text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources
from typing import Callable, Iterator

from ..chunking import split_sentences
from ..errors import ChatError, ErrorCode
from .base import CancelToken, Turn

_WORD_START = re.compile(r"\s+(?=\S)")


def split_words(text: str) -> list[str]:
    """Chunks that each end after the whitespace following a word (zero-width cut)."""
    chunks, start = [], 0
    for match in _WORD_START.finditer(text):
        chunks.append(text[start : match.end()])
        start = match.end()
    if start < len(text):
        chunks.append(text[start:])
    return chunks


def load_seed_answers() -> dict:
    data = resources.files("widget_server").joinpath("data/seed_answers.json").read_text(encoding="utf-8")
    return json.loads(data)


LONG_MARKDOWN = """# Choosing a practice routine

A good routine is **short**, *regular* and aimed at one thing at a time. This answer walks through a week of practice, with a table to copy and code to automate the metronome.

## Warm-up

1. Chromatic runs, slowly:
   - four notes per string, strict alternate picking;
   - then legato, keeping every note the same volume.
2. Arpeggios over the progression you are learning:
   - root position first;
   - then first and second inversion.
3. Stretch between sets. Stop if anything hurts!

## The week at a glance

| Day | Focus | Minutes | Tempo (bpm) |
| --- | :--- | ---: | ---: |
| Monday | Scales | 20 | 80 |
| Tuesday | Arpeggios | 25 | 72 |
| Wednesday | Repertoire | 30 | — |
| Thursday | Ear training | 15 | — |
| Friday | Improvisation | 30 | 90 |

## A metronome in a few lines

```python
import time

def click(bpm: int, bars: int = 4) -> None:
    for beat in range(bars * 4):
        print("tick" if beat % 4 else "TOCK")
        time.sleep(60 / bpm)
```

Inline code such as `click(90)` plays four bars at 90 bpm.

> Practise slowly enough to play it right; speed follows accuracy.

## Further reading

- [The HTML standard's event-stream section](https://html.spec.whatwg.org/multipage/server-sent-events.html)
- [WAI-ARIA live regions](https://www.w3.org/WAI/ARIA/apg/practices/)
- Write to [the teacher](mailto:teacher@example.com) with questions.

That is the whole plan. Good luck, and enjoy the music!
"""

SLOW_ANSWER = (
    "This answer arrives slowly, one sentence at a time. "
    "It gives you time to listen to each announcement. "
    "It also leaves time to press Stop. "
    "Nothing is lost while you wait. "
    "This is the last sentence.\n"
)

GENERIC_ANSWER = (
    "I'm the demo assistant, so I can't answer that for real. "
    "I can play scenarios that show how answers stream, resume and fail. "
    "Type `/help` to see the commands, or ask *which arpeggio fits Am F C G*.\n"
)

HELP_ANSWER_HEAD = """Here is what the demo understands:

- `/help` — this list.
- `/echo <markdown>` — answers with the text after the command, exactly.
- `/scenario <name>` — plays a scenario (names below).
- *which arpeggio fits Am F C G* and *Show me Cmaj7 voicings* — the seed lesson's two questions.

Scenarios:

"""

_FAILURE_LEADS = {
    ErrorCode.NETWORK: "The upstream connection drops after this sentence.",
    ErrorCode.TIMEOUT: "The upstream service stops answering in time after this sentence.",
    ErrorCode.PROVIDER: "The model provider fails after this sentence.",
    ErrorCode.SAFETY: "A safety filter blocks the rest after this sentence.",
    ErrorCode.VALIDATION: "The request is rejected as invalid after this sentence.",
    ErrorCode.INTERNAL: "The backend crashes after this sentence.",
}


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    play: Callable[["DemoBackend", CancelToken], Iterator[str]]


def _failure_scenario(code: ErrorCode) -> Scenario:
    def play(backend: "DemoBackend", cancel: CancelToken) -> Iterator[str]:
        yield from backend.paced(split_sentences(f"This answer is about to fail. {_FAILURE_LEADS[code]} "), cancel)
        if cancel.cancelled:
            return
        if code is ErrorCode.INTERNAL:
            raise RuntimeError("demo scenario: a backend bug")  # shows the generic internal path
        raise ChatError(code, f"demo scenario fail-{code.value}")

    return Scenario(f"fail-{code.value}", f"streams a little, then fails with `{code.value}`", play)


def _hang(backend: "DemoBackend", cancel: CancelToken) -> Iterator[str]:
    yield "This answer starts, then hangs until the time limit stops it. "
    cancel.wait(1e9)  # woken only by cancel or the time limit


SCENARIOS: dict[str, Scenario] = {}


def _register(*scenarios: Scenario) -> None:
    for scenario in scenarios:
        SCENARIOS[scenario.name] = scenario


_register(
    Scenario(
        "improvisation",
        "the seed's improvisation answer: a paragraph, a four-item list, a paragraph",
        lambda b, c: b.paced(split_sentences(b.seeds["improvisation"]["answer"]), c),
    ),
    Scenario(
        "voicings",
        "the seed's voicings answer: a list with fenced code blocks",
        lambda b, c: b.paced(split_sentences(b.seeds["voicings"]["answer"]), c),
    ),
    Scenario(
        "markdown",
        "a long answer with headings, nested lists, a table, code, a quote and links",
        lambda b, c: b.paced(split_words(LONG_MARKDOWN), c),
    ),
    Scenario(
        "slow",
        "five sentences, a second or more apart",
        lambda b, c: b.paced(split_sentences(SLOW_ANSWER), c, delay=max(1.0, b.delay * 10)),
    ),
    *(_failure_scenario(code) for code in ErrorCode),
    Scenario("hang", "starts, then hangs until the time limit fails it with `timeout`", _hang),
)


def _normalise_question(text: str) -> str:
    return " ".join(text.lower().replace("?", " ").replace(".", " ").split())


class DemoBackend:
    name = "demo"

    def __init__(self, delay: float = 0.04) -> None:
        self.delay = delay
        self.seeds = load_seed_answers()
        self._questions = {
            _normalise_question(self.seeds[key]["question"]): key for key in ("improvisation", "voicings")
        }

    @classmethod
    def from_settings(cls, settings: dict) -> "DemoBackend":
        return cls(delay=settings["DEMO_DELAY_SECONDS"])

    def paced(self, chunks: list[str], cancel: CancelToken, delay: float | None = None) -> Iterator[str]:
        pause = self.delay if delay is None else delay
        for index, chunk in enumerate(chunks):
            if index and pause and cancel.wait(pause):
                return
            if cancel.cancelled:
                return
            yield chunk

    def help_text(self) -> str:
        lines = [f"- `{s.name}` — {s.description}." for s in SCENARIOS.values()]
        return HELP_ANSWER_HEAD + "\n".join(lines) + "\n"

    def stream(self, turn: Turn, cancel: CancelToken) -> Iterator[str]:
        text = turn.text
        command, _, argument = text.strip().partition(" ")
        if text.startswith("/echo") and (len(text) == 5 or text[5] in " \n"):
            echoed = text[6:]
            if not echoed:
                return self.paced(["Nothing to echo: type `/echo` followed by some text.\n"], cancel)
            return self.paced(split_words(echoed), cancel)
        if command == "/help":
            return self.paced(split_sentences(self.help_text()), cancel)
        if command == "/scenario":
            scenario = SCENARIOS.get(argument.strip())
            if scenario is None:
                known = ", ".join(f"`{name}`" for name in SCENARIOS)
                return self.paced([f"There is no scenario called `{argument.strip()}`. Known scenarios: {known}.\n"], cancel)
            return scenario.play(self, cancel)
        seed = self._questions.get(_normalise_question(text))
        if seed is not None:
            return SCENARIOS[seed].play(self, cancel)
        return self.paced(split_words(GENERIC_ANSWER), cancel)
