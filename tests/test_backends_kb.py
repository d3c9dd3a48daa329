"""The `kb` backend: BM25 by hand, Markdown into passages, and answers through the real server.

The sample knowledge base is the project's own docs/ (what the wheel ships as
widget_server/kb_sample), so the questions below are answered from docs/configuration.md and
docs/protocol.md as they are.
"""

from __future__ import annotations

import math
import os
import time
import tomllib

import pytest

from widget_server import cli, create_app
from widget_server.backends.base import CancelToken, Source, Turn
from widget_server.backends.bm25 import BM25, fold, tokenize
from widget_server.backends.kb import (
    ELISION,
    Block,
    KnowledgeBase,
    KnowledgeBaseBackend,
    detect_language,
    parse_markdown,
    passages_of,
    safe_markdown,
    sample_dir,
    trim_passage,
)
from widget_server.services import SERVICES_KEY
from widget_server.settings import ConfigError, all_settings, load_settings

from .helpers import HTTP, REPO_ROOT, assert_digest, assert_sound_events, http_client, wait_until

PLUGIN_SETTINGS = {setting.name: setting for setting in all_settings()}

UNKNOWN_EN = "I don't know: I found nothing about that in the documentation. To ask a person, {contact}.\n"
UNKNOWN_ES = "No lo sé: no he encontrado nada sobre eso en la documentación. Para preguntar a una persona, {contact}.\n"


# -- BM25, by hand ---------------------------------------------------------------------------
#
# Corpus: D0 = cat dog, D1 = cat, D2 = fish fish bird. N = 3, avgdl = (2 + 1 + 3) / 3 = 2.
# idf(cat)  = ln(1 + (3 − 2 + 0.5) / (2 + 0.5)) = ln 1.6    = 0.470003629…
# idf(fish) = ln(1 + (3 − 1 + 0.5) / (1 + 0.5)) = ln(8 / 3) = 0.980829253…
# fish in D2: f = 2, |D| = 3: norm = 1.2 · (0.25 + 0.75 · 3/2) = 1.65
#             0.980829253 · 2 · 2.2 / (2 + 1.65) = 4.315648713 / 3.65 = 1.182369510
# cat in D1:  f = 1, |D| = 1: norm = 1.2 · (0.25 + 0.75 · 1/2) = 0.75
#             0.470003629 · 2.2 / 1.75 = 0.590861705
# cat in D0:  f = 1, |D| = 2 = avgdl: norm = 1.2, so the score is idf(cat) = 0.470003629

CORPUS = [["cat", "dog"], ["cat"], ["fish", "fish", "bird"]]


def test_bm25_idf_by_hand():
    index = BM25(CORPUS)
    assert (index.n, index.avgdl) == (3, 2.0)
    assert index.idf["cat"] == pytest.approx(0.470003629, abs=1e-9)
    assert index.idf["fish"] == pytest.approx(0.980829253, abs=1e-9)
    assert index.idf["dog"] == index.idf["bird"] == index.idf["fish"]


def test_bm25_scores_by_hand():
    index = BM25(CORPUS)
    assert index.score(["fish"], 2) == pytest.approx(1.182369510, abs=1e-9)
    assert index.score(["cat"], 1) == pytest.approx(0.590861705, abs=1e-9)
    assert index.score(["cat"], 0) == pytest.approx(0.470003629, abs=1e-9)
    assert index.score(["fish"], 0) == 0.0
    # Terms add up; a repeated query term counts once; unknown terms add nothing.
    assert index.score(["cat", "dog"], 0) == pytest.approx(0.470003629 + 0.980829253, abs=1e-9)
    assert index.score(["fish", "fish", "zebra"], 2) == index.score(["fish"], 2)


