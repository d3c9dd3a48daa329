// Math in answers (docs/accessibility.md A114–A116): markdown.js marks each formula as a span
// of its source with its TeX in data-tex (a `$…$`, `$$…$$`, `\(…\)` or `\[…\]`); this module
// draws it as native MathML with the vendored Temml (vendor/temml.js, tests/test_math_vendor.py).
// No fonts, no HTML fallback: the browser lays MathML out, and a screen reader reads it as
// math. TeX Temml refuses stays its source, as inline code, never an error box.
//
// Safety (docs/security.md, "Math in answers"): Temml's MathML tree is built here node by
// node, elements and attributes from an allow-list only, text as text nodes; nothing of it is
// ever parsed as markup, and `trust: false` keeps \href, \url, \includegraphics, \htmlClass
// and the like out. Its inline styles are dropped (the panel's CSP has no 'unsafe-inline' for
// style-src: web.py), math.css stands in for the ones that matter.
//
// Loaded by chat.js (`math`) with an answer's first formula: never part of the panel's first
// open (tests/test_budgets.py). A formula is drawn once, when its span closes: a closed block
// is never drawn again (docs/performance.md, "Math"); the open tail's formulas come again each
// frame, so each drawn formula is kept and cloned.

import { linkStylesheet } from './lazy-parts.js';
import temml from './vendor/temml.js';

const MATHML = 'http://www.w3.org/1998/Math/MathML';
// MathML Core's elements (https://w3c.github.io/mathml-core/#mathml-elements-and-attributes)
// and the few others Temml writes (menclose, mlabeledtr).
const ELEMENTS = new Set(
  'math semantics mrow mi mn mo ms mtext mspace msub msup msubsup munder mover munderover mfrac msqrt mroot mstyle mtable mtr mtd mlabeledtr mpadded mphantom menclose merror mmultiscripts mprescripts none'.split(
    ' ',
  ),
);
// Layout attributes only: no style, class, id or href, no event handler, no colour (mathcolor
// would escape the theme's contrast and forced colours, docs/theming.md).
const ATTRIBUTES = new Set(
  'display displaystyle scriptlevel mathvariant mathsize lspace rspace stretchy symmetric largeop movablelimits minsize maxsize fence separator form accent accentunder linethickness width height depth voffset notation columnalign rowalign columnspan rowspan'.split(
    ' ',
  ),
);
const OPTIONS = { trust: false, throwOnError: true, strict: false };
// A long task is over 50 ms (https://w3c.github.io/longtasks/): many formulas drawn at once (a
// restored answer) are drawn in slices, a task each (docs/performance.md, "Widget").
const SLICE_MS = 20;
const KEPT = 500;

// The stylesheet first: a formula is never drawn unstyled (lazy-parts.js).
await linkStylesheet(new URL('./math.css', import.meta.url).href);

/**
 * One node of Temml's tree as DOM, or an error for anything off the allow-list (an anchor's
 * own children are kept, as text of the math, its link never).
 * @param {import('./vendor/temml.js').TemmlNode} node
 * @returns {Node}
 */
function build(node) {
  if (typeof node.text === 'string' && !node.children) return document.createTextNode(node.text);
  /** @type {Element | DocumentFragment} */
  let built;
  if (node.type === undefined && !node.attributes) built = document.createDocumentFragment();
  else if (ELEMENTS.has(node.type)) {
    built = document.createElementNS(MATHML, node.type);
    for (const [name, value] of Object.entries(node.attributes || {}))
      if (ATTRIBUTES.has(name)) built.setAttribute(name, String(value));
  } else throw new TypeError(`MathML element not allowed: ${node.type}`);
  for (const child of node.children || []) built.append(build(child));
  return built;
}

/**
 * A formula's TeX as a <math> element, or null when Temml refuses it (or it would need
 * anything off the allow-list).
 * @param {string} tex
 * @param {boolean} display
 * @returns {Element | null}
 */
export function mathElement(tex, display) {
  try {
    const math = build(temml.__renderToMathMLTree(tex, { ...OPTIONS, displayMode: display }));
    return math instanceof Element && math.localName === 'math' ? math : null;
  } catch {
    return null;
  }
}

/** @type {Map<string, Element | null>} a formula's MathML, by display and TeX */
const kept = new Map();

/** @param {HTMLElement} formula */
function draw(formula) {
  const tex = formula.dataset.tex,
    display = formula.dataset.math === 'block',
    key = `${display}\n${tex}`;
  if (!formula.firstChild || formula.firstChild.nodeType !== Node.TEXT_NODE) return;
  if (!kept.has(key)) {
    if (kept.size >= KEPT) kept.clear();
    kept.set(key, mathElement(tex, display));
  }
  const math = kept.get(key);
  if (math) {
    // A display formula wider than the answer scrolls in its box: scroll-follow.js makes a
    // box with data-label a tab stop and a region named by it exactly while it scrolls, as it
    // does a wide table's (docs/accessibility.md A40, A114).
    if (display) formula.dataset.label = tex;
    return formula.replaceChildren(math.cloneNode(true));
  }
  const source = document.createElement('code');
  source.textContent = formula.textContent;
  formula.replaceChildren(source);
}

/** @type {HTMLElement[]} formulas not drawn yet */
const waiting = [];

/** @param {boolean} later a slice after the first: the open tail may have moved on */
function drain(later) {
  const start = performance.now();
  while (waiting.length && performance.now() - start < SLICE_MS) {
    const formula = waiting.shift();
    if (!later || formula.isConnected) draw(formula);
  }
  if (waiting.length) setTimeout(() => drain(true));
}

/**
 * markdown.js's `math` hook (through chat.js): draws a block's formulas, now when it can.
 * @param {Iterable<HTMLElement>} formulas
 */
export function drawMath(formulas) {
  const idle = !waiting.length;
  waiting.push(...formulas);
  if (idle) drain(false);
}
