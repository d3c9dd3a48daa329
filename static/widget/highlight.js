// Syntax highlighting of a code block, one line at a time (docs/accessibility.md A102,
// docs/performance.md "Highlighting"): a line is cut into tokens by its language's rules, and
// what a line leaves open (a block comment, a multi-line string) is the state the next line
// starts in. So a streamed block costs one pass over each of its lines, drawn once when the
// line is complete (markdown.js `firmLines`), however long the block grows: flat cost.
//
// Pure: no DOM, no network (code-blocks.js turns tokens into spans). Loaded only with the first
// fenced code block of an answer, never on the panel's first open (tests/test_budgets.py).
// Hand-written rather than Prism's core with the same languages: smaller gzipped and faster per
// line, and line-by-line with a carried state, which Prism's whole-text tokenizer is not
// (the measurement is in docs/performance.md, "Highlighting").
//
// The rules are approximations of each language's lexical grammar, enough to colour
// keywords, strings, comments, numbers and names; a line the rules do not know is plain text.
// The tokens always join to exactly the line (tests/e2e/test_code_blocks.py).

/**
 * A token: its class ('' for plain text) and its text.
 * @typedef {[string, string]} Token
 */

/**
 * A construct a line may leave open: its class, and the pattern of its rest on the next line
 * (sticky at the line's start; its `end` group is the closer, undefined while still open).
 * @typedef {{ kind: string, rest: RegExp }} OpenState
 */

/**
 * A rule: its class and its pattern's source; `body` and `close` make it a construct that may
 * span lines (what it holds, and what ends it), `pattern` then being its opener.
 * @typedef {{ kind: string, pattern: string, body?: string, close?: string }} Rule
 */

/**
 * @typedef {object} Grammar
 * @property {RegExp} pattern every rule as one alternative, a named group each (r0, r1, …;
 *   a multi-line rule's closer is c0, c1, …)
 * @property {Rule[]} rules
 * @property {(OpenState | null)[]} open what each multi-line rule leaves open, by rule
 */

/**
 * @param {string} kind
 * @param {string} pattern
 * @returns {Rule}
 */
const rule = (kind, pattern) => ({ kind, pattern });
/**
 * @param {string} kind
 * @param {string} open
 * @param {string} body
 * @param {string} close
 * @returns {Rule}
 */
const spanning = (kind, open, body, close) => ({ kind, pattern: open, body, close });
/**
 * @param {string} kind
 * @param {string} list words separated by spaces
 * @returns {Rule}
 */
const words = (kind, list) => rule(kind, `\\b(?:${list.split(' ').join('|')})\\b`);

const BLOCK_COMMENT = spanning('comment', '/\\*', '(?!\\*/)[^]', '\\*/');
const NUMBER = rule(
  'number',
  '\\b(?:0[xX][\\da-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|\\d[\\d_]*(?:\\.\\d[\\d_]*)?(?:[eE][+-]?\\d+)?)n?\\b|\\B\\.\\d+(?:[eE][+-]?\\d+)?\\b',
);
const quoted = (quote) => rule('string', `${quote}(?:\\\\.|[^${quote}\\\\])*${quote}?`);
const CALL = rule('function', '\\b[A-Za-z_$][\\w$]*(?=\\s*\\()');
const TYPE = rule('type', '\\b[A-Z][\\w$]*\\b');

const JAVASCRIPT = [
  rule('comment', '//.*'),
  BLOCK_COMMENT,
  quoted('"'),
  quoted("'"),
  spanning('string', '`', '\\\\[^]|[^\\\\`]', '`'),
  words(
    'keyword',
    'abstract as async await break case catch class const continue debugger declare default delete do else enum export extends finally for from function get if implements import in instanceof interface keyof let namespace new of private protected public readonly return set static super switch this throw try type typeof var void while with yield',
  ),
  words('literal', 'true false null undefined NaN Infinity'),
  NUMBER,
  CALL,
  TYPE,
];

const PYTHON_PREFIX = '[rRbBuUfF]{0,2}';
const PYTHON = [
  rule('comment', '#.*'),
  spanning('string', `${PYTHON_PREFIX}"""`, '\\\\[^]|(?!""")[^]', '"""'),
  spanning('string', `${PYTHON_PREFIX}'''`, "\\\\[^]|(?!''')[^]", "'''"),
  rule('string', `${PYTHON_PREFIX}"(?:\\\\.|[^"\\\\])*"?`),
  rule('string', `${PYTHON_PREFIX}'(?:\\\\.|[^'\\\\])*'?`),
  rule('function', '@[\\w.]+'),
  words(
    'keyword',
    'and as assert async await break class continue def del elif else except finally for from global if import in is lambda match nonlocal not or pass raise return try while with yield',
  ),
  words('literal', 'True False None self cls'),
  NUMBER,
  CALL,
  TYPE,
];

const JSON_RULES = [
  rule('property', '"(?:\\\\.|[^"\\\\])*"(?=\\s*:)'),
  quoted('"'),
  words('literal', 'true false null'),
  rule('number', '-?\\b\\d+(?:\\.\\d+)?(?:[eE][+-]?\\d+)?\\b'),
];

const SHELL = [
  rule('comment', '(?<![^\\s;])#.*'),
  quoted('"'),
  rule('string', "'[^']*'?"),
  rule('variable', '\\$(?:\\{[^}]*\\}?|\\w+|[@*#?$!0-9-])'),
  words(
    'keyword',
    'if then else elif fi for while until do done case esac in function return local export select break continue',
  ),
  words(
    'function',
    'alias cat cd chmod cp curl echo exit grep ls mkdir mv npm pip printf pwd python read rm sed set source sudo test touch unset',
  ),
  rule('number', '(?<![\\w.-])\\d+(?![\\w.-])'),
];

