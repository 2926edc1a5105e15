"""Provider specs, missing extras, scripted rounds, and record/replay cassettes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gmchat_nb import Chat
from gmchat_nb.core.providers import registry
from gmchat_nb.core.providers.base import MissingExtraError
from gmchat_nb.core.providers.cassettes import bundled_cassettes
from gmchat_nb.core.providers.offline import OfflineProvider
from gmchat_nb.core.providers.registry import ProviderSpecError, create_provider
from gmchat_nb.core.providers.replay import RecordingProvider, ReplayProvider
from gmchat_nb.core.providers.scripted import ScriptedProvider, load_rounds
from gmchat_nb.core.settings import ChatConfigurationError

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = """
- tool_calls:
    - {name: query, args: {manager: Material, fields: [name, density], order_by: [-density], limit: 2}}
  usage: {input_tokens: 11, output_tokens: 3}
- text: "The densest materials are Lead and Copper."
  usage: {input_tokens: 20, output_tokens: 9}
"""


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.yaml"
    path.write_text(SCRIPT)
    return path


def test_specs_name_their_providers(script: Path, tmp_path: Path) -> None:
    assert isinstance(create_provider("offline"), OfflineProvider)
    scripted = create_provider(f"scripted:{script}")
    assert isinstance(scripted, ScriptedProvider) and scripted.remaining == 2
    assert isinstance(
        create_provider("gmchat_nb.core.providers.offline.OfflineProvider"), OfflineProvider
    )
    recording = create_provider(
        f"record:scripted:{script}", {"record_to": str(tmp_path / "c.jsonl")}
    )
    assert isinstance(recording, RecordingProvider) and isinstance(
        recording.inner, ScriptedProvider
    )
    same = OfflineProvider()
    assert create_provider(same) is same


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "spec string"),
        ("gpt-5", "unknown provider 'gpt-5'"),
        ("no.such.module.Provider", "cannot import the provider"),
        ("record:offline", "record_to"),
        ("scripted:/nonexistent/script.yaml", "cannot read the script"),
        ("replay:/nonexistent/cassette.jsonl", "cannot read the cassette"),
    ],
)
def test_bad_specs_say_what_is_accepted(spec: str, message: str) -> None:
    with pytest.raises((ProviderSpecError, ValueError), match=message):
        create_provider(spec)


@pytest.mark.parametrize("vendor", ["openai", "anthropic", "ollama"])
def test_a_missing_sdk_names_the_extra_to_install(
    vendor: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Whether or not this machine has the SDK, pretend it is absent.
    _, extra, module, cls = registry.SDK_PROVIDERS[vendor]
    monkeypatch.setitem(registry.SDK_PROVIDERS, vendor, ("no_such_sdk_module", extra, module, cls))
    with pytest.raises(MissingExtraError, match=rf'pip install "gmchat_nb\[{vendor}\]"'):
        create_provider(f"{vendor}:some-model")


def test_a_bad_provider_setting_names_the_key() -> None:
    chat = Chat(provider="gpt-5", store=":memory:")
    with pytest.raises(ChatConfigurationError) as error:
        chat.ask_sync("hello")
    assert error.value.key == "provider"


def test_malformed_scripts_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown keys"):
        load_rounds([{"txt": "typo"}])
    with pytest.raises(ValueError, match="needs a 'name'"):
        load_rounds([{"tool_calls": [{"args": {}}]}])
    broken = tmp_path / "broken.yaml"
    broken.write_text("- text: [unclosed")
    with pytest.raises(ValueError, match="not valid YAML"):
        load_rounds(broken)


async def ask(provider: Any, question: str) -> list[dict[str, Any]]:
    chat = Chat(provider=provider, store=":memory:")
    try:
        return untimed((await chat.ask(question)).events)
    finally:
        await chat.aclose()


def untimed(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events without the tools' measured durations: those differ in every run, replayed
    or not; everything else replays exactly."""
    return [{k: v for k, v in event.items() if k != "duration_ms"} for event in events]


async def test_a_recorded_turn_replays_identically_offline(script: Path, tmp_path: Path) -> None:
    cassette = tmp_path / "turn.jsonl"
    recorded = await ask(
        RecordingProvider(ScriptedProvider({"path": str(script)}), cassette), "Densest?"
    )
    header, *lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    assert header == {"cassette": {"label": "scripted", "description": "recorded from scripted"}}
    assert len(lines) == 2 and all(len(line["request_hash"]) == 64 for line in lines)
    replay = ReplayProvider({"path": str(cassette)})
    assert (replay.label, replay.description) == ("scripted", "recorded from scripted")
    replayed = await ask(replay, "Densest?")
    assert replayed == recorded
    assert replayed[-2]["content"] == "The densest materials are Lead and Copper."
    assert replayed[-1]["usage"] == {"input_tokens": 31, "output_tokens": 12}


