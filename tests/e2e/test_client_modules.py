"""Layer tests of the panel's modules, in the browser: the message model
(idempotent apply, gaps, snapshots, SHA-256 verification, also without Web
Crypto), the announcer (sentences, batching, cues), the API client's action
requests (retries, outcomes, errors; the server's side is mocked), and the
split between the modules that define the panel and the entry that boots it."""

from __future__ import annotations

import hashlib
import json
import re

import pytest
from playwright.sync_api import Page, Route

from widget_server.i18n import ui_strings

pytestmark = pytest.mark.e2e


@pytest.fixture
def modules(page: Page, live_server):
    page.goto(live_server.url + "/healthz")
    return live_server.url + "/static/widget/"


def test_model_applies_each_event_once_and_reports_gaps(page: Page, modules):
    result = page.evaluate(
        """async (base) => {
            const { AnswerModel } = await import(base + 'model.js');
            const m = new AnswerModel();
            const ev = (seq, extra) => ({ message_id: 'm_1', seq, ...extra });
            const out = [];
            out.push(m.apply('message.started', ev(1)));
            out.push(m.apply('text.delta', ev(2, { text: 'Hello ' })));
            out.push(m.apply('text.delta', ev(2, { text: 'Hello ' })));   // duplicate
            out.push(m.apply('text.delta', ev(4, { text: 'lost ' })));    // gap
            out.push(m.apply('message.snapshot', ev(3, { text: 'Hello world', state: 'running' })));
            out.push(m.apply('text.delta', ev(1, { text: 'old' })));       // stale
            out.push(m.apply('text.delta', ev(4, { text: '!' })));
            out.push(m.apply('text.delta', ev(5, { text: 'x', message_id: 'm_other' })));
            return { out, text: m.text, lastSeq: m.lastSeq, duplicates: m.duplicates, gaps: m.gaps, lastEventId: m.lastEventId };
        }""",
        modules,
    )
    assert result["out"] == ["applied", "applied", "duplicate", "gap", "applied", "duplicate", "applied", "ignored"]
    assert result["text"] == "Hello world!"
    assert result["lastSeq"] == 4 and result["lastEventId"] == "m_1:4"
    assert result["duplicates"] == 2 and result["gaps"] == 1


def test_a_gap_counts_only_the_numbers_never_received_however_many_events_follow_it(page: Page, modules):
    """The rest of the chunk a gap arrives in is still parsed before the snapshot read: each
    later event is a gap too, but the report (docs/protocol.md, "Client reports") counts
    sequence numbers never received, so the server does not refuse it as larger than the
    message."""
    result = page.evaluate(
        """async (base) => {
            const { AnswerModel } = await import(base + 'model.js');
            const m = new AnswerModel();
            const ev = (seq, extra) => ({ message_id: 'm_1', seq, text: 'x', ...extra });
            const out = [1, 2, 4, 5, 7].map((seq) => m.apply('text.delta', ev(seq)));
            const first = { dropped: m.dropped, gaps: m.gaps };
            out.push(m.apply('message.snapshot', ev(7, { text: 'whole' })));
            out.push(m.apply('text.delta', ev(9)));
            return { out, first, dropped: m.dropped, gaps: m.gaps, lastSeq: m.lastSeq };
        }""",
        modules,
    )
    assert result["out"] == ["applied", "applied", "gap", "gap", "gap", "applied", "gap"]
    # Before the snapshot: 3 and 6 never came (one gap, an event missing after it too).
    assert result["first"] == {"dropped": 2, "gaps": 1}
    # After it, a new gap (8) is counted as one more.
    assert result["dropped"] == 3 and result["gaps"] == 2 and result["lastSeq"] == 7


