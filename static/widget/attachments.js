// Attachments on the visitor's side (docs/accessibility.md A94–A99): files chosen
// with the Attach button, dropped on the panel or pasted into the composer are uploaded at
// once (POST …/attachments, docs/protocol.md "Attachments"), listed with their progress and
// Remove buttons, and sent with the next question by chat.js `submit()`. Loaded on the first
// press of Attach, the first drag over the panel or the first paste of a file (chat.js), so
// none of it is part of the panel's first open (tests/test_budgets.py).

import { newRequestId } from './client.js';
import { button, element } from './dom.js';
import { format, plural } from './i18n.js';
import { lazyStrings, linkStylesheet } from './lazy-parts.js';
import { ANSWER_EVENT, ERROR } from './protocol.js';
import { reasonFor } from './refusals.js';
import { formatSize } from './sizes.js';

/** @typedef {import('./host.js').PanelHost} PanelHost */

const stylesheetUrl = new URL('./attachments.css', import.meta.url).href;

// The browser's claimed media type → the server's type name (widget_server/attachments/sniff.py
// MEDIA_TYPES). Only a first check: the server judges by content and its 415 is shown the same way.
const TYPE_NAMES = {
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'image/webp': 'webp',
  'image/gif': 'gif',
  'application/pdf': 'pdf',
  'text/plain': 'text',
  'text/csv': 'csv',
};
const IMAGE_TYPES = ['png', 'jpeg', 'webp', 'gif'];
// A text file's claim varies by system (text/markdown, application/json, text/x-log, or none):
// the server reads it as `text` when its bytes are UTF-8.
const TEXT_LIKE = /^text\/|\/json$/;
const DESCRIPTION_MAX_CHARS = 1000; // the message's limit per description (docs/protocol.md)

// An image shown from bytes this panel holds (a blob: URL; the panel's CSP allows img-src
// blob:, docs/security.md). The URL is revoked once the image has decoded: the picture stays.
function blobImage(className, blob, alt) {
  const image = element('img', className);
  image.alt = alt;
  const url = URL.createObjectURL(blob);
  const revoke = () => URL.revokeObjectURL(url);
  image.addEventListener('load', revoke, { once: true });
  image.addEventListener('error', revoke, { once: true });
  image.src = url;
  return image;
}

const controllers = new WeakMap(); // panel → Attachments

// chat.js: `how` is 'choose' (the Attach button), 'paste' (the pasted `files`), 'drag' (files
// first dragged over the panel: from then on this module follows the drag itself) or 'drop'
// (`files` dropped before this module was there).
/**
 * @param {PanelHost} host
 * @param {'choose' | 'drag' | 'drop' | 'paste'} how
 * @param {File[]} [files]
 */
export async function use(host, how, files = []) {
  const attachments = await controllerOf(host);
  if (!attachments) return; // offline before the strings came: the next use tries again
  if (how === 'choose') attachments.choose();
  else if (how === 'paste') attachments.add(files, true);
  else if (how === 'drag' && !attachments.depth) attachments.showHint();
  else if (how === 'drop') attachments.dropped(files);
}

// chat.js restore() and submit(): a user turn's files, below its text.
/**
 * @param {PanelHost} host
 * @param {HTMLElement} item
 * @param {import('./client.js').Attachment[]} files
 */
export async function showInTurn(host, item, files) {
  const attachments = await controllerOf(host);
  attachments?.showInTurn(item, files);
}

/** @param {PanelHost} host */
async function controllerOf(host) {
  const [strings] = await Promise.all([
    lazyStrings(host, 'attachments', 'attachments/'),
    linkStylesheet(stylesheetUrl),
  ]);
  if (!strings) return null;
  if (!controllers.has(host)) controllers.set(host, new Attachments(host, strings));
  return controllers.get(host);
}

class Attachments {
  /**
   * @param {PanelHost} host
   * @param {Record<string, string>} strings
   */
  constructor(host, strings) {
    this.host = host;
    this.strings = strings;
    this.lang = host.config.lang;
    this.limits = host.config.attachments;
    this.rows = [];
    this.pasted = 0;
    this.attachButton = host.root.querySelector('[data-chat-attach]');
    this.list = element('ul', 'chat-files');
    this.list.setAttribute('aria-label', strings.listLabel);
    this.list.hidden = true;
    host.form.append(this.list);
    host.provide({ attachments: this }); // chat.js submit() takes the ready files
    this.bindDrops();
    // Start over (conversation-tools.js): the files belonged to the old conversation.
    host.on('conversation', () => {
      for (const row of [...this.rows]) this.drop(row);
    });
    // The message that carries the files was accepted (its answer started): they are sent.
    host.on('event', (event) => {
      if (event.detail.type !== ANSWER_EVENT.MESSAGE_STARTED || event.detail.outcome !== 'applied')
        return;
      this.sent(host.currentRun()?.request?.body?.attachments);
    });
  }

