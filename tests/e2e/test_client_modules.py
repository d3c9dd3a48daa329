"""Layer tests of the panel's pure modules, in the browser: the message model
(idempotent apply, gaps, snapshots, SHA-256 verification, also without Web
Crypto) and the announcer (sentences, batching, cues)."""

from __future__ import annotations

import hashlib

import pytest
from playwright.sync_api import Page

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


@pytest.mark.parametrize("web_crypto", [True, False])
def test_model_verifies_the_completed_hash(page: Page, modules, web_crypto):
    text = "Ünïcödé → 🎸 and CR\r\nlines\n"
    good = hashlib.sha256(text.encode()).hexdigest()
    result = page.evaluate(
        """async ([base, text, good, webCrypto]) => {
            const { AnswerModel } = await import(base + 'model.js');
            const { sha256HexSync } = await import(base + 'sha256.js');
            const bytes = new TextEncoder().encode(text).length;
            const run = async (sha) => {
                const m = new AnswerModel('m_1');
                m.apply('text.delta', { message_id: 'm_1', seq: 1, text });
                m.apply('message.completed', { message_id: 'm_1', seq: 2, length: 0, utf8_bytes: bytes, sha256: sha });
                if (!webCrypto) return sha256HexSync(new TextEncoder().encode(m.text)) === sha;
                return m.verify();
            };
            return [await run(good), await run('0'.repeat(64))];
        }""",
        [modules, text, good, web_crypto],
    )
    assert result == [True, False]


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
}
CODE_CASES = {
    "en": [(("python", 1), "Code block, python, 1 line."), (("", 2), "Code block, 2 lines.")],
    "es": [(("python", 1), "Bloque de código, python, 1 línea."), (("", 2), "Bloque de código, 2 líneas.")],
}


@pytest.mark.parametrize("lang", ["en", "es"])
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
    one, many = ("1 second,", "30 seconds,") if lang == "en" else ("1 segundo y", "30 segundos y")
    assert one in result["waits"][0] and many in result["waits"][1]
