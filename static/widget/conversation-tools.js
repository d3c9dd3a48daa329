// The conversation's tools (docs/accessibility.md, "The conversation", A30–A36):
// New conversation (a confirmation dialog: start over, or start over and delete this
// conversation on the server), and the Options disclosure (the announcement preference,
// Download transcript). Loaded on the first press of a header button (chat.js), so none of
// it is part of the panel's first open (tests/test_budgets.py).

import { ChatClient } from './client.js';
import { button, element, showModal } from './dom.js';
import { format } from './i18n.js';
import { lazyStrings, linkStylesheet } from './lazy-parts.js';
import { reasonFor } from './refusals.js';
import { formatSize } from './sizes.js';

/** @typedef {import('./host.js').PanelHost} PanelHost */

/** @type {('sentence' | 'complete' | 'off')[]} */
const ANNOUNCE_MODES = ['sentence', 'complete', 'off'];
const ANNOUNCE_COOKIE = 'chatwidget_announce'; // web.py reads it into the panel's config
const YEAR_SECONDS = 31536000;
// How long a start-over waits for a running answer to end after its cancel.
const CANCEL_WAIT_MS = 5000;

const stylesheetUrl = new URL('./conversation-tools.css', import.meta.url).href;

// The panel's document-level Escape closes the whole chat (chat.js bind): an Escape that
// closes one of these must go no further.
function keepEscape(node, onEscape) {
  node.addEventListener('keydown', (event) => {
    if (event.key !== 'Escape') return;
    event.stopPropagation();
    onEscape?.(event);
  });
}

const state = new WeakMap(); // panel → {dialog, options}

/**
 * @param {PanelHost} host
 * @param {HTMLButtonElement} trigger
 */
export async function use(host, trigger) {
  const [strings] = await Promise.all([
    lazyStrings(host, 'conversationTools'),
    linkStylesheet(stylesheetUrl),
  ]);
  if (!strings) return; // offline before the strings came: the next press tries again
  let parts = state.get(host);
  if (!parts) {
    parts = {};
    state.set(host, parts);
  }
  if (trigger.dataset.chatTool === 'new') {
    parts.dialog ||= buildDialog(host, strings, trigger);
    showModal(parts.dialog);
  } else {
    if (!parts.options) {
      parts.options = buildOptions(host, strings, trigger);
      // "Talk to a person" (handoff.js), where the server hands conversations to people.
      if (host.config.handoff)
        await (await import('./handoff.js')).addControl(host, parts.options, () =>
          toggleOptions(trigger, parts.options),
        );
    }
    // A known visitor's Download and Erase my data (my-data.js): loaded for them only.
    if (host.client.identity || parts.myData)
      parts.myData = await (await import('./my-data.js')).place(host, parts.options);
    toggleOptions(trigger, parts.options);
  }
}

// -- New conversation ------------------------------------------------------------------------

// A modal <dialog> (HTML's dialog element: focus moves in, stays in, and Escape closes it).
// Focus starts on Cancel, the choice that changes nothing (WAI-ARIA APG, "Alert and Message
// Dialogs"), and returns to the header button when the dialog closes without a change.
/**
 * @param {PanelHost} host
 * @param {Record<string, string>} strings
 * @param {HTMLButtonElement} trigger
 */
function buildDialog(host, strings, trigger) {
  return confirmDialog(host, trigger, {
    id: 'chat-new-conversation',
    title: strings.confirmTitle,
    text: strings.confirmText,
    cancel: strings.cancel,
    choices: [
      ['button', strings.startOver, () => startOver(host, strings, false)],
      ['button button--danger', strings.startOverDelete, () => startOver(host, strings, true)],
    ],
  });
}

// The panel's one confirmation dialog, also my-data.js's (Erase my data): `choices` are
// [class, label, act]; a choice closes the dialog first, then acts, and focus goes where the
// act put it (the composer), or back to `trigger` when it changed nothing (false: an error,
// said in the assertive region) or when the dialog closes by Cancel or Escape.
/**
 * @param {PanelHost} host
 * @param {HTMLElement} trigger
 * @param {{ id: string, title: string, text: string, cancel: string,
 *   choices: [string, string, () => Promise<boolean>][] }} content
 * @returns {HTMLDialogElement}
 */
