"""The QA page (/qa, /qa/script) and the scenarios' answers behind its expected script, without a browser.

The expected script itself is computed in the browser (static/qa/expected.js):
tests/e2e/test_qa_expected_script.py checks it and its page in Chromium and
Firefox, and tests/e2e/test_qa_page.py drives the page and checks the script
against what the browser really announced.
"""

from __future__ import annotations

import json
import re
from html import unescape
from html.parser import HTMLParser

import pytest

from widget_server import create_app
from widget_server.backends.demo import SCENARIOS
from widget_server.errors import ErrorCode
from widget_server.expected import scenario_answer
from widget_server.i18n import ui_strings
from widget_server.settings import ConfigError

from .announcements import sentences_heard
from .conftest import TEST_CONFIG
from .helpers import REPO_ROOT

QA_STRINGS = {
    lang: json.loads((REPO_ROOT / "static" / "qa" / "i18n" / f"{lang}.json").read_text(encoding="utf-8"))
    for lang in ("en", "es")
}
WIDGET = {lang: ui_strings()[lang] for lang in ("en", "es")}


def qa_client(**config):
    return create_app({**TEST_CONFIG, **config}, environ={}).test_client()


def get(client, path):
    response = client.get(path)
    body = response.get_data(as_text=True)
    response.close()
    return response, body


# -- the setting ----------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/qa", "/qa?lang=es", "/qa/script?scenario=improvisation", "/static/qa/qa.js", "/static/qa/i18n/en.json"]
)
def test_qa_is_404_when_off_as_any_unknown_path(path):
    client = qa_client()
    response, _ = get(client, path)
    unknown, _ = get(client, "/no-such-page")
    assert response.status_code == 404
    assert response.mimetype == "application/json"
    assert response.get_json()["error"]["code"] == "not_found"
    assert response.get_json() == unknown.get_json()


def test_qa_is_off_by_default():
    assert create_app(TEST_CONFIG, environ={}).config["WIDGET_SERVER"]["QA"] is False


@pytest.mark.parametrize("path", ["/qa", "/qa?lang=en", "/qa?lang=es", "/static/qa/qa.js", "/static/qa/qa.css"])
def test_qa_pages_are_served_when_on(path):
    response, _ = get(qa_client(QA=True, FAULTS=True), path)
    assert response.status_code == 200


def test_production_refuses_qa():
    with pytest.raises(ConfigError, match=r"^QA"):
        create_app({"ENV": "production", "QA": True}, environ={})
    with pytest.raises(ConfigError, match="QA"):
        create_app({}, environ={"WIDGET_SERVER_ENV": "production", "WIDGET_SERVER_QA": "1"})
    with pytest.raises(ConfigError):  # together with FAULTS, still refused
        create_app({"ENV": "production", "QA": True, "FAULTS": True}, environ={})
    # What production needs besides (tests/security/test_production_defaults.py).
    production = {"ENV": "production", "ALLOW_DEMO_IN_PRODUCTION": True, "PUBLIC_URL": "https://chat.example.com"}
    assert create_app(production, environ={}).config["WIDGET_SERVER"]["QA"] is False


def test_qa_does_not_turn_faults_on():
    app = create_app({**TEST_CONFIG, "QA": True}, environ={})
    assert app.config["WIDGET_SERVER"]["FAULTS"] is False


# -- the page -----------------------------------------------------------------------


