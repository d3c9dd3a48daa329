// The loader's second half (static/widget.js imports it on first open, or at once for an
// inline panel): the panel's iframe, the messages the panel posts to the host page, and the
// launcher's unread count. Kept out of the loader so that what every host page pays before
// anyone opens the chat stays within its 3 KB (tests/test_budgets.py); this module counts in
// the first open's budget instead.

// Options the panel reads from its URL (widget_server/web.py _render_panel), passed on when set.
const PANEL_OPTIONS = [
  'faults',
  'incompleteAfter',
  'announceInterval',
  'reducedMotion',
  'starters',
  'greeting',
  'headingLevel',
  'radius',
  'density',
  'font',
  'colorScheme',
];

// `shell` is the loader's side: { chatOrigin, chatBase, lang, title, inline, accent, option(name),
// launcher (null without one), launcherName, isOpen(), close(), identity, emit(name, detail),
// queue }. `container` receives the iframe. Returns `opened()`, which the loader calls each time
// the chat opens, with `opened.identify(token)` for ChatWidget.identify() and logout() (null),
// and `opened.flush()` for the page's API calls in `shell.queue`.
export function attach(shell, container) {
  const { chatOrigin, launcher } = shell;
  const url = new URL('panel', shell.chatBase); // beside the loader: /panel, or /chat/panel
  const params = url.searchParams;
  params.set('lang', shell.lang);
  params.set('title', shell.title);
  params.set('host', location.origin);
  if (shell.inline) params.set('inline', '1');
  if (shell.accent) params.set('accent', shell.accent);
  for (const name of PANEL_OPTIONS) {
    const value = shell.option(name, '');
    if (value) params.set(name, value);
  }
  const frame = document.createElement('iframe');
  frame.src = url.href;
  frame.title = shell.title;
  frame.setAttribute('referrerpolicy', 'origin');
  if (shell.inline)
    frame.style.cssText = 'display:block;width:100%;height:100%;min-height:480px;border:0';
  let loaded = false;
  let unread = 0; // answers and agent messages that came while closed (A80, A81)
  // A known visitor's token (docs/embedding.md, "Known visitors"): posted to the chat server's
  // origin only, never put in the iframe's URL (where logs, history and Referer would keep it).
  // Sent on every load, '' too, so that the panel knows whether one is coming.
  let identity = shell.identity;
  const tellIdentity = () =>
    loaded &&
    frame.contentWindow.postMessage({ type: 'chatwidget:identity', token: identity }, chatOrigin);

  // ChatWidget.send() and the others (docs/embedding.md, "Driving the widget from your page"):
  // posted in the order called, once the panel is there to hear them; the panel's host-api.js
  // checks each.
  const flush = () => {
    while (loaded && shell.queue.length)
      frame.contentWindow.postMessage(shell.queue.shift(), chatOrigin);
  };

  // Tells the panel to put focus in its composer (before load, the frame still holds
  // about:blank of the host's origin: wait for 'load').
  const notifyOpened = () =>
    frame.contentWindow.postMessage({ type: 'chatwidget:opened' }, chatOrigin);

  // names: "{label}, {count} unread messages" by plural category, in the panel's language.
  function showUnread(names) {
    if (!launcher) return;
    if (unread) launcher.dataset.unread = unread;
    else delete launcher.dataset.unread;
    const name = names?.[new Intl.PluralRules(shell.lang).select(unread)];
    launcher.setAttribute(
      'aria-label',
      unread && name
        ? name.replace('{label}', shell.launcherName).replace('{count}', unread)
        : shell.launcherName,
    );
  }

  frame.addEventListener('load', () => {
    loaded = true;
    tellIdentity();
    flush();
    // Only a panel the user opened takes focus; an inline one never does.
    if (shell.isOpen() && !shell.inline) notifyOpened();
  });
  window.addEventListener('message', (event) => {
    if (event.origin !== chatOrigin || event.source !== frame.contentWindow) return;
    const type = event.data?.type;
    if (type === 'chatwidget:close') shell.close();
    // The panel's create or read was refused for the token (docs/events.md): the site gives a
    // fresh one with ChatWidget.identify().
    if (type === 'chatwidget:identity-expired') shell.emit('identity-expired');
    // The panel's events for the page (host-api.js), dispatched on the loader's script element.
    if (type === 'chatwidget:host') shell.emit(event.data.name, event.data.detail);
    // A new answer or agent message (chat.js notifyHost) while the panel is closed.
    if (type === 'chatwidget:unread' && !shell.isOpen()) {
      unread += 1;
      showUnread(event.data.names);
    }
  });
  container.appendChild(frame);

  function opened() {
    unread = 0;
    showUnread();
    frame.focus();
    if (loaded) notifyOpened();
  }
  /** @param {string | null} token */
  opened.identify = (token) => {
    identity = token;
    tellIdentity();
  };
  opened.flush = flush;
  return opened;
}
