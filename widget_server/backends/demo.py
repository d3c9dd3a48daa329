"""The demo backend: the embedded default, and the scenarios QA and tests play.

It truly streams: each chunk is yielded after a pause (`DEMO_DELAY_SECONDS`),
so the first words leave before the last are produced. Whole texts are cut
with the zero-width sentence split (widget_server.chunking) or, for the
token-like scenarios, at word starts; joined chunks always equal the text.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from ..chunking import split_sentences
from ..errors import ChatError, ErrorCode
from ..settings import Settings, setting
from ..settings.parsing import parse_float
from .base import ActionProposal, CancelToken, Progress, Source, Turn

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


def load_seed_answers() -> dict[str, dict[str, Any]]:
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

# -- bulk: a ~200 KB answer in ~5,000 deltas (bench/widget.py streams it) ------

BULK_TARGET_CHARS = 200_000
BULK_CHUNK_CHARS = 40
BULK_SEED = 5000

_BULK_WORDS = [
    "scale",
    "chord",
    "arpeggio",
    "voicing",
    "tempo",
    "metronome",
    "bar",
    "beat",
    "groove",
    "phrase",
    "motif",
    "interval",
    "third",
    "fifth",
    "seventh",
    "ninth",
    "root",
    "inversion",
    "string",
    "fret",
    "pick",
    "legato",
    "staccato",
    "accent",
    "rest",
    "rhythm",
    "swing",
    "triplet",
    "mode",
    "dorian",
    "mixolydian",
    "minor",
    "major",
    "tension",
    "release",
    "cadence",
    "resolution",
    "melody",
    "harmony",
    "bass",
    "practice",
    "routine",
    "slowly",
    "accurately",
    "listen",
    "record",
    "repeat",
    "relax",
    "breathe",
    "posture",
    "thumb",
    "wrist",
    "hand",
    "finger",
    "position",
    "shift",
    "slide",
    "bend",
    "vibrato",
    "dynamics",
    "volume",
    "tone",
    "attack",
    "sustain",
    "decay",
    "progression",
    "key",
    "signature",
    "sharp",
    "flat",
    "natural",
    "note",
    "octave",
    "unison",
    "pattern",
    "sequence",
    "exercise",
]
_BULK_HEADS = ("Warm-up", "Technique", "Theory", "Repertoire", "Ear training", "Improvisation", "Rhythm", "Review")


def _bulk_sentence(rng: random.Random) -> str:
    words = [rng.choice(_BULK_WORDS) for _ in range(rng.randint(6, 16))]
    if rng.random() < 0.3:
        i = rng.randrange(len(words))
        mark = rng.choice(("**", "*", "`"))
        words[i] = f"{mark}{words[i]}{mark}"
    return " ".join(words).capitalize() + rng.choice((".", ".", ".", "!", "?"))


def _bulk_paragraph(rng: random.Random) -> str:
    return " ".join(_bulk_sentence(rng) for _ in range(rng.randint(3, 7))) + "\n\n"


def _bulk_list(rng: random.Random) -> str:
    items = []
    for _ in range(rng.randint(3, 6)):
        items.append(f"- {_bulk_sentence(rng)}\n")
        if rng.random() < 0.25:
            items.append(f"  - {_bulk_sentence(rng)}\n")
    return "".join(items) + "\n"


def _bulk_code(rng: random.Random, n: int) -> str:
    bpm = rng.randint(60, 140)
    lines = [f"def exercise_{n}(bpm: int = {bpm}) -> list[str]:", "    notes = []"]
    for _ in range(rng.randint(6, 14)):
        lines.append(f"    notes.append({rng.choice(_BULK_WORDS)!r})  # {rng.choice(_BULK_WORDS)}")
    lines.append("    return notes")
    return "```python\n" + "\n".join(lines) + "\n```\n\n"


def _bulk_table(rng: random.Random) -> str:
    rows = ["| Day | Focus | Minutes | Tempo (bpm) |", "| --- | :--- | ---: | ---: |"]
    for day in range(1, 31):
        rows.append(f"| {day} | {rng.choice(_BULK_HEADS)} | {rng.randint(10, 45)} | {rng.randint(60, 160)} |")
    return "\n".join(rows) + "\n\n"


@lru_cache(maxsize=1)
def _bulk_math(section: int) -> str:
    """Math in the bulk answer (docs/performance.md, "Math"): inline and display formulas, each
    its own (the section's number in it), and a dollar amount that stays text. Without the
    seed's generator, so the other sections are what they were (the answer ends sooner)."""
    return (
        f"After ${section}$ weeks the tempo is \\(t_{{{section}}} = t_0 \\cdot 1.05^{{{section}}}\\), "
        f"and a lesson still costs $5 a week.\n\n"
        f"$$\\sum_{{k=1}}^{{{section}}} \\frac{{t_k}}{{t_0}} = \\frac{{1.05^{{{section + 1}}} - 1.05}}{{0.05}}$$\n\n"
    )


def bulk_answer() -> str:
    """The `bulk` answer: deterministic (a fixed seed), built on first use, cached."""
    rng = random.Random(BULK_SEED)
    parts = ["# A month of practice, in detail\n\n", _bulk_paragraph(rng)]
    length, section, codes, table = sum(map(len, parts)), 0, 0, False
    while length < BULK_TARGET_CHARS:
        section += 1
        block = [f"## {section}. {_BULK_HEADS[section % len(_BULK_HEADS)]}\n\n", _bulk_paragraph(rng), _bulk_list(rng)]
        block.append(_bulk_paragraph(rng))
        if section % 40 == 10 and codes < 5:
            codes += 1
            block.append(_bulk_code(rng, codes))
        if section % 6 == 3:
            block.append(_bulk_math(section))
        if not table and length > BULK_TARGET_CHARS // 2:
            table = True
            block.append(_bulk_table(rng))
        parts.extend(block)
        length += sum(map(len, block))
    parts.append("That is the whole month. Good luck, and enjoy the music!\n")
    return "".join(parts)


def group_chunks(chunks: list[str], size: int) -> list[str]:
    """Consecutive chunks joined into groups of about `size` characters (the nearest a cut gets)."""
    groups, current = [], ""
    for chunk in chunks:
        if current and len(current) + len(chunk) - size > size - len(current):
            groups.append(current)  # closer to `size` without this chunk than with it
            current = ""
        current += chunk
    if current:
        groups.append(current)
    return groups


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
- *which arpeggio fits Am F C G* and *Show me Cmaj7 voicings* — the two seed answers' questions (docs/design.md, "The seed answers").

Scenarios:

"""

_FAILURE_LEADS = {
    ErrorCode.NETWORK: "The upstream connection drops after this sentence.",
    ErrorCode.TIMEOUT: "The upstream service stops answering in time after this sentence.",
    ErrorCode.PROVIDER: "The model provider fails after this sentence.",
    ErrorCode.SAFETY: "A safety filter blocks the rest after this sentence.",
    ErrorCode.VALIDATION: "The request is rejected as invalid after this sentence.",
    ErrorCode.INTERNAL: "The backend crashes after this sentence.",
    # Simulated (a real one comes from a worker's expired lease): lets QA
    # testers hear what a visitor hears when the server writing dies.
    ErrorCode.WORKER_LOST: "The server writing this answer stops after this sentence.",
    ErrorCode.ANSWER_TOO_LONG: "The answer passes the server's size limit after this sentence.",
}


# What a scenario yields: text, sources and progress lines (SCENARIOS, whose answers the QA
# page's expected scripts compute), or those and action proposals too (ACTION_SCENARIOS).
AnswerPiece = str | Source | Progress


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    play: Callable[[DemoBackend, CancelToken], Iterator[AnswerPiece | ActionProposal]]


def _failure_scenario(code: ErrorCode) -> Scenario:
    def play(backend: DemoBackend, cancel: CancelToken) -> Iterator[str]:
        yield from backend.paced(split_sentences(f"This answer is about to fail. {_FAILURE_LEADS[code]} "), cancel)
        if cancel.cancelled:
            return
        if code is ErrorCode.INTERNAL:
            raise RuntimeError("demo scenario: a backend bug")  # shows the generic internal path
        raise ChatError(code, f"demo scenario fail-{code.value}")

    return Scenario(f"fail-{code.value}", f"streams a little, then fails with `{code.value}`", play)


def _hang(backend: DemoBackend, cancel: CancelToken) -> Iterator[str]:
    yield "This answer starts, then hangs until the time limit stops it. "
    cancel.wait(1e9)  # woken only by cancel or the time limit


# `/scenario sources`: an answer citing two documents by inline markers (docs/backends.md,
# "Sources"). example.com is reserved for examples (RFC 2606): the links lead nowhere real.
SOURCES_ANSWER = (
    "Practise a new passage with a metronome, slowly enough that every note is clean [1]. "
    "Raise the tempo by about 5 BPM only after three clean runs in a row [2].\n"
)
DEMO_SOURCES = (
    Source(
        "1",
        "Practising with a metronome",
        "https://example.com/help/metronome",
        "Start at a tempo where you make no mistakes, even if it feels very slow.",
    ),
    Source(
        "2",
        "Building speed safely",
        "https://example.com/help/speed",
        "Add about 5 BPM once you can play the passage cleanly three times in a row.",
    ),
)
# `/scenario progress`: two status lines before the first word, more than the panel's 2 s
# between spoken progress lines apart (docs/accessibility.md), so each is said once.
PROGRESS_LINES = ("Searching the help centre…", "Reading 3 documents…")
PROGRESS_PAUSE_SECONDS = 2.2
PROGRESS_ANSWER = "The help centre has three articles on tuning. The first one shows how to use a clip-on tuner.\n"


SOURCES_PROGRESS = "Reading 2 articles…"


def _sources(backend: DemoBackend, cancel: CancelToken) -> Iterator[AnswerPiece]:
    yield Progress(SOURCES_PROGRESS)
    yield from backend.paced(split_words(SOURCES_ANSWER), cancel)
    if cancel.cancelled:
        return
    yield from DEMO_SOURCES


def _progress(backend: DemoBackend, cancel: CancelToken) -> Iterator[AnswerPiece]:
    for line in PROGRESS_LINES:
        yield Progress(line)
        if cancel.wait(PROGRESS_PAUSE_SECONDS):
            return
    yield from backend.paced(split_words(PROGRESS_ANSWER), cancel)


# `/scenario math`: each of the four delimiters, dollar amounts that stay text and TeX that does
# not parse, which stays its source (docs/accessibility.md A114). Word by word, so a formula
# arrives across several deltas and is drawn once it closes (tests/e2e/test_math.py).
MATH_ANSWER = (
    "A note $n$ semitones above A4 sounds at \\(f = 440 \\cdot 2^{n/12}\\) hertz.\n\n"
    "$$f_{12} = 2 \\cdot 440 = 880$$\n\n"
    "\\[\\frac{3}{2} \\approx 2^{7/12}\\]\n\n"
    "A tuner costs $5 and a metronome $10.\n\n"
    "This formula does not parse: $\\frac{1}{$.\n"
)


def _math(backend: DemoBackend, cancel: CancelToken) -> Iterator[AnswerPiece]:
    yield from backend.paced(split_words(MATH_ANSWER), cancel)


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
        "bulk",
        "a ~200 KB answer (paragraphs, lists, code, math, a table) in ~5,000 deltas of ~40 characters "
        "(at the default pace it outlasts the default time limit: lower `DEMO_DELAY_SECONDS`)",
        lambda b, c: b.paced(group_chunks(split_words(bulk_answer()), BULK_CHUNK_CHARS), c),
    ),
    Scenario(
        "slow",
        "five sentences, a second or more apart",
        lambda b, c: b.paced(split_sentences(SLOW_ANSWER), c, delay=max(1.0, b.delay * 10)),
    ),
    *(_failure_scenario(code) for code in ErrorCode),
    Scenario("hang", "starts, then hangs until the time limit fails it with `timeout`", _hang),
    Scenario(
        "sources",
        "a progress line, then two sentences citing two sources by `[1]` and `[2]`, listed under the answer",
        _sources,
    ),
    Scenario(
        "progress", "two progress lines, about 2 s apart, before the answer's first word (shown, said once)", _progress
    ),
    Scenario(
        "math",
        "formulas in `$…$`, `$$…$$`, `\\(…\\)` and `\\[…\\]` drawn as MathML, dollar amounts left as text, "
        "and TeX that does not parse, shown as its source",
        _math,
    ),
)


# -- actions: scenarios that propose an action (widget_server.actions) -------
# Kept out of SCENARIOS on purpose: they yield an ActionProposal besides
# text, and SCENARIOS is played by tools that expect text only (the QA
# page's expected scripts). `/scenario <name>` plays either kind.

ACTION_SCENARIOS: dict[str, Scenario] = {}

ACTION_ANSWER = "I can ask our team to call you back. Check the details below, then confirm or dismiss the request.\n"
ACTION_ARGUMENTS = {"name": "Ana García", "phone": "+34 600 123 456", "preferred_time": "mornings"}


def _action(backend: DemoBackend, cancel: CancelToken) -> Iterator[str | ActionProposal]:
    yield from backend.paced(split_sentences(ACTION_ANSWER), cancel)
    if cancel.cancelled:
        return
    yield ActionProposal("callback_request", dict(ACTION_ARGUMENTS))


def _action_slow(backend: DemoBackend, cancel: CancelToken) -> Iterator[str | ActionProposal]:
    yield "I can ask our team to call you back. Preparing the request… "
    if cancel.wait(2.0):  # "preparing the action": a cancel here must leave no trace
        return
    yield ActionProposal("callback_request", dict(ACTION_ARGUMENTS))
    if cancel.wait(2.0):  # proposed, not yet complete: a cancel here must never offer it
        return
    yield "Check the details below, then confirm or dismiss the request.\n"


def _action_invalid(backend: DemoBackend, cancel: CancelToken) -> Iterator[str | ActionProposal]:
    yield "I can ask our team to call you back. "
    yield ActionProposal("callback_request", {"name": "Ana García", "phone": "call me maybe"})


for _scenario in (
    Scenario("action", "proposes a call back after its text; confirm or dismiss it once the answer completes", _action),
    Scenario(
        "action-slow",
        "a sentence, 2 s preparing a call-back proposal, the proposal, 2 s more, a last sentence (time to press Stop)",
        _action_slow,
    ),
    Scenario(
        "action-invalid", "proposes a call back with an invalid phone number: fails with `validation`", _action_invalid
    ),
):
    ACTION_SCENARIOS[_scenario.name] = _scenario


# -- a scenario that reads the turn: what files came with it -------------------------
# Kept out of SCENARIOS too: its answer depends on the files sent, so it has no fixed text
# for the QA page's expected scripts to compute.

ATTACHMENTS_SCENARIO = "attachments"
ATTACHMENTS_SCENARIO_DESCRIPTION = (
    "answers with each file sent with the message: its name, type, size and the SHA-256 of the bytes "
    "this backend read (so a test or a tester can prove every byte arrived)"
)


def attachments_answer(turn: Turn) -> str:
    """One line per file of the turn, from the bytes read now (docs/backends.md, "Files with
    a question"): a reader compares the digest with the one of the file they attached."""
    if not turn.attachments:
        return "No files came with this message. Attach one or more files, then send `/scenario attachments`.\n"
    count = len(turn.attachments)
    lines = [f"I received {count} file{'s' if count != 1 else ''}:\n"]
    for attachment in turn.attachments:
        data = attachment.read()
        digest = hashlib.sha256(data).hexdigest()
        fence = "``" if "`" in attachment.name else "`"
        line = f"- {fence}{attachment.name}{fence}: {attachment.type}, {len(data)} bytes, SHA-256 {digest}"
        if attachment.description:
            line += f", described as “{attachment.description}”"
        if digest != attachment.sha256 or len(data) != attachment.size:
            line += " (NOT the bytes uploaded)"
        lines.append(line + ".\n")
    return "\n".join(lines)


# -- a scenario that reads the turn: the host page's context --------------------------------
# Out of SCENARIOS for the same reason: its answer is the page's context (Turn.context).

CONTEXT_SCENARIO = "context"
CONTEXT_SCENARIO_DESCRIPTION = (
    "answers with the host page's context that came with the message (ChatWidget.setContext), one "
    "key and its value, as JSON, a line"
)


def context_answer(turn: Turn) -> str:
    """The turn's context as this backend received it (docs/backends.md, "The host page's
    context"): a test compares it with what the page set."""
    if not turn.context:
        return (
            "No context came with this message. Call `ChatWidget.setContext({...})`, then send `/scenario context`.\n"
        )
    lines = ["The page's context:\n"]
    for key, value in turn.context.items():
        lines.append(f"- {json.dumps(key, ensure_ascii=False)}: {json.dumps(value, ensure_ascii=False)}\n")
    return "".join(lines)


def _normalise_question(text: str) -> str:
    return " ".join(text.lower().replace("?", " ").replace(".", " ").split())


@dataclass(frozen=True)
class DemoSettings:
    """The demo backend's own settings (widget_server/plugins.py, "settings_class")."""

    delay_seconds: float = setting(
        "DEMO_DELAY_SECONDS", parse_float, 0.04, "Pause between the demo backend's chunks (its streaming pace).", 0, 10
    )


class DemoBackend:
    name = "demo"
    settings_class = DemoSettings
    delay: float
    seeds: dict[str, dict[str, Any]]

    def __init__(self, delay: float = 0.04) -> None:
        self.delay = delay
        self.seeds = load_seed_answers()
        self._questions = {
            _normalise_question(self.seeds[key]["question"]): key for key in ("improvisation", "voicings")
        }

    @classmethod
    def from_settings(cls, settings: Settings) -> DemoBackend:
        return cls(delay=settings.plugin(DemoSettings).delay_seconds)

    def paced(self, chunks: list[str], cancel: CancelToken, delay: float | None = None) -> Iterator[str]:
        pause = self.delay if delay is None else delay
        for index, chunk in enumerate(chunks):
            if index and pause and cancel.wait(pause):
                return
            if cancel.cancelled:
                return
            yield chunk

    def help_text(self) -> str:
        described = [(s.name, s.description) for s in SCENARIOS.values()]
        described += [(s.name, s.description) for s in ACTION_SCENARIOS.values()]
        described.append((ATTACHMENTS_SCENARIO, ATTACHMENTS_SCENARIO_DESCRIPTION))
        described.append((CONTEXT_SCENARIO, CONTEXT_SCENARIO_DESCRIPTION))
        lines = [f"- `{name}` — {description}." for name, description in described]
        return HELP_ANSWER_HEAD + "\n".join(lines) + "\n"

    def stream(self, turn: Turn, cancel: CancelToken) -> Iterator[AnswerPiece | ActionProposal]:
        text = turn.text
        command, _, argument = text.strip().partition(" ")
        if text.startswith("/echo") and (len(text) == 5 or text[5] in " \n"):
            echoed = text[6:]
            if not echoed:
                return self.paced(["Nothing to echo: type `/echo` followed by some text.\n"], cancel)
            return self.paced(split_words(echoed), cancel)
        if command == "/help":
            return self.paced(split_sentences(self.help_text()), cancel)
        if command == "/scenario" and argument.strip() == ATTACHMENTS_SCENARIO:
            return self.paced(split_words(attachments_answer(turn)), cancel)
        if command == "/scenario" and argument.strip() == CONTEXT_SCENARIO:
            return self.paced(split_words(context_answer(turn)), cancel)
        if command == "/scenario":
            scenario = SCENARIOS.get(argument.strip()) or ACTION_SCENARIOS.get(argument.strip())
            if scenario is None:
                known = ", ".join(
                    f"`{name}`" for name in (*SCENARIOS, *ACTION_SCENARIOS, ATTACHMENTS_SCENARIO, CONTEXT_SCENARIO)
                )
                return self.paced(
                    [f"There is no scenario called `{argument.strip()}`. Known scenarios: {known}.\n"], cancel
                )
            return scenario.play(self, cancel)
        seed = self._questions.get(_normalise_question(text))
        if seed is not None:
            return SCENARIOS[seed].play(self, cancel)
        return self.paced(split_words(GENERIC_ANSWER), cancel)