  // The files of an accepted message (`refs` as it carried them: to the assistant, above, or
  // to a person, handoff.js) leave the list, with the refused ones; focus was in the list:
  // the composer gets it.
  sent(refs) {
    if (!refs?.length) return;
    const ids = new Set(refs.map((ref) => ref.attachment_id || ref));
    const focusInList = this.list.contains(document.activeElement);
    for (const row of [...this.rows])
      if (ids.has(row.attachment?.attachment_id) || row.state === 'refused') this.drop(row);
    if (focusInList) this.host.input.focus();
  }

  // -- adding ------------------------------------------------------------------------------

  // The <input type=file> is made here, `hidden` and never in the tab order: the Attach
  // button is the one control (docs/accessibility.md A94: Tab never reaches the input).
  choose() {
    if (!this.picker) {
      const picker = document.createElement('input');
      picker.type = 'file';
      picker.multiple = true;
      picker.hidden = true;
      picker.tabIndex = -1;
      picker.accept = this.limits.types.join(',');
      picker.addEventListener('change', () => {
        this.add([...picker.files]);
        picker.value = ''; // the same file again is a change
      });
      this.host.form.append(picker);
      this.picker = picker;
    }
    this.picker.click();
  }

  // Checks each file (count, size, claimed type; the server checks again by content), adds a
  // row for each and uploads those that pass. What was refused is said once, together.
  add(files, pasted = false) {
    const strings = this.strings;
    const refusals = [];
    for (const original of files) {
      let file = original;
      // A pasted screenshot has no name of its own (Chromium calls every one image.png).
      if (pasted && file.type.startsWith('image/')) {
        const extension = file.type.slice(6).replace('jpeg', 'jpg').replace(/\W.*/, '');
        file = new File([file], `pasted-image-${++this.pasted}.${extension}`, {
          type: file.type,
        });
      }
      const row = this.addRow(file);
      const name = file.name;
      const counted = this.rows.filter((other) => other !== row && other.state !== 'refused');
      const claimed = file.type.split(';')[0];
      const allowed = this.limits.types;
      let refusal = '';
      if (counted.length >= this.limits.perMessage)
        refusal = format(plural(strings.tooMany, this.limits.perMessage, this.lang), { name });
      else if (file.size > this.limits.maxBytes) refusal = this.tooBig(row);
      else if (
        claimed &&
        !allowed.includes(claimed) &&
        !(allowed.includes('text/plain') && TEXT_LIKE.test(claimed))
      )
        refusal = this.wrongType(name);
      else if (
        counted.reduce((sum, other) => sum + other.size, file.size) > this.limits.budgetBytes
      )
        refusal = format(strings.refused, { name, reason: strings.budget });
      if (refusal) {
        this.refuse(row, refusal, false);
        refusals.push(refusal);
      } else {
        this.upload(row);
      }
    }
    if (refusals.length) this.host.showAlert(refusals.join(' '));
  }

  tooBig(row) {
    return format(this.strings.tooBig, {
      name: row.name,
      size: formatSize(row.size, this.lang),
      limit: formatSize(this.limits.maxBytes, this.lang),
    });
  }

  wrongType(name) {
    const typeNames = this.strings.typeNames;
    const names = this.limits.types.map((type) => typeNames[TYPE_NAMES[type]] || type);
    const types = new Intl.ListFormat(this.lang, {
      type: 'conjunction',
    }).format(names);
    return format(this.strings.wrongType, { name, types });
  }

  // -- rows --------------------------------------------------------------------------------

  addRow(file) {
    const strings = this.strings;
    const row = {
      file,
      name: file.name,
      size: file.size,
      type: TYPE_NAMES[file.type.split(';')[0]] || '',
      key: newRequestId(), // the upload's Idempotency-Key, kept for a retry
      state: 'new',
      attachment: null,
      item: element('li', 'chat-file'),
    };
    const item = row.item;
    const name = element('bdi', 'chat-file__name', row.name);
    row.details = element('span', 'chat-file__details');
    row.status = element('p', 'chat-file__status');
    row.remove = button('button button--secondary chat-file__remove', strings.remove, () =>
      this.removeByHand(row),
    );
    row.remove.setAttribute('aria-label', format(strings.removeLabel, { name: row.name }));
    row.nameNode = name;
    const head = element('p', 'chat-file__head');
    head.append(name, ' ', row.details);
    if (IMAGE_TYPES.includes(row.type)) {
      row.preview = blobImage('chat-file__preview', file, row.name);
      // The visitor's own text alternative, sent with the message (docs/protocol.md).
      const label = element('label', 'chat-file__describe');
      const field = element('input', 'chat-file__description');
      field.type = 'text';
      field.maxLength = DESCRIPTION_MAX_CHARS;
      field.addEventListener('input', () => {
        row.preview.alt = field.value.trim() || row.name;
      });
      // Which image it describes, when several wait: the row's name as its description.
      name.id = `chat-file-${row.key}`;
      field.setAttribute('aria-describedby', name.id);
      label.append(element('span', '', strings.describe), field);
      row.description = field;
      item.append(row.preview, head, row.status, label, row.remove);
    } else {
      item.append(head, row.status, row.remove);
    }
    this.describe(row);
    this.rows.push(row);
    this.list.append(item);
    this.list.hidden = false;
    return row;
  }