@pytest.mark.parametrize("web_crypto", [True, False])
def test_model_verifies_the_completed_hash(page: Page, modules, web_crypto):
    text = "Ünïcödé → 🎸 and CR\r\nlines\n"
    good = hashlib.sha256(text.encode()).hexdigest()
    result = page.evaluate(
        """async ([base, text, good, webCrypto]) => {
            // Web Crypto is missing where the page is not a secure context (a chat served over plain http).
            if (!webCrypto) Object.defineProperty(crypto, 'subtle', { value: undefined, configurable: true });
            const { AnswerModel } = await import(base + 'model.js');
            const bytes = new TextEncoder().encode(text).length;
            const run = async (sha) => {
                const model = new AnswerModel('m_1');
                model.apply('text.delta', { message_id: 'm_1', seq: 1, text });
                model.apply('message.completed', { message_id: 'm_1', seq: 2, length: 0, utf8_bytes: bytes, sha256: sha });
                return model.verify();
            };
            const verdicts = [await run(good), await run('0'.repeat(64))];
            const fetched = performance.getEntriesByType('resource').map((entry) => entry.name);
            return [...verdicts, fetched.some((url) => url.endsWith('/sha256-fallback.js'))];
        }""",
        [modules, text, good, web_crypto],
    )
    # The FIPS 180-4 implementation is fetched only where it is needed.
    assert result == [True, False, not web_crypto]


def test_announcer_batches_whole_sentences_and_keeps_cues_apart(page: Page, modules):
    result = page.evaluate(
        """async (base) => {
            const { Announcer } = await import(base + 'announcer.js');
            const region = document.createElement('div');
            document.body.append(region);
            let now = 0;
            const said = [];
            const a = new Announcer(region, { minIntervalMs: 1000, now: () => now, onAnnounce: (d) => { said.push(d.text); } });
            const view = (blocks) => ({ blocks: (from) => blocks.slice(from) });
            a.start('Generating.');
            a.update(view([{ plain: 'One. Two', closed: false }]));     // "Two" may still grow
            now = 1000; a._flush();
            a.update(view([{ plain: 'One. Two three. Fo', closed: false }]));
            now = 2000; a._flush();
            a.finish(view([{ plain: 'One. Two three. Four.', closed: true }, { plain: 'Next block.', closed: true }]), 'Done.');
            now = 3000; a._flush();
            now = 4000; a._flush();
            return said;
        }""",
        modules,
    )
    assert result == ["Generating.", "One.", "Two three.", "Four. Next block.", "Done."]


def test_announcer_says_a_repeated_cue_before_the_sentences_after_it(page: Page, modules):
    """The same cue twice ("Generating answer…" for the next answer) empties the region and
    writes it again a moment later; with a short interval (the e2e tests' 100 ms) the sentences
    queued after it must still come after it, as a screen reader is given them."""
    result = page.evaluate(
        """async (base) => {
            const { Announcer } = await import(base + 'announcer.js');
            const region = document.createElement('div');
            document.body.append(region);
            const given = [];
            new MutationObserver(() => { if (region.textContent) given.push(region.textContent); })
                .observe(region, { childList: true, characterData: true, subtree: true });
            const a = new Announcer(region, { minIntervalMs: 20 });
            const view = (blocks) => ({ blocks: (from) => blocks.slice(from) });
            const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
            a.start('Generating answer…');
            await pause(60);
            a.start('Generating answer…');  // the region already holds it: rewritten later
            a.update(view([{ plain: 'Answer three. ', closed: false }, { plain: '', closed: false }]));
            a.finish(view([{ plain: 'Answer three. ', closed: true }]), 'Answer complete.');
            await pause(400);
            return given;
        }""",
        modules,
    )
    assert result == ["Generating answer…", "Generating answer…", "Answer three.", "Answer complete."]


# The same in Arabic and Hebrew (docs/accessibility.md A71): sentences end at ؟ and . , the
# Arabic comma ، ends nothing; with Intl.Segmenter and without it (the fallback, A72).
ANNOUNCER_STEPS = {
    "ar": (["مرحبًا. هل أنت", "مرحبًا. هل أنت بخير؟ نعم، شكر", "مرحبًا. هل أنت بخير؟ نعم، شكرًا."], "التالي."),
    "he": (["שלום. מה", "שלום. מה שלומך? טוב, תוד", "שלום. מה שלומך? טוב, תודה."], "הבא."),
}