def test_bm25_ranking_and_ties():
    index = BM25(CORPUS)
    assert index.top(["cat", "fish"], 5) == [
        (2, pytest.approx(1.182369510, abs=1e-9)),
        (1, pytest.approx(0.590861705, abs=1e-9)),
        (0, pytest.approx(0.470003629, abs=1e-9)),
    ]
    assert index.top(["cat", "fish"], 1)[0][0] == 2
    assert index.top(["zebra"], 5) == []
    # Equal scores keep document order.
    assert [doc for doc, _ in BM25([["a1"], ["a1"]]).top(["a1"], 2)] == [0, 1]


def test_bm25_ceiling_by_hand():
    index = BM25(CORPUS)
    # (k1 + 1) · (idf(cat) + idf of a term in no document = ln(1 + 3.5 / 0.5) = ln 8)
    assert index.ceiling(["cat", "zebra"]) == pytest.approx(2.2 * (math.log(1.6) + math.log(8)), abs=1e-12)
    assert index.ceiling(["cat", "cat"]) == pytest.approx(2.2 * math.log(1.6))
    # No score reaches it, however often the term repeats.
    assert BM25([["cat"] * 1000, ["dog"]]).score(["cat"], 0) < BM25([["cat"] * 1000, ["dog"]]).ceiling(["cat"])
    assert BM25([]).top(["cat"], 3) == [] and BM25([[]]).top(["cat"], 3) == []


def test_tokenizer_folds_case_accents_markup_and_stop_words():
    assert tokenize("¿Cómo configuro la CONFIGURACIÓN?") == ["configuro", "configuracion"]
    assert tokenize("What does `message.snapshot` mean?") == ["message", "snapshot", "mean"]
    assert tokenize("**Set** `WIDGET_SERVER_EMBED_ORIGINS` — see [the docs](https://example.com/x-y-z).") == [
        "set", "widget", "server", "embed", "origin", "see", "doc",
    ]  # fmt: skip
    assert tokenize("<b>Bold</b> and ![a diagram](d.png) and <br/>") == ["bold", "diagram"]
    assert tokenize("`<conversation_id>` in code stays") == ["conversation", "id", "code", "stay"]
    assert tokenize("Über straße ﬁle ① 3") == ["uber", "strasse", "file", "1", "3"]
    assert tokenize("the of y de el la") == []


@pytest.mark.parametrize(
    ("word", "folded"),
    [("origins", "origin"), ("policies", "policy"), ("processes", "process"), ("status", "status"),
     ("allowed", "allow"), ("embedding", "embed"), ("embeds", "embed"), ("settings", "set"),
     ("string", "string"), ("caches", "cache"), ("v1", "v1"), ("api", "api")],
)  # fmt: skip
def test_fold(word, folded):
    assert fold(word) == folded


# -- Markdown into passages ------------------------------------------------------------------

FAQ = """---
title: Help centre
layout: page
---
Intro before any heading.

## Accounts

### Resetting a password

Open *Settings*, then **Security**. Press *Reset*.

```sh
# not a heading: inside code
reset --now
```

Plans
-----

| Plan | Price | Notes |
| --- | ---: | --- |
| `Basic` | 0 | Free \\| forever |
| Pro | 10 | |

## Empty

## Contact us #

Write to <help@example.com>.
"""


def test_parse_markdown_sections_and_heading_paths():
    sections = parse_markdown(FAQ, "Faq")
    assert [(s.path, s.anchor) for s in sections] == [
        (("Help centre",), ""),
        (("Help centre", "Accounts", "Resetting a password"), "resetting-a-password"),
        (("Help centre", "Plans"), "plans"),
        (("Help centre", "Contact us"), "contact-us"),
    ]
    reset = sections[1].blocks
    assert [b.kind for b in reset] == ["text", "code"]
    assert reset[1].text == "```sh\n# not a heading: inside code\nreset --now\n```"
    rows = sections[2].blocks
    assert [(b.kind, b.label) for b in rows] == [("row", "Basic"), ("row", "Pro")]
    assert rows[0].text == "- **Plan:** `Basic`\n- **Price:** 0\n- **Notes:** Free \\| forever"
    assert rows[1].text == "- **Plan:** Pro\n- **Price:** 10"  # an empty cell is left out


