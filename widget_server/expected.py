"""What the QA page's expected script needs from the server: each demo scenario's answer, its
progress lines and sources, and how it ends.

The script itself — the generating cue, the answer's sentences as plain text,
then the completion cue or the error — is computed in the browser by
static/qa/expected.js, with the panel's own renderer (static/widget/markdown.js)
and its announcer's sentence splitter, so the markdown → plain-text rules exist
once (docs/configuration.md, "The QA page"). Here a scenario is only played: its
text, and whether it fails, how, and when.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .answer_parts import Progress, Source
from .backends.base import CancelToken
from .backends.demo import SCENARIOS, DemoBackend
from .errors import ChatError, ErrorCode

# A wait this long only ends by the message time limit (the `hang` scenario).
_FOREVER_SECONDS = 24 * 3600


class _NoWait(CancelToken):
    """A cancel token that never sleeps: plays a scenario at once, noting its longest wait."""

    def __init__(self) -> None:
        super().__init__()
        self.longest_wait = 0.0
        self._lock = threading.Lock()

    def wait(self, timeout: float) -> bool:
        with self._lock:
            self.longest_wait = max(self.longest_wait, timeout)
        return False


@dataclass(frozen=True)
class ScenarioAnswer:
    text: str
    error_code: str | None  # the failure code it ends with (docs/protocol.md), or None when it completes
    fails_late: bool  # fails only at the time limit, so its sentences are said first
    progress: tuple[str, ...] = ()  # its progress lines, in order (each said once)
    sources: int = 0  # how many sources it cites (said once, after the completion cue)

    @property
    def sentences_may_be_dropped(self) -> bool:
        """A quick failure: the panel drops the sentences it had not said when the error arrives."""
        return self.error_code is not None and not self.fails_late


def play_scenario(play: Callable[[DemoBackend, CancelToken], Iterator[object]]) -> ScenarioAnswer:
    """Run a demo scenario's generator without pauses; its text, progress lines and sources, and
    how it ends."""
    token = _NoWait()
    chunks: list[str] = []
    progress: list[str] = []
    sources = 0
    error_code = None
    try:
        for piece in play(DemoBackend(delay=0), token):
            if isinstance(piece, Progress):
                progress.append(piece.text)
            elif isinstance(piece, Source):
                sources += 1
            elif isinstance(piece, str):
                chunks.append(piece)
    except ChatError as error:
        error_code = error.code.value
    except Exception:  # a backend bug: the service reports `internal`
        error_code = ErrorCode.INTERNAL.value
    fails_late = token.longest_wait >= _FOREVER_SECONDS
    if fails_late and error_code is None:
        error_code = ErrorCode.TIMEOUT.value  # the message time limit ends it
    # A failed answer lists no sources (answer_parts.Source).
    return ScenarioAnswer("".join(chunks), error_code, fails_late, tuple(progress), 0 if error_code else sources)


def scenario_answer(name: str) -> ScenarioAnswer:
    return play_scenario(SCENARIOS[name].play)
