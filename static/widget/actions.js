// Action cards: a completed answer's proposed actions, each offered for an
// explicit Confirm or Dismiss (docs/protocol.md, "Actions"; the card's
// accessibility: docs/accessibility.md, "Actions"; tests/e2e/test_actions.py).
//
// docs/design.md ("Partial answers never trigger actions"): nothing here runs
// while an answer streams; a card appears only once the answer completed and
// verified, announced once (politely), and never takes focus. Confirm sends
// the action's own idempotency key, made once per card and reused on every
// retry, so a double press, a retry after a dropped connection or a second
// tab never runs it twice (the server executes it once and answers every
// retry with the same outcome). The HTTP requests, and their retries, are
// the panel's ChatClient's (client.js).
//
// This module is loaded only when an answer offers an action or a restored
// conversation may have some: it is not part of the panel's first open
// (tests/test_budgets.py).

import { newRequestId } from './client.js';
import { button, element } from './dom.js';
import { format } from './i18n.js';

/** @typedef {import('./host.js').PanelHost} PanelHost */

// Does every `{placeholder}` of the template have a non-empty argument?
function fillsTemplate(template, args) {
  const placeholders = template.match(/\{\w+\}/g) || [];
  return placeholders.every((placeholder) => {
    const value = args[placeholder.slice(1, -1)];
    return value != null && value !== '';
  });
}

// The action's wording in the panel's language: the i18n entry for its name
// (label, description templates, result), else what the server sent.
function wording(strings, action) {
  const own = strings.actions?.[action.name] || {};
  const args = action.arguments || {};
  const template = (own.descriptions || []).find((text) => fillsTemplate(text, args));
  return {
    label: own.label || action.label || action.name,
    description: template ? format(template, args) : action.description,
    done: own.done || strings.actionDone,
  };
}

export class ActionCard {
  /**
   * @param {PanelHost} host
   * @param {HTMLElement} container
   * @param {string} messageId
   * @param {import('./client.js').Action} action
   */
  constructor(host, container, messageId, action) {
    this.host = host;
    this.messageId = messageId;
    this.action = action;
    this.idempotencyKey = newRequestId(); // once per card, reused on every retry
    this.busy = false;
    this.status = 'proposed';
    const strings = host.strings;
    this.words = wording(strings, action);
    const label = this.words.label;
    const headingId = `action-${action.action_id}`;
    this.node = element('div', 'action');
    this.node.setAttribute('role', 'group');
    this.node.setAttribute('aria-labelledby', headingId);
    this.node.dataset.actionId = action.action_id;
    this.node.dataset.status = 'proposed';
    const heading = element('p', 'action__title', format(strings.actionHeading, { label }));
    heading.id = headingId;
    this.confirmButton = this.button(
      'button',
      'confirm',
      strings.actionConfirm,
      format(strings.actionConfirmLabel, { label }),
    );
    this.dismissButton = this.button(
      'button button--secondary',
      'dismiss',
      strings.actionDismiss,
      format(strings.actionDismissLabel, { label }),
    );
    const buttons = element('div', 'action__buttons');
    buttons.append(this.confirmButton, this.dismissButton);
    this.statusNode = element('p', 'action__status');
    this.statusNode.hidden = true;
    this.node.append(
      heading,
      element('p', 'action__description', this.words.description),
      buttons,
      this.statusNode,
    );
    container.append(this.node);
  }

  // The visible word ("Confirm") starts the accessible name ("Confirm: request a call back").
  button(className, decision, text, label) {
    const node = button(className, text, () => this.decide(decision));
    node.setAttribute('aria-label', label);
    node.dataset.chatRole = `action-${decision}`;
    return node;
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

  async decide(decision) {
    if (this.busy || this.status !== 'proposed') return; // a double press, or already decided
    const strings = this.host.strings;
    this.setBusy(true);
    this.showStatus(strings.actionSending);
    let action;
    try {
      action = await this.send(decision);
    } catch (error) {
      // Not sent, or refused: say so once, assertively; the buttons come
      // back, and a new press reuses the same key (still at most once).
      const { reasonFor } = await import('./refusals.js');
      const text = format(strings.actionSendFailed, {
        reason: await reasonFor(this.host, error),
      });
      this.showStatus(text);
      this.setBusy(false);
      this.host.showAlert(text);
      return;
    }
    this.settle(action, true);
  }

  send(decision) {
    const client = this.host.client;
    const actionId = this.action.action_id;
    if (decision === 'confirm')
      return client.confirmAction(this.messageId, actionId, this.idempotencyKey);
    return client.dismissAction(this.messageId, actionId);
  }

  // Show what became of the action; `announce` says it once (a restored
  // card shows its state silently).
  settle(action, announce) {
    const strings = this.host.strings;
    const status = action.status;
    if (status === 'proposed' || status === 'executing') {
      // Still open (restored), or being carried out by another request: a
      // new press asks again (with the same key) and learns the outcome.
      this.showStatus(status === 'executing' ? strings.actionSending : '');
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
          ? strings.actionDismissed
          : strings.actionFailed;
    this.showStatus(text);
    if (announce) {
      if (status === 'failed') this.host.showAlert(text);
      else this.host.announcer.cue(text);
    }
    this.host.emit('action', {
      actionId: this.action.action_id,
      messageId: this.messageId,
      status,
    });
  }
}

// An answer's offer of a person (`handoff`, docs/backends.md) is not a card to confirm: a
// "Talk to a person" button that asks as the Options control does (handoff.js).
const HANDOFF = 'handoff';
const offerHandoff = (host, container, announce) =>
  import('./handoff.js').then((handoff) => handoff.offer(host, container, announce));

// A completed answer's actions: one card each, announced once, focus untouched.
/**
 * @param {PanelHost} host
 * @param {import('./host.js').AssistantTurn} turn
 * @param {string} messageId
 * @param {import('./client.js').Action[]} actions
 */
export function offerActions(host, turn, messageId, actions) {
  for (const action of actions || []) {
    if (action.name === HANDOFF) {
      offerHandoff(host, turn.actions, true);
      continue;
    }
    const card = new ActionCard(host, turn.actions, messageId, action);
    const description = card.words.description;
    host.announcer.cue(format(host.strings.actionProposed, { description }));
    host.emit('action', {
      actionId: action.action_id,
      messageId,
      status: 'proposed',
    });
  }
}

// After a reload: the restored answers' actions, as they stand (silently).
/** @param {PanelHost} host */
export async function restoreActions(host) {
  let actions;
  try {
    actions = await host.client.listActions();
  } catch {
    return; // the answers are shown; their actions just are not offered again
  }
  for (const action of actions) {
    const item = host.transcript.querySelector(`li[data-message-id="${action.message_id}"]`);
    const container = /** @type {HTMLElement | null} */ (item?.querySelector('.turn__actions'));
    if (!container) continue;
    if (action.name === HANDOFF) {
      if (action.status === 'proposed') offerHandoff(host, container, false);
      continue;
    }
    new ActionCard(host, container, action.message_id, action).settle(action, false);
  }
}