def test_parse_markdown_titles_without_front_matter():
    assert parse_markdown("# Title\ntext\n", "Fallback")[0].path == ("Title",)
    assert parse_markdown("text only\n", "Fallback")[0].path == ("Fallback",)
    assert parse_markdown("## `GET /x/<id>` *now*\nbody\n", "F")[0].path == ("F", "GET /x/<id> now")
    assert parse_markdown("A\r\n=\r\n\r\nbody\r\n", "F")[0].path == ("A",)
    assert parse_markdown("", "F") == []


def test_passages_cut_long_sections_and_table_rows():
    paragraphs = "\n\n".join(f"Paragraph {i}" + " word" * 60 for i in range(8))
    sections = parse_markdown("# Doc\n\n## Long\n\n" + paragraphs + "\n", "Doc")
    passages = passages_of("doc.md", sections)
    assert len(passages) > 1 and all(p.title == "Doc › Long" for p in passages)
    assert all(len(p.text) <= 1200 for p in passages)
    assert "\n\n".join(p.text for p in passages) == paragraphs
    plans = passages_of("faq.md", parse_markdown(FAQ, "Faq"))
    assert [p.title for p in plans if p.doc == "faq.md"][-3:] == [
        "Help centre › Plans › Basic",
        "Help centre › Plans › Pro",
        "Help centre › Contact us",
    ]


def test_trim_keeps_whole_blocks_then_cuts_at_a_sentence():
    first = Block("text", "One sentence here. Two sentences here. Three sentences here.")
    assert trim_passage((first,), 1000) == first.text
    assert trim_passage((first,), 45) == "One sentence here. Two sentences here." + ELISION
    assert trim_passage((first, Block("text", "Next block.")), len(first.text) + 5) == first.text + ELISION
    # No sentence end in reach: a word boundary, for the first block only.
    assert trim_passage((Block("text", "a b c d e f g h"),), 6) == "a b c" + ELISION
    code = Block("code", "```\nline 1\nline 2\nline 3\n```")
    assert trim_passage((code,), 20) == "```\nline 1\nline 2\n```\n\n" + ELISION.strip()


def test_safe_markdown_links_images_and_html():
    def resolve(target: str) -> str | None:  # as the backend's: relative resolved, http(s) kept
        return {"other.md": "https://kb.example/other.md"}.get(target, target if target.startswith("https:") else None)

    text = (
        "See [x](javascript:alert(1)) and [y](other.md), ![img](http://e.example/a.png) <script>alert(1)</script>"
        " <https://ok.example> <javascript:alert(1)> `<b>code</b>` [w](<javascript:a>) [v](https://ok.example/a_(b) 'T')\n"
        '[ref]: javascript:alert(1)\n[ok]: other.md "Other"\n'
        "```html\n<b>fence</b> [z](javascript:x)\n```"
    )
    assert safe_markdown(text, resolve) == (
        "See x and [y](https://kb.example/other.md), img \\<script>alert(1)\\</script>"
        " <https://ok.example> \\<javascript:alert(1)> `<b>code</b>` w [v](https://ok.example/a_(b))\n"
        '\n[ok]: https://kb.example/other.md "Other"\n'
        "```html\n<b>fence</b> [z](javascript:x)\n```"
    )


def test_safe_markdown_comments_and_links_the_patterns_miss():
    def resolve(target: str) -> str | None:
        return target if target.startswith("https:") else None

    text = (
        "a [x [y] z](javascript:alert(1)) b <!-- a note\nover two lines --> c [k](https://ok.example) [r](vbscript:x)"
    )
    assert safe_markdown(text, resolve) == "a [x [y] z]\\(javascript:alert(1)) b  c [k](https://ok.example) r"


def test_language_detection():
    assert detect_language("What is the capital of Mongolia?") == "en"
    assert detect_language("¿Cuál es la capital de Mongolia?") == "es"
    assert detect_language("cual es la capital de mongolia") == "es"
    assert detect_language("Mongolia") == "en"


