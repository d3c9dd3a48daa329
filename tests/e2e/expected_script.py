"""The expected script, computed where the QA page computes it: in the browser.

static/qa/expected.js turns an answer's markdown into what a screen reader
should hear, with the panel's own renderer and announcer. These helpers call
it on any page of a chat server with `QA` on (its modules are served from
that origin), passing the panel's UI strings; the answers of the demo's
scenarios come from widget_server.expected, which plays them in Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from widget_server.expected import scenario_answer
from widget_server.i18n import ui_strings

if TYPE_CHECKING:
    from playwright.sync_api import Page

# `name` is an export of the module at `path`, on the page's own origin.
_CALL_JS = """async ([path, name, args]) => {
  const module = await import(new URL(path, location.origin).href);
  return module[name](...args);
}"""

EXPECTED_MODULE = "/static/qa/expected.js"


class ExpectedScripts:
    """static/qa/expected.js, called from Python on `page`."""

    def __init__(self, page: Page) -> None:
        self.page = page

    def _call(self, name: str, *args: Any) -> Any:
        return self.page.evaluate(_CALL_JS, [EXPECTED_MODULE, name, list(args)])

    def script(
        self,
        answer: str,
        lang: str,
        *,
        error_code: str | None = None,
        sentences_may_be_dropped: bool | None = None,
        progress: tuple[str, ...] = (),
        sources: int = 0,
    ) -> dict[str, Any]:
        """expectedScript(): {lang, generating, progress, sentences, completion, sources, error,
        errorCode, sentencesMayBeDropped, outcome}."""
        options: dict[str, Any] = {
            "lang": lang,
            "strings": ui_strings()[lang],
            "errorCode": error_code,
            "progress": list(progress),
            "sources": sources,
        }
        if sentences_may_be_dropped is not None:
            options["sentencesMayBeDropped"] = sentences_may_be_dropped
        return self._call("expectedScript", answer, options)

    def scenario_script(self, name: str, lang: str) -> dict[str, Any]:
        """The script of a demo scenario, as /qa/script computes it."""
        answer = scenario_answer(name)
        return self.script(
            answer.text,
            lang,
            error_code=answer.error_code,
            sentences_may_be_dropped=answer.sentences_may_be_dropped,
            progress=answer.progress,
            sources=answer.sources,
        )

    def plain_blocks(self, markdown: str, lang: str) -> list[tuple[str, str]]:
        blocks = self._call("plainBlocks", markdown, ui_strings()[lang], lang)
        return [(block["kind"], block["plain"]) for block in blocks]

    def sentences_of(self, markdown: str, lang: str) -> list[str]:
        return self._call("sentencesOf", markdown, ui_strings()[lang], lang)

    def sentences_of_plain_text(self, text: str, lang: str) -> list[str]:
        return self._call("sentencesOfPlainText", text, lang)


# The script page's steps as a tester sees them (static/qa/script.js renders
# the ones heard): [{step, politeness, text} | {step, politeness, heading,
# optional, sentences}], in order.
SCRIPT_PAGE_STEPS_JS = """() => Array.from(document.querySelectorAll('#qa-steps > li'), (item) => {
  const step = { step: item.dataset.step, politeness: item.dataset.politeness ?? null };
  if (item.dataset.step !== 'sentences') return { ...step, text: item.querySelector('label').textContent };
  return {
    ...step,
    heading: item.querySelector('p').textContent,
    optional: item.dataset.optional === 'true',
    sentences: Array.from(item.querySelectorAll('[data-sentence]'), (label) => label.textContent),
  };
})"""


def script_page_steps(page: Page) -> list[dict[str, Any]]:
    """The steps of the /qa/script page open in `page`, once its script has rendered them."""
    page.wait_for_selector("#qa-steps[data-ready=true]", state="attached")
    return page.evaluate(SCRIPT_PAGE_STEPS_JS)
