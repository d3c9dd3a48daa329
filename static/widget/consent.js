// The consent step (CONSENT_TEXT; docs/accessibility.md A120, docs/protocol.md "Consent"). The
// server draws it into the panel's page (templates/panel.html: the site's text, its privacy
// notice's link, a native checkbox "I agree", the reason a held send gives) only while no
// conversation exists; chat.js loads this module when the config has consent. Until the box is
// checked the first send is held: its text stays in the composer, focus goes to the box and the
// reason is said once, through the alert region as any refused send (A6). The agreement then
// rides with the request that creates the conversation, which records it; the server refuses a
// creation without it (403 consent_required).

/** @typedef {import('./host.js').PanelHost} PanelHost */
/** @typedef {import('./host.js').ConsentHook} ConsentHook */

/** @type {WeakMap<PanelHost, ConsentHook>} */
const hooks = new WeakMap();

// "Talk to a person" (handoff.js) starts the conversation as a first send does, so it waits for
// the agreement the same way: true when it must (focus went to the box, the reason was said).
/** @param {PanelHost} host */
export function hold(host) {
  return !!hooks.get(host)?.hold();
}

/** @param {PanelHost} host */
export function init(host) {
  const consent = host.config.consent;
  if (!consent) return;
  const step = /** @type {HTMLElement | null} */ (host.root.querySelector('[data-chat-consent]'));
  const box = step?.querySelector('input');
  let given = consent.given;
  const agreed = () => given || !!box?.checked;
  // A conversation the panel restored from its own storage was agreed to when it was made.
  if (host.client.conversationId) step?.remove();
  /** @type {ConsentHook} */
  const hook = {
    hold() {
      if (host.client.conversationId || agreed()) {
        given = agreed();
        // The line goes with the first send (or once another tab's conversation is this
        // one's, tab-sync.js): it was about the conversation's start.
        step?.remove();
        return false;
      }
      box?.focus();
      host.showAlert(step?.dataset.required || '');
      return true;
    },
    body: () => (agreed() ? { consent_sha256: consent.sha256 } : undefined),
  };
  hooks.set(host, hook);
  host.provide({ consent: hook });
}