# -- the sample knowledge base ---------------------------------------------------------------


def test_the_sample_is_the_docs_folder_in_a_checkout_and_the_wheel_ships_it():
    assert sample_dir() == REPO_ROOT / "docs"
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    force = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert force["docs"] == "widget_server/kb_sample"
    assert (
        pyproject["project"]["entry-points"]["widget_server.backends"]["kb"]
        == "widget_server.backends.kb:KnowledgeBaseBackend"
    )


def test_the_sample_indexes_quickly_and_finds_sections():
    kb = KnowledgeBase.load(sample_dir())
    assert set(kb.documents) >= {"configuration.md", "protocol.md", "backends.md"}
    titles = {p.title for p in kb.passages}
    assert "Configuration › Settings › WIDGET_SERVER_EMBED_ORIGINS" in titles
    assert "Wire protocol v1 › The event stream › Events › message.snapshot" in titles


def test_a_few_hundred_files_are_indexed_whole(tmp_path):
    # How long it takes is a measurement, not an assertion: the suite runs on
    # loaded, shared machines (kb.seconds is logged at startup; docs/testing.md).
    words = [
        "answer",
        "stream",
        "cancel",
        "resume",
        "widget",
        "panel",
        "origin",
        "token",
        "history",
        "heartbeat",
        "proxy",
    ]
    for n in range(300):
        body = []
        for s in range(6):
            sentence = " ".join(words[(n + s + k) % len(words)] for k in range(12))
            body.append(f"## Section {s} of page {n}\n\n{sentence.capitalize()}. " * 2)
        body.append("| Key | Value |\n| --- | --- |\n" + "".join(f"| k{r} | value {r} for {n} |\n" for r in range(10)))
        (tmp_path / f"page-{n:03}.md").write_text(f"# Page {n}\n\n" + "\n\n".join(body), encoding="utf-8")
    kb = KnowledgeBase.load(tmp_path)
    assert len(kb.documents) == 300 and len(kb.passages) == 300 * 16  # 6 sections, 10 rows
    assert kb.search("value 7 for 123", 1)[0][0].title == "Page 123 › Section 5 of page 123 › k7"


# -- through the real server -----------------------------------------------------------------


def sources_of(result) -> list[dict]:
    """The sources the completed answer lists (docs/protocol.md, "Sources")."""
    assert result.kinds[-1] == "message.completed"
    return result.payloads[-1].get("sources", [])


def _ask(live_server_factory, chat_factory, question: str, **config):
    server = live_server_factory(BACKEND="kb", **config)
    chat = chat_factory(server)
    result = chat.send(question, "r-1")
    assert result.status == 200
    assert_sound_events(result)
    assert result.kinds[0] == "message.started" and result.kinds[-1] == "message.completed", result.kinds
    assert_digest(result.payloads[-1], result.text)
    return server, result


def test_embed_question_quotes_the_embed_origins_setting(live_server_factory, chat_factory):
    server, result = _ask(live_server_factory, chat_factory, "How do I allow a site to embed the chat?")
    text = result.text
    assert text.startswith("Here is what I found in the documentation:\n\n> ")
    assert "> - **Environment variable:** `WIDGET_SERVER_EMBED_ORIGINS`\n" in text
    assert "> - **Meaning:** Origins allowed to embed the chat panel in an iframe." in text
    # Each quote ends with its marker; the document is a source of the completed answer.
    sources = sources_of(result)
    assert [source["id"] for source in sources] == [str(number) for number in range(1, len(sources) + 1)]
    assert all(f"\n\nSource [{source['id']}]\n" in text for source in sources)
    setting = next(s for s in sources if s["title"] == "Configuration › Settings › WIDGET_SERVER_EMBED_ORIGINS")
    assert setting["url"] == f"{server.url}/kb/configuration.md"
    assert "Origins allowed to embed the chat panel in an iframe." in setting["snippet"]
    assert "**" not in setting["snippet"] and "`" not in setting["snippet"]  # the passage as plain text
    # Progress before the first word: what it searched, how much it read; never in the text.
    progress = [
        payload["text"]
        for kind, payload in zip(result.kinds, result.payloads, strict=True)
        if kind == "message.progress"
    ]
    assert progress == ["Searching the documentation…", f"Reading {len(sources_of(result))} passages…"]
    assert result.kinds.index("message.progress") < result.kinds.index("text.delta")
    assert "Searching" not in text
    # Streamed in pieces (zero-width cuts: the pieces are the text).
    assert result.kinds.count("text.delta") > 5


