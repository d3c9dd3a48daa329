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
  // Pasted twice, or run again by Turbo Drive with a new <body>: the first one
  // stays the only one. Without document.currentScript (a script inserted into a
  // shadow root, or run from a tag manager's callback) the loader is the last
  // script whose path ends in /widget.js (docs/embedding.md).
  if (window.ChatWidget) return;
  const script = /** @type {HTMLScriptElement | undefined} */ (
    document.currentScript ||
      [.../** @type {NodeListOf<HTMLScriptElement>} */ (document.querySelectorAll('script[src]'))]
        .reverse()
        .find((element) => /\/widget\.js([?#]|$)/.test(element.src))
  );
  if (!script) return;
  // Filled in by the server from static/widget/i18n/*.json.
  const STRINGS = __CHATWIDGET_STRINGS__;
  // The server's language rules (widget_server/data/languages.json, filled in by web.py):
  // the languages written right to left and the retired codes of others.
  const LANGUAGES = __CHATWIDGET_LANGUAGES__;
  // The chat's URLs are relative to the loader's: /widget.js on a server of its own, or
  // /chat/widget.js where a site mounts the chat in its own app (docs/serving.md).
  const chatBase = new URL('.', new URL(script.src, location.href)).href;
  const chatOrigin = new URL(chatBase).origin;
  const pageConfig = window.ChatWidgetConfig || {};
  const attributes = script.dataset;
  const option = (name, fallback) => {
    if (attributes[name] != null) return attributes[name];
    return pageConfig[name] != null ? String(pageConfig[name]) : fallback;
  };
  // The first supported of data-lang, the host page's <html lang>, the browser's
  // languages, by base language (pt-BR → pt; iw, Hebrew's old code, → he); as the
  // server's pick_language (widget_server/i18n.py) does for /chat.
  const supported = (tag) => {
    const base = String(tag || '')
      .toLowerCase()
      .split(/[-_]/)[0];
    const current = LANGUAGES.aliases[base] || base;
    return STRINGS[current] ? current : '';
  };
  const lang =
    [option('lang', ''), document.documentElement.lang, ...(navigator.languages || [])]
      .map(supported)
      .find(Boolean) || 'en';
  const strings = STRINGS[lang];
  const title = option('title', strings.panelTitle);
  // Right-to-left languages (widget_server/i18n.py RTL_LANGUAGES): the launcher's
  // default corner is the mirror image, bottom left (docs/configuration.md).
  const rtl = LANGUAGES.rtl.includes(lang);
  const side = option('position', rtl ? 'left' : 'right') === 'left' ? 'left' : 'right';
  // Theming (docs/theming.md): the server's THEME_* settings < ChatWidgetConfig < data-*.
  const THEME = __CHATWIDGET_THEME__;
  const themeOption = (name, fallback) => option(name, THEME[name] || fallback);
  const warn = (message) => console.warn(`chat widget: ${message}`);
  // The accent as the browser reads CSS colours: a canvas turns any colour it accepts into
  // #rrggbb (rgba() when translucent) and keeps its previous value for anything else (a
  // sentinel no site picks). The server gets #rrggbb.
  const accentOption = themeOption('accent', '');
  const paint = document.createElement('canvas').getContext('2d');
  paint.fillStyle = '#010203';
  paint.fillStyle = accentOption;
  let accent = /** @type {string} */ (paint.fillStyle);
  if (accent === '#010203' || accent[0] !== '#') {
    if (accentOption) warn(`data-accent "${accentOption}" ignored: not an opaque CSS colour`);
    accent = '#0b57d0';
  }
  // WCAG 2.2 relative luminance (https://www.w3.org/TR/WCAG22/#dfn-relative-luminance), its
  // sRGB curve approximated by a 2.2 power: with 0.18 as the threshold, black or white text
  // (whichever this says contrasts more) has ≥ 4.52:1 on every sRGB colour, as
  // tests/test_theme.py checks over the whole cube.
  const luminance = [1, 3, 5].reduce(
    (sum, at, i) =>
      sum + [0.2126, 0.7152, 0.0722][i] * (parseInt(accent.slice(at, at + 2), 16) / 255) ** 2.2,
    0,
  );
  const onAccent = luminance > 0.18 ? '#000' : '#fff';
  const dark = themeOption('colorScheme', '') === 'dark';
  // An accent under 4.5:1 on the panel's background: the panel uses a shade of its hue that
  // passes, and the panel's console names it (theme.py adjust_for_contrast, docs/theming.md).
  let size = ['none', 'small', 'medium', 'large'].indexOf(themeOption('radius', 'medium'));
  if (size < 0) size = 2;
  // Quotes dropped: a font list is names, commas and spaces; anything else (or "system", a name
  // no font has) leaves the system fonts.
  const font = themeOption('font', '').replace(/["']/g, '');
  const fontFamily = `${/^[\w ,.-]+$/.test(font) ? `${font},` : ''}system-ui,sans-serif`;
  // An integer, else the default (CSS clamps one beyond 2147483647).
  const layer = parseInt(themeOption('zIndex', ''), 10) || 2147483000;
  const launcherText = themeOption('launcherLabel', strings.launcher);
  // Drawn by CSS (.icon-chat, .icon-help below): no markup, nothing for Trusted Types to check.
  const icon = themeOption('launcherIcon', 'chat');
  const targetSelector = option('target', '');
  const target = targetSelector ? document.querySelector(targetSelector) : null;
  if (targetSelector && !target) {
    console.error(`chat widget: data-target "${targetSelector}" matches no element`);
    return;
  }

  let launcher = null;
  let panel = null;
  let isOpen = false;
  // data-launcher="none": the site opens the chat with its own button (ChatWidget.open()).
  const withLauncher = option('launcher', '') !== 'none';
  let opener = null; // what had focus when the chat opened: it gets it back (A82)
  let launcherName = '';
  let attached = null; // the iframe's half (static/widget/embed.js), imported on first open
  // The page's ChatWidget.send(), setComposer(), setContext() and on(), for the panel: embed.js
  // posts them in order once it has loaded (docs/embedding.md, "Driving the widget from your
  // page"). send() and setComposer() load the panel, still closed, if it is not there yet.
  const queue = [];
  const tell = (name, value, load) => {
    queue.push({ type: 'chatwidget:api', name, value });
    if (attached || load) withPanel((opened) => opened.flush());
  };
  // The full-screen panel of phones (the CSS media query below).
  const phone = matchMedia('(max-width:480px),(max-height:480px)');
  const viewport = window.visualViewport;
  let rootStyleBefore = null; // <html>'s own inline style, restored exactly on close (A86)
  // A known visitor's signed token (docs/embedding.md, "Known visitors"): embed.js posts it to
  // the panel, never in the iframe's URL; null once the site called logout().
  let identity = option('identityToken', '');

  // The iframe, its messages and the unread count live in static/widget/embed.js, imported
  // on first open (an inline panel: at once), so that host pages pay only for the launcher.
  function withPanel(then) {
    attached ||= import(new URL('static/widget/embed.js', chatBase).href).then((embed) =>
      embed.attach(
        {
          chatOrigin,
          chatBase,
          lang,
          title,
          inline: !!target,
          accent: accent === '#0b57d0' ? '' : accent,
          option,
          launcher,
          launcherName,
          isOpen: () => isOpen,
          close,
          identity,
          emit,
          queue,
        },
        target || panel,
      ),
    );
    attached.then(then);
  }

  function emit(name, detail) {
    // After Turbo Drive swapped <body>, the script element is gone: the document hears it.
    return (script.isConnected ? script : document).dispatchEvent(
      new CustomEvent(`chatwidget:${name}`, { cancelable: true, bubbles: true, detail }),
    );
  }

  const CSS =
    ':host{all:initial}' +
    `.launcher{position:fixed;bottom:calc(16px + env(safe-area-inset-bottom,0px));${side}:calc(16px + env(safe-area-inset-${side},0px));z-index:${layer};min-width:44px;min-height:44px;` +
    `display:flex;align-items:center;gap:8px;padding:${themeOption('density', '') === 'compact' ? '6px 12px' : '10px 18px'};` +
    `border:2px solid #fff;border-radius:${size * 12}px;background:${accent};color:${onAccent};` +
    `font:600 16px/1.2 ${fontFamily};cursor:pointer;box-shadow:0 2px 8px rgba(0,0,0,.35)}` +
    // The icons: a speech bubble (its lower start corner square, the tail: bottom right in a
    // right-to-left language) and a circled "?" (Arabic's own question mark, ؟, in Arabic).
    '.icon-chat:before,.icon-help:before{content:"";width:16px;height:12px;border:2px solid;border-radius:6px;border-end-start-radius:0}' +
    `.icon-help:before{content:"${lang === 'ar' ? '؟' : '?'}";height:16px;border-radius:50%;font:13px/16px sans-serif;text-align:center}` +
    `.launcher:focus-visible{outline:3px solid ${accent};outline-offset:3px}` +
    `.panel{position:fixed;bottom:80px;${side}:16px;z-index:${layer};width:min(400px,calc(100vw - 32px));` +
    `height:min(640px,calc(100vh - 96px));border:1px solid #6b6b6b;border-radius:${size * 6}px;overflow:hidden;` +
    `background:${dark ? '#121212' : '#fff'};box-shadow:0 4px 24px rgba(0,0,0,.35)}` +
    '.panel[hidden]{display:none}iframe{display:block;width:100%;height:100%;border:0}' +
    // The unread badge: generated content, so not read out; the count is in the launcher's name.
    '.launcher[data-unread]:after{content:attr(data-unread);min-width:12px;padding:0 4px;border-radius:9px;' +
    `background:${onAccent};color:${accent};font-size:14px;text-align:center}` +
    // Phones: full-screen inside the safe area (a notch, the home indicator) — A85.
    '@media (max-width:480px),(max-height:480px){.panel{inset:0;width:auto;height:auto;border-radius:0;border:0;' +
    'box-sizing:border-box;padding:env(safe-area-inset-top) env(safe-area-inset-right) env(safe-area-inset-bottom) env(safe-area-inset-left)}' +
    // Full-screen panel: the launcher would cover its content; the panel's own Close button takes its place.
    '.panel:not([hidden])+.launcher{display:none}}' +
    '@media (forced-colors:active){.launcher,.panel{border:2px solid CanvasText}}';

  function mountFloating() {
    const host = document.createElement('div');
    host.setAttribute('data-chatwidget', '');
    // The launcher's words are in the panel's language, whatever the page's.
    host.lang = lang;
    host.dir = rtl ? 'rtl' : 'ltr';
    const root = host.attachShadow({ mode: 'open' });
    // A constructed sheet is not subject to the host's style-src CSP, as a <style> would be
    // (every browser the widget supports has them: docs/embedding.md).
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(CSS);
    root.adoptedStyleSheets = [sheet];
    launcher = document.createElement('button');
    launcher.type = 'button';
    launcher.className = `launcher icon-${icon}`;
    launcher.textContent = launcherText;
    // A site's own label is the name too (WCAG 2.2 2.5.3 Label in Name).
    launcher.setAttribute(
      'aria-label',
      launcherText === strings.launcher ? strings.launcherLabel : launcherText,
    );
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
    // The chat's own landmark, named by the panel's title, so the page's landmark list
    // finds it and a page whose content is all in landmarks stays so (A79).
    const region = document.createElement('aside');
    region.setAttribute('aria-label', title);
    region.appendChild(panel);
    if (withLauncher) {
      region.appendChild(launcher);
      launcherName = launcher.getAttribute('aria-label');
    } else launcher = null;
    root.appendChild(region);
    // Host CSS reaches the host element itself and beats :host{} (CSS Scoping § 3.3); an
    // inline `all:initial` beats the page's rules (`div{position:relative}`, `*{all:unset}`).
    // Not !important: a visitor's own text-spacing sheet may still apply (WCAG 1.4.12). The
    // CSSOM is not an inline style attribute: a strict style-src allows it.
    host.style.all = 'initial';
    // Turbo Drive and SPAs replace <body>: the host lives beside it, a child of <html>,
    // so it is never removed and an open panel's iframe never moves (moving an iframe
    // reloads it); if something removes it all the same, it is put back at once (A83).
    const keep = () => host.isConnected || document.documentElement.appendChild(host);
    keep();
    new MutationObserver(keep).observe(document.documentElement, { childList: true });
    phone.addEventListener('change', fit);
    for (const type of ['resize', 'scroll']) viewport?.addEventListener(type, fit);
  }

  // Phones (A84, A86): while open full-screen, the panel covers the visual viewport —
  // what the on-screen keyboard leaves visible — and the page behind does not scroll.
  function fit() {
    const full = isOpen && phone.matches;
    const rootStyle = document.documentElement.style;
    if (full && rootStyleBefore == null) {
      rootStyleBefore = rootStyle.cssText;
      rootStyle.overflow = 'hidden';
    } else if (!full && rootStyleBefore != null) {
      rootStyle.cssText = rootStyleBefore;
      rootStyleBefore = null;
    }
    const fitted = full && viewport;
    Object.assign(panel.style, {
      inset: fitted ? `${fitted.offsetTop}px auto auto ${fitted.offsetLeft}px` : '',
      width: fitted ? `${fitted.width}px` : '',
      height: fitted ? `${fitted.height}px` : '',
    });
  }

  function open() {
    if (isOpen || !emit('show')) return;
    opener = document.activeElement;
    panel.hidden = false;
    isOpen = true;
    if (launcher) launcher.setAttribute('aria-expanded', 'true');
    fit();
    emit('open');
    withPanel((opened) => isOpen && opened()); // lazily: nothing loads until first open
  }

  function close() {
    if (!isOpen || !emit('hide')) return;
    panel.hidden = true;
    isOpen = false;
    fit();
    emit('close');
    // Focus returns to where the user opened the chat: the launcher, or the site's own button.
    if (launcher) {
      launcher.setAttribute('aria-expanded', 'false');
      launcher.focus();
    } else if (opener?.focus) opener.focus();
  }

  function start() {
    if (target) {
      isOpen = true;
      withPanel(() => {});
    } else {
      mountFloating();
    }
  }

  // Sign-in and sign-out of a single-page app: kept for the panel's first load, else forwarded.
  const identify = (token) => {
    identity = token;
    attached?.then((opened) => opened.identify(token));
  };
  window.ChatWidget = {
    open: open,
    close: close,
    isOpen: () => isOpen,
    identify,
    logout: () => identify(null),
    send: (text) => tell('send', text, 1),
    setComposer: (text) => tell('composer', text, 1),
    // As JSON: the panel checks its bounds (host-api.js); a value postMessage cannot copy (a
    // function) is left out rather than failing the post.
    setContext: (context) => tell('context', JSON.stringify(context)),
    // Listeners on the document hear the events wherever they are dispatched (emit above).
    on: (name, listener) => {
      document.addEventListener(`chatwidget:${name}`, listener);
      tell('listen');
    },
  };
  if (document.body) start();
  else document.addEventListener('DOMContentLoaded', start);
})();
