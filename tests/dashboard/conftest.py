"""Fixtures of the dashboard tests (``dashboard_helpers``)."""

from dashboard_helpers import browser, dashboard_url  # noqa: F401 - pytest fixtures
