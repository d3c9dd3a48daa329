"""What the panel page hands its modules in #chat-config (widget_server/web.py)."""

from __future__ import annotations

from widget_server.app import create_app

from .conftest import TEST_CONFIG
from .helpers import panel_config_of


def panel_config(client, query: str = "") -> dict:
    return panel_config_of(client.get(f"/panel?lang=en{query}").get_data(as_text=True))


def test_lazy_modules_strings_stay_out_of_the_first_open(client):
    # answer-tools.js, code-blocks.js, conversation-tools.js, outbox.js and tab-sync.js fetch
    # their own strings (tests/test_budgets.py counts the panel page).
    strings = panel_config(client)["strings"]
    assert not {"answerTools", "codeBlocks", "conversationTools", "offlineOutbox", "syncTabs"} & set(strings)
    assert {"turnYou", "turnAssistant"} <= set(strings)


def test_turn_heading_level_is_bounded_to_two_to_five(client):
    assert panel_config(client)["turnHeadingLevel"] == 2
    assert panel_config(client, "&headingLevel=3")["turnHeadingLevel"] == 3
    assert panel_config(client, "&headingLevel=1")["turnHeadingLevel"] == 2  # h1 is the panel's title
    assert panel_config(client, "&headingLevel=9")["turnHeadingLevel"] == 5
    assert panel_config(client, "&headingLevel=h3")["turnHeadingLevel"] == 2


def test_feedback_comment_limit_comes_from_the_setting():
    app = create_app({**TEST_CONFIG, "FEEDBACK_COMMENT_MAX_CHARS": 120}, environ={})
    assert panel_config(app.test_client())["feedbackCommentMaxChars"] == 120
