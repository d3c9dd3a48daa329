"""Orca, a real screen reader, on a private headless desktop for tests/e2e/test_orca.py."""
