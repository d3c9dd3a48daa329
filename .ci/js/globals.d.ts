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
    // The host page's API (docs/embedding.md, "Driving the widget from your page").
    send(text: string): void;
    setComposer(text: string): void;
    setContext(context: Record<string, string | number | boolean> | null): void;
    on<K extends keyof ChatWidgetLoaderEventMap>(
      name: K extends `chatwidget:${infer N}` ? N : never,
      listener: (event: ChatWidgetLoaderEventMap[K]) => void,
    ): void;
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
// loader's <script> element"). `identity-expired`: the server refused the visitor's identity
// token (expired or invalid); the site answers with ChatWidget.identify(newToken). From `ready`
// on: the panel's, for a page that uses the API (static/widget/host-api.js).
interface ChatWidgetLoaderEventMap {
  'chatwidget:show': CustomEvent<null>;
  'chatwidget:hide': CustomEvent<null>;
  'chatwidget:identity-expired': CustomEvent<null>;
  'chatwidget:open': CustomEvent<null>;
  'chatwidget:close': CustomEvent<null>;
  'chatwidget:ready': CustomEvent<Record<string, never>>;
  'chatwidget:message-sent': CustomEvent<{ requestId: string; text: string }>;
  'chatwidget:answer-started': CustomEvent<{ messageId: string }>;
  'chatwidget:answer-completed': CustomEvent<{ messageId: string; text: string; sha256: string }>;
  'chatwidget:answer-failed': CustomEvent<{ messageId: string; code: string }>;
  'chatwidget:handoff-state': CustomEvent<{ state: 'queued' | 'assigned' | 'none' }>;
}

interface DocumentEventMap extends ChatWidgetLoaderEventMap {}