  describe(row) {
    const type = this.strings.typeNames[row.type] || row.file.type || this.strings.typeUnknown;
    row.details.textContent = `${type}, ${formatSize(row.size, this.lang)}`;
  }

  setState(row, state, statusText) {
    row.state = state;
    row.item.dataset.state = state;
    row.status.textContent = statusText;
  }

  refuse(row, text, announce = true) {
    this.setState(row, 'refused', text);
    row.status.classList.add('chat-file__status--error');
    if (announce) this.host.showAlert(text);
  }

  // Remove: focus goes to the next row's Remove, else the previous row's, else Attach.
  removeByHand(row) {
    const index = this.rows.indexOf(row);
    this.drop(row);
    const next = this.rows[index] || this.rows[index - 1];
    (next ? next.remove : this.attachButton || this.host.input).focus();
    // Uploaded but never sent: the server frees its bytes (best effort; it expires with
    // the conversation anyway).
    const id = row.attachment?.attachment_id;
    if (id) this.host.client.deleteAttachment(id).catch(() => {});
  }

  // A sign-out (identity.js): every file leaves the composer, an upload in flight too.
  clear() {
    for (const row of [...this.rows]) this.drop(row);
  }

  drop(row) {
    row.request?.abort();
    row.item.remove();
    this.rows = this.rows.filter((other) => other !== row);
    this.list.hidden = !this.rows.length;
  }

  // -- uploading ---------------------------------------------------------------------------

  // The bar follows the real progress of the bytes sent (client.js `uploadAttachment`); the
  // live region hears the start and the end only, never each percent (docs/accessibility.md A95).
  async upload(row) {
    const strings = this.strings;
    const host = this.host;
    this.setState(row, 'uploading', '');
    row.status.classList.remove('chat-file__status--error');
    const bar = element('div', 'chat-file__progress');
    bar.setAttribute('role', 'progressbar');
    bar.setAttribute('aria-label', format(strings.uploading, { name: row.name }));
    bar.setAttribute('aria-valuemin', '0');
    bar.setAttribute('aria-valuemax', '100');
    const fill = element('div', 'chat-file__fill');
    bar.append(fill);
    const percent = new Intl.NumberFormat(this.lang, { style: 'percent' });
    const total = formatSize(row.size, this.lang);
    const show = (fraction) => {
      const value = Math.round(fraction * 100);
      bar.setAttribute('aria-valuenow', String(value));
      bar.setAttribute(
        'aria-valuetext',
        format(strings.progress, {
          percent: percent.format(value / 100),
          size: total,
        }),
      );
      // CSSOM, not a style attribute: the panel's CSP (style-src 'self') allows this.
      fill.style.inlineSize = `${value}%`;
    };
    show(0);
    row.status.append(bar);
    host.announcer.cue(format(strings.uploading, { name: row.name }));
    let body;
    try {
      await this.conversation();
      body = await this.send(row, show);
    } catch (error) {
      if (!this.rows.includes(row)) return; // removed meanwhile
      return this.uploadFailed(row, error);
    }
    if (!this.rows.includes(row)) return;
    row.attachment = body;
    row.name = body.name; // the server's safe name
    row.type = body.type;
    row.nameNode.textContent = body.name;
    row.remove.setAttribute('aria-label', format(strings.removeLabel, { name: body.name }));
    this.describe(row);
    this.setState(row, 'ready', strings.readyState);
    host.announcer.cue(format(strings.ready, { name: body.name }));
  }

  // Files added together upload together: the first one's conversation is theirs too.
  conversation() {
    this.creating ||= this.host.ensureConversation().finally(() => {
      this.creating = null;
    });
    return this.creating;
  }

  // Removing the row aborts its upload (drop()). No answer at all (offline, connection cut, the
  // row removed): status 0, said as a network error.
  async send(row, show) {
    const upload = new AbortController();
    row.request = upload;
    try {
      return await this.host.client.uploadAttachment(row.file, row.name, row.key, {
        onProgress: show,
        signal: upload.signal,
      });
    } finally {
      row.request = null;
    }
  }