async def test_a_request_the_cassette_does_not_have_is_a_clear_failure(
    script: Path, tmp_path: Path
) -> None:
    cassette = tmp_path / "turn.jsonl"
    await ask(RecordingProvider(ScriptedProvider({"path": str(script)}), cassette), "Densest?")
    replay = ReplayProvider({"path": str(cassette)})
    events = await ask(replay, "A different question")
    assert events[-1]["code"] == "provider_failed"
    with pytest.raises(Exception, match="differs from the cassette"):
        async for _ in ReplayProvider({"path": str(cassette)}).complete([], []):
            pass


async def test_chat_record_to_writes_a_cassette(script: Path, tmp_path: Path) -> None:
    cassette = tmp_path / "chat.jsonl"
    chat = Chat(provider=f"scripted:{script}", store=":memory:", record_to=cassette)
    try:
        await chat.ask("Densest?")
    finally:
        await chat.aclose()
    assert len(cassette.read_text().splitlines()) == 3  # the header and two responses


async def test_one_cassette_replays_interleaved_conversations_by_request(
    script: Path, tmp_path: Path
) -> None:
    """Eval cases share one cassette and run concurrently: lookup is by request, not position."""
    cassette = tmp_path / "suite.jsonl"
    recorder = RecordingProvider(
        ScriptedProvider({"path": str(script)}), cassette, "a scripted stand-in, not a model"
    )
    first = await ask(recorder, "Densest?")
    recorder.inner = ScriptedProvider({"rounds": [{"text": "Hello."}]})
    second = await ask(recorder, "Hi")
    replay = ReplayProvider({"path": str(cassette)})
    assert replay.description == "a scripted stand-in, not a model"
    assert await ask(replay, "Hi") == second  # recorded last, replayed first
    assert await ask(replay, "Densest?") == first
    events = await ask(replay, "Hi")  # asked once more than recorded
    assert events[-1]["code"] == "provider_failed"


def test_a_cassette_without_header_is_labelled_by_its_file(tmp_path: Path) -> None:
    cassette = tmp_path / "oracle-openai.jsonl"
    cassette.write_text(json.dumps({"request_hash": "0" * 64, "events": []}) + "\n")
    replay = ReplayProvider({"path": str(cassette)})
    assert (replay.label, replay.description, replay.recorded) == ("replay:oracle-openai", None, 1)
    cassette.write_text("{not json\n")
    with pytest.raises(ValueError, match="line 1 is not JSON"):
        ReplayProvider({"path": str(cassette)})


def test_the_bundled_cassettes_are_the_checkout_s() -> None:
    committed = sorted(path.stem for path in (ROOT / "evals" / "cassettes").glob("*.jsonl"))
    assert list(bundled_cassettes()) == committed
    assert "oracle-openai" in committed


@pytest.mark.parametrize("name", ["oracle-openai", "oracle-openai.jsonl"])
def test_a_bundled_cassette_is_addressed_by_name(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no file of that name here: only the name can resolve
    replay = create_provider(f"replay:{name}")
    assert isinstance(replay, ReplayProvider)
    assert replay.path == bundled_cassettes()["oracle-openai"]
    assert replay.path.read_bytes() == (ROOT / "evals/cassettes/oracle-openai.jsonl").read_bytes()
    assert replay.label == "openai:oracle" and replay.recorded > 50


@pytest.mark.parametrize("name", ["oracle-openai", "oracle-openai.jsonl"])
def test_a_file_that_exists_wins_over_a_bundled_name(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    header = {"cassette": {"label": "mine", "description": "my own recording"}}
    Path(name).write_text(json.dumps(header) + "\n")
    replay = create_provider(f"replay:{name}")
    assert isinstance(replay, ReplayProvider)
    assert (replay.path, replay.label, replay.recorded) == (Path(name), "mine", 0)


def test_an_unknown_name_says_no_file_was_found_and_lists_the_bundled_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="cannot read the cassette oracle-gpt") as raised:
        create_provider("replay:oracle-gpt")
    message = str(raised.value)
    assert "no such file was found" in message
    listed = message.partition("bundled: ")[2]
    assert listed == ", ".join(bundled_cassettes()) + ")"
    chat = Chat(provider="replay:oracle-gpt", store=":memory:")
    with pytest.raises(ChatConfigurationError, match="oracle-openai") as error:
        chat.ask_sync("hello")  # Chat(provider=...) and the settings share the same message
    assert error.value.key == "provider"
