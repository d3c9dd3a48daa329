// A known visitor's own data, from the panel's Options (docs/privacy.md, "The visitor's own
// controls"; docs/accessibility.md A121–A123): Download my data (`GET /api/v1/me/export`, the
// JSON Lines of everything the chat holds of them) and Erase my data (`DELETE /api/v1/me`,
// after a confirmation), each with the site's identity token as its Bearer. conversation-tools.js
// imports this module when the Options open for a known visitor only; its strings ride in the
// Conversations view's file (i18n/conversations/<lang>.json), which only known visitors fetch:
// none of it is part of a first open (tests/test_budgets.py).

import { ChatClient } from './client.js';
import { confirmDialog, offerFile, today } from './conversation-tools.js';
import { button, element, showModal } from './dom.js';
import { format } from './i18n.js';
import { forgetHere, refused } from './identity.js';
import { lazyStrings } from './lazy-parts.js';
import { reasonFor } from './refusals.js';

/** @typedef {import('./host.js').PanelHost} PanelHost */

/** @type {WeakMap<PanelHost, HTMLFieldSetElement>} */
const groups = new WeakMap();

// The group in the Options section, drawn once, shown while the site gives a token. Resolves
// to it, or null when its strings cannot be had right now (offline: the next opening tries).
/**
 * @param {PanelHost} host
 * @param {HTMLElement} options
 * @returns {Promise<HTMLFieldSetElement | null>}
 */
export async function place(host, options) {
  let group = groups.get(host);
  if (!group) {
    const strings = await lazyStrings(host, 'myData', 'conversations/');
    if (!strings) return null;
    group = build(host, strings);
    options.append(group);
    groups.set(host, group);
  }
  group.hidden = !host.client.identity;
  return group;
}

/**
 * @param {PanelHost} host
 * @param {Record<string, string>} strings
 * @returns {HTMLFieldSetElement}
 */
function build(host, strings) {
  const group = /** @type {HTMLFieldSetElement} */ (element('fieldset', 'chat-options__group'));
  group.id = 'chat-my-data'; // hidden by identity.js at a sign-out
  group.append(element('legend', '', strings.legend));
  /** @type {HTMLDialogElement | null} */
  let dialog = null;
  const erase = button('button button--secondary', strings.erase, () => {
    dialog ||= confirmDialog(host, erase, {
      id: 'chat-erase-my-data',
      title: strings.confirmTitle,
      text: strings.confirmText,
      cancel: strings.cancel,
      choices: [['button button--danger', strings.confirmErase, () => eraseAll(host, strings)]],
    });
    showModal(dialog);
  });
  group.append(
    button('button button--secondary', strings.download, () => download(host, strings)),
    erase,
  );
  return group;
}

// The visitor's own client: the identity token alone is the Bearer (client.js `bearer`), never
// the token of the conversation on screen, which may be anonymous.
/** @param {PanelHost} host */
function own(host) {
  return Object.assign(new ChatClient({ apiBase: host.config.apiBase }), {
    identity: host.client.identity,
  });
}

// A refusal is said in the assertive region (A6), never as an answer; a refused identity token
// is told to the site as a send's is (identity.js).
/**
 * @param {PanelHost} host
 * @param {string} sentence
 * @param {any} error
 */
async function fail(host, sentence, error) {
  refused(host, error);
  host.showAlert(format(sentence, { reason: await reasonFor(host, error) }));
}

/**
 * @param {PanelHost} host
 * @param {Record<string, string>} strings
 */
async function download(host, strings) {
  let lines = '';
  try {
    lines = await (
      await own(host).requestWithToken('GET', `${host.config.apiBase}/me/export`)
    ).text();
  } catch (error) {
    await fail(host, strings.downloadFailed, error);
    return;
  }
  if (!lines) {
    host.announcer.cue(strings.downloadEmpty);
    return;
  }
  offerFile(lines, 'application/x-ndjson', format(strings.fileName, { date: today() }));
  host.announcer.cue(strings.downloaded);
}

// Erased on the server, then forgotten here as at a sign-out (identity.js): the visitor stays
// signed in, and their next message starts a conversation of theirs again. Returns whether it
// happened (conversation-tools.js confirmDialog: focus goes back to the button otherwise).
/**
 * @param {PanelHost} host
 * @param {Record<string, string>} strings
 * @returns {Promise<boolean>}
 */
async function eraseAll(host, strings) {
  try {
    await own(host).requestWithToken('DELETE', `${host.config.apiBase}/me`);
  } catch (error) {
    await fail(host, strings.eraseFailed, error);
    return false;
  }
  await forgetHere(host, 'erased');
  host.announcer.interrupt(strings.erased);
  host.input.focus();
  return true;
}
