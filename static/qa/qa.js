// The QA page: play scenarios in the real, embedded widget and log what it reports.
//
// The widget is embedded exactly as on a site: the loader's <script> with
// data-* attributes (inline, data-target). Changing a setting re-mounts it: a
// fresh loader script with the new attributes (faults, language, reduced
// motion, announcement pacing), as a site would serve after an edit. The
// panel is on this page's origin, so the log listens to its chatwidget:*
// events (docs/events.md) on the panel's document, and Play types into its
// composer. Every string comes from static/qa/i18n/<lang>.json, via the page.

import { format } from '../widget/i18n.js';

const config = JSON.parse(document.getElementById('qa-config').textContent);
const t = config.strings;
const EVENT_NAMES = ['announce', 'state', 'event', 'focus', 'ready'];
const BUSY_STATES = new Set(['streaming', 'reconnecting']);

/** @type {(id: string) => any} the page's own elements (templates/qa.html) */
const $ = (id) => document.getElementById(id);
const form = $('qa-form');
const scenarioSelect = $('qa-scenario');
const target = document.querySelector(config.target);
const logBody = $('qa-log-body');
const logScroller = /** @type {HTMLElement} */ (document.querySelector('.qa-log__scroller'));
// The log is a tab stop exactly while it scrolls, like the panel's transcript
// (docs/accessibility.md A37): keyboard users can scroll it then, and IBM ACE
// (element_tabbable_role_valid) flags a focusable region that scrolls nothing.
const logStop = new ResizeObserver(() => {
  if (
    logScroller.scrollHeight > logScroller.clientHeight ||
    logScroller.scrollWidth > logScroller.clientWidth
  )
    logScroller.tabIndex = 0;
  else logScroller.removeAttribute('tabindex');
});
logStop.observe(logScroller);
logStop.observe(logScroller.firstElementChild); // the table: rows added or cleared
const statusLine = $('qa-status');

const items = new Map(config.items.map((item) => [item.id, item]));
const session = { startedAt: new Date().toISOString(), origin: performance.now(), log: [] };

let mounted = null; // the settings the widget was last mounted with
/**
 * The embedded panel: its iframe, document and window once it is ready.
 * @typedef {object} MountedPanel
 * @property {HTMLIFrameElement | null} frame
 * @property {Document | null} doc
 * @property {any} win The panel's window (its `chatPanel`, its own `Event`).
 * @property {boolean} isReady
 * @property {Promise<MountedPanel>} [ready]
 */
/** @type {MountedPanel | null} */
let panel = null;
let readyResolve = null;
let lastDownload = null;

// -- the form -----------------------------------------------------------------

function positive(input) {
  const value = input.value.trim();
  if (!value || !input.checkValidity()) return '';
  const number = Number(value);
  return Number.isInteger(number) && number >= 1 && number <= 999999 ? String(number) : '';
}

function faultsValue() {
  if (!config.faultsEnabled) return '';
  const parts = [];
  const drop = positive($('qa-drop-after'));
  const duplicate = positive($('qa-duplicate'));
  const skip = positive($('qa-skip'));
  if (drop) parts.push(`drop-after=${drop}`);
  if (duplicate) parts.push(`duplicate=${duplicate}`);
  if (skip) parts.push(`skip=${skip}`);
  if ($('qa-snapshot').checked) parts.push('snapshot');
  return parts.join(',');
}

function announceInterval() {
  const input = $('qa-announce-interval');
  const number = Number(input.value);
  if (!input.value.trim() || !Number.isFinite(number)) return config.defaults.announceInterval;
  return Math.min(10000, Math.max(100, Math.round(number)));
}

function settings() {
  return {
    lang: $('qa-lang').value,
    faults: faultsValue(),
    reducedMotion: $('qa-reduced-motion').checked,
    announceInterval: announceInterval(),
  };
}

function sameSettings(a, b) {
  return (
    !!a &&
    !!b &&
    ['lang', 'faults', 'reducedMotion', 'announceInterval'].every((key) => a[key] === b[key])
  );
}

function currentItem() {
  return items.get(scenarioSelect.value) || config.items[0];
}

function refreshForm() {
  const item = currentItem();
  $('qa-scenario-description').textContent = item.description;
  $('qa-command-text').textContent = item.command;
  const url = new URL(config.scriptUrl, location.href);
  url.searchParams.set('scenario', item.id);
  url.searchParams.set('lang', $('qa-lang').value);
  $('qa-script-link').href = url.pathname + url.search;
  $('qa-faults-value').textContent = faultsValue() || t.none;
}