def test_snapshot_question_quotes_the_protocol(live_server_factory, chat_factory):
    server, result = _ask(live_server_factory, chat_factory, "What does message.snapshot mean?")
    first_source = result.text.index("Source [1]")
    assert "> - **event:** `message.snapshot`" in result.text[:first_source]
    assert "**replace** the answer with `text`" in result.text[:first_source]
    assert sources_of(result)[0]["title"] == "Wire protocol v1 › The event stream › Events › message.snapshot"
    assert sources_of(result)[0]["url"] == f"{server.url}/kb/protocol.md"


def test_unrelated_question_gets_i_dont_know_with_the_contact(live_server_factory, chat_factory):
    _, result = _ask(live_server_factory, chat_factory, "What is the capital of Mongolia?")
    assert result.text == UNKNOWN_EN.format(contact="contact the site's support team")
    _, result = _ask(live_server_factory, chat_factory, "¿Cuál es la capital de Mongolia?")
    assert result.text == UNKNOWN_ES.format(contact="contacta con el equipo de soporte del sitio")
    contact = "write to [help@example.com](mailto:help@example.com)"
    _, result = _ask(live_server_factory, chat_factory, "What is the capital of Mongolia?", KB_CONTACT=contact)
    assert result.text == UNKNOWN_EN.format(contact=contact)


def test_min_score_decides_when_to_say_i_dont_know(live_server_factory, chat_factory):
    _, result = _ask(live_server_factory, chat_factory, "What is the default port?", KB_MIN_SCORE=1)
    assert result.text.startswith("I don't know")
    _, result = _ask(live_server_factory, chat_factory, "What is the default port?", KB_MAX_PASSAGES=1)
    assert result.text.count("Source [") == 1 and "`WIDGET_SERVER_PORT`" in result.text
    assert [source["id"] for source in sources_of(result)] == ["1"]


def test_cancel_stops_the_answer(live_server_factory, chat_factory):
    server = live_server_factory(BACKEND="kb", DEMO_DELAY_SECONDS=0.5)
    chat = chat_factory(server)
    first = chat.send("How do I allow a site to embed the chat?", "r-1", max_events=4)
    assert first.kinds == ["message.started", "message.progress", "message.progress", "text.delta"]
    started = time.monotonic()
    assert chat.cancel(first.message_id).json()["state"] == "cancelled"
    replay = chat.resume(first.message_id, None)
    assert replay.kinds[-1] == "message.cancelled"
    assert replay.payloads[-1]["length"] == len(replay.text) < 200
    # The backend woke from its pause and returned at once, not after its ~20
    # more pieces at 0.5 s (10 s): the bounds leave room for a loaded machine.
    assert wait_until(lambda: not server.service._runs, timeout=3.0)
    assert time.monotonic() - started < 5.0


def test_links_use_the_host_each_question_was_sent_to(live_server_factory, chat_factory):
    server = live_server_factory(BACKEND="kb")
    chat = chat_factory(server)
    stranger = chat.http.post(chat.messages_url(), json={"request_id": "r-0", "text": "port?"},
                              headers={"Authorization": "Bearer wrong", "Host": "evil.example"})  # fmt: skip
    assert stranger.status_code == 404
    result = chat.send("Which port does the server listen on?", "r-1")
    assert f"{server.url}/kb/configuration.md" in [source["url"] for source in sources_of(result)]
    # The host comes with each question (the Turn's server_url), not from an earlier one.
    elsewhere = chat.send("Which port does the server listen on?", "r-2", headers={"Host": "chat.example:8443"})
    assert "http://chat.example:8443/kb/configuration.md" in [source["url"] for source in sources_of(elsewhere)]
    assert "evil.example" not in str(result.payloads) + str(elsewhere.payloads)


