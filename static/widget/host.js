// The host interface: all that a lazily loaded part of the panel (answer-tools.js,
// code-blocks.js, conversation-tools.js, outbox.js, tab-sync.js, scroll-follow.js, handoff.js, satisfaction.js,
// attachments.js, actions.js, refusals.js) may use of the panel. chat.js makes one `PanelHost` per panel
// (makeHost) and hands it to every part; no part imports chat.js or names its panel class
// (tests/test_architecture.py), so what the parts depend on is this list, each member with why.
// Types only: nothing here runs, so no browser ever fetches this module
// (docs/architecture.md, the panel's modules).

/** @typedef {import('./client.js').Attachment} Attachment */
/** @typedef {import('./client.js').AttachmentRef} AttachmentRef */
/** @typedef {import('./client.js').HistoryMessage} HistoryMessage */
/** @typedef {import('./client.js').SendRequest} SendRequest */

/**
 * A hand-off going on when the panel was loaded (web.py `_handoff`): its state (queued or
 * assigned) and the newest event's `seq`, so a reloaded panel resumes it (handoff.js).
 * Or, ended by a person and not yet rated, `{state: 'ended', seq, satisfaction}`: the hand-off's
 * `handoff.ended` seq, so a reloaded panel asks "How was your conversation?" (satisfaction.js).
 * @typedef {import('./client.js').HandoffState & { conversation_id: string, satisfaction?: number }} HandoffResume
 */

/**
 * The panel's configuration, as the server writes it into #chat-config (widget_server/web.py
 * `_render_panel`).
 * @typedef {object} PanelConfig
 * @property {string} lang
 * @property {Record<string, any>} strings The panel's strings (static/widget/i18n/<lang>.json)
 *   but the lazy parts' groups (web.py LAZY_STRING_GROUPS: lazy-parts.js fetches those).
 * @property {string} apiBase
 * @property {boolean} standalone
 * @property {string} hostOrigin The host page's origin, when the server vetted it ('' if not).
 * @property {string[]} hostOrigins
 * @property {string} [faults]
 * @property {number} retryMs
 * @property {number} maxBackoffMs
 * @property {number} stallTimeoutMs
 * @property {number} incompleteAfterMs
 * @property {number} announceIntervalMs
 * @property {number} turnHeadingLevel
 * @property {number} feedbackCommentMaxChars
 * @property {boolean} reducedMotion
 * @property {{ conversation_id: string, token: string } | null} conversation The conversation
 *   the panel's cookie remembers.
 * @property {'sentence' | 'complete' | 'off'} announceMode
 * @property {string[]} starters
 * @property {string} greeting
 * @property {string[]} warnings
 * @property {boolean | HandoffResume} handoff Whether people take conversations; or the
 *   remembered conversation's hand-off, to resume.
 * @property {Record<string, any>} attachments The upload limits (attachments.js).
 * @property {ConsentConfig | null} consent CONSENT_TEXT's step before the first message
 *   (consent.js), or null.
 */

/**
 * A file of a message the visitor sends (attachments.js take()): the stored attachment, its
 * description, the file and how the message carries it (`ref`).
 * @typedef {Attachment & { file?: File, ref: AttachmentRef }} SentFile
 */

/**
 * An answer's turn in the transcript: its item, the rendered text, the status line and the
 * buttons under it; with its run while one follows it, or the history's message.
 * @typedef {object} AssistantTurn
 * @property {HTMLLIElement} item
 * @property {HTMLDivElement} body
 * @property {HTMLParagraphElement} status
 * @property {HTMLDivElement} actions
 * @property {AnswerRunView} [run]
 * @property {HistoryMessage} [message]
 */

/**
 * An answer's run (chat.js AnswerRun) as the parts see it: watched and cancelled, never driven.
 * @typedef {object} AnswerRunView
 * @property {AssistantTurn} turn Its turn: the outbox puts it right after its question.
 * @property {{ messageId: string, text: string }} model Its id once the server took it (tab-sync
 *   shares it, the outbox stops keeping it); its verified text (answer-tools.js copies it).
 * @property {SendRequest | null} request What it sent: another tab's panel is told (tab-sync.js);
 *   its files leave the composer's list (attachments.js).
 * @property {string} phase 'verifying' counts as running still (outbox.js `ended`).
 * @property {boolean} inProgress A new question, a regenerate or a start-over waits for it.
 * @property {boolean} shared Posted to the other tabs already (tab-sync.js sets it).
 * @property {() => Promise<void>} cancel Stop it on the server (a start-over, here or elsewhere).
 * @property {() => void} drop Stop following it here only, silently (identity.js: a sign-out).
 */

// -- what a part hangs on the panel (host.provide) ---------------------------------------------

/**
 * attachments.js: the composer's files (chat.js submit() takes the ready ones).
 * @typedef {object} AttachmentsHook
 * @property {() => (SentFile[] | null)} take The ready files; null while one uploads, or offline.
 * @property {(refs: AttachmentRef[] | undefined) => void} sent An accepted message's files.
 * @property {() => void} clear Every file off the composer (a sign-out).
 */

/**
 * handoff.js: while a person has the conversation, a message goes to them.
 * @typedef {object} HandoffHook
 * @property {(text: string, files?: SentFile[]) => boolean} send false: no hand-off is active.
 */

/**
 * outbox.js: keeps a message that cannot go now (offline); true when it did.
 * @typedef {(item: HTMLElement, request: SendRequest) => boolean} HoldHook
 */

/**
 * The consent step (web.py `_consent`): the site's text, its privacy notice, the text's SHA-256
 * a new conversation's request sends back, and whether the remembered conversation recorded it.
 * @typedef {{ text: string, url: string, sha256: string, given: boolean }} ConsentConfig
 */

