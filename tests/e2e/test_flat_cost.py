"""A flat-cost panel (docs/performance.md, "Widget"): what its speed-ups could break, in real browsers.

- The conversation is created when the first message is sent, not when the panel opens nor
  while the visitor types (nothing is stored before the visitor speaks: docs/security.md,
  "Nothing stored before the first message"; tests/e2e/test_no_storage_before_send.py); later
  messages reuse it: one conversation, one creation request. A refused creation is said on
  Enter, and the next Enter tries again.
- A long answer received at once (every delta before the first frame, or one snapshot when the
  answer outran the event log) is drawn a frame's share at a time (chat.js `drawSlices`), yet the
  result is the same DOM, byte for byte, as drawing the whole text in one pass, the text is the
  answer exactly, and the live region says the same sentences, in order, as the one-pass view's
  blocks give (announcer.js).

Times are measured by bench/widget.py (docs/performance.md, "Widget"), never asserted here.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from widget_server.backends.demo import bulk_answer

from ..helpers import HTTP

pytestmark = pytest.mark.e2e

# Firefox ESR's share (docs/testing.md): the cases marked chromium_only run in Chromium alone.
FLAT_FIREFOX = "the conversation's creation is chat.js's requests, the same in both engines; Firefox runs the drawing in slices (the long answer before the first frame) and resume after a reload (test_widget.py, test_resilience.py)"

CONVERSATIONS_PATH = "/api/v1/conversations"


class ConversationPosts:
    """Every POST /api/v1/conversations and POST …/messages the page (its panel frame too) sends."""

    def __init__(self, page: Page) -> None:
        self.conversations: list[str] = []
        self.messages: list[str] = []
        page.on("request", self._seen)

    def _seen(self, request) -> None:
        if request.method != "POST":
            return
        if request.url.endswith(CONVERSATIONS_PATH):
            self.conversations.append(request.url)
        elif request.url.endswith("/messages"):
            self.messages.append(request.url)


def conversation_ids(server) -> list[str]:
    return list(server.service.store._conversations)


@pytest.mark.chromium_only(reason=FLAT_FIREFOX)
def test_opening_and_typing_create_no_conversation_enter_creates_one_and_later_messages_reuse_it(
    embed, page, chat_server_factory
):
    server = chat_server_factory()
    posts = ConversationPosts(page)
    widget = embed(server)
    widget.open()
    # Everything the panel loads once ready (outbox.js is the last of them) has run: a panel
    # that created a conversation on open would have done so by now.
    widget.panel_frame().wait_for_function("() => typeof window.chatPanel.hold === 'function'")
    widget.input.press_sequentially("/echo typed then sent")
    # Typing is not sending: a round trip later, still nothing (the panel once created the
    # conversation on the first input event; that request would have been seen by now).
    widget.panel_frame().evaluate("() => fetch(location.href, { method: 'HEAD' })")
    assert posts.conversations == [] and conversation_ids(server) == []
    assert widget.panel_frame().evaluate("() => window.chatPanel.client.conversationId") == ""
    widget.input.press("Enter")
    assert widget.wait_until_complete() == "completed"
    expect(widget.last_answer().locator(".turn__body")).to_have_text("typed then sent")
    (created,) = conversation_ids(server)
    assert len(posts.conversations) == 1
    assert posts.messages == [f"{posts.conversations[0]}/{created}/messages"]
    # The next message goes to the same conversation, with no new one.
    widget.send("/echo again")
    assert widget.wait_until_complete() == "completed"
    assert len(posts.conversations) == 1 and conversation_ids(server) == [created]


@pytest.mark.chromium_only(reason=FLAT_FIREFOX)
def test_enter_while_the_conversation_is_still_being_created_shares_that_request(embed, page, chat_server_factory):
    server = chat_server_factory()
    posts = ConversationPosts(page)
    widget = embed(server)
    widget.open()
    # fill() is one input event; Enter follows at once, the creation it started still in flight.
    widget.send("/echo at once")
    assert widget.wait_until_complete() == "completed"
    expect(widget.last_answer().locator(".turn__body")).to_have_text("at once")
    (created,) = conversation_ids(server)
    assert len(posts.conversations) == 1
    assert posts.messages == [f"{posts.conversations[0]}/{created}/messages"]


@pytest.mark.chromium_only(reason=FLAT_FIREFOX)
def test_a_refused_creation_is_said_on_enter_and_the_next_enter_tries_again(embed, page, chat_server_factory):
    server = chat_server_factory(
        RATE_LIMITS=True,
        RATE_LIMIT_CLIENT="",
        RATE_LIMIT_NEW_CONVERSATIONS="1/hour",
        RATE_LIMIT_UNAUTHORIZED="",
    )
    assert HTTP.post(server.url + CONVERSATIONS_PATH).status_code == 201  # the address's one this hour
    posts = ConversationPosts(page)
    widget = embed(server)
    widget.open()
    alert = widget.frame.locator("[data-chat-alert]")
    widget.input.press_sequentially("/echo refused")
    expect(alert).to_have_text("")  # nothing asked, nothing said while typing
    assert posts.conversations == []
    with page.expect_response(lambda response: response.url.endswith(CONVERSATIONS_PATH)) as refused:
        widget.input.press("Enter")
    assert refused.value.status == 429
    assert widget.wait_until_complete() == "failed"
    expect(alert).to_contain_text("faster than this chat allows")
    assert len(posts.conversations) == 1 and posts.messages == []
    with page.expect_response(lambda response: response.url.endswith(CONVERSATIONS_PATH)) as again:
        widget.send("/echo once more")
    assert again.value.status == 429  # asked again, refused again: still within the hour
    assert len(posts.conversations) == 2 and posts.messages == []
    assert len(conversation_ids(server)) == 1  # only the one made before the page


# In the panel, before any of its scripts: how much the last answer's text grew at each DOM
# change the page saw (a render is one task; its changes arrive together).
RECORD_GROWTH = """(() => {
  if (!location.pathname.endsWith('/panel')) return;
  const growth = (window.__answerGrowth = []);
  let last = 0;
  document.addEventListener('DOMContentLoaded', () => {
    const transcript = document.querySelector('[data-chat-transcript]');
    new MutationObserver(() => {
      const bodies = transcript.querySelectorAll('li.turn--assistant .turn__body');
      const length = bodies.length ? bodies[bodies.length - 1].textContent.length : 0;
      if (length !== last) growth.push(length - last);
      last = length;
    }).observe(transcript, { childList: true, characterData: true, subtree: true });
  });
})();"""

# The answer drawn again in one pass, with the panel's own modules and options, and the
# sentences its blocks give (what the announcer says, in order). scroll-follow.js marks boxes
# that scroll (tabindex, role, aria-label) after drawing: not the view's, so left out. A closed
# code block gets its Copy code button from code-blocks.js a task later (its `closed` hook):
# the one-pass view is read after that task too.
ONE_PASS = """async () => {
  const chat = document.querySelector('link[rel=modulepreload]').href;
  const { createMarkdownView } = await import(chat.replace('chat.js', 'markdown.js'));
  const { sentenceSplitter } = await import(chat.replace('chat.js', 'announcer.js'));
  const panel = window.chatPanel;
  const run = panel.current;
  const box = document.createElement('div');
  const view = createMarkdownView(box, panel.viewOptions());
  view.update(run.model.text);
  view.finish();
  await new Promise((resolve) => setTimeout(resolve));
  const shown = run.turn.body.cloneNode(true);
  for (const scrolls of shown.querySelectorAll('pre, [data-label]'))
    for (const name of ['tabindex', 'role', 'aria-label']) scrolls.removeAttribute(name);
  const split = sentenceSplitter(panel.config.lang);
  const sentences = view.blocks().flatMap((block) => split(block.plain).map((s) => s.trim()).filter(Boolean));
  return {
    text: run.model.text,
    shown: shown.innerHTML,
    onePass: box.innerHTML,
    rendered: box.textContent.length,
    sentences,
    growth: window.__answerGrowth,
    generating: panel.strings.generating,
    complete: panel.strings.complete,
  };
}"""


def assert_drawn_in_slices_as_one_pass(result: dict) -> None:
    assert result["text"] == bulk_answer()  # every character, in order (the panel checked its SHA-256 too)
    assert result["shown"] == result["onePass"]
    # A share at a time: no DOM change added a tenth of the answer's text.
    growth = result["growth"]
    assert sum(growth) == result["rendered"]
    assert len(growth) > 10 and max(growth) < result["rendered"] / 10, growth


def test_a_long_answer_received_before_the_first_frame_is_drawn_in_slices_exactly_as_in_one_pass(
    embed, page, chat_server_factory
):
    # Unpaced and every delta kept in the event log: the whole answer is read at once.
    server = chat_server_factory(DEMO_DELAY_SECONDS=0.0, LOG_MAX_EVENTS=10_000)
    page.context.add_init_script(RECORD_GROWTH)
    widget = embed(server)
    widget.open()
    widget.send("/scenario bulk")
    assert widget.wait_until_complete(timeout=60_000) == "completed"
    result = widget.panel_frame().evaluate(ONE_PASS)
    assert_drawn_in_slices_as_one_pass(result)
    # Said as one pass says it: the start cue, every sentence once, in order, the end cue.
    widget.wait_for_announcement(result["complete"], timeout=30_000)
    said = [a["text"] for a in widget.announcements() if a["politeness"] == "polite"]
    assert " ".join(said) == " ".join([result["generating"], *result["sentences"], result["complete"]])


@pytest.mark.chromium_only(reason=FLAT_FIREFOX)
def test_a_long_answer_resumed_after_a_reload_comes_as_one_snapshot_drawn_in_slices_and_not_said_again(
    embed, page, chat_server_factory
):
    # A short event log: the panel reloaded mid-answer gets what was written as one snapshot.
    server = chat_server_factory(DEMO_DELAY_SECONDS=0.001, LOG_MAX_EVENTS=64)
    page.context.add_init_script(RECORD_GROWTH)
    widget = embed(server)
    widget.open()
    widget.send("/scenario bulk")
    widget.panel_frame().wait_for_function("() => window.chatPanel.current.model.text.length > 40000")
    page.reload()
    widget.open()
    assert widget.wait_until_complete(timeout=60_000) == "completed"
    result = widget.panel_frame().evaluate(ONE_PASS)
    assert_drawn_in_slices_as_one_pass(result)
    events = [e for e in widget.events() if e.get("name") == "event"]
    assert events[0]["type"] == "message.snapshot"
    # What was there before the reload was heard then: this page says only what came after,
    # every sentence of it in order, then the end cue; no start cue.
    widget.wait_for_announcement(result["complete"], timeout=30_000)
    said = " ".join(a["text"] for a in widget.announcements() if a["politeness"] == "polite")
    whole = " ".join([*result["sentences"], result["complete"]])
    assert whole.endswith(said) and len(said) < len(whole) - 40_000 / 2