def test_the_backend_reads_the_host_from_the_turn():
    backend = KnowledgeBaseBackend.from_settings(load_settings({"BACKEND": "kb", "DEMO_DELAY_SECONDS": 0}, environ={}))
    question = "Which port does the server listen on?"
    for server_url in ("https://help.example", "http://127.0.0.1:8000"):
        turn = Turn(question, conversation_id="c_1", message_id="m_1", server_url=server_url)
        pieces = list(backend.stream(turn, CancelToken()))
        sources = tuple(piece for piece in pieces if isinstance(piece, Source))
        assert f"{server_url}/kb/configuration.md" in [source.url for source in sources]
        assert sources == backend.sources(question, server_url)
        assert "".join(piece for piece in pieces if isinstance(piece, str)) == backend.answer(question, server_url)


def test_the_backend_takes_its_settings_defaults_from_config():
    backend = KnowledgeBaseBackend.from_settings(load_settings({"BACKEND": "kb"}, environ={}))
    for name, value in {
        "KB_MIN_SCORE": backend.min_score,
        "KB_MAX_PASSAGES": backend.max_passages,
        "KB_BASE_URL": backend.base_url,
        "KB_CONTACT": backend.contact,
        "DEMO_DELAY_SECONDS": backend.delay,
    }.items():
        assert value == PLUGIN_SETTINGS[name].default, name


FAQ_FILES = {
    "faq.md": "# Frequently asked questions\n\n## How do I reset my password?\n\n"
    "Open the account page and press **Reset password**. We send a link by email. "
    "The link works for one hour.\n\n## Opening hours\n\nThe shop opens at nine.\n",
    "guides/shipping.md": "# Shipping\n\nParcels leave the warehouse every weekday. "
    "See [the FAQ](../faq.md#opening-hours) and [our site](https://shop.example/).\n",
    "notes.txt": "password password password (not Markdown: never indexed or served)\n",
    ".hidden.md": "# Hidden\n\npassword\n",
}


@pytest.fixture
def faq_dir(tmp_path):
    for name, text in FAQ_FILES.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def test_a_folder_of_your_own(live_server_factory, chat_factory, faq_dir):
    server, result = _ask(live_server_factory, chat_factory, "How can I reset my password?", KB_DIR=str(faq_dir))
    assert result.text == (
        "Here is what I found in the documentation:\n\n"
        "> Open the account page and press **Reset password**. We send a link by email. The link works for one hour.\n\n"
        "Source [1]\n"
    )
    assert sources_of(result) == [
        {
            "id": "1",
            "title": "Frequently asked questions › How do I reset my password?",
            "url": f"{server.url}/kb/faq.md",
            "snippet": "Open the account page and press Reset password. We send a link by email. "
            "The link works for one hour.",
        }
    ]
    # A relative link to another document goes to that document; a .txt file is not indexed.
    server, result = _ask(
        live_server_factory, chat_factory, "When do parcels leave the warehouse?", KB_DIR=str(faq_dir)
    )
    assert f"See [the FAQ]({server.url}/kb/faq.md) and [our site](https://shop.example/)." in result.text
    assert {"id": "1", "title": "Shipping", "url": f"{server.url}/kb/guides/shipping.md"}.items() <= sources_of(result)[
        0
    ].items()


def test_base_url_links_to_the_site(live_server_factory, chat_factory, faq_dir):
    config = {"KB_DIR": str(faq_dir), "KB_BASE_URL": "https://www.example.com/help/"}
    _, result = _ask(live_server_factory, chat_factory, "How can I reset my password?", **config)
    assert sources_of(result)[0]["url"] == "https://www.example.com/help/faq.md#how-do-i-reset-my-password"
    config["KB_BASE_URL"] = "https://www.example.com/help/{path}.html"
    _, result = _ask(live_server_factory, chat_factory, "When do parcels leave the warehouse?", **config)
    assert "[the FAQ](https://www.example.com/help/faq.html#opening-hours)" in result.text
    assert sources_of(result)[0]["url"] == "https://www.example.com/help/guides/shipping.html"


