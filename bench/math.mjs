// Math in answers: what the first answer with a formula fetches (gzipped, as served from
// static/min/) and Temml's time per formula, TeX to its MathML tree, in Node (no DOM: the tree
// math.js builds its allow-listed elements from; docs/performance.md, "Math").
//
//   node .ci/js/build.mjs && node bench/math.mjs [--reps 2000]
//
// Each formula is timed alone (the panel draws a formula once, when it closes, and keeps it:
// math.js), after a warm-up, as the median and the 95th percentile of its runs.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const repsAt = process.argv.indexOf('--reps');
const reps = repsAt > 0 ? Number(process.argv[repsAt + 1]) : 2000;

const served = path.join(root, 'static', 'min', 'widget');
const sizes = Object.fromEntries(
  ['math.js', 'math.css', 'vendor/temml.js'].map((name) => [
    name,
    gzipSync(readFileSync(path.join(served, name)), { level: 9 }).length,
  ]),
);
console.log('gzipped, as served (static/min/widget/):');
for (const [name, size] of Object.entries(sizes)) console.log(`  ${name.padEnd(16)} ${size} B`);
console.log(`  ${'total'.padEnd(16)} ${Object.values(sizes).reduce((a, b) => a + b)} B`);

const { default: temml } = await import(
  pathToFileURL(path.join(root, 'static', 'widget', 'vendor', 'temml.js')).href
);
const OPTIONS = { trust: false, throwOnError: true, strict: false };

// From small to large: /scenario math's formulas, then what answers about maths often hold.
const FORMULAS = [
  ['inline: n', 'n', false],
  ['inline: f = 440 \\cdot 2^{n/12}', 'f = 440 \\cdot 2^{n/12}', false],
  ['display: \\frac{3}{2} \\approx 2^{7/12}', '\\frac{3}{2} \\approx 2^{7/12}', true],
  ['display: quadratic formula', 'x = \\frac{-b \\pm \\sqrt{b^2 - 4ac}}{2a}', true],
  [
    'display: sum and integral',
    '\\sum_{k=1}^{n} k^2 = \\frac{n(n+1)(2n+1)}{6} = \\int_0^n t^2 \\, dt + O(n^2)',
    true,
  ],
  [
    'display: 3×3 matrix',
    '\\begin{pmatrix} a & b & c \\\\ d & e & f \\\\ g & h & i \\end{pmatrix}',
    true,
  ],
  [
    'display: aligned, 3 lines',
    '\\begin{aligned} (a+b)^2 &= a^2 + 2ab + b^2 \\\\ (a-b)^2 &= a^2 - 2ab + b^2 \\\\ a^2 - b^2 &= (a+b)(a-b) \\end{aligned}',
    true,
  ],
  ['invalid: \\frac{1}{', '\\frac{1}{', false],
];

function render(tex, display) {
  try {
    return temml.__renderToMathMLTree(tex, { ...OPTIONS, displayMode: display });
  } catch {
    return null; // the panel shows the source as code
  }
}

console.log(
  `\nTemml ${temml.version}, Node ${process.version}, ${reps} runs each (after ${reps / 10} warm-up):`,
);
console.log(`  ${'formula'.padEnd(40)} median    p95`);
for (const [label, tex, display] of FORMULAS) {
  for (let run = 0; run < reps / 10; run++) render(tex, display);
  const times = [];
  for (let run = 0; run < reps; run++) {
    const start = process.hrtime.bigint();
    render(tex, display);
    times.push(Number(process.hrtime.bigint() - start) / 1000);
  }
  times.sort((a, b) => a - b);
  const at = (fraction) => times[Math.min(times.length - 1, Math.floor(times.length * fraction))];
  console.log(
    `  ${label.padEnd(40)} ${at(0.5).toFixed(1).padStart(6)} µs ${at(0.95).toFixed(1).padStart(6)} µs`,
  );
}
