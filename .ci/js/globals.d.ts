// What static/ uses that TypeScript's libraries do not declare, for the tsc gate
// (.ci/js/tsconfig.json). Declarations only: nothing here reaches a browser.

// The Prioritized Task Scheduling API's scheduler.yield() (follow.js gives the browser a
// turn with it where it exists): https://wicg.github.io/scheduling-apis/
interface Scheduler {
  yield(): Promise<void>;
}
declare var scheduler: Scheduler | undefined;

// Filled in by the server when it sends the loader (widget_server/web.py, static/widget.js).
declare const __CHATWIDGET_STRINGS__: Record<string, Record<string, string>>;
declare const __CHATWIDGET_LANGUAGES__: { rtl: string[]; aliases: Record<string, string> };
declare const __CHATWIDGET_THEME__: Record<string, string>;

interface Window {
  // The loader's API (static/widget.js, docs/embedding.md).
  ChatWidget?: {
    open(): void;
    close(): void;
    isOpen(): boolean;
    // A known visitor's signed token, or a new one after `chatwidget:identity-expired`.
    identify(token: string): void;
    // The visitor signed out: the panel forgets everything it kept (docs/embedding.md).
    logout(): void;
  };
  // The host page's options for the loader (docs/configuration.md).
  ChatWidgetConfig?: Record<string, unknown>;
  // The booted panel, for tests, bench/widget.py and the QA page (static/widget/panel.js).
  chatPanel?: import('../../static/widget/chat.js').ChatPanel;
}

// The panel's DOM events (docs/events.md): `chatwidget:<name>`, a CustomEvent with this detail,
// bubbling from the panel's root (ChatPanel.emit in static/widget/chat.js).
interface ChatWidgetEventDetails {
  ready: Record<string, never>;
  announce: { politeness: 'polite' | 'assertive'; text: string };
  state: { state: string; messageId: string };
  event: { type: string; seq: number; outcome: 'applied' | 'duplicate' | 'ignored' };
  focus: { target: string };
  action: { actionId: string; messageId: string; status: string };
  conversation: { reason: 'new' | 'deleted' | 'logout' | 'erased'; conversationId: string };
  copy: { messageId: string };
  feedback: { messageId: string; rating: 'up' | 'down' | null; comment: string };
  handoff: {
    state: 'queued' | 'assigned' | 'none';
    agent: string;
    position: number;
    reason?: string;
  };
}

type ChatWidgetEventMap = {
  [K in keyof ChatWidgetEventDetails as `chatwidget:${K}`]: CustomEvent<ChatWidgetEventDetails[K]>;
};

interface HTMLElementEventMap extends ChatWidgetEventMap, ChatWidgetLoaderEventMap {}

// The loader's events on its <script> element, bubbling to `document` (docs/events.md, "On the
// loader's <script> element"): no detail. `identity-expired`: the server refused the visitor's
// identity token (expired or invalid); the site answers with ChatWidget.identify(newToken).
interface ChatWidgetLoaderEventMap {
  'chatwidget:show': CustomEvent<null>;
  'chatwidget:hide': CustomEvent<null>;
  'chatwidget:identity-expired': CustomEvent<null>;
}

interface DocumentEventMap extends ChatWidgetLoaderEventMap {}
