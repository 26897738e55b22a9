"""Every answer says nosniff; every HTML page also runs only the master's own scripts and
cannot be framed by another site (hpcdet/master/security/headers.py)."""

from __future__ import annotations

from flask.testing import FlaskClient

from hpcdet.master.security.headers import PAGE_POLICY


def test_pages_and_error_pages_carry_the_page_policy(client: FlaskClient) -> None:
    for path, status in (("/", 200), ("/queue", 200), ("/experiments/abc", 404),
                         ("/no/such/page", 404)):
        answer = client.get(path)
        assert answer.status_code == status and answer.mimetype == "text/html", path
        assert answer.headers["Content-Security-Policy"] == PAGE_POLICY, path
        assert "script-src 'self';" in PAGE_POLICY and "frame-ancestors 'none'" in PAGE_POLICY
        assert answer.headers["X-Frame-Options"] == "DENY", path
        assert answer.headers["X-Content-Type-Options"] == "nosniff", path
        assert answer.headers["Referrer-Policy"] == "same-origin", path


def test_api_answers_are_nosniff_without_a_page_policy(client: FlaskClient) -> None:
    for path in ("/api/v1/master", "/api/v1/experiments/99999"):
        answer = client.get(path)
        assert answer.mimetype == "application/json", path
        assert answer.headers["X-Content-Type-Options"] == "nosniff", path
        assert "Content-Security-Policy" not in answer.headers, path
