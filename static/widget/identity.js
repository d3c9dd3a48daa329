// A known visitor (docs/embedding.md, "Known visitors"; docs/protocol.md, "Known visitors"):
// the site's signed identity token, which the loader posts to the panel (embed.js), never in a
// URL. chat.js imports this module only when a token comes, or at a sign-out: an anonymous
// panel never fetches it, and the first open stays within its budget (tests/test_budgets.py).
//
// With a token, new conversations are the visitor's (client.js createConversation), the
// Conversations control shows (conversations.js, loaded on its first press), and a refusal of
// the token is told to the site once per token (the loader's `chatwidget:identity-expired`,
// docs/events.md) while the visitor's text stays in the composer. `null`: the visitor signed
// out; the panel forgets everything it kept on this browser (logout below).

import { ApiError, ChatClient } from './client.js';
import { ERROR } from './protocol.js';
import { reasonFor } from './refusals.js';

/** @typedef {import('./host.js').PanelHost} PanelHost */

// The refusals a fresh token from the site cures (wire/errors.py); `identity_keys_unavailable`
// is the server's trouble (503, retryable), `identity_required` is no token at all.
/** @type {string[]} */
const REFRESHABLE = [ERROR.IDENTITY_EXPIRED.code, ERROR.IDENTITY_INVALID.code];

/** @typedef {{ told: string, control: HTMLButtonElement | null, tabs: BroadcastChannel }} KnownPanel */

/** @type {WeakMap<PanelHost, KnownPanel>} */
const panels = new WeakMap();

/**
 * @param {PanelHost} host
 * @param {string | null} token
 */
export function identify(host, token) {
  const client = host.client;
  let panel = panels.get(host);
  if (!panel) {
    // The site's other tabs (docs/privacy.md, "In the visitor's browser"): a sign-out or an
    // erasure in one is followed in the others, whose panels share this origin's storage and
    // cookie. Its own channel, not tab-sync.js's, which every first open loads
    // (tests/test_budgets.py); a channel never hears its own posts.
    panel = {
      told: '',
      control: host.root.querySelector('[data-chat-conversations]'),
      tabs: new BroadcastChannel(`${host.storageKey}:identity`),
    };
    const known = panel;
    panel.tabs.onmessage = ({ data }) => {
      if (data === 'logout') logout(host, known, true);
      if (data === 'erased') forgetHere(host, 'erased', true);
    };
    panels.set(host, panel);
    panel.control?.addEventListener('click', () =>
      import('./conversations.js').then((view) => view.toggle(host, panel.control)),
    );
    host.provide({
      identityRefused: (error, token) => refused(host, error, token),
      checkIdentity: () => createFirst(host),
    });
  }
  if (token === null) return logout(host, panel);
  client.identity = token;
  if (panel.control) panel.control.hidden = !token;
  if (!token) closeView(host);
  // A conversation of the visitor's list, open before a reload: chat.js left it for the token.
  if (token && !client.conversationId) {
    const saved = stored(host);
    if (saved?.conversation_id && !saved.token) {
      client.conversationId = saved.conversation_id;
      client.token = '';
      host.redraw();
    }
  }
}

/**
 * @param {PanelHost} host
 * @returns {{ conversation_id?: string, token?: string } | null}
 */
function stored(host) {
  try {
    return JSON.parse(localStorage.getItem(host.storageKey) || 'null');
  } catch {
    return null; // storage blocked or corrupt
  }
}

// Tells the site, once per token, that the server refused it: the site answers with
// ChatWidget.identify(newToken) (docs/embedding.md). Only to the host origin the server vetted,
// as the unread count (chat.js notifyHost). Not for a token the site has replaced since the
// request that carried it left: it already gave the new one.
/**
 * @param {PanelHost} host
 * @param {any} error
 * @param {string} [token] the token the refused request carried (default: the current one)
 */
