// The announcer: the ONE polite live region that speaks an answer.
//
// docs/design.md ("Screen readers hear sentences, not tokens") and
// docs/accessibility.md: a short cue when an answer starts,
// each completed sentence once, as plain text, batched so the region changes
// at most about once per `minIntervalMs` and never mid-sentence, then a
// completion cue. Modelled on GOV.UK Frontend's character count: a separate,
// throttled status region, never the content itself.

// Without Intl.Segmenter, the fallback below keeps to UAX #29's main rules: a sentence
// ends after a terminator (. ! ? and Arabic's question mark ؟ U+061F, full stop ۔ U+06D4,
// U+061D–U+061E), closing quotes or brackets and a space (SB9–SB11); the Arabic comma ،
// and semicolon ؛ and an ellipsis do not end one, nor does a full stop whose next letter
// is lower case ("e.g. the", "End. 12 apples", SB8). Hebrew ends sentences with . ? !
const SENTENCE_END = /([.!?\u061d-\u061f\u06d4]+)["'”’»«)\]]*\s+/gu;
const LOWER_CASE_NEXT = /^[^\p{L}.!?\u061d-\u061f\u06d4]*\p{Ll}/u;

/**
 * @param {string} text
 * @returns {string[]}
 */
export function fallbackSentences(text) {
  const segments = [];
  let start = 0;
  for (const match of text.matchAll(SENTENCE_END)) {
    const end = match.index + match[0].length;
    if (match[1] === '.' && LOWER_CASE_NEXT.test(text.slice(end))) continue;
    segments.push(text.slice(start, end));
    start = end;
  }
  if (start < text.length) segments.push(text.slice(start));
  return segments;
}

// The sentences of a text in a language, as `text → [segment]`: each segment
// keeps the whitespace after it, so the segments join to the text. One
// definition for the Announcer below and the QA page's expected script
// (static/qa/expected.js). Intl.Segmenter applies Unicode's sentence rules
// (UAX #29, https://www.unicode.org/reports/tr29/#Sentence_Boundaries); the
// regular expression is for browsers without it.
/**
 * @param {string} lang
 * @returns {(text: string) => string[]}
 */
export function sentenceSplitter(lang) {
  if (typeof Intl !== 'undefined' && Intl.Segmenter) {
    const segmenter = new Intl.Segmenter(lang, { granularity: 'sentence' });
    return (text) => Array.from(segmenter.segment(text), (segment) => segment.segment);
  }
  return fallbackSentences;
}

/**
 * What the announcer reads from the renderer (markdown.js's view): its blocks from `from` on,
 * as plain text, each `closed` once it can no longer grow.
 * @typedef {{ blocks(from: number): { plain: string, closed: boolean }[] }} BlockSource
 */

/**
 * What is said: `polite` (the announcer's region) or `assertive` (the panel's alert).
 * @typedef {{ politeness: 'polite' | 'assertive', text: string }} Announcement
 */

/**
 * @typedef {object} AnnouncerOptions
 * @property {string} [lang] The sentences' language (default `en`).
 * @property {number} [minIntervalMs] The region changes at most this often (default 1000).
 * @property {(detail: Announcement) => (boolean | void)} [onAnnounce] Told first; false
 *   keeps the text out of the region.
 * @property {() => number} [now] The clock (tests).
 * @property {'sentence' | 'complete' | 'off'} [mode] docs/accessibility.md A35.
 */

// How long the region stays empty before the same text is written again (`_write`).
const REWRITE_DELAY_MS = 100;
// A progress line is said no sooner than this after the last one said (docs/accessibility.md
// A110): a backend reporting every step must not turn the region into a ticker.
export const PROGRESS_INTERVAL_MS = 2000;

export class Announcer {
  /**
   * @param {HTMLElement} region The polite live region.
   * @param {AnnouncerOptions} [options]
   */
  constructor(
    region,
    {
      lang = 'en',
      minIntervalMs = 1000,
      onAnnounce = () => {},
      now = () => Date.now(),
      mode = 'sentence', // sentence, complete, off (docs/accessibility.md A35)
    } = {},
  ) {
    if (!region) throw new TypeError('Announcer needs its live region element');
    this.region = region;
    this.split = sentenceSplitter(lang);
    this.minIntervalMs = minIntervalMs;
    this.onAnnounce = onAnnounce;
    this.now = now;
    this.lastAt = -Infinity;
    this.timer = 0;
    /** @type {{ cue: boolean, text: string }[]} */
    this.queue = [];
    this.mode = mode;
    this.reset();
    this.forgetProgress();
  }

  forgetProgress() {
    /** @type {Set<string>} the progress lines said for this answer */
    this.progressSaid = new Set();
    this.progressAt = -Infinity;
  }

  // Forget the position in the previous answer (a new answer starts).
  reset() {
    this.blockIndex = 0;
    this.offset = 0;
    /** @type {string[]} sentences not said one by one (mode complete, off) */
    this.held = [];
  }

  /** @param {string} cue */
  start(cue) {
    this.reset();
    this.forgetProgress();
    this.queue.length = 0;
    this._enqueue({ cue: true, text: cue });
  }

  /**
   * What the backend is doing (a `message.progress` line): a cue, said once per line per
   * answer and never within PROGRESS_INTERVAL_MS of the last one said; a line that comes
   * sooner is only shown (A110). Returns whether it will be said.
   * @param {string} text
   * @returns {boolean}
   */
  progress(text) {
    const now = this.now();
    if (!text || this.progressSaid.has(text) || now - this.progressAt < PROGRESS_INTERVAL_MS)
      return false;
    this.progressSaid.add(text);
    this.progressAt = now;
    this._enqueue({ cue: true, text });
    return true;
  }

  // Take the sentences that became complete since the last call. `view`
  // is the renderer: view.blocks(from) → [{plain, closed}] from block
  // `from` on, plain text without markup (so this costs what is new).
  /** @param {BlockSource} view */
  update(view) {
    const blocks = view.blocks(this.blockIndex);
    for (let i = 0; i < blocks.length; i++, this.blockIndex++, this.offset = 0) {
      const block = blocks[i];
      const rest = block.plain.slice(Math.min(this.offset, block.plain.length));
      const sentences = this.split(rest);
      // In an open block the last segment may still grow: hold it back.
      const complete = block.closed ? sentences : sentences.slice(0, -1);
      for (const sentence of complete) {
        this.offset += sentence.length;
        const text = sentence.trim();
        if (text && this.mode === 'sentence') this._enqueue({ cue: false, text });
        else if (text) this.held.push(text);
      }
      if (!block.closed) return;
    }
  }

  /**
   * Start speaking after what is already there (a restored answer).
   * @param {BlockSource} view
   */
  skipTo(view) {
    const blocks = view.blocks(0);
    const last = blocks.length - 1;
    if (last < 0) return;
    this.blockIndex = blocks[last].closed ? blocks.length : last;
    this.offset = blocks[last].closed ? 0 : blocks[last].plain.length;
  }

  /**
   * A status cue (reconnecting, offline) between sentences.
   * @param {string} text
   */
  cue(text) {
    this._enqueue({ cue: true, text });
  }

  // The answer ended: speak what remains, then the cue (mode complete: the whole answer).
  /**
   * @param {BlockSource | null} view
   * @param {string} cue
   */
  finish(view, cue) {
    if (view) this.update(view);
    const whole = this.held.join(' ');
    this._enqueue({ cue: true, text: this.mode === 'complete' && whole ? whole : cue });
  }

  // Stopped or failed: drop what was not yet spoken, say only the cue.
  /** @param {string | null} cue none: silence */
  interrupt(cue) {
    this.queue.length = 0;
    if (cue) this._enqueue({ cue: true, text: cue });
  }

  /** @param {{ cue: boolean, text: string }} item */
  _enqueue(item) {
    this.queue.push(item);
    this._schedule();
  }

  _schedule() {
    if (this.timer || !this.queue.length) return;
    const wait = this.lastAt + this.minIntervalMs - this.now();
    if (wait <= 0) {
      this._flush();
    } else {
      this.timer = setTimeout(() => {
        this.timer = 0;
        this._flush();
      }, wait);
    }
  }

  // A live region is announced when its text changes: the same text again
  // (the next answer's "Generating answer…") would be silent in Chromium,
  // as Orca showed. Empty it first and write in a later task.
  // Returns when the text will be in the region, in ms from now: the next write waits a whole
  // interval after that, so it can never land before this one (a short minIntervalMs would
  // otherwise race the rewrite and say the cue after the sentences that follow it).
  /**
   * @param {string} text
   * @returns {number}
   */
  _write(text) {
    if (this.region.textContent !== text) {
      this.region.textContent = text;
      return 0;
    }
    this.region.textContent = '';
    setTimeout(() => {
      this.region.textContent = text;
    }, REWRITE_DELAY_MS);
    return REWRITE_DELAY_MS;
  }

  _flush() {
    if (!this.queue.length) return;
    // Consecutive sentences go out together; a cue is always on its own.
    let count = 1;
    if (!this.queue[0].cue) while (count < this.queue.length && !this.queue[count].cue) count++;
    const text = this.queue
      .splice(0, count)
      .map((item) => item.text)
      .join(' ');
    // Observers hear of it first and may cancel it (onAnnounce → false).
    if (this.onAnnounce({ politeness: 'polite', text }) !== false) {
      this.lastAt = this.now() + this._write(text);
    }
    this._schedule();
  }
}