@pytest.mark.parametrize("segmenter", [True, False], ids=["segmenter", "fallback"])
@pytest.mark.parametrize("lang", ["ar", "he"])
def test_announcer_batches_whole_sentences_in_arabic_and_hebrew(page: Page, modules, lang, segmenter):
    steps, next_block = ANNOUNCER_STEPS[lang]
    result = page.evaluate(
        """async ([base, lang, steps, nextBlock, segmenter]) => {
            const kept = Intl.Segmenter;
            if (!segmenter) delete Intl.Segmenter;
            try {
                const { Announcer } = await import(base + 'announcer.js');
                const region = document.createElement('div');
                document.body.append(region);
                let now = 0;
                const said = [];
                const a = new Announcer(region, { lang, minIntervalMs: 1000, now: () => now, onAnnounce: (d) => { said.push(d.text); } });
                const view = (blocks) => ({ blocks: (from) => blocks.slice(from) });
                a.start('…');
                a.update(view([{ plain: steps[0], closed: false }]));
                now = 1000; a._flush();
                a.update(view([{ plain: steps[1], closed: false }]));
                now = 2000; a._flush();
                a.finish(view([{ plain: steps[2], closed: true }, { plain: nextBlock, closed: true }]), '✓');
                now = 3000; a._flush();
                now = 4000; a._flush();
                return said;
            } finally {
                Intl.Segmenter = kept;
            }
        }""",
        [modules, lang, steps, next_block, segmenter],
    )
    first, second, third = {
        "ar": ("مرحبًا.", "هل أنت بخير؟", "نعم، شكرًا."),
        "he": ("שלום.", "מה שלומך?", "טוב, תודה."),
    }[lang]
    assert result == ["…", first, second, f"{third} {next_block}", "✓"]


# -- i18n: plural forms (Intl.PluralRules), the strings the panel ships -------------------------

PLURAL_CASES = {
    "en": [
        ((1, 1), "Table, 1 column, 1 row."),
        ((3, 5), "Table, 3 columns, 5 rows."),
        ((2, 0), "Table, 2 columns, 0 rows."),
    ],
    "es": [
        ((1, 1), "Tabla, 1 columna, 1 fila."),
        ((3, 5), "Tabla, 3 columnas, 5 filas."),
        ((2, 1_000_000), "Tabla, 2 columnas, 1000000 de filas."),
    ],
    "fr": [
        ((1, 0), "Tableau, 1 colonne, 0 ligne."),  # French: 0 and 1 are singular (CLDR)
        ((2, 1_000_000), "Tableau, 2 colonnes, 1000000 de lignes."),
    ],
    "de": [((1, 1), "Tabelle, 1 Spalte, 1 Zeile."), ((3, 5), "Tabelle, 3 Spalten, 5 Zeilen.")],
    "pt": [((1, 1), "Tabela, 1 coluna, 1 linha."), ((3, 5), "Tabela, 3 colunas, 5 linhas.")],
    "ar": [
        ((1, 1), "جدول، عمود واحد، صف واحد."),
        ((2, 3), "جدول، عمودان، 3 صفوف."),
        ((11, 100), "جدول، 11 عمودًا، 100 صف."),
        ((3, 0), "جدول، 3 أعمدة، 0 صف."),
    ],
    "he": [
        ((1, 1), "טבלה, עמודה אחת, שורה אחת."),
        ((2, 2), "טבלה, שתי עמודות, שתי שורות."),
        ((3, 10), "טבלה, 3 עמודות, 10 שורות."),
    ],
}
CODE_CASES = {
    "en": [(("python", 1), "Code block, python, 1 line."), (("", 2), "Code block, 2 lines.")],
    "es": [(("python", 1), "Bloque de código, python, 1 línea."), (("", 2), "Bloque de código, 2 líneas.")],
    "fr": [(("python", 1), "Bloc de code, python, 1 ligne."), (("", 2), "Bloc de code, 2 lignes.")],
    "de": [(("python", 1), "Codeblock, python, 1 Zeile."), (("", 2), "Codeblock, 2 Zeilen.")],
    "pt": [(("python", 1), "Bloco de código, python, 1 linha."), (("", 2), "Bloco de código, 2 linhas.")],
    "ar": [(("python", 2), "كتلة برمجية، python، سطران."), (("", 1), "كتلة برمجية، سطر واحد.")],
    "he": [(("python", 2), "קטע קוד, python, שתי שורות."), (("", 3), "קטע קוד, 3 שורות.")],
}
# What "Wait {seconds}" says for 1 and 30 seconds.
WAITS = {
    "en": ("1 second,", "30 seconds,"),
    "es": ("1 segundo y", "30 segundos y"),
    "fr": ("1 seconde,", "30 secondes,"),
    "de": ("1 Sekunde und", "30 Sekunden und"),
    "pt": ("1 segundo e", "30 segundos e"),
    "ar": ("ثانية واحدة،", "30 ثانية،"),
    "he": ("שנייה אחת ואז", "30 שניות ואז"),
}