export function confirmDialog(host, trigger, { id, title, text, cancel, choices }) {
  const dialog = element('dialog', 'chat-dialog');
  dialog.id = id;
  dialog.setAttribute('aria-labelledby', `${id}-title`);
  dialog.setAttribute('aria-describedby', `${id}-text`);
  const heading = element('h2', 'chat-dialog__title', title);
  heading.id = `${id}-title`;
  const description = element('p', 'chat-dialog__text', text);
  description.id = `${id}-text`;
  let choosing = false;
  const buttons = element('div', 'chat-dialog__buttons');
  for (const [className, label, act] of choices)
    buttons.append(
      button(className, label, async () => {
        choosing = true;
        dialog.close();
        if (!(await act())) trigger.focus();
      }),
    );
  const cancelButton = button('button button--secondary', cancel, () => dialog.close());
  cancelButton.autofocus = true;
  buttons.append(cancelButton);
  dialog.append(heading, description, buttons);
  keepEscape(dialog);
  // Tab and Shift+Tab wrap inside the dialog: a modal <dialog> in an iframe would otherwise
  // let focus leave for the host page (WAI-ARIA APG, "Dialog (Modal)": Tab stays inside).
  dialog.addEventListener('keydown', (event) => {
    const ends = dialog.querySelectorAll('button');
    const [first, last] = [ends[0], ends[ends.length - 1]];
    if (
      event.key !== 'Tab' ||
      !(/** @type {Element[]} */ ([first, last]).includes(document.activeElement))
    )
      return;
    if (event.shiftKey === (document.activeElement === first)) {
      event.preventDefault();
      (event.shiftKey ? last : first).focus();
    }
  });
  dialog.addEventListener('close', () => {
    if (!choosing) trigger.focus();
    choosing = false;
  });
  host.root.append(dialog);
  return dialog;
}

// Ends the answer in progress, if any: its stream must not outlive its conversation.
/** @param {PanelHost} host */
async function stopRunning(host) {
  const run = host.currentRun();
  if (!run?.inProgress) return;
  const ended = new Promise((resolve) => {
    const timer = setTimeout(resolve, CANCEL_WAIT_MS);
    const stop = host.on('state', () => {
      if (run.inProgress || run.phase === 'verifying') return;
      clearTimeout(timer);
      stop();
      resolve();
    });
  });
  await run.cancel();
  await ended;
}

// Start over; `remove`: also delete the conversation on the server. Returns whether the
// panel changed (on an error nothing does, and the assertive region says why).
/**
 * @param {PanelHost} host
 * @param {Record<string, string>} strings
 * @param {boolean} remove
 */
async function startOver(host, strings, remove) {
  await stopRunning(host);
  const client = host.client;
  let fresh = null;
  try {
    if (remove && client.conversationId) {
      // 204; its response also expires the panel's conversation cookie (docs/protocol.md).
      await client.deleteConversation();
    } else if (client.conversationId) {
      // A new conversation at once: its response replaces the cookie that names the old
      // one, so a reload cannot bring the old conversation back.
      // A known visitor's new conversation is theirs too (client.js createConversation).
      fresh = await Object.assign(new ChatClient({ apiBase: host.config.apiBase }), {
        identity: client.identity,
      }).createConversation(host.consentBody());
    }
  } catch (error) {
    host.showAlert(format(strings.failed, { reason: await reasonFor(host, error) }));
    return false;
  }
  // Where storage is blocked, the new conversation's cookie names it.
  if (fresh) host.remember(fresh);
  else host.forget();
  host.clearTranscript();
  host.announcer.interrupt(remove ? strings.deleted : strings.started);
  host.input.focus();
  host.emit('conversation', {
    reason: remove ? 'deleted' : 'new',
    conversationId: client.conversationId,
  });
  return true;
}

// -- Options: announcement preference, download ----------------------------------------------

// A disclosure (WAI-ARIA APG, "Disclosure"): the button's aria-expanded says whether the
// section below the header is shown; Escape inside it closes it and returns focus.
/**
 * @param {PanelHost} host
 * @param {Record<string, string>} strings
 * @param {HTMLButtonElement} trigger
 */
function buildOptions(host, strings, trigger) {
  const section = element('section', 'chat-options');
  section.id = 'chat-options';
  section.setAttribute('aria-label', strings.settingsLabel);
  section.hidden = true;
  const fieldset = element('fieldset', 'chat-options__group');
  fieldset.append(element('legend', '', strings.announceLegend));
  const labels = {
    sentence: strings.announceSentence,
    complete: strings.announceComplete,
    off: strings.announceOff,
  };
  for (const mode of ANNOUNCE_MODES) {
    const label = element('label', 'chat-options__choice');
    const radio = document.createElement('input');
    radio.type = 'radio';
    radio.name = 'chat-announce';
    radio.value = mode;
    radio.checked = host.announcer.mode === mode;
    radio.addEventListener('change', () => setAnnounceMode(host, mode));
    label.append(radio, ` ${labels[mode]}`);
    fieldset.append(label);
  }
  section.append(
    fieldset,
    button('button button--secondary', strings.download, () => download(host, strings)),
  );
  keepEscape(section, () => {
    toggleOptions(trigger, section);
    trigger.focus();
  });
  // Escape on the button of the open section closes the section, not the chat.
  trigger.addEventListener('keydown', (event) => {
    if (event.key === 'Escape' && !section.hidden) {
      event.stopPropagation();
      toggleOptions(trigger, section);
    }
  });
  trigger.setAttribute('aria-controls', section.id);
  trigger.closest('header').after(section);
  return section;
}

