/* widget_server loader: the only code a host page runs before the chat opens.
 *
 *   <script src="https://CHAT-HOST/widget.js" defer
 *           data-lang="en" data-title="Help" data-position="right"></script>
 *
 * Budget: ≤ 3 KB gzipped, one request, no long task (a test checks the
 * bytes). It mounts a launcher in a shadow root (host CSS cannot reach it)
 * and, on first open, the panel: an iframe from the chat server, so host
 * scripts can never read the conversation. Options: defaults < the JS
 * object window.ChatWidgetConfig < data-* attributes.
 */
(() => {
  const script = document.currentScript;
  if (!script || window.ChatWidget) return;
  // Filled in by the server from static/widget/i18n/*.json.
  const STRINGS = __CHATWIDGET_STRINGS__;
  const chatOrigin = new URL(script.src, location.href).origin;
  const pageConfig = window.ChatWidgetConfig || {};
  const attributes = script.dataset;
  const option = (name, fallback) => {
    if (attributes[name] != null) return attributes[name];
    return pageConfig[name] != null ? String(pageConfig[name]) : fallback;
  };
  const requestedLang = option('lang', document.documentElement.lang || 'en')
    .toLowerCase()
    .split('-')[0];
  const lang = STRINGS[requestedLang] ? requestedLang : 'en';
  const strings = STRINGS[lang];
  const title = option('title', strings.panelTitle);
  const side = option('position', 'right') === 'left' ? 'left' : 'right';
  const targetSelector = option('target', '');
  const target = targetSelector ? document.querySelector(targetSelector) : null;
  if (targetSelector && !target) {
    console.error(`chat widget: data-target "${targetSelector}" matches no element`);
    return;
  }

  let frame = null;
  let launcher = null;
  let panel = null;
  let isOpen = false;
  let frameLoaded = false;

  function panelUrl() {
    const url = new URL('/panel', chatOrigin);
    url.searchParams.set('lang', lang);
    url.searchParams.set('title', title);
    url.searchParams.set('host', location.origin);
    if (target) url.searchParams.set('inline', '1');
    for (const name of [
      'faults',
      'incompleteAfter',
      'announceInterval',
      'reducedMotion',
      'starters',
      'greeting',
      'headingLevel',
    ]) {
      const value = option(name, '');
      if (value) url.searchParams.set(name, value);
    }
    return url.href;
  }

  function makeFrame() {
    frame = document.createElement('iframe');
    frame.src = panelUrl();
    frame.title = title;
    frame.setAttribute('referrerpolicy', 'origin');
    frame.addEventListener('load', () => {
      frameLoaded = true;
      // Only a panel the user opened takes focus; an inline one never does.
      if (isOpen && launcher) notifyOpened();
    });
    return frame;
  }

  function emit(name) {
    return script.dispatchEvent(
      new CustomEvent(`chatwidget:${name}`, { cancelable: true, bubbles: true }),
    );
  }

  const CSS =
    ':host{all:initial}' +
    `.launcher{position:fixed;bottom:16px;${side}:16px;z-index:2147483000;min-width:44px;min-height:44px;` +
    'padding:10px 18px;border:2px solid #fff;border-radius:24px;background:#0b57d0;color:#fff;' +
    'font:600 16px/1.2 system-ui,sans-serif;cursor:pointer;box-shadow:0 2px 8px rgba(0,0,0,.35)}' +
    '.launcher:focus-visible{outline:3px solid #0b57d0;outline-offset:3px}' +
    `.panel{position:fixed;bottom:80px;${side}:16px;z-index:2147483000;width:min(400px,calc(100vw - 32px));` +
    'height:min(640px,calc(100vh - 96px));border:1px solid #6b6b6b;border-radius:12px;overflow:hidden;' +
    'background:#fff;box-shadow:0 4px 24px rgba(0,0,0,.35)}' +
    '.panel[hidden]{display:none}iframe{display:block;width:100%;height:100%;border:0}' +
    '@media (max-width:480px),(max-height:480px){.panel{inset:0;width:auto;height:auto;border-radius:0;border:0}' +
    // Full-screen panel: the launcher would cover its content; the panel's own Close button takes its place.
    '.panel:not([hidden])+.launcher{display:none}}' +
    '@media (forced-colors:active){.launcher,.panel{border:2px solid CanvasText}}';

  function mountFloating() {
    const host = document.createElement('div');
    host.setAttribute('data-chatwidget', '');
    const root = host.attachShadow({ mode: 'open' });
    try {
      const sheet = new CSSStyleSheet();
      sheet.replaceSync(CSS);
      root.adoptedStyleSheets = [sheet]; // not subject to the host's style-src CSP
    } catch {
      // No constructable style sheets: a <style> element does the same.
      const style = document.createElement('style');
      style.textContent = CSS;
      root.appendChild(style);
    }
    launcher = document.createElement('button');
    launcher.type = 'button';
    launcher.className = 'launcher';
    launcher.textContent = strings.launcher;
    launcher.setAttribute('aria-label', strings.launcherLabel);
    launcher.setAttribute('aria-expanded', 'false');
    launcher.setAttribute('aria-controls', 'chatwidget-panel');
    launcher.addEventListener('click', () => {
      if (isOpen) close();
      else open();
    });
    panel = document.createElement('div');
    panel.className = 'panel';
    panel.id = 'chatwidget-panel';
    panel.setAttribute('role', 'dialog');
    panel.setAttribute('aria-label', title);
    panel.hidden = true;
    root.appendChild(panel);
    root.appendChild(launcher);
    document.body.appendChild(host);
  }

  function open() {
    if (isOpen || !emit('show')) return;
    if (!frame) panel.appendChild(makeFrame()); // lazily: nothing loads until first open
    panel.hidden = false;
    isOpen = true;
    launcher.setAttribute('aria-expanded', 'true');
    frame.focus();
    if (frameLoaded) notifyOpened();
  }

  // Tells the panel to put focus in its composer (before load, the frame
  // still holds about:blank of the host's origin: wait for 'load').
  function notifyOpened() {
    frame.contentWindow.postMessage({ type: 'chatwidget:opened' }, chatOrigin);
  }

  function close() {
    if (!isOpen || !emit('hide')) return;
    panel.hidden = true;
    isOpen = false;
    launcher.setAttribute('aria-expanded', 'false');
    launcher.focus(); // focus returns to where the user opened the chat
  }

  window.addEventListener('message', (event) => {
    if (!frame || event.origin !== chatOrigin || event.source !== frame.contentWindow) return;
    if (event.data && event.data.type === 'chatwidget:close' && launcher) close();
  });

  function start() {
    if (target) {
      isOpen = true;
      const inline = makeFrame();
      inline.style.cssText = 'display:block;width:100%;height:100%;min-height:480px;border:0';
      target.appendChild(inline);
    } else {
      mountFloating();
    }
  }

  window.ChatWidget = {
    open: open,
    close: close,
    isOpen: () => isOpen,
  };
  if (document.body) start();
  else document.addEventListener('DOMContentLoaded', start);
})();
