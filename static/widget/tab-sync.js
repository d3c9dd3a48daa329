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

/** @typedef {import('./host.js').PanelHost} PanelHost */

// How long a start-over waits for the answer to end after its cancel (as conversation-tools.js).
const CANCEL_WAIT_MS = 5000;

/**
 * @param {PanelHost} host
 * @param {string} messageId
 */
function known(host, messageId) {
  return (
    host.currentRun()?.model.messageId === messageId ||
    host.transcript.querySelector(`[data-message-id="${CSS.escape(messageId)}"]`) !== null
  );
}

// Another tab started over (New conversation, conversation-tools.js): this one follows,
// moving no focus and saying so once, politely.
/** @param {PanelHost} host */
async function reset(host, message) {
  const run = host.currentRun();
  if (run?.inProgress) {
    // The other tab cancelled it before starting over; this cancel only makes sure.
    run.cancel();
    await ended(host, run, CANCEL_WAIT_MS);
  }
  const strings = await lazyStrings(host, 'syncTabs');
  const client = host.client;
  // Not host.forget() nor host.remember(): the stored conversation is shared with the other
  // tab, which has already replaced it.
  client.conversationId = message.conversation_id || '';
  client.token = message.token || '';
  host.clearTranscript();
  prune(host); // messages waiting here belonged to the conversation that ended
  // Without its strings (offline), the reset still happens, silently.
  host.announcer.interrupt(
    strings && (message.reason === 'deleted' ? strings.deleted : strings.reset),
  );
}

/** @param {PanelHost} host */
async function receive(host, message) {
  if (message?.type === 'reset') return reset(host, message);
  const client = host.client;
  if (client.conversationId !== message?.conversation_id) {
    // Two tabs that began at the same moment have two conversations: each keeps its own.
    if (client.conversationId || !message?.conversation_id) return;
    // This tab had none yet: the other tab's first message started one for both.
    client.conversationId = message.conversation_id;
    client.token = message.token;
  }
  // Regenerate or edit in another tab replaced turns: drawn again from the server's history.
  if (message.type === 'changed') return host.redraw();
  if (message.type !== 'turn' || known(host, message.message_id)) return;
  const follow = host.atBottom(); // as an answer does: never away from what someone re-reads
  host.addUserTurn(message.text);
  if (follow) host.scrollToEnd();
  host.startRun({ messageId: message.message_id });
}

/** @param {PanelHost} host */
export function init(host) {
  const channel = new BroadcastChannel(host.storageKey);
  // Same origin only: the token may travel with the conversation's id.
  const post = (message) =>
    channel.postMessage({
      ...message,
      conversation_id: host.client.conversationId,
      token: host.client.token,
    });
  channel.onmessage = ({ data }) => receive(host, data);
  // A run of this tab with a request (a send, regenerate or edit, not one followed from
  // another tab) posts once, at its first event: the server took it and named it.
  host.on('event', () => {
    const run = host.currentRun();
    if (!run?.request || run.shared || !run.model.messageId) return;
    run.shared = true;
    post({
      type: run.request.url ? 'changed' : 'turn',
      text: run.request.text,
      message_id: run.model.messageId,
    });
  });
  // New conversation (conversation-tools.js) emits this; a reset followed here does not.
  host.on('conversation', ({ detail }) => post({ type: 'reset', reason: detail.reason }));
}
