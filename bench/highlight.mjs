// The code highlighter, measured against Prism's core with the same languages: gzipped bytes,
// and time per line of a long code block (docs/performance.md, "Highlighting"). Both tokenize
// to plain values in Node, no DOM, so the figures are the tokenizers' own.
//
//   npm install --prefix /tmp/prism prismjs        (outside the repository; never a dependency)
//   node bench/highlight.mjs /tmp/prism/node_modules/prismjs
//
// Ours: static/widget/highlight.js, each line once with the state the line before left
// (what a streamed block costs: markdown.js draws each complete line once). Prism has no
// line-by-line mode: its `Prism.tokenize` takes the whole text, so a streamed block is either
// tokenized again whole at every new line (quadratic) or once at the end (the block plain
// until then); both are timed.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const prismDir = process.argv[2];
if (!prismDir) {
  console.error('usage: node bench/highlight.mjs PATH/TO/node_modules/prismjs');
  process.exit(2);
}

const esbuild = require(path.join(root, '.ci/js/node_modules/esbuild'));
const gzipped = (text) => gzipSync(Buffer.from(text), { level: 9 }).length;
const minified = (text) =>
  esbuild.transformSync(text, {
    minify: true,
    charset: 'utf8',
    loader: 'js',
    format: 'esm',
    legalComments: 'none',
  }).code;

// The same languages: ours are JavaScript/TypeScript, Python, JSON, shell, HTML/XML, CSS, SQL.
const PRISM_COMPONENTS = [
  'clike',
  'javascript',
  'typescript',
  'python',
  'json',
  'bash',
  'markup',
  'css',
  'sql',
];
const prismSources = [
  readFileSync(path.join(prismDir, 'components/prism-core.min.js'), 'utf8'),
  ...PRISM_COMPONENTS.map((name) =>
    readFileSync(path.join(prismDir, `components/prism-${name}.min.js`), 'utf8'),
  ),
].join('\n');
const oursSource = readFileSync(path.join(root, 'static/widget/highlight.js'), 'utf8');
const blocksSource = readFileSync(path.join(root, 'static/widget/code-blocks.js'), 'utf8');
const cssSource = readFileSync(path.join(root, 'static/widget/code-blocks.css'), 'utf8');

globalThis.Prism = { manual: true, disableWorkerMessageHandler: true };
const Prism = require(path.join(prismDir, 'components/prism-core.js'));
globalThis.Prism = Prism;
for (const name of PRISM_COMPONENTS) require(path.join(prismDir, `components/prism-${name}.js`));
const { grammarFor, tokenizeLine } = await import(
  pathToFileURL(path.join(root, 'static/widget/highlight.js')).href
);

// A long block: a realistic JavaScript module's lines, repeated.
const SAMPLE = [
  "import { readFile } from 'node:fs/promises';",
  '/* Reads the settings, then',
  '   merges the defaults. */',
  'export async function settings(file, defaults = {}) {',
  "  const text = await readFile(file, 'utf8'); // may throw",
  '  const values = JSON.parse(text);',
  '  for (const [key, value] of Object.entries(defaults)) {',
  '    if (!(key in values)) values[key] = value ?? null;',
  '  }',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a line of the sample's source code
  '  return { ...values, loaded: `${file} at ${Date.now()}`, retries: 3, ratio: 0.75 };',
  '}',
  '',
];
const LINES = 5000;
const lines = Array.from({ length: LINES }, (_, at) => SAMPLE[at % SAMPLE.length]);
const text = lines.join('\n');

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function timeIt(run, repeats = 15) {
  for (let warm = 0; warm < 3; warm++) run();
  const times = [];
  for (let repeat = 0; repeat < repeats; repeat++) {
    const start = process.hrtime.bigint();
    run();
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return median(times);
}

const grammar = grammarFor('js');
const ours = timeIt(() => {
  let state = null;
  for (const line of lines) state = tokenizeLine(grammar, line, state).state;
});
const prismWhole = timeIt(() => Prism.tokenize(text, Prism.languages.javascript));
// Prism re-tokenizing the whole block at each new line, on the first 500 lines (quadratic:
// the whole 5,000 would take minutes).
const QUADRATIC_LINES = 500;
const prismAgain = timeIt(() => {
  for (let count = 1; count <= QUADRATIC_LINES; count++)
    Prism.tokenize(lines.slice(0, count).join('\n'), Prism.languages.javascript);
}, 3);
// Flat cost: ours per line over the first and the last 10% of the block.
const tenth = LINES / 10;
const perLineOver = (from, to) =>
  timeIt(() => {
    let state = null;
    for (let at = from; at < to; at++) state = tokenizeLine(grammar, lines[at], state).state;
  }) /
  (to - from);

const microseconds = (ms) => `${(ms * 1000).toFixed(2)} µs`;
console.log(
  JSON.stringify(
    {
      node: process.version,
      prism: JSON.parse(readFileSync(path.join(prismDir, 'package.json'), 'utf8')).version,
      bytes_gzip9: {
        ours_highlight_js_source: gzipped(oursSource),
        ours_highlight_js_minified: gzipped(minified(oursSource)),
        ours_lazy_part_minified: gzipped(minified(oursSource) + minified(blocksSource) + cssSource),
        prism_core_and_languages_minified: gzipped(prismSources),
        prism_components: PRISM_COMPONENTS,
      },
      lines: LINES,
      per_line: {
        ours_line_by_line: microseconds(ours / LINES),
        prism_whole_block_once: microseconds(prismWhole / LINES),
        prism_whole_block_at_every_line_first_500: microseconds(prismAgain / QUADRATIC_LINES),
        ours_first_tenth: microseconds(perLineOver(0, tenth)),
        ours_last_tenth: microseconds(perLineOver(LINES - tenth, LINES)),
      },
    },
    null,
    2,
  ),
);
