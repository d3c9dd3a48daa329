// Action cards: a completed answer's proposed actions, each offered for an
// explicit Confirm or Dismiss (docs/protocol.md, "Actions").
//
// docs/design.md ("Partial answers never trigger actions"): nothing here runs while an answer streams; a card appears only
// once the answer completed and verified, announced once (politely), and
// never takes focus. Confirm sends the action's own idempotency key, made
// once per card and reused on every retry, so a double press, a retry after
// a dropped connection or a second tab never runs it twice (the server
// executes it once and answers every retry with the same outcome).

import { ApiError, newRequestId } from './client.js';
import { format } from './i18n.js';

const RETRIES = 3;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text != null) node.textContent = text;
  return node;
}

// The action's wording in the panel's language: the i18n entry for its name
// (label, description templates, result), else what the server sent.
function wording(t, action) {
  const own = (t.actions || {})[action.name] || {};
  const args = action.arguments || {};
  // The first template whose placeholders the arguments all fill.
  const template = (own.descriptions || []).find((text) =>
    (text.match(/\{\w+\}/g) || []).every(
      (p) => args[p.slice(1, -1)] != null && args[p.slice(1, -1)] !== '',
    ),
  );
  return {
    label: own.label || action.label || action.name,
    description: template ? format(template, args) : action.description,
    done: own.done || t.actionDone,
  };
}

export class ActionCard {
  constructor(panel, container, messageId, action) {
    this.panel = panel;
    this.messageId = messageId;
    this.action = action;
    this.key = newRequestId(); // the action's idempotency key: once per card, reused on every retry
    this.busy = false;
    this.status = 'proposed';
    const t = panel.t;
    const words = (this.words = wording(t, action));
    const id = `action-${action.action_id}`;
    this.node = el('div', 'action');
    this.node.setAttribute('role', 'group');
    this.node.setAttribute('aria-labelledby', id);
    this.node.dataset.actionId = action.action_id;
    this.node.dataset.status = 'proposed';
    const heading = el('p', 'action__title', format(t.actionHeading, { label: words.label }));
    heading.id = id;
    this.confirmButton = this.button(
      'button',
      'confirm',
      t.actionConfirm,
      format(t.actionConfirmLabel, { label: words.label }),
    );
    this.dismissButton = this.button(
      'button button--secondary',
      'dismiss',
      t.actionDismiss,
      format(t.actionDismissLabel, { label: words.label }),
    );
    const buttons = el('div', 'action__buttons');
    buttons.append(this.confirmButton, this.dismissButton);
    this.statusNode = el('p', 'action__status');
    this.statusNode.hidden = true;
    this.node.append(
      heading,
      el('p', 'action__description', words.description),
      buttons,
      this.statusNode,
    );
    container.append(this.node);
  }

  // The visible word ("Confirm") starts the accessible name ("Confirm: request a call back").
  button(className, verb, text, label) {
    const button = el('button', className, text);
    button.type = 'button';
    button.setAttribute('aria-label', label);
    button.dataset.chatRole = `action-${verb}`;
    button.addEventListener('click', () => this.decide(verb));
    return button;
  }

  // aria-disabled, not disabled: a disabled button would drop the focus of
  // whoever just pressed it; this one keeps it and ignores further presses.
  setBusy(busy) {
    this.busy = busy;
    for (const button of [this.confirmButton, this.dismissButton]) {
      if (busy || this.status !== 'proposed') button.setAttribute('aria-disabled', 'true');
      else button.removeAttribute('aria-disabled');
    }
  }

  showStatus(text) {
    this.statusNode.textContent = text;
    this.statusNode.hidden = !text;
  }

  async decide(verb) {
    if (this.busy || this.status !== 'proposed') return; // a double press, or already decided
    const t = this.panel.t;
    this.setBusy(true);
    this.showStatus(t.actionSending);
    let action;
    try {
      action = await this.send(verb);
    } catch (error) {
      // Not sent, or refused: say so once, assertively; the buttons come
      // back, and a new press reuses the same key (still at most once).
      const text = format(t.actionSendFailed, { reason: error.message });
      this.showStatus(text);
      this.setBusy(false);
      this.panel.showAlert(text);
      return;
    }
    this.settle(action, true);
  }

  // POST …/confirm (with the key) or …/dismiss; retried on network errors,
  // 5xx and `action_in_progress`. 409s that say what became of the action
  // (confirmed elsewhere, dismissed) are outcomes, not errors.
  async send(verb) {
    const client = this.panel.client;
    const url = `${client.apiBase}/conversations/${client.conversationId}/messages/${this.messageId}/actions/${this.action.action_id}/${verb}`;
    const headers = { Authorization: `Bearer ${client.token}` };
    if (verb === 'confirm') headers['Idempotency-Key'] = this.key;
    for (let attempt = 0; ; attempt++) {
      let response;
      try {
        response = await fetch(url, { method: 'POST', headers });
      } catch (error) {
        if (attempt >= RETRIES) throw error;
        await sleep(500 * 2 ** attempt);
        continue;
      }
      let body = null;
      try {
        body = await response.json();
      } catch {
        body = null;
      }
      if (response.ok && body) return body;
      const code = body && body.error && body.error.code;
      if ((response.status >= 500 || code === 'action_in_progress') && attempt < RETRIES) {
        await sleep(500 * 2 ** attempt);
        continue;
      }
      const details = body && body.error && body.error.details;
      if (details && details.action) return details.action;
      throw new ApiError(response.status, body);
    }
  }

  // Show what became of the action; `announce` says it once (a restored
  // card shows its state silently).
  settle(action, announce) {
    const t = this.panel.t;
    const status = action.status;
    if (status === 'proposed' || status === 'executing') {
      // Still open (restored), or being carried out by another request: a
      // new press asks again (with the same key) and learns the outcome.
      this.showStatus(status === 'executing' ? t.actionSending : '');
      this.setBusy(false);
      return;
    }
    this.status = status;
    this.node.dataset.status = status;
    this.setBusy(false);
    const text =
      status === 'succeeded'
        ? this.words.done
        : status === 'dismissed'
          ? t.actionDismissed
          : t.actionFailed;
    this.showStatus(text);
    if (announce) {
      if (status === 'failed') this.panel.showAlert(text);
      else this.panel.announcer.cue(text);
    }
    this.panel.emit('action', {
      actionId: this.action.action_id,
      messageId: this.messageId,
      status,
    });
  }
}

// A completed answer's actions: one card each, announced once, focus untouched.
export function offerActions(panel, turn, messageId, actions) {
  for (const action of actions || []) {
    const card = new ActionCard(panel, turn.actions, messageId, action);
    panel.announcer.cue(format(panel.t.actionProposed, { description: card.words.description }));
    panel.emit('action', { actionId: action.action_id, messageId, status: 'proposed' });
  }
}

// After a reload: the restored answers' actions, as they stand (silently).
export async function restoreActions(panel) {
  const client = panel.client;
  let body;
  try {
    const response = await fetch(
      `${client.apiBase}/conversations/${client.conversationId}/actions`,
      {
        headers: { Authorization: `Bearer ${client.token}` },
      },
    );
    if (!response.ok) return;
    body = await response.json();
  } catch {
    return; // the answers are shown; their actions just are not offered again
  }
  for (const action of body.actions || []) {
    const item = panel.transcript.querySelector(`li[data-message-id="${action.message_id}"]`);
    const container = item && item.querySelector('.turn__actions');
    if (!container) continue;
    new ActionCard(panel, container, action.message_id, action).settle(action, false);
  }
}