/**
 * consent.js: `hold()` is true when the first send must wait for the visitor's agreement (it
 * said why and moved focus); `body()` is what a new conversation's request carries.
 * @typedef {object} ConsentHook
 * @property {() => boolean} hold
 * @property {() => { consent_sha256: string } | undefined} body
 */

/**
 * A known visitor's (identity.js): `identityRefused` hears every refusal of a create or a read
 * (with the token the request carried, where it may not be the current one), and tells the site
 * when it was the identity token's; `checkIdentity` creates the conversation before a send
 * takes the composer's text, and says whether to go on.
 * @typedef {object} IdentityHooks
 * @property {(error: any, token?: string) => void} identityRefused
 * @property {() => Promise<boolean>} checkIdentity
 */

/**
 * @typedef {object} PanelHooks
 * @property {AttachmentsHook} attachments
 * @property {HandoffHook} handoff
 * @property {HoldHook} hold
 * @property {ConsentHook} consent
 * @property {IdentityHooks['identityRefused']} identityRefused
 * @property {IdentityHooks['checkIdentity']} checkIdentity
 */

/**
 * The panel's events a part follows: `chatwidget:<name>` on the panel's root (docs/events.md).
 * @typedef {'conversation' | 'event' | 'state' | 'ready' | 'handoff'} HostEventName
 */

/**
 * @typedef {object} PanelHost
 * @property {PanelConfig} config The server's word for this panel (web.py `_render_panel`): its
 *   language, limits and whether people take conversations. Read only.
 * @property {Record<string, any>} strings The panel's words; a part's own group comes through
 *   lazy-parts.js `lazyStrings`, which looks here first.
 * @property {import('./announcer.js').Announcer} announcer The one polite live region
 *   (docs/accessibility.md A5): a part never makes a second one.
 * @property {import('./client.js').ChatClient} client Every request a part makes: only client.js
 *   does HTTP (tests/test_architecture.py); tab-sync.js also moves its conversation.
 * @property {HTMLElement} root The panel: dialogs and the drop hint mount here, drags arrive here.
 * @property {HTMLOListElement} transcript The turns: a part finds a turn by its message id.
 * @property {HTMLElement} scroller What scrolls the transcript (scroll-follow.js follows its end).
 * @property {HTMLFormElement} form The composer: the file list goes in it, the hand-off's bar
 *   before it.
 * @property {HTMLTextAreaElement} input The composer's field: where focus goes back (A8); its
 *   maxLength is every message's.
 * @property {string} storageKey Where this panel keeps its conversation, per chat server: tabs
 *   share it, so it names their BroadcastChannel (tab-sync.js).
 * @property {boolean} following Whether the reader follows the transcript's end
 *   (scroll-follow.js keeps it; a send sets it).
 * @property {() => (AnswerRunView | null)} currentRun The latest answer, if any.
 * @property {(options: { request?: SendRequest | null, messageId?: string }) => AnswerRunView}
 *   startRun A new answer (a send, regenerate, edit) or one to follow (`messageId`: another
 *   tab's); it becomes the current one.
 * @property {(text: string, files?: Attachment[]) => HTMLLIElement} addUserTurn The visitor's
 *   turn, appended.
 * @property {(label: string, heading: string) => HTMLElement[]} whoSaid A turn's visible label
 *   and the heading a screen reader hears instead (A20), for a turn a part draws.
 * @property {(item: HTMLElement) => void} addToTranscript Appends a part's own line (an agent's
 *   turn, a notice), keeping the end in view if the reader was there.
 * @property {() => boolean} atBottom Whether the reader is at the transcript's end.
 * @property {() => void} scrollToEnd Shows the transcript's end, and follows it again.
 * @property {() => Record<string, any>} viewOptions How an answer's
 *   Markdown is drawn (its headings' level, its summaries' words), for a part that draws one.
 * @property {(text: string) => void} showAlert An error, said once, assertively (A6).
 * @property {<K extends keyof ChatWidgetEventDetails>(name: K, detail: ChatWidgetEventDetails[K]) => boolean}
 *   emit A documented DOM event (docs/events.md); false when a listener cancelled it.
 * @property {(name: HostEventName, listener: (event: CustomEvent) => void) => () => void} on
 *   Follows one of the panel's events; returns what stops following it.
 * @property {() => Promise<void>} ensureConversation The conversation, created once, before a
 *   part's first request needs it (an upload, a hand-off).
 * @property {() => ({ consent_sha256: string } | undefined)} consentBody What a new
 *   conversation's request carries: the visitor's agreement to CONSENT_TEXT, once given
 *   (consent.js), so a start-over's conversation records it too.
 * @property {() => void} notifyHost A new message the launcher counts as unread (A80).
 * @property {(conversation: { conversation_id: string, token: string }) => void} remember This
 *   conversation from now on, kept across a reload (a start-over's new one).
 * @property {() => void} forget No conversation any more, nor a stored one.
 * @property {() => void} clearTranscript A start-over: no answer, no turns, no alert, the
 *   greeting again.
 * @property {() => Promise<void>} redraw The conversation drawn again from the server's history
 *   (another tab replaced turns).
 * @property {(hooks: Partial<PanelHooks>) => void} provide A part offers what chat.js asks of it.
 * @property {(refs: AttachmentRef[]) => void} filesSent A message's files went (to a person,
 *   handoff.js): attachments.js takes them off the composer's list.
 * @property {() => void} clearFiles The composer's files gone, unsent (identity.js: a sign-out).
 */

export {};
