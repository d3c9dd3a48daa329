// The panel page's entry module (templates/panel.html): boots the panel with
// the configuration in #chat-config. The modules it imports only define
// things, so tests can import them without starting a panel.

import { ChatPanel } from './chat.js';

function boot() {
  const root = /** @type {HTMLElement | null} */ (document.querySelector('[data-chat-panel]'));
  const configNode = document.getElementById('chat-config');
  if (!root || !configNode) return;
  const config = JSON.parse(configNode.textContent);
  const panel = new ChatPanel(root, config);
  // For tests (tests/e2e/test_resilience.py), bench/widget.py and the QA page.
  window.chatPanel = panel;
  panel.restore().finally(() => {
    root.dataset.ready = 'true';
    panel.emit('ready', {});
  });
}

boot();
