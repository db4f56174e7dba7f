"""A store URL in a log line or a message never shows its password, wherever the URL holds it."""

from __future__ import annotations

import string

from hypothesis import given
from hypothesis import strategies as st

from croupier.service.store import redacted

# A password unlike anything else in the URLs below, so that finding it means it leaked.
passwords = st.text(string.ascii_letters + string.digits + "!$%*+-.", min_size=1).map(
    lambda text: "Pw" + text
)
others = st.sampled_from(["", "sslmode=require", "application_name=croupier&connect_timeout=5"])


@given(passwords, others)
def test_a_password_in_the_user_part_is_masked(password: str, other: str) -> None:
    url = f"postgresql://croupier:{password}@db.internal:5432/games" + (
        f"?{other}" if other else ""
    )
    shown = redacted(url)
    assert password not in shown
    assert shown == url.replace(password, "***")


@given(passwords, passwords, others, st.sampled_from(["password", "sslpassword", "PASSWORD"]))
def test_a_password_in_the_query_is_masked(
    password: str, ssl_password: str, other: str, name: str
) -> None:
    query = "&".join(filter(None, [other, f"{name}={password}", f"sslpassword={ssl_password}"]))
    url = f"postgres://croupier@db.internal/games?{query}"
    shown = redacted(url)
    assert password not in shown and ssl_password not in shown
    # Everything else is as given: the operator still reads which database and how.
    assert shown.startswith("postgres://croupier@db.internal/games?")
    assert other in shown and f"{name}=***" in shown and "sslpassword=***" in shown


def test_urls_without_a_password_are_shown_as_given() -> None:
    for url in [
        "sqlite:///data/croupier.sqlite3",
        "sqlite:////var/lib/croupier/games.sqlite3",
        "postgresql://postgres@127.0.0.1:5432/test",
        "postgresql://db.internal/games?sslmode=verify-full",
    ]:
        assert redacted(url) == url
