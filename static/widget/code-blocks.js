// Code blocks in answers (docs/accessibility.md A102–A104): a fenced block with a language
// highlight.js knows is coloured, token by token, as spans with a class each and nothing else
// (no role, no label: a screen reader reads the code's text exactly as written, and the
// announcer still says only the block's summary, markdown.js `summaries.codeBlock`); every
// block gets a Copy code button, named with its language, whose result is one polite cue
// through the panel's one Announcer (A5).
//
// Loaded by chat.js (`codeOptions`) with the first fenced code block of an answer: never part
// of the panel's first open (tests/test_budgets.py). markdown.js asks `lines(language)` for a
// growing block's line renderer, through which each complete line is drawn once (flat cost
// while a block streams, docs/performance.md "Highlighting"), and calls `closed()` for a block
// at its end. Its stylesheet is its own file, linked from here (the CSP allows no inline style).

import { writeClipboard } from './clipboard.js';
import { button, element } from './dom.js';
import { grammarFor, tokenizeLine } from './highlight.js';
import { format } from './i18n.js';
import { lazyStrings, linkStylesheet } from './lazy-parts.js';

/** @typedef {import('./host.js').PanelHost} PanelHost */
/** @typedef {import('./highlight.js').OpenState} OpenState */

const stylesheet = linkStylesheet(new URL('./code-blocks.css', import.meta.url).href);

/**
 * A line of code as a span of token spans and text, its line ending included: markdown.js
 * draws a block's lines one node each.
 * @param {import('./highlight.js').Token[]} tokens
 * @returns {HTMLSpanElement}
 */
function lineNode(tokens) {
  const line = element('span');
  for (const [kind, text] of tokens)
    line.append(kind ? element('span', `tok-${kind}`, text) : document.createTextNode(text));
  line.append('\n');
  return line;
}

/**
 * A renderer for one block's lines, in order, each once (the state carried between them), or
 * null when the language has no rules here (the block stays plain text).
 * @param {string} language
 * @returns {((line: string) => HTMLSpanElement) | null}
 */
export function lineRenderer(language) {
  const grammar = grammarFor(language);
  if (!grammar) return null;
  /** @type {OpenState | null} */
  let state = null;
  return (line) => {
    const result = tokenizeLine(grammar, line, state);
    state = result.state;
    return lineNode(result.tokens);
  };
}

// A block drawn before this module arrived (a restored answer, or one that came at once): its
// text, as plain text nodes, is drawn again through the renderer, in a task of its own, so that
// many such blocks are never one long task (over 50 ms, https://w3c.github.io/longtasks/;
// docs/performance.md, "Widget").
/**
 * @param {HTMLElement} code
 * @param {string} language
 */
async function highlightDrawn(code, language) {
  const render = lineRenderer(language);
  if (!render || code.firstElementChild || !code.textContent) return;
  await new Promise((resolve) => setTimeout(resolve));
  const lines = code.textContent.replace(/\n$/, '').split('\n');
  code.replaceChildren(...lines.map(render));
}

/**
 * The hooks markdown.js calls (its `code` option, through chat.js).
 * @param {PanelHost} host
 */
export function use(host) {
  const strings = lazyStrings(host, 'codeBlocks');
  return {
    lines: lineRenderer,
    /**
     * A block at its end: coloured if it was not yet, then its Copy code button above it.
     * @param {HTMLPreElement} pre
     * @param {string} language
     */
    async closed(pre, language) {
      const code = /** @type {HTMLElement} */ (pre.firstElementChild);
      const [words] = await Promise.all([strings, stylesheet, highlightDrawn(code, language)]);
      const parent = pre.parentNode;
      // No strings (offline): no button. Gone (a snapshot redrew the answer): nothing to do.
      if (!words || !parent || /** @type {Element} */ (parent).classList?.contains('code-block'))
        return;
      const name = language ? format(words.copy, { lang: language }) : words.copyNoLanguage;
      const copy = button('button button--secondary code-block__copy', name, async () => {
        if (await writeClipboard(code.textContent)) host.announcer.cue(words.copied);
        else host.showAlert(words.copyFailed);
      });
      const box = element('div', 'code-block');
      parent.replaceChild(box, pre);
      box.append(copy, pre);
    },
  };
}
