// "How was your conversation?" after a person ended the hand-off (docs/accessibility.md
// A125–A126; the wire contract in docs/protocol.md, "Satisfaction").
//
// handoff.js imports this module when a person ends the hand-off (`handoff.ended`, reason
// `ended` or `returned`), or when a reloaded panel's config says that hand-off is still
// unrated: none of it is part of the panel's first open (tests/test_budgets.py), and its
// strings (static/widget/i18n/satisfaction/<lang>.json, a file of their own so that the first
// open's i18n/<lang>.json does not grow) and stylesheet load with it.
//
// The question is a form at the end of the transcript: a <fieldset> whose <legend> asks it,
// five native radio buttons, each with its word ("Very poor" … "Very good": arrows move within
// the group, as a radio group's do), an optional comment with its label, Send and Skip. It
// never takes the focus when it appears: it is said once, politely, through the panel's one
// announcer (the `say` handoff.js gives, which waits for a focus change to settle). Sent, it
// becomes a thank-you line, said once; skipped, it goes. Either way a focus that was inside
// it goes to the composer, where the visitor goes on (A126).
//
// Skip sends nothing: it is remembered in this browser for that hand-off only (one entry,
// replaced by the next skip), so a reload does not ask again; without storage (a third-party
// frame that may not use it) a reload asks once more.

import { button, element } from './dom.js';
import { format } from './i18n.js';
import { lazyStrings, linkStylesheet } from './lazy-parts.js';
import { reasonFor } from './refusals.js';

/** @typedef {import('./host.js').PanelHost} PanelHost */
/** @typedef {import('./client.js').ChatClient} ChatClient */

const stylesheetUrl = new URL('./satisfaction.css', import.meta.url).href;
const SKIPPED_KEY = 'chatwidget-satisfaction-skipped';
// The most a comment may hold (wire/bodies.py SATISFACTION_COMMENT_MAX_CHARS).
const COMMENT_MAX_CHARS = 1000;
const RATINGS = [1, 2, 3, 4, 5];

/**
 * @param {string} conversationId
 * @param {number} handoff
 */
function skipKey(conversationId, handoff) {
  return `${conversationId}:${handoff}`;
}

/** @param {string} key */
function wasSkipped(key) {
  try {
    return localStorage.getItem(SKIPPED_KEY) === key;
  } catch {
    return false; // storage refused (a third-party frame): asked again after a reload
  }
}

/** @param {string} key */
function rememberSkip(key) {
  try {
    localStorage.setItem(SKIPPED_KEY, key);
  } catch {
    // Not kept: a reload asks again, which is all it costs.
  }
}

/**
 * @typedef {object} Asking
 * @property {ChatClient} api The hand-off's client, pinned to its conversation.
 * @property {number} handoff The hand-off: its `handoff.ended` event's seq.
 * @property {boolean} announce Say the question (false after a reload: shown, not said again).
 * @property {(text: string) => void} say The hand-off's polite voice (handoff.js Handoff.say).
 * @property {(node: HTMLElement) => void} focus Move the focus (handoff.js Handoff.focus).
 */

/**
 * Ask, unless this hand-off's question was skipped here. Resolves to the question's transcript
 * item (to remove when a new hand-off begins), or null when nothing was asked.
 * @param {PanelHost} host
 * @param {Asking} asking
 * @returns {Promise<HTMLLIElement | null>}
 */
export async function ask(host, { api, handoff, announce, say, focus }) {
  const key = skipKey(api.conversationId, handoff);
  if (wasSkipped(key)) return null;
  const [strings] = await Promise.all([
    lazyStrings(host, 'satisfaction', 'satisfaction/'),
    linkStylesheet(stylesheetUrl),
  ]);
  if (!strings) return null; // offline: a reload asks again
  const id = `satisfaction-${handoff}`;
  const item = element('li', 'satisfaction');
  item.dataset.handoff = String(handoff);
  const form = element('form', 'satisfaction__form');
  form.noValidate = true; // a missing rating is said our way: in words, by the group (A126)
  const group = element('fieldset', 'satisfaction__rating');
  const legend = element('legend', 'satisfaction__question', strings.question);
  const choices = element('div', 'satisfaction__choices');
  const radios = RATINGS.map((rating) => {
    const label = element('label', 'satisfaction__choice');
    const input = element('input', 'satisfaction__radio');
    input.type = 'radio';
    input.name = id;
    input.value = String(rating);
    label.append(input, element('span', 'satisfaction__word', strings[`rating${rating}`]));
    choices.append(label);
    return input;
  });
  const error = element('p', 'satisfaction__error');
  error.id = `${id}-error`;
  error.hidden = true;
  group.setAttribute('aria-describedby', error.id);
  group.append(legend, choices, error);
  const commentLabel = element('label', 'satisfaction__label', strings.comment);
  commentLabel.htmlFor = `${id}-comment`;
  const comment = element('textarea', 'satisfaction__comment');
  comment.id = `${id}-comment`;
  comment.rows = 2;
  comment.maxLength = COMMENT_MAX_CHARS;
  const send = element('button', 'button', strings.send);
  send.type = 'submit';
  const buttons = element('div', 'satisfaction__buttons');
  buttons.append(
    send,
    button('button button--secondary', strings.skip, () => {
      rememberSkip(key);
      close(null);
    }),
  );
  form.append(group, commentLabel, comment, buttons);
  item.append(form);

  // The question goes; `text`, if any, stays in its place and is said. A focus inside it goes
  // to the composer rather than to the page's start.
  const close = (/** @type {string | null} */ text) => {
    const hadFocus = item.contains(document.activeElement);
    if (text) item.replaceChildren(element('p', 'satisfaction__thanks', text));
    else item.remove();
    if (hadFocus) focus(host.input);
    if (text) say(text);
  };

  let sending = false;
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const chosen = radios.find((radio) => radio.checked);
    error.hidden = !!chosen;
    error.textContent = chosen ? '' : strings.choose;
    if (!chosen) {
      radios[0].focus();
      host.showAlert(strings.choose);
      return;
    }
    if (sending) return; // one request at a time; the button keeps the focus meanwhile
    sending = true;
    const text = comment.value.trim();
    const body = { handoff, rating: Number(chosen.value), ...(text ? { comment: text } : {}) };
    try {
      // The same answer again is the stored one (200): a Send after a lost response is safe.
      await api.requestWithToken('POST', `${api.conversationUrl}/satisfaction`, body);
    } catch (failure) {
      sending = false;
      // 409: answered in another tab or on another device (the first answer stands), or a new
      // hand-off began: the question goes and the server's reason is said, in the panel's
      // language (refusals.js). Told by its status, not its code, so that the first open's
      // protocol.js does not grow for a module loaded this late (tests/test_budgets.py).
      if (failure?.status === 409) {
        close(null);
        host.showAlert(await reasonFor(host, failure));
      } else host.showAlert(format(strings.failed, { reason: await reasonFor(host, failure) }));
      return;
    }
    close(strings.thanks);
  });

  host.addToTranscript(item);
  host.scrollToEnd();
  if (announce) say(strings.asked);
  return item;
}