class _Scripts(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[dict] = []
        self.styles = 0
        self.style_attributes = 0
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        if tag == "script":
            self.scripts.append(attributes)
        if tag == "style":
            self.styles += 1
        if "style" in attributes or any(name.startswith("on") for name in attributes):
            self.style_attributes += 1


def parse(body: str) -> _Scripts:
    parser = _Scripts()
    parser.feed(body)
    return parser


@pytest.mark.parametrize("path", ["/qa", "/qa/script?scenario=improvisation"])
def test_csp_is_as_strict_as_the_panels_and_nothing_is_inline(path):
    client = qa_client(QA=True, FAULTS=True)
    response, body = get(client, path)
    csp = response.headers["Content-Security-Policy"]
    panel, _ = get(client, "/panel")
    for directive in (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    ):
        assert directive in csp
    assert "unsafe" not in csp
    # The panel's own policy, plus the panel itself in a frame.
    assert set(csp.split("; ")) - set(panel.headers["Content-Security-Policy"].split("; ")) <= {
        "frame-ancestors 'none'",
        "frame-src 'self'",
    }
    page = parse(body)
    assert page.styles == 0 and page.style_attributes == 0
    for script in page.scripts:
        assert script.get("src") or script.get("type") == "application/json", script


def test_the_page_embeds_the_widget_with_the_loader_tag():
    _, body = get(qa_client(QA=True, FAULTS=True), "/qa")
    loaders = [s for s in parse(body).scripts if (s.get("src") or "").endswith("/widget.js")]
    assert len(loaders) == 1
    assert loaders[0]["data-target"] == "#qa-widget"
    assert loaders[0]["data-lang"] == "en"
    assert 'id="qa-widget"' in body


def test_the_page_offers_every_scenario_and_the_seed_questions(seed_answers):
    _, body = get(qa_client(QA=True, FAULTS=True), "/qa")
    options = [attrs["value"] for tag, attrs in parse(body).tags if tag == "option" and "value" in attrs]
    for name in SCENARIOS:
        assert name in options
    assert {"question-improvisation", "question-voicings"} <= set(options)
    config = json.loads(
        re.search(r'<script type="application/json" id="qa-config">(.*?)</script>', body, re.S).group(1)
    )
    commands = {item["id"]: item["command"] for item in config["items"]}
    assert commands["improvisation"] == "/scenario improvisation"
    assert commands["question-improvisation"] == seed_answers["improvisation"]["question"]
    assert commands["question-voicings"] == seed_answers["voicings"]["question"]


def test_with_faults_off_the_page_says_so_and_disables_the_fault_controls():
    _, body = get(qa_client(QA=True), "/qa")
    assert f'<p class="qa-notice" id="qa-notice-faults">{QA_STRINGS["en"]["faultsOff"]}</p>' in body
    fieldset = next(attrs for tag, attrs in parse(body).tags if tag == "fieldset" and attrs.get("id") == "qa-faults")
    assert "disabled" in fieldset
    _, body = get(qa_client(QA=True, FAULTS=True), "/qa")
    assert 'id="qa-notice-faults"' not in body
    fieldset = next(attrs for tag, attrs in parse(body).tags if tag == "fieldset" and attrs.get("id") == "qa-faults")
    assert "disabled" not in fieldset


def test_the_page_says_when_it_cannot_frame_the_panel():
    _, body = get(qa_client(QA=True, FAULTS=True, EMBED_ORIGINS="https://www.example.com"), "/qa")
    assert 'id="qa-notice-embed"' in body and QA_STRINGS["en"]["embedNotAllowed"] in unescape(body)
    _, body = get(qa_client(QA=True, FAULTS=True), "/qa")
    assert 'id="qa-notice-embed"' not in body


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_page_is_in_its_language(lang):
    _, body = get(qa_client(QA=True, FAULTS=True), f"/qa?lang={lang}")
    assert f'<html lang="{lang}">' in body
    assert QA_STRINGS[lang]["heading"] in body
    assert QA_STRINGS[lang]["play"] in body


def _keys(value, prefix=""):
    if isinstance(value, dict):
        out = set()
        for key, inner in value.items():
            if key == "scenarioDescriptions":
                out.add(prefix + key)  # optional per language: the registry's text is the fallback
                continue
            out |= {prefix + key} | _keys(inner, f"{prefix}{key}.")
        return out
    return set()


def test_english_and_spanish_qa_strings_have_the_same_keys():
    assert _keys(QA_STRINGS["en"]) == _keys(QA_STRINGS["es"])
    assert set(QA_STRINGS["es"]["scenarioDescriptions"]) <= set(SCENARIOS)


def test_every_string_the_qa_code_uses_exists():
    """Strings are data: the page's scripts and templates only name keys of static/qa/i18n/*.json."""
    scripts = sorted((REPO_ROOT / "static" / "qa").glob("*.js"))
    assert {"qa.js", "script.js"} <= {path.name for path in scripts}
    used = {key for path in scripts for key in re.findall(r"\bt\.(\w+)", path.read_text(encoding="utf-8"))}
    for template in ("qa.html", "qa_script.html"):
        used |= set(re.findall(r"\bq\.(\w+)", (REPO_ROOT / "templates" / template).read_text(encoding="utf-8")))
    assert used
    for lang in ("en", "es"):
        assert used <= set(QA_STRINGS[lang]), sorted(used - set(QA_STRINGS[lang]))
    # A key named like a dict method would be that method in a Jinja template (`q.clear`).
    assert not used & set(dir(dict))


# -- embed options the page uses (pass-through to the panel) ---------------------------


def panel_config(client, query: str) -> tuple[dict, str]:
    _, body = get(client, "/panel?" + query)
    config = json.loads(
        re.search(r'<script type="application/json" id="chat-config">(.*?)</script>', body, re.S).group(1)
    )
    return config, body


def test_reduced_motion_and_announcement_pacing_reach_the_panel():
    client = qa_client()
    config, body = panel_config(client, "lang=en")
    assert config["announceIntervalMs"] == 1000 and config["reducedMotion"] is False
    assert 'class="reduce-motion"' not in body
    config, body = panel_config(client, "lang=en&reducedMotion=true&announceInterval=250")
    assert config["announceIntervalMs"] == 250 and config["reducedMotion"] is True
    assert '<html lang="en" dir="ltr" class="reduce-motion">' in body
    assert panel_config(client, "announceInterval=5")[0]["announceIntervalMs"] == 100
    assert panel_config(client, "announceInterval=999999")[0]["announceIntervalMs"] == 10000
    assert panel_config(client, "announceInterval=soon")[0]["announceIntervalMs"] == 1000
    assert panel_config(client, "reducedMotion=no")[0]["reducedMotion"] is False


_MOTION_OPT_IN = "@media (prefers-reduced-motion: no-preference) {"
_MOTION = re.compile(r"\b(?:animation|transition)(?:-[a-z-]+)?\s*:|scroll-behavior\s*:\s*smooth")


def motion_opt_in(css: str) -> tuple[list[str], str]:
    """The rules inside `@media (prefers-reduced-motion: no-preference)` blocks, and the rest of the CSS."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    rules, rest, position = [], [], 0
    while (start := css.find(_MOTION_OPT_IN, position)) >= 0:
        rest.append(css[position:start])
        depth, end = 1, start + len(_MOTION_OPT_IN)
        while depth:
            depth += {"{": 1, "}": -1}.get(css[end], 0)
            end += 1
        rules += [rule.strip() for rule in css[start + len(_MOTION_OPT_IN) : end - 1].split("}") if rule.strip()]
        position = end
    rest.append(css[position:])
    return rules, "".join(rest)


@pytest.mark.parametrize("path", ["widget/panel.css", "qa/qa.css"])
def test_motion_is_opt_in_and_the_class_turns_it_off_like_the_media_query(path):
    """docs/accessibility.md, A14: every animation and transition is inside a
    `prefers-reduced-motion: no-preference` block, and every rule there is off under the
    embed's `reduce-motion` class (data-reduced-motion) too."""
    rules, rest = motion_opt_in((REPO_ROOT / "static" / path).read_text(encoding="utf-8"))
    assert not _MOTION.search(rest), _MOTION.search(rest)
    for rule in rules:
        selectors = rule.split("{", 1)[0].split(",")
        assert all(selector.strip().startswith(":root:not(.reduce-motion) ") for selector in selectors), rule
    if path == "widget/panel.css":  # the streaming cursor blinks, so the panel has motion to turn off
        assert any(_MOTION.search(rule) for rule in rules)


# -- the scenarios' answers (the script itself: tests/e2e/test_qa_expected_script.py) ----


def test_seed_scenarios_play_the_seed_answers(seed_answers):
    for name in ("improvisation", "voicings"):
        answer = scenario_answer(name)
        assert answer.text == seed_answers[name]["answer"]
        assert answer.error_code is None and not answer.fails_late and not answer.sentences_may_be_dropped


@pytest.mark.parametrize("name", [n for n in SCENARIOS if n.startswith("fail-")])
def test_failing_scenarios_fail_quickly_with_their_code(name):
    answer = scenario_answer(name)
    assert answer.error_code == name.removeprefix("fail-")
    assert answer.error_code in {code.value for code in ErrorCode}
    assert not answer.fails_late
    assert answer.sentences_may_be_dropped  # the error drops what was not said yet


def test_hang_fails_at_the_time_limit_after_its_sentence():
    answer = scenario_answer("hang")
    assert answer.text == "This answer starts, then hangs until the time limit stops it. "
    assert answer.error_code == "timeout" and answer.fails_late
    assert not answer.sentences_may_be_dropped


def test_every_other_scenario_completes_with_text():
    for name in SCENARIOS:
        answer = scenario_answer(name)
        assert answer.text.strip(), name
        if not name.startswith("fail-") and name != "hang":
            assert answer.error_code is None, name


def test_sentences_heard_recovers_batches_and_shows_repeats():
    expected = ["One.", "Two.", "Three.", "Four."]
    assert sentences_heard(["One. Two.", "Three.", "Four."], expected) == expected
    assert sentences_heard(["One. Two. Three. Four."], expected) == expected
    assert sentences_heard(["One. Two.", "Two.", "Three. Four."], expected) != expected  # said twice
    assert sentences_heard(["One.", "Three. Four."], expected) != expected  # one missing
    assert sentences_heard(["One. Tw", "o. Three. Four."], expected) != expected  # cut mid-sentence


# -- the script page (what it shows: tests/e2e/test_qa_expected_script.py) -----------------


def script_config(body: str) -> dict:
    return json.loads(
        re.search(r'<script type="application/json" id="qa-script-config">(.*?)</script>', body, re.S).group(1)
    )


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_script_page_gives_the_browser_the_answer_and_how_it_ends(lang, seed_answers):
    client = qa_client(QA=True, FAULTS=True)
    _, body = get(client, f"/qa/script?scenario=question-improvisation&lang={lang}")
    assert f'<html lang="{lang}">' in body
    config = script_config(body)
    assert config["lang"] == lang
    assert config["answer"] == seed_answers["improvisation"]["answer"]
    assert config["errorCode"] is None and config["sentencesMayBeDropped"] is False and config["failsLate"] is False
    assert config["widgetStrings"] == WIDGET[lang] and config["strings"] == QA_STRINGS[lang]
    _, body = get(client, f"/qa/script?scenario=fail-safety&lang={lang}")
    config = script_config(body)
    assert config["errorCode"] == "safety" and config["sentencesMayBeDropped"] is True
    assert WIDGET[lang]["reconnecting"] in unescape(body)  # the note on the drop fault, rendered by the server
    # The page computes what is heard with the panel's modules: nothing of the answer is rendered here.
    assert 'src="/static/qa/script.js"' in body and 'id="qa-steps"' in body


def test_the_script_page_for_every_item_and_an_unknown_one():
    client = qa_client(QA=True, FAULTS=True)
    _, body = get(client, "/qa")
    ids = [
        attrs["value"]
        for tag, attrs in parse(body).tags
        if tag == "option" and "value" in attrs and attrs["value"] not in ui_strings()  # not a language
    ]
    for item in ids:
        for lang in ("en", "es"):
            response, _ = get(client, f"/qa/script?scenario={item}&lang={lang}")
            assert response.status_code == 200, (item, lang)
    response, _ = get(client, "/qa/script?scenario=no-such-thing")
    assert response.status_code == 404 and response.get_json()["error"]["code"] == "not_found"