@pytest.mark.parametrize("lang", list(PLURAL_CASES))
def test_summaries_and_waits_use_the_languages_plural_forms(page: Page, modules, live_server, lang):
    strings = ui_strings()[lang]
    result = page.evaluate(
        """async ([base, t, lang, tables, codes]) => {
            const { markdownSummaries, plural, format } = await import(base + 'i18n.js');
            const summaries = markdownSummaries(t, lang);
            return {
                tables: tables.map(([columns, rows]) => summaries.table(columns, rows)),
                codes: codes.map(([codeLang, lines]) => summaries.codeBlock(codeLang, lines)),
                waits: [1, 30].map((n) => format(t.rateLimited, { seconds: plural(t.seconds, n, lang) })),
            };
        }""",
        [modules, strings, lang, [c[0] for c in PLURAL_CASES[lang]], [c[0] for c in CODE_CASES[lang]]],
    )
    assert result["tables"] == [c[1] for c in PLURAL_CASES[lang]]
    assert result["codes"] == [c[1] for c in CODE_CASES[lang]]
    one, many = WAITS[lang]
    assert one in result["waits"][0] and many in result["waits"][1]


# -- the API client's action requests (client.js; the action cards call them) ---------------------

ACTION = {"action_id": "a_1", "message_id": "m_1", "status": "succeeded"}


def error_body(code: str, **extra) -> dict:
    return {"error": {"code": code, "message": f"The server says {code}.", **extra}}


def serve_replies(page: Page, replies: list) -> list[dict]:
    """Answer the page's requests under conversation c_1 with `replies`, in turn: (status, JSON
    body), or None for a network error. Returns what was asked (method, path, headers)."""
    asked: list[dict] = []

    def reply(route: Route) -> None:
        request = route.request
        asked.append({"method": request.method, "path": re.sub(r"^https?://[^/]+", "", request.url), **request.headers})
        answer = replies.pop(0)
        if answer is None:
            route.abort()
        else:
            status, body = answer
            route.fulfill(status=status, content_type="application/json", body=json.dumps(body))

    page.route(re.compile(r".*/api/v1/conversations/c_1(/.*)?$"), reply)
    return asked


# Call one ChatClient method; its value, or what it rejected with.
CALL_CLIENT_JS = """async ([base, method, args]) => {
    const { ChatClient } = await import(base + 'client.js');
    const client = new ChatClient({ apiBase: location.origin + '/api/v1/', faults: 'drop-after=1' });
    client.conversationId = 'c_1';
    client.token = 'the-token';
    try {
        return { value: await client[method](...args) };
    } catch (error) {
        return { error: [error.name, error.status, error.code, error.message] };
    }
}"""