@pytest.mark.parametrize("value", ["ftp://x.example/", "www.example.com/help", "/help/"])
def test_base_url_must_be_absolute_http(value):
    with pytest.raises(ConfigError, match="KB_BASE_URL"):
        create_app({"BACKEND": "kb", "KB_BASE_URL": value}, environ={})


def test_missing_or_empty_folder_is_a_config_error_at_start(tmp_path):
    with pytest.raises(ConfigError, match="KB_DIR") as missing:
        create_app({"BACKEND": "kb", "KB_DIR": str(tmp_path / "nope")}, environ={})
    assert "no such folder" in str(missing.value)
    (tmp_path / "readme.txt").write_text("not markdown", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"KB_DIR: .* has no Markdown \(\.md\) files"):
        create_app({"BACKEND": "kb", "KB_DIR": str(tmp_path)}, environ={})
    (tmp_path / "blank.md").write_text("\n\n   \n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"KB_DIR: the Markdown files in .* have no text"):
        create_app({"BACKEND": "kb", "KB_DIR": str(tmp_path)}, environ={})


def test_cli_refuses_a_missing_folder_before_serving(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WIDGET_SERVER_KB_DIR", str(tmp_path / "nope"))
    assert cli.main(["--backend", "kb"]) == 2
    assert "widget-server: error: KB_DIR (from environment variable WIDGET_SERVER_KB_DIR)" in capsys.readouterr().err


# -- /kb/<path> ------------------------------------------------------------------------------


def test_kb_route_serves_the_sample_as_plain_text(live_server_factory):
    server = live_server_factory(BACKEND="kb")
    response = HTTP.get(f"{server.url}/kb/configuration.md")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "sandbox" in response.headers["content-security-policy"]
    assert response.text == (REPO_ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")


def test_kb_route_serves_only_indexed_markdown_inside_the_folder(live_server_factory, faq_dir, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.md").write_text("# Secret\n\nnot for you\n", encoding="utf-8")
    (faq_dir / "link.md").symlink_to(outside / "secret.md")
    (faq_dir / "linked").symlink_to(outside, target_is_directory=True)
    server = live_server_factory(BACKEND="kb", KB_DIR=str(faq_dir))
    app = server.app.test_client()
    assert app.get("/kb/faq.md").status_code == 200
    assert app.get("/kb/guides/shipping.md").status_code == 200
    refused = [
        "/kb/notes.txt", "/kb/.hidden.md", "/kb/link.md", "/kb/linked/secret.md", "/kb/missing.md",
        "/kb/../pyproject.toml", "/kb/..%2Fpyproject.toml", "/kb/%2e%2e/%2e%2e/etc/passwd",
        "/kb/guides/../faq.md", "/kb/./faq.md", "/kb//etc/passwd", f"/kb/{faq_dir}/faq.md",
        "/kb/guides%2Fshipping.md%00", "/kb/FAQ.MD", "/kb/",
    ]  # fmt: skip
    for path in refused:
        response = app.get(path, follow_redirects=True)  # "//" is first redirected to "/"
        assert response.status_code == 404, path
        assert response.is_json and response.json["error"]["code"] == "not_found", path
    # And over a real socket, with the dot segments sent as they are.
    with http_client(base_url=server.url) as client:
        for raw in ("/kb/../pyproject.toml", "/kb/guides/../../" + os.path.basename(outside) + "/secret.md"):
            request = client.build_request("GET", server.url)
            request.url = request.url.copy_with(raw_path=raw.encode())
            assert client.send(request).status_code == 404, raw


def test_kb_route_is_404_with_another_backend(live_server_factory):
    server = live_server_factory()  # demo
    assert HTTP.get(f"{server.url}/kb/configuration.md").status_code == 404


# -- "I don't know" offers a person (docs/backends.md, "Offering a person") ----------------------


def _offers(result) -> list[tuple[str, dict]]:
    """The answer's offers as message.completed lists them (the only actionable ones)."""
    return [(a["name"], a["arguments"]) for a in result.payloads[-1].get("actions", [])]


def test_i_dont_know_offers_a_person_only_while_handoff_is_on(live_server_factory, chat_factory):
    unknown = "What is the capital of Mongolia?"
    _, result = _ask(live_server_factory, chat_factory, unknown, HANDOFF="on")
    assert result.text == UNKNOWN_EN.format(contact="contact the site's support team")  # the text is unchanged
    assert _offers(result) == [("handoff", {})]
    proposed = result.payloads[result.kinds.index("action.proposed")]
    assert (proposed["name"], proposed["label"]) == ("handoff", "Talk to a person")
    # An answer found in the documents offers nothing; nor does "I don't know" with hand-off off.
    _, found = _ask(live_server_factory, chat_factory, "How do I allow a site to embed the chat?", HANDOFF="on")
    assert "action.proposed" not in found.kinds and _offers(found) == []
    _, off = _ask(live_server_factory, chat_factory, unknown, HANDOFF="off")
    assert off.text == result.text and "action.proposed" not in off.kinds and _offers(off) == []


def test_with_handoff_auto_a_person_is_offered_once_the_agents_file_lists_someone(tmp_path):
    """The service decides (HandoffService.enabled, asked per turn) and tells the backend
    through Turn.offers_handoff; the backend never reads the agents file itself."""
    from widget_server.agents.accounts import AgentAccounts
    from widget_server.app import create_app
    from widget_server.backends.base import ActionProposal

    agents_file = tmp_path / "agents.json"
    app = create_app(
        {"BACKEND": "kb", "DEMO_DELAY_SECONDS": 0, "HANDOFF": "auto", "AGENTS_FILE": str(agents_file)}, environ={}
    )
    service = app.extensions[SERVICES_KEY].chat
    assert service.handoff_enabled() is False  # no agents file yet
    AgentAccounts(str(agents_file)).add("ana", "Ana", "correct horse battery staple")
    assert service.handoff_enabled() is True  # the file is re-read once it changed
    backend = service.backend
    question = "What is the capital of Mongolia?"
    turn = Turn(question, conversation_id="c_1", message_id="m_1", offers_handoff=service.handoff_enabled())
    pieces = list(backend.stream(turn, CancelToken()))
    assert pieces[-1] == ActionProposal("handoff", {})
    assert "".join(p for p in pieces if isinstance(p, str)) == backend.answer(question)
    silent = Turn(question, conversation_id="c_1", message_id="m_1")  # offers_handoff defaults to False
    assert not any(isinstance(piece, ActionProposal) for piece in backend.stream(silent, CancelToken()))


def test_confirming_the_offer_asks_for_a_person_once(live_server_factory, chat_factory):
    """An API client may confirm the `handoff` offer instead of POST …/handoff: it asks once."""
    server = live_server_factory(BACKEND="kb", HANDOFF="on")
    server.app.extensions[SERVICES_KEY].handoff.agent_seen("ana")
    chat = chat_factory(server)
    result = chat.send("What is the capital of Mongolia?", "r-1")
    offer = result.payloads[-1]["actions"][0]
    path = f"{chat.messages_url()}/{result.message_id}/actions/{offer['action_id']}/confirm"
    confirmed = [chat.http.post(path, headers={**chat.auth, "Idempotency-Key": "k-1"}) for _ in range(2)]
    assert [r.status_code for r in confirmed] == [200, 200]
    assert [r.json()["result"] for r in confirmed] == [{"state": "queued", "position": 1, "seq": 1}] * 2
    state = server.app.extensions[SERVICES_KEY].handoff.state(chat.conversation_id)
    assert state == {"state": "queued", "position": 1}