// -- the log --------------------------------------------------------------------

function elapsedMs() {
  return Math.round(performance.now() - session.origin);
}

function addEntry(kind, value, text, details = {}) {
  const entry = {
    ms: elapsedMs(),
    kind,
    value: String(value ?? ''),
    text: String(text ?? ''),
    ...details,
  };
  session.log.push(entry);
  const row = document.createElement('tr');
  row.dataset.kind = kind;
  const cells = [(entry.ms / 1000).toFixed(3), t.kinds?.[kind] || kind, entry.value, entry.text];
  cells.forEach((content, index) => {
    const cell = document.createElement(index === 0 ? 'th' : 'td');
    if (index === 0) cell.scope = 'row';
    cell.textContent = content;
    row.append(cell);
  });
  const follow = logScroller.scrollHeight - logScroller.scrollTop - logScroller.clientHeight < 48;
  logBody.append(row);
  if (follow) logScroller.scrollTop = logScroller.scrollHeight;
  $('qa-log-count').textContent = format(t.logCount, { count: session.log.length });
  return entry;
}

function clearLog() {
  session.log = [];
  session.startedAt = new Date().toISOString();
  session.origin = performance.now();
  logBody.replaceChildren();
  $('qa-log-count').textContent = format(t.logCount, { count: 0 });
  statusLine.textContent = t.cleared;
}

// What the panel reports, from its own document.
function onPanelEvent(doc, event) {
  const name = event.type.slice('chatwidget:'.length);
  const detail = event.detail || {};
  if (name === 'announce') {
    addEntry('announce', detail.politeness, detail.text, { politeness: detail.politeness });
  } else if (name === 'state') {
    // aria-busy as it really is on the answer, read back from the DOM.
    const selector = detail.messageId ? `[data-message-id="${CSS.escape(detail.messageId)}"]` : '';
    const answers = doc.querySelectorAll('[data-chat-transcript] > li.turn--assistant');
    const turn = (selector && doc.querySelector(selector)) || answers[answers.length - 1];
    const busy = turn ? turn.getAttribute('aria-busy') === 'true' : BUSY_STATES.has(detail.state);
    addEntry('state', detail.state, busy ? t.busyOn : t.busyOff, {
      state: detail.state,
      messageId: detail.messageId || '',
      busy,
      terminal: !BUSY_STATES.has(detail.state),
    });
  } else if (name === 'event') {
    addEntry('event', detail.outcome, `${detail.type} #${detail.seq}`, {
      type: detail.type,
      seq: detail.seq,
      outcome: detail.outcome,
    });
  } else if (name === 'focus') {
    addEntry('focus', detail.target, '', { target: detail.target });
  } else if (name === 'ready') {
    markReady();
  }
}

function markReady() {
  if (!panel || panel.isReady) return;
  panel.isReady = true;
  addEntry('ready', '', '');
  if (readyResolve) readyResolve(panel);
}

function attach(frame) {
  let doc;
  try {
    doc = frame.contentDocument;
  } catch {
    doc = null;
  }
  if (doc && doc.location.href === 'about:blank') return; // not the panel yet
  const root = doc?.querySelector('[data-chat-panel]');
  if (!root) {
    statusLine.textContent = t.noPanel;
    return;
  }
  panel.frame = frame;
  panel.doc = doc;
  panel.win = frame.contentWindow;
  // An inline embed is open from the start, so on load the loader tells the
  // panel it was opened, and the panel puts focus in its composer: here that
  // would pull the tester's focus away from these controls at every
  // (re-)mount. This runs before the loader's own load listener (capture
  // phase, see watchFrames), so that one message is held back; Play moves
  // focus into the panel when the tester asks for it.
  const post = panel.win.postMessage.bind(panel.win);
  panel.win.postMessage = (message, ...rest) => {
    if (message && message.type === 'chatwidget:opened') return;
    post(message, ...rest);
  };
  for (const name of EVENT_NAMES)
    doc.addEventListener(`chatwidget:${name}`, (event) => onPanelEvent(doc, event));
  if (root.dataset.ready === 'true') markReady(); // it was ready before this page could listen
}

function watchFrames() {
  // 'load' does not bubble, but its capture phase passes through the target
  // element first: this runs before the listener the loader put on the frame.
  target.addEventListener(
    'load',
    (event) => {
      if (event.target.nodeName === 'IFRAME' && panel && !panel.doc) attach(event.target);
    },
    true,
  );
}

// -- mounting the widget -----------------------------------------------------------------

