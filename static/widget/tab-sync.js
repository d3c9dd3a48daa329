// Tabs in sync (docs/design.md, "Tabs in sync"; docs/accessibility.md A44–A45).
//
// Two tabs of one site embed two panels of the same origin in the same storage partition, so
// they share a BroadcastChannel, named per apiBase (it works in Debian's Chromium, where the
// panel is a third-party iframe whose storage is blocked: docs/testing.md). chat.js loads this
// module once the panel is ready. A panel posts what it starts: a sent message once the
// server took it (its message id), a regenerate or edit, a start-over. The other tab follows
// — never with a second generation: the answer is read through the same GET resume
// stream (…/messages/{id}/events) that a panel uses for an answer still running after a
// reload, and Stop in either tab cancels that one message on the server, which ends both
// streams with message.cancelled.
//
// The channel is same-origin: the conversation's token travels only between panels of the
// chat server's origin, never to the host page.

import { lazyStrings } from './lazy-parts.js';
import { ended, prune } from './outbox.js';

/** @typedef {import('./chat.js').ChatPanel} ChatPanel */

// How long a start-over waits for the answer to end after its cancel (as conversation-tools.js).
const CANCEL_WAIT_MS = 5000;

/**
 * @param {ChatPanel} panel
 * @param {string} messageId
 */
function known(panel, messageId) {
  return (
    panel.current?.model.messageId === messageId ||
    panel.transcript.querySelector(`[data-message-id="${CSS.escape(messageId)}"]`) !== null
  );
}

// Another tab started over (New conversation, conversation-tools.js): this one follows,
// moving no focus and saying so once, politely.
/** @param {ChatPanel} panel */
async function reset(panel, message) {
  const run = panel.current;
  if (run?.inProgress) {
    // The other tab cancelled it before starting over; this cancel only makes sure.
    run.cancel();
    await ended(panel, run, CANCEL_WAIT_MS);
  }
  const strings = await lazyStrings(panel, 'syncTabs');
  const client = panel.client;
  // Not panel.forget(): the stored conversation is shared with the other tab, which has
  // already replaced it.
  client.conversationId = message.conversation_id || '';
  client.token = message.token || '';
  panel.current = null;
  panel.setStreaming(false);
  panel.transcript.textContent = '';
  panel.alert.textContent = '';
  panel.empty.hidden = false;
  panel.scroller.scrollTop = 0;
  prune(panel); // messages waiting here belonged to the conversation that ended
  // Without its strings (offline), the reset still happens, silently.
  panel.announcer.interrupt(
    strings && (message.reason === 'deleted' ? strings.deleted : strings.reset),
  );
}

// Regenerate or edit in another tab replaced turns: draw the conversation again from the
// server's history (its running answer resumes quietly, like after a reload).
/** @param {ChatPanel} panel */
async function redraw(panel) {
  panel.current = null;
  panel.setStreaming(false);
  panel.transcript.textContent = '';
  panel.config.conversation = {
    conversation_id: panel.client.conversationId,
    token: panel.client.token,
  };
  await panel.restore();
}

/** @param {ChatPanel} panel */
async function receive(panel, message) {
  if (message?.type === 'reset') return reset(panel, message);
  const client = panel.client;
  if (client.conversationId !== message?.conversation_id) {
    // Two tabs that began at the same moment have two conversations: each keeps its own.
    if (client.conversationId || !message?.conversation_id) return;
    // This tab had none yet: the other tab's first message started one for both.
    client.conversationId = message.conversation_id;
    client.token = message.token;
  }
  if (message.type === 'changed') return redraw(panel);
  if (message.type !== 'turn' || known(panel, message.message_id)) return;
  const follow = panel.atBottom(); // as an answer does: never away from what someone re-reads
  panel.addUserTurn(message.text);
  if (follow) panel.scrollToEnd();
  panel.startRun({ messageId: message.message_id });
}

/** @param {ChatPanel} panel */
export function init(panel) {
  const channel = new BroadcastChannel(panel.storageKey());
  // Same origin only: the token may travel with the conversation's id.
  const post = (message) =>
    channel.postMessage({
      ...message,
      conversation_id: panel.client.conversationId,
      token: panel.client.token,
    });
  channel.onmessage = ({ data }) => receive(panel, data);
  // A run of this tab with a request (a send, regenerate or edit, not one followed from
  // another tab) posts once, at its first event: the server took it and named it.
  panel.root.addEventListener('chatwidget:event', () => {
    const run = panel.current;
    if (!run?.request || run.shared || !run.model.messageId) return;
    run.shared = true;
    post({
      type: run.request.url ? 'changed' : 'turn',
      text: run.request.text,
      message_id: run.model.messageId,
    });
  });
  // New conversation (conversation-tools.js) emits this; a reset followed here does not.
  panel.root.addEventListener('chatwidget:conversation', ({ detail }) =>
    post({ type: 'reset', reason: detail.reason }),
  );
}
