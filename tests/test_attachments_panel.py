"""What the panel is told about attachments (widget_server/web.py `_attachment_limits`): the
limits static/widget/attachments.js checks before uploading, from the settings (the server checks
again, by content), and the Attach button in the composer (docs/accessibility.md A94)."""

from __future__ import annotations

from widget_server.app import create_app

from .conftest import TEST_CONFIG
from .test_panel_config import panel_config


def test_the_limits_come_from_the_settings_with_types_as_media_types():
    app = create_app(
        {
            **TEST_CONFIG,
            "ATTACHMENT_MAX_BYTES": 2_000_000,
            "ATTACHMENTS_PER_MESSAGE": 3,
            "ATTACHMENT_TYPES": "png, text, csv",
            "ATTACHMENTS_MAX_BYTES_PER_CONVERSATION": 9_000_000,
        },
        environ={},
    )
    assert panel_config(app.test_client())["attachments"] == {
        "maxBytes": 2_000_000,
        "perMessage": 3,
        "types": ["image/png", "text/plain", "text/csv"],
        "budgetBytes": 9_000_000,
    }


def test_the_defaults(client):
    assert panel_config(client)["attachments"] == {
        "maxBytes": 10_000_000,
        "perMessage": 5,
        "types": ["image/png", "image/jpeg", "image/webp", "image/gif", "application/pdf", "text/plain", "text/csv"],
        "budgetBytes": 50_000_000,
    }


def test_the_attach_button_is_labelled_in_the_panels_language(client):
    for lang, label in (("en", "Attach files"), ("fr", "Joindre des fichiers"), ("ar", "إرفاق ملفات")):
        body = client.get(f"/panel?lang={lang}").get_data(as_text=True)
        assert f'data-chat-attach aria-label="{label}"' in body
        # No file input in the page: attachments.js makes it, hidden, on the first press.
        assert 'type="file"' not in body


def test_the_panels_policy_allows_blob_images_and_nothing_wider(client):
    csp = client.get("/panel?lang=en").headers["Content-Security-Policy"]
    assert "img-src 'self' blob:;" in csp
    assert "data:" not in csp and "*" not in csp.split("frame-ancestors")[0]