function newPanel() {
  panel = { frame: null, doc: null, win: null, isReady: false };
  panel.ready = new Promise((resolve) => {
    readyResolve = resolve;
  });
}

function attributesOf(script) {
  return Array.from(script.attributes)
    .filter(
      (attribute) => attribute.name.startsWith('data-') && attribute.name !== 'data-qa-loader',
    )
    .map((attribute) => `${attribute.name}="${attribute.value}"`)
    .join(' ');
}

function noteMount(script, values) {
  mounted = values;
  const attributes = attributesOf(script);
  $('qa-mounted').textContent = attributes;
  addEntry('mount', values.lang, attributes, { settings: { ...values } });
}

function mount(values) {
  // The loader runs once per page (window.ChatWidget); a new embed is a new loader run.
  for (const old of document.querySelectorAll('script[data-qa-loader]')) old.remove();
  target.replaceChildren();
  delete window.ChatWidget;
  newPanel();
  const script = document.createElement('script');
  script.src = config.loaderSrc;
  script.setAttribute('data-qa-loader', '');
  script.dataset.target = config.target;
  script.dataset.lang = values.lang;
  if (values.faults) script.dataset.faults = values.faults;
  if (values.reducedMotion) script.dataset.reducedMotion = 'true';
  script.dataset.announceInterval = String(values.announceInterval);
  noteMount(script, values);
  document.body.append(script);
  return panel.ready;
}

// -- playing ---------------------------------------------------------------------------

async function play() {
  const item = currentItem();
  const values = settings();
  if (!sameSettings(values, mounted)) await mount(values);
  const { doc, win } = await panel.ready;
  const input = /** @type {HTMLTextAreaElement} */ (doc.querySelector('[data-chat-input]'));
  addEntry('play', item.id, item.command, {
    scenario: item.scenario,
    command: item.command,
    faults: values.faults,
  });
  input.value = item.command;
  input.dispatchEvent(new win.Event('input', { bubbles: true }));
  if ($('qa-focus-composer').checked) {
    panel.frame.focus();
    input.focus();
  }
  win.chatPanel.submit();
}

// -- export ------------------------------------------------------------------------------

function exportSession() {
  const item = currentItem();
  const values = mounted || settings();
  const data = {
    tool: 'widget_server QA page',
    startedAt: session.startedAt,
    exportedAt: new Date().toISOString(),
    page: location.href,
    userAgent: navigator.userAgent,
    scenario: { id: item.id, scenario: item.scenario, command: item.command },
    faults: values.faults,
    language: values.lang,
    reducedMotion: values.reducedMotion,
    announceIntervalMs: values.announceInterval,
    columns: [t.colTime, t.colKind, t.colValue, t.colText],
    log: session.log,
  };
  const stamp = data.exportedAt.replace(/[:.]/g, '-');
  const file = `chatwidget-qa-${item.id}-${stamp}.json`;
  const blob = new Blob([`${JSON.stringify(data, null, 2)}\n`], { type: 'application/json' });
  if (lastDownload) {
    URL.revokeObjectURL(lastDownload.href);
    lastDownload.remove();
  }
  const link = document.createElement('a');
  link.href = URL.createObjectURL(blob);
  link.download = file;
  link.className = 'qa-download';
  link.textContent = format(t.downloadAgain, { file });
  statusLine.after(link); // stays as a visible link to download it again
  lastDownload = link;
  link.click();
  statusLine.textContent = format(t.exported, { file });
}

// -- wiring --------------------------------------------------------------------------------

function start() {
  newPanel();
  watchFrames();
  const initial = /** @type {HTMLScriptElement | null} */ (
    document.querySelector('script[data-qa-loader]')
  );
  const existing = target.querySelector('iframe');
  if (existing?.contentDocument?.readyState === 'complete') attach(existing);
  if (initial) {
    noteMount(initial, {
      lang: initial.dataset.lang || config.defaults.lang,
      faults: initial.dataset.faults || '',
      reducedMotion: !!initial.dataset.reducedMotion,
      announceInterval:
        Number(initial.dataset.announceInterval) || config.defaults.announceInterval,
    });
  } else {
    mount(settings());
  }
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (!form.reportValidity()) return;
    play();
  });
  form.addEventListener('input', refreshForm);
  form.addEventListener('change', refreshForm);
  $('qa-remount').addEventListener('click', () => {
    if (form.reportValidity()) mount(settings());
  });
  $('qa-export').addEventListener('click', exportSession);
  $('qa-clear').addEventListener('click', clearLog);
  refreshForm();
}

start();
