// Builds static/min/: the copies of static/ that the server serves by default
// (the ASSETS setting, docs/configuration.md). JavaScript and CSS are minified
// by esbuild (pinned in package.json), JSON is re-serialised without spaces,
// everything else is copied as is. The sources stay the readable, commented
// files under static/; static/min/ is generated, committed (a `pip install .`
// needs no Node.js) and checked fresh by the gate (`--check`, run by
// .ci/test --lint) and rebuilt by the test session when a source changed
// (tests/conftest.py), so tests always run what visitors are sent.
//
//   node .ci/js/build.mjs           write static/min/ (only the files that changed)
//   node .ci/js/build.mjs --check   exit 1, naming the files, if static/min/ is stale
//   node .ci/js/build.mjs [--check] FOLDER   the same for another static/ folder

import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const esbuild = require('esbuild');

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
// Another static/ folder may be named (e.g. a `git archive` of a commit's); default: ours.
const named = process.argv.slice(2).find((argument) => !argument.startsWith('--'));
const source = named ? path.resolve(named) : path.join(root, 'static');
const output = path.join(source, 'min');

// No `target`: esbuild then lowers no syntax (esnext), so what runs is what the
// sources say. `charset: utf8` keeps non-ASCII text as itself, smaller than \u
// escapes; legal comments are none of ours.
const common = { minify: true, charset: 'utf8', legalComments: 'none' };

async function* sourceFiles(folder) {
  for (const entry of await readdir(folder, { withFileTypes: true })) {
    const full = path.join(folder, entry.name);
    if (entry.isDirectory()) {
      if (full !== output) yield* sourceFiles(full);
    } else {
      yield full;
    }
  }
}

async function built(file) {
  const bytes = await readFile(file);
  const extension = path.extname(file);
  if (extension === '.js') {
    // The loader (widget.js) is a classic script; every other file is an ES module.
    const format = path.relative(source, file) === 'widget.js' ? undefined : 'esm';
    const result = await esbuild.transform(bytes.toString('utf8'), {
      ...common,
      loader: 'js',
      format,
      sourcefile: path.relative(root, file),
    });
    return Buffer.from(result.code, 'utf8');
  }
  if (extension === '.css') {
    const result = await esbuild.transform(bytes.toString('utf8'), {
      ...common,
      loader: 'css',
      sourcefile: path.relative(root, file),
    });
    return Buffer.from(result.code, 'utf8');
  }
  if (extension === '.json') {
    return Buffer.from(JSON.stringify(JSON.parse(bytes.toString('utf8'))), 'utf8');
  }
  return bytes;
}

async function existing(file) {
  try {
    return await readFile(file);
  } catch {
    return null;
  }
}

async function main() {
  const check = process.argv.includes('--check');
  const wanted = new Set();
  const stale = [];
  for await (const file of sourceFiles(source)) {
    const relative = path.relative(source, file);
    const target = path.join(output, relative);
    wanted.add(target);
    const body = await built(file);
    const current = await existing(target);
    if (current?.equals(body)) continue;
    stale.push(relative);
    if (!check) {
      await mkdir(path.dirname(target), { recursive: true });
      await writeFile(target, body);
    }
  }
  // Files whose source is gone.
  for await (const file of sourceFilesOf(output)) {
    if (wanted.has(file)) continue;
    stale.push(`${path.relative(output, file)} (no source)`);
    if (!check) await rm(file);
  }
  if (check && stale.length) {
    console.error(
      `static/min/ is stale (run: node .ci/js/build.mjs, then commit static/min/):\n  ${stale.join('\n  ')}`,
    );
    process.exit(1);
  }
  if (!check && stale.length)
    console.log(`static/min/: ${stale.length} file(s) written or removed`);
}

async function* sourceFilesOf(folder) {
  try {
    yield* sourceFiles(folder);
  } catch (error) {
    if (error.code !== 'ENOENT') throw error;
  }
}

await main();
