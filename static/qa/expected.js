// The expected script: what a screen-reader user should hear for one answer,
// in order (docs/accessibility.md, A5 and A6):
//
// 1. the generating cue ("Generating answer…"), polite;
// 2. each progress line the backend sent before the first word ("Searching the help
//    centre…"), polite, once (the scenarios space them past the announcer's 2 s, A110);
// 3. every sentence of the answer once, in order, as plain text, polite, and
//    possibly several in one announcement;
// 4. the completion cue on its own ("Answer complete."), polite, then the number of
//    sources ("2 sources") if it cites any (A111); or, for an answer that fails, the
//    error's message, assertive, once — the polite region then drops the sentences it
//    had not said yet.
//
// The sentences come from the panel's own code, so the markdown → plain-text
// rules exist once: the blocks and their plain text from the renderer
// (static/widget/markdown.js, the view the panel draws), the sentences from
// the announcer's splitter (static/widget/announcer.js), the code-block and
// table summaries from static/widget/i18n.js. tests/e2e/test_qa_expected_script.py
// checks the script against what the panel really announces.

import { sentenceSplitter } from '../widget/announcer.js';
import { markdownSummaries, plural } from '../widget/i18n.js';
import { createMarkdownView } from '../widget/markdown.js';

// The finished answer's blocks ({kind, plain}) as the panel's renderer
// reports them to its announcer. `strings` are the panel's UI strings in
// `lang` (static/widget/i18n/<lang>.json).
export function plainBlocks(markdown, strings, lang) {
  const view = createMarkdownView(document.createElement('div'), {
    strings: markdownSummaries(strings, lang),
  });
  view.update(markdown);
  view.finish();
  return view.blocks().map(({ kind, plain }) => ({ kind, plain }));
}

// One block's plain text as the polite region says it: the announcer's
// sentences, trimmed, blank ones left out (as Announcer.update queues them).
export function sentencesOfPlainText(plain, lang) {
  return sentenceSplitter(lang)(plain)
    .map((sentence) => sentence.trim())
    .filter(Boolean);
}

// Every sentence the polite region should say for the answer, in order.
export function sentencesOf(markdown, strings, lang) {
  return plainBlocks(markdown, strings, lang).flatMap((block) =>
    sentencesOfPlainText(block.plain, lang),
  );
}

// The script for an answer's markdown. `errorCode` (a failure code of
// docs/protocol.md) makes it a failed answer: its message is said instead of
// the completion cue, and by default the sentences are only possibly heard,
// since the panel drops what it had not said when the error arrives.
// `progress`: the progress lines before the first word; `sources`: how many sources the
// answer cites.
export function expectedScript(
  answer,
  {
    lang,
    strings,
    errorCode = null,
    sentencesMayBeDropped = errorCode !== null,
    progress = [],
    sources = 0,
  },
) {
  const failed = errorCode !== null;
  return {
    lang,
    generating: strings.generating,
    progress: [...new Set(progress)],
    sentences: sentencesOf(answer, strings, lang),
    completion: failed ? null : strings.complete,
    sources: !failed && sources ? plural(strings.sources.count, sources, lang) : null,
    error: failed ? strings.errors[errorCode] || strings.errors.internal : null,
    errorCode,
    sentencesMayBeDropped,
    outcome: failed ? 'failed' : 'completed',
  };
}