export function refused(host, error, token = host.client.identity) {
  const panel = panels.get(host);
  if (!(error instanceof ApiError) || !REFRESHABLE.includes(error.code) || !panel) return;
  if (!token || token !== host.client.identity || panel.told === token) return;
  panel.told = token;
  const origin = host.config.hostOrigin;
  if (origin && window.parent !== window)
    window.parent.postMessage({ type: 'chatwidget:identity-expired' }, origin);
}

// Before a send takes the composer's text (chat.js submit): the visitor's conversation is
// created first, so that a refused token leaves the text where it was, said in the
// assertive region, to be sent again once the site gave a new token. Any other failure
// (offline, a busy server) goes on as for anyone: the send says why, the outbox keeps it.
/**
 * @param {PanelHost} host
 * @returns {Promise<boolean>}
 */
async function createFirst(host) {
  if (host.client.conversationId || !host.client.identity) return true;
  const token = host.client.identity;
  try {
    await host.ensureConversation();
    return true;
  } catch (error) {
    if (!(error instanceof ApiError) || !REFRESHABLE.includes(error.code)) return true;
    // The site gave a new token while the refused one's request was in flight: the send goes
    // on with the new one (chat.js ensureConversation), and the old refusal is not said.
    if (host.client.identity !== token) return createFirst(host);
    host.showAlert(await reasonFor(host, error));
    return false;
  }
}

/** @param {PanelHost} host */
function closeView(host) {
  host.root.querySelector('#chat-conversations')?.dispatchEvent(new Event('chatwidget-close'));
}

// Signed out: the panel is emptied and forgets the conversation and every trace it kept on
// this browser (docs/privacy.md): its stored conversation, the outbox's waiting messages, the
// panel origin's storage. The visitor's conversations stay on the server, theirs to open again
// after signing in. The server's partitioned cookie, which names the last conversation for a
// reload where storage is blocked, is HttpOnly: it is replaced as a start-over replaces it
// (conversation-tools.js), by an empty anonymous conversation that this panel does not keep.
/**
 * @param {PanelHost} host
 * @param {KnownPanel} panel
 * @param {boolean} [elsewhere] another tab signed out (forgetHere)
 */
async function logout(host, panel, elsewhere = false) {
  if (panel.control) panel.control.hidden = true;
  const mine = host.root.querySelector('#chat-my-data');
  if (mine) /** @type {HTMLElement} */ (mine).hidden = true; // my-data.js, in the Options
  host.client.identity = '';
  panel.told = '';
  await forgetHere(host, 'logout', elsewhere);
}

// What a sign-out and an erasure of the visitor's data (my-data.js) both leave: an empty
// panel, and nothing of the conversation on this browser. `reason`: the `conversation`
// event's (docs/events.md). `elsewhere`: another tab did it and told this one; it has already
// emptied the storage and replaced the cookie that the tabs share (and may have kept a new
// conversation there since), so this tab forgets only its own, as tab-sync.js's reset does,
// and emits nothing, which its tab-sync.js would post back.
/**
 * @param {PanelHost} host
 * @param {'logout' | 'erased'} reason
 * @param {boolean} [elsewhere]
 */
export async function forgetHere(host, reason, elsewhere = false) {
  const client = host.client;
  const had = client.conversationId;
  host.currentRun()?.drop();
  closeView(host);
  host.clearTranscript();
  host.input.value = '';
  host.clearFiles();
  if (elsewhere) {
    client.conversationId = '';
    client.token = '';
  } else host.forget();
  // The outbox's messages belonged to the conversation that went (its storage and cookie too).
  (await import('./outbox.js')).prune(host);
  try {
    sessionStorage.clear(); // each tab's own
    if (!elsewhere) localStorage.clear();
  } catch {
    /* storage blocked: nothing was kept there */
  }
  if (elsewhere) return;
  panels.get(host)?.tabs.postMessage(reason);
  if (had)
    await new ChatClient({ apiBase: host.config.apiBase }).createConversation().catch(() => {});
  host.emit('conversation', { reason, conversationId: '' });
}
