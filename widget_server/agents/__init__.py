"""The people who answer when a visitor asks for one (docs/agents.md).

- `accounts.py`: the agents file (`AGENTS_FILE`): names, display names, password hashes;
- `sessions.py`: sign-in sessions kept in the store's backend, with their CSRF tokens;
- `mail.py`: email over SMTP (a left message to the site owner, a reply to the visitor);
- `api.py`: the `/agent` console page, sign-in, sign-out and the `/agent/api` routes.
"""
