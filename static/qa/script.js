// The expected-script page (/qa/script): a printable checklist of what a
// screen reader should say for one scenario (docs/configuration.md, "The QA
// page"). The server renders the page around the steps and gives, in
// #qa-script-config, the scenario's answer and how it ends; the steps heard
// are computed here by ./expected.js with the panel's own renderer and
// announcer, and inserted before the "focus" step. Every string comes from
// static/qa/i18n/<lang>.json (`strings`) or the panel's
// static/widget/i18n/<lang>.json (`widgetStrings`), via the page.

import { format, plural } from '../widget/i18n.js';
import { expectedScript } from './expected.js';

const config = JSON.parse(document.getElementById('qa-script-config').textContent);
const t = config.strings;
const steps = document.getElementById('qa-steps');
const stepsAfterTheAnswer = steps.querySelector('[data-step="focus"]');

function checkbox(id, text) {
  const input = document.createElement('input');
  input.type = 'checkbox';
  input.id = id;
  const label = document.createElement('label');
  label.htmlFor = id;
  label.textContent = text;
  return [input, label];
}

function addStep(name, politeness, text) {
  const step = document.createElement('li');
  step.className = 'qa-check';
  step.dataset.step = name;
  if (politeness) step.dataset.politeness = politeness;
  step.append(...checkbox(`step-${name}`, text));
  steps.insertBefore(step, stepsAfterTheAnswer);
  return step;
}

// The sentences, one checkbox each, up to `config.maxSentences` (the `bulk`
// answer has thousands); the rest are counted.
function addSentences(script) {
  const { sentences } = script;
  const step = document.createElement('li');
  step.dataset.step = 'sentences';
  step.dataset.politeness = 'polite';
  step.dataset.optional = String(script.sentencesMayBeDropped);
  const heading = document.createElement('p');
  heading.id = 'step-sentences-label';
  heading.textContent = script.sentencesMayBeDropped
    ? t.stepSentencesMaybe
    : plural(t.stepSentences, sentences.length, config.lang);
  const list = document.createElement('ol');
  list.className = 'qa-sentences';
  list.setAttribute('aria-labelledby', heading.id);
  const listed = sentences.slice(0, config.maxSentences);
  listed.forEach((sentence, index) => {
    const item = document.createElement('li');
    item.className = 'qa-check';
    const [input, label] = checkbox(`sentence-${index + 1}`, sentence);
    label.dataset.sentence = '';
    item.append(input, label);
    list.append(item);
  });
  step.append(heading, list);
  const more = sentences.length - listed.length;
  if (more > 0) {
    const rest = document.createElement('p');
    rest.textContent = plural(t.stepSentencesMore, more, config.lang);
    step.append(rest);
  }
  steps.insertBefore(step, stepsAfterTheAnswer);
}

function render() {
  const script = expectedScript(config.answer, {
    lang: config.lang,
    strings: config.widgetStrings,
    errorCode: config.errorCode,
    sentencesMayBeDropped: config.sentencesMayBeDropped,
    progress: config.progress,
    sources: config.sources,
  });
  steps.dataset.outcome = script.outcome;
  addStep('generating', 'polite', format(t.stepGenerating, { text: script.generating }));
  for (const [index, line] of script.progress.entries())
    addStep(`progress-${index + 1}`, 'polite', format(t.stepProgress, { text: line }));
  if (script.sentences.length) addSentences(script);
  if (script.error) {
    const late = config.failsLate
      ? ` ${format(t.stepErrorLate, { seconds: config.timeLimitSeconds })}`
      : '';
    addStep('error', 'assertive', format(t.stepError, { text: script.error }) + late);
    addStep('nothing-more', null, t.stepNothingMore);
  } else {
    addStep('complete', 'polite', format(t.stepComplete, { text: script.completion }));
    if (script.sources)
      addStep('sources', 'polite', format(t.stepSources, { text: script.sources }));
  }
  steps.dataset.ready = 'true';
}

render();
