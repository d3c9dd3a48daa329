"""A known visitor's data as a whole (docs/privacy.md): what the server holds of one subject,
exported (GDPR Art. 15, the right of access; Art. 20, in a machine-readable form) and erased
(Art. 17, the right to erasure). Transport-free: `subjects.py` finds a subject's
conversations, `export.py` writes them as JSON Lines records, `erase.py` deletes them whole;
`api.py` is the visitor's own routes (`GET /api/v1/me/export`, `DELETE /api/v1/me`), and
`widget-server data export|erase` (cli.py) the operator's."""