def test_a_confirm_is_retried_with_the_same_key_until_it_has_an_outcome(page: Page, modules):
    replies = [None, (503, error_body("store_unavailable")), (409, error_body("action_in_progress")), (200, ACTION)]
    asked = serve_replies(page, replies)
    result = page.evaluate(CALL_CLIENT_JS, [modules, "confirmAction", ["m_1", "a_1", "key-1"]])
    assert result == {"value": ACTION}
    # A network error, a 5xx and `action_in_progress` are retried (docs/protocol.md, "Actions"), always
    # with the one key the card made, so the server runs the action once; faults are for message streams.
    assert [(request["method"], request["path"]) for request in asked] == [
        ("POST", "/api/v1/conversations/c_1/messages/m_1/actions/a_1/confirm")
    ] * 4
    assert {request["idempotency-key"] for request in asked} == {"key-1"}
    assert {request["authorization"] for request in asked} == {"Bearer the-token"}
    assert not any("x-chat-faults" in request for request in asked)


def test_a_confirm_gives_up_after_three_retries(page: Page, modules):
    asked = serve_replies(page, [(500, error_body("internal"))] * 4)
    result = page.evaluate(CALL_CLIENT_JS, [modules, "confirmAction", ["m_1", "a_1", "key-1"]])
    assert result == {"error": ["ApiError", 500, "internal", "The server says internal."]}
    assert len(asked) == 4


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        # What became of the action elsewhere is an outcome, not an error.
        ((409, error_body("action_already_confirmed", details={"action": ACTION})), {"value": ACTION}),
        (
            (409, error_body("action_dismissed")),
            {"error": ["ApiError", 409, "action_dismissed", "The server says action_dismissed."]},
        ),
        ((404, {}), {"error": ["ApiError", 404, "http_error", "HTTP 404"]}),
    ],
    ids=["decided-elsewhere", "refused", "no-error-body"],
)
def test_a_dismiss_is_sent_once_and_the_answer_is_its_outcome_or_its_error(page: Page, modules, reply, expected):
    asked = serve_replies(page, [reply])
    result = page.evaluate(CALL_CLIENT_JS, [modules, "dismissAction", ["m_1", "a_1"]])
    assert result == expected
    ((method, path, key),) = [(r["method"], r["path"], r.get("idempotency-key")) for r in asked]
    assert (method, path, key) == ("POST", "/api/v1/conversations/c_1/messages/m_1/actions/a_1/dismiss", None)


def test_the_client_lists_the_conversations_actions(page: Page, modules):
    asked = serve_replies(
        page, [(200, {"conversation_id": "c_1", "actions": [ACTION]}), (404, error_body("not_found"))]
    )
    assert page.evaluate(CALL_CLIENT_JS, [modules, "listActions", []]) == {"value": [ACTION]}
    assert page.evaluate(CALL_CLIENT_JS, [modules, "listActions", []]) == {
        "error": ["ApiError", 404, "not_found", "The server says not_found."]
    }
    assert [(r["method"], r["path"], r["authorization"]) for r in asked] == [
        ("GET", "/api/v1/conversations/c_1/actions", "Bearer the-token")
    ] * 2


# -- chat.js defines the panel, panel.js (the page's entry module) boots it -----------------------


def test_importing_chat_js_starts_no_panel_and_the_entry_module_does(page: Page, modules, live_server):
    # The panel's markup and configuration on the page: importing chat.js must not boot a panel.
    result = page.evaluate(
        """async (base) => {
            const root = document.createElement('div');
            root.setAttribute('data-chat-panel', '');
            const config = document.createElement('script');
            config.type = 'application/json';
            config.id = 'chat-config';
            config.textContent = '{}';
            document.body.append(root, config);
            const chat = await import(base + 'chat.js');
            return { exports: Object.keys(chat).sort(), booted: 'chatPanel' in window };
        }""",
        modules,
    )
    assert result == {"exports": ["ChatPanel", "ChatWidgetError"], "booted": False}
    # The panel page loads the entry, which boots the ChatPanel class chat.js defines.
    page.goto(live_server.url + "/panel?lang=en")
    page.locator("[data-chat-panel][data-ready='true']").wait_for()
    assert page.evaluate(
        "async (url) => window.chatPanel instanceof (await import(url)).ChatPanel", modules + "chat.js"
    )