  // Refused by the server: the same words as the checks before uploading where they exist;
  // a failure that may pass later (network, 5xx, 429) offers Try again with the same key.
  async uploadFailed(row, error) {
    const strings = this.strings;
    let text;
    if (error.code === ERROR.ATTACHMENT_TOO_LARGE.code) text = this.tooBig(row);
    else if (error.code === ERROR.ATTACHMENT_TYPE.code) text = this.wrongType(row.name);
    else {
      // No answer at all: said as an upload's, not in the words for a message (refusals.js).
      const reason = error.status ? await reasonFor(this.host, error) : strings.network;
      text = format(strings.refused, { name: row.name, reason });
    }
    this.refuse(row, text);
    if (!error.status || error.status >= 500 || error.status === 429) {
      const again = button('button button--secondary', strings.retry, () => {
        again.remove();
        this.upload(row);
        row.remove.focus();
      });
      again.setAttribute('aria-label', format(strings.retryLabel, { name: row.name }));
      row.status.append(' ', again);
    }
  }

  // -- sending (chat.js submit) ------------------------------------------------------------

  // The ready files, as the message carries them (`ref`) and as its turn shows them; null
  // while one still uploads, or offline: the send waits for the visitor to send again, and
  // says so. (The outbox keeps a message typed offline as text only: outbox.js.)
  take() {
    const ready = this.rows.filter((row) => row.state === 'ready');
    const busy = this.rows.some((row) => row.state === 'uploading');
    if (busy || (ready.length && !navigator.onLine)) {
      this.host.showAlert(busy ? this.strings.wait : this.strings.offline);
      return null;
    }
    return ready.map((row) => {
      const description = row.description?.value.trim() || '';
      const id = row.attachment.attachment_id;
      return {
        ...row.attachment,
        description,
        file: row.file,
        ref: description ? { attachment_id: id, description } : id,
      };
    });
  }

  // A user turn's files: name, type and size; an image as a thumbnail whose alternative text
  // is the visitor's description, else its name. Bytes from this panel (just sent) or fetched
  // with the conversation's token (a restored history), never a URL the server would open
  // without it.
  showInTurn(item, files) {
    const strings = this.strings;
    const list = element('ul', 'chat-files chat-files--sent');
    list.setAttribute('aria-label', strings.sentLabel);
    for (const file of files) {
      const entry = element('li', 'chat-file');
      const type = strings.typeNames[file.type] || file.type;
      const head = element('p', 'chat-file__head');
      head.append(
        element('bdi', 'chat-file__name', file.name),
        ' ',
        element('span', 'chat-file__details', `${type}, ${formatSize(file.size, this.lang)}`),
      );
      entry.append(head);
      if (IMAGE_TYPES.includes(file.type)) this.thumbnail(entry, file);
      list.append(entry);
    }
    item.append(list);
  }

  async thumbnail(entry, file) {
    let blob = file.file;
    if (!blob) {
      try {
        blob = await this.host.client.attachmentBlob(file.attachment_id);
      } catch {
        return; // gone (deleted, expired), or offline: the name and size still say what it was
      }
    }
    entry.prepend(blobImage('chat-file__preview', blob, file.description || file.name));
  }

  // -- drag and drop -----------------------------------------------------------------------

  // A visible hint covers the panel while files are dragged over it, said once per drag.
  // dragenter and dragleave fire for every element crossed: a count says when it really left.
  bindDrops() {
    const root = this.host.root;
    this.hint = element('div', 'chat-drop', this.strings.dropHint);
    this.hint.setAttribute('aria-hidden', 'true'); // announced through the status region
    this.hint.hidden = true;
    root.append(this.hint);
    this.depth = 0;
    root.addEventListener('dragenter', (event) => this.onDrag(event));
    root.addEventListener('dragover', (event) => {
      if (carriesFiles(event)) event.preventDefault(); // a drop is allowed here
    });
    root.addEventListener('dragleave', () => {
      this.depth = Math.max(0, this.depth - 1);
      if (!this.depth) this.hint.hidden = true;
    });
    root.addEventListener('drop', (event) => {
      if (!carriesFiles(event)) return;
      event.preventDefault();
      this.dropped([...event.dataTransfer.files]);
    });
  }

  dropped(files) {
    this.depth = 0;
    this.hint.hidden = true;
    this.add(files);
  }

  onDrag(event) {
    if (!carriesFiles(event)) return;
    event.preventDefault();
    this.showHint();
  }

  showHint() {
    this.depth++;
    if (this.hint.hidden) {
      this.hint.hidden = false;
      this.host.announcer.cue(this.strings.dropHint);
    }
  }
}

function carriesFiles(event) {
  return Boolean(event.dataTransfer && [...event.dataTransfer.types].includes('Files'));
}
