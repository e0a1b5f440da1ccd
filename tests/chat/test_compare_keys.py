"""H4: a server's API key variable goes only with the server it was named for: comparing two
servers does not hand the first one's key to the second, and a newly typed URL does not keep the
current server's key (the HTTP layer also refuses a key for another origin: tests/untrusted)."""

from __future__ import annotations

from gaudi_tui.core.chat.compare import first_options, second_options
from gaudi_tui.core.chat.options import LoadOptions

CURRENT = LoadOptions(endpoint="http://127.0.0.1:8000", api_key_env="FIRST_KEY", model="m")


def test_the_second_server_does_not_get_the_first_servers_key() -> None:
    other = second_options(CURRENT, "http://10.0.0.7:8000")
    assert other.endpoint == "http://10.0.0.7:8000" and other.api_key_env == ""
    same_origin = second_options(CURRENT, "http://127.0.0.1:8000/other")
    assert same_origin.api_key_env == "FIRST_KEY"  # the same origin: the server it was named for


def test_a_newly_typed_url_does_not_keep_the_current_key() -> None:
    assert first_options("http://10.0.0.7:9000", CURRENT).api_key_env == ""
    kept = first_options("http://127.0.0.1:8000", CURRENT)
    assert kept.api_key_env == "FIRST_KEY" and kept.model == "m"
