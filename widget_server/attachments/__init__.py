"""Attachments (docs/protocol.md, "Attachments"): files a visitor sends with a question, kept
with the conversation.

One concern per module (docs/architecture.md): `sniff.py` (pure: the type from the bytes,
image dimensions from the headers), `names.py` (pure: the name shown and downloaded under,
the Content-Disposition header), `store.py` (the attachment store's interface),
`directory_store.py` and `redis_store.py` (the two stores that come with the server),
`api.py` (the upload, download and delete routes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# Nothing of the package is imported here at load: settings/parsing.py imports `sniff`, and loading
# that module runs this file first.
if TYPE_CHECKING:
    from ..settings import Settings
    from .store import AttachmentStore


def create_attachment_store(settings: Settings, chat_store: Any) -> AttachmentStore:
    """The attachment store beside the chat store (docs/serving.md, "Attachments").

    ATTACHMENT_STORE `auto`: the chat store's Redis when it is Redis (every worker and host
    sees the same files, under the conversation's TTL), else a local directory
    (ATTACHMENTS_DIR) whose conversations go when the memory store forgets them. Any other
    value names a plugin: an entry point of the group `widget_server.attachment_stores`, or
    `package.module:Class`, built as `Class(settings, chat_store)` (store.py says what it owes).
    """
    name = settings.attachments.store
    if name != "auto":
        return _plugin(name)(settings, chat_store)
    if getattr(chat_store, "shared", False) and hasattr(chat_store, "redis"):
        from .redis_store import RedisAttachmentStore

        return RedisAttachmentStore(chat_store.redis)
    from .directory_store import DirectoryAttachmentStore

    store = DirectoryAttachmentStore(settings.attachments.folder, settings.attachments.folder_max_bytes)
    listeners = getattr(chat_store, "forget_listeners", None)
    if listeners is not None:
        listeners.append(store.delete_conversation)  # expired, evicted or deleted: its files go
    return store


def _plugin(name: str) -> Any:
    from .. import plugins
    from ..settings import ConfigError

    try:
        return plugins.load(plugins.ATTACHMENT_STORES, name)
    except plugins.PluginNotFound as error:
        raise ConfigError(f"ATTACHMENT_STORE: cannot load the attachment store {name!r}: {error}") from None