function toggleOptions(trigger, section) {
  const open = section.hidden;
  section.hidden = !open;
  trigger.setAttribute('aria-expanded', String(open));
}

// Per browser and embedding site: a partitioned cookie (CHIPS), which a third-party iframe
// may set where its storage is blocked (Debian's Chromium); the server reads it into the
// next panel's config (web.py), so even the first answer after a reload follows it
// (docs/accessibility.md A34).
/**
 * @param {PanelHost} host
 * @param {'sentence' | 'complete' | 'off'} mode
 */
function setAnnounceMode(host, mode) {
  host.announcer.mode = mode;
  // biome-ignore lint/suspicious/noDocumentCookie: a partitioned cookie the server reads (web.py); document.cookie sets it in both browsers tested.
  document.cookie = `${ANNOUNCE_COOKIE}=${mode}; Max-Age=${YEAR_SECONDS}; Path=/; Secure; SameSite=None; Partitioned`;
}

// -- Download transcript ---------------------------------------------------------------------

export function today() {
  const now = new Date();
  return [now.getFullYear(), now.getMonth() + 1, now.getDate()]
    .map((part) => String(part).padStart(2, '0'))
    .join('-');
}

// The completed turns as Markdown: each question and its completed answer, from the
// server's history (the answers' Markdown source, exactly as verified; docs/accessibility.md A36).
// A question's files follow it, one line each: name, size and the SHA-256 the server computed,
// so the file a reader keeps can be checked against the one sent (docs/protocol.md, "History");
// an answer's sources follow it, one line each: its marker, title and address.
export function transcriptMarkdown(
  title,
  date,
  messages,
  you,
  assistant,
  files = null,
  sourcesLabel = '',
) {
  const parts = [`# ${title} (${date})`];
  for (let i = 0; i + 1 < messages.length; i++) {
    const [question, answer] = [messages[i], messages[i + 1]];
    if (question.role !== 'user' || answer.role !== 'assistant' || answer.state !== 'completed')
      continue;
    parts.push(`## ${you}`);
    if (question.text) parts.push(question.text);
    if (files && question.attachments?.length)
      parts.push(
        `${files.label}\n\n${question.attachments
          .map((file) => `- ${file.name} (${files.size(file.size)}, SHA-256 ${file.sha256})`)
          .join('\n')}`,
      );
    parts.push(`## ${assistant}`, answer.text);
    if (sourcesLabel && answer.sources?.length)
      parts.push(
        `${sourcesLabel}\n\n${answer.sources
          .map(
            (source) => `- [${source.id}] ${source.title}${source.url ? ` <${source.url}>` : ''}`,
          )
          .join('\n')}`,
      );
    i++;
  }
  return parts.length > 1 ? `${parts.join('\n\n')}\n` : '';
}

/**
 * @param {PanelHost} host
 * @param {Record<string, string>} strings
 */
async function download(host, strings) {
  let markdown = '';
  try {
    if (host.client.conversationId) {
      markdown = transcriptMarkdown(
        document.title,
        today(),
        await host.client.history(),
        host.strings.you,
        host.strings.assistant,
        {
          label: strings.transcriptFiles,
          size: (bytes) => formatSize(bytes, host.config.lang),
        },
        strings.transcriptSources,
      );
    }
  } catch (error) {
    host.showAlert(format(strings.downloadFailed, { reason: await reasonFor(host, error) }));
    return;
  }
  if (!markdown) {
    host.announcer.cue(strings.downloadEmpty);
    return;
  }
  offerFile(markdown, 'text/markdown;charset=utf-8', format(strings.fileName, { date: today() }));
  host.announcer.cue(strings.downloaded);
}

// A Blob and <a download>: no navigation, so the panel's CSP has nothing to allow. Also the
// visitor's own data (my-data.js).
/**
 * @param {string} text
 * @param {string} type
 * @param {string} name
 */
export function offerFile(text, type, name) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const link = element('a');
  link.href = url;
  link.download = name;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}