const MARKUP = [
  spanning('comment', '<!--', '(?!-->)[^]', '-->'),
  rule('keyword', '<![A-Za-z][^>]*>?|<\\?[^?]*\\??>?'),
  rule('tag', '</?[A-Za-z][\\w:.-]*|/?>'),
  rule('attribute', '[\\w:.-]+(?=\\s*=\\s*["\'])'),
  rule('string', '(?<==\\s*)(?:"[^"]*"?|\'[^\']*\'?)'),
  rule('literal', '&(?:#\\d+|#[xX][\\da-fA-F]+|\\w+);'),
];

const CSS = [
  BLOCK_COMMENT,
  quoted('"'),
  quoted("'"),
  rule('keyword', '@[\\w-]+|!important\\b'),
  rule('property', '(?:--|-?[A-Za-z])[\\w-]*(?=\\s*:[^{]*(?:;|$))'),
  rule('number', '#[\\da-fA-F]{3,8}\\b|-?(?:\\b\\d+\\.?\\d*|\\B\\.\\d+)(?:%|[A-Za-z]+\\b)?'),
  rule('function', '[\\w-]+(?=\\()'),
  rule('type', '[.#][A-Za-z_-][\\w-]*'),
];

const SQL = [
  rule('comment', '--.*'),
  BLOCK_COMMENT,
  rule('string', "'(?:''|[^'])*'?"),
  rule('property', '"(?:""|[^"])*"?|`[^`]*`?'),
  words(
    'keyword',
    'add all alter and as asc begin between by case check commit constraint create cross default delete desc distinct drop else end exists foreign from full group having if in index inner insert into is join key left like limit not null offset on or order outer primary references returning right rollback select set table then union unique update using values view when where with',
  ),
  words('literal', 'true false'),
  NUMBER,
  CALL,
];

/** @type {Record<string, [Rule[], string]>} the rules and the pattern's flags, by language */
const LANGUAGES = {
  javascript: [JAVASCRIPT, 'g'],
  python: [PYTHON, 'g'],
  json: [JSON_RULES, 'g'],
  shell: [SHELL, 'g'],
  markup: [MARKUP, 'g'],
  css: [CSS, 'g'],
  // SQL's keywords are case-insensitive (ISO/IEC 9075-2 §5.2).
  sql: [SQL, 'gi'],
};

// The fence's info word (CommonMark §4.5), lower-cased, to the rules it names.
const ALIASES = {
  js: 'javascript',
  jsx: 'javascript',
  mjs: 'javascript',
  cjs: 'javascript',
  ts: 'javascript',
  tsx: 'javascript',
  typescript: 'javascript',
  py: 'python',
  python3: 'python',
  jsonc: 'json',
  bash: 'shell',
  sh: 'shell',
  zsh: 'shell',
  console: 'shell',
  html: 'markup',
  xml: 'markup',
  svg: 'markup',
  xhtml: 'markup',
};

/** @type {Map<string, Grammar>} */
const grammars = new Map();

/**
 * The grammar of a fence's language, or null when it has none here (the block stays plain).
 * @param {string} language
 * @returns {Grammar | null}
 */
export function grammarFor(language) {
  const lower = String(language).toLowerCase();
  const name = Object.hasOwn(ALIASES, lower) ? ALIASES[lower] : lower;
  if (!Object.hasOwn(LANGUAGES, name)) return null;
  let grammar = grammars.get(name);
  if (!grammar) {
    const [rules, flags] = LANGUAGES[name];
    const alternatives = rules.map(({ pattern, body, close }, at) =>
      close ? `(?<r${at}>${pattern}(?:${body})*(?<c${at}>${close})?)` : `(?<r${at}>${pattern})`,
    );
    grammar = {
      rules,
      pattern: new RegExp(alternatives.join('|'), flags),
      open: rules.map(({ kind, body, close }) =>
        close
          ? { kind, rest: new RegExp(`(?:${body})*(?<end>${close})?`, flags.replace('g', 'y')) }
          : null,
      ),
    };
    grammars.set(name, grammar);
  }
  return grammar;
}

/**
 * One line's tokens, and the state the next line starts in.
 * @param {Grammar} grammar
 * @param {string} line without its line ending
 * @param {OpenState | null} state what the previous line left open
 * @returns {{ tokens: Token[], state: OpenState | null }}
 */
export function tokenizeLine(grammar, line, state) {
  /** @type {Token[]} */
  const tokens = [];
  let at = 0;
  if (state) {
    state.rest.lastIndex = 0;
    const rest = /** @type {RegExpExecArray} */ (state.rest.exec(line));
    if (rest.groups.end === undefined) {
      if (line) tokens.push([state.kind, line]); // the whole line is inside it
      return { tokens, state };
    }
    at = rest[0].length;
    tokens.push([state.kind, rest[0]]);
  }
  const pattern = grammar.pattern;
  pattern.lastIndex = at;
  for (let match = pattern.exec(line); match; match = pattern.exec(line)) {
    if (!match[0]) {
      pattern.lastIndex++; // an empty match (a lookahead only) moves on
      continue;
    }
    if (match.index > at) tokens.push(['', line.slice(at, match.index)]);
    let index = 0;
    while (match.groups[`r${index}`] === undefined) index++;
    // A multi-line construct whose closer is not on this line holds the rest of the line.
    const open = grammar.open[index];
    if (open && match.groups[`c${index}`] === undefined) {
      tokens.push([open.kind, line.slice(match.index)]);
      return { tokens, state: open };
    }
    tokens.push([grammar.rules[index].kind, match[0]]);
    at = match.index + match[0].length;
  }
  if (at < line.length) tokens.push(['', line.slice(at)]);
  return { tokens, state: null };
}
