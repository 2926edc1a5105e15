"""What the conversations route says a client's header shows (the side panel's, as the notebook
widget's shows its kernel's): the project and the provider of the server's real runtime. A URL's
password never shows; a provider that cannot be built here shows as its setting reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from gmchat_nb.core.settings import load_settings
from gmchat_nb.server_ext.sessions import ChatRuntime

# (nothing listens on port 9: the runtime's connection fails in the background, as it may)
URL = "http://ann:s3cret@127.0.0.1:9/graphql"


@pytest.mark.parametrize(
    ("project", "provider", "header"),
    [
        ("demo", "offline", {"project": "demo:inventory", "provider": "offline"}),
        ("demo:toy", "openai:gpt-4.1-mini", {"project": "demo:toy", "provider": "openai:gpt-4.1-mini"}),
        (URL, "scripted:{tmp}/rounds.yaml", {"project": "http://ann:***@127.0.0.1:9/graphql", "provider": "scripted"}),
        (URL, "tests.not_a_module.Provider", {"project": "http://ann:***@127.0.0.1:9/graphql", "provider": "tests.not_a_module.Provider"}),
    ],
)  # fmt: skip
async def test_the_header_names_the_project_without_a_password_and_the_provider(
    tmp_path: Path, project: str, provider: str, header: dict[str, str]
) -> None:
    (tmp_path / "rounds.yaml").write_text("- text: Hello.\n")
    settings = load_settings(
        None,
        project=project,
        provider=provider.format(tmp=tmp_path),
        store=str(tmp_path / "chat.sqlite3"),
    )
    runtime = ChatRuntime(settings)
    try:
        assert runtime.header() == header
        assert "s3cret" not in str(runtime.header())
    finally:
        await runtime.aclose()
