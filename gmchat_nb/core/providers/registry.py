"""Turn a provider spec into a provider.

Specs: ``"openai:gpt-4.1-mini"``, ``"anthropic:claude-3-5-haiku-latest"``, ``"ollama:qwen3:8b"``
(everything after the first colon is the model), ``"local:PATH.gguf"`` (a GGUF model run in
process, extra ``[local]``), ``"offline"``, ``"scripted:FILE.yaml"``,
``"replay:FILE.jsonl"`` (or ``"replay:oracle-openai"``, a bundled cassette by name: a file that
exists wins), ``"record:<spec>"`` (record another provider into
``provider_config["record_to"]``, described by the optional ``record_description``), a dotted
class path, or a provider class or instance.
SDK providers are imported only when chosen; a missing SDK says which extra to install.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..dotted import DottedPathError, resolve_dotted
from .base import BaseLLMProvider, MissingExtraError

__all__ = [
    "ProviderSpecError",
    "check_ready",
    "config_pairs",
    "create_provider",
    "provider_label",
]

# name -> (SDK module, extra, adapter module, adapter class)
SDK_PROVIDERS: dict[str, tuple[str, str, str, str]] = {
    "openai": ("openai", "openai", "gmchat_nb.core.providers.openai", "OpenAIProvider"),
    "anthropic": (
        "anthropic",
        "anthropic",
        "gmchat_nb.core.providers.anthropic",
        "AnthropicProvider",
    ),
    "ollama": ("ollama", "ollama", "gmchat_nb.core.providers.ollama", "OllamaProvider"),
}
FORMS = (
    "openai:MODEL, anthropic:MODEL, ollama:MODEL, local:PATH.gguf, offline, scripted:FILE.yaml, "
    "replay:FILE.jsonl (or replay:NAME, a bundled cassette), record:SPEC, or a dotted provider "
    "class path"
)


class ProviderSpecError(ValueError):
    """A provider spec that names no usable provider."""


def create_provider(spec: Any, config: Mapping[str, Any] | None = None) -> BaseLLMProvider:
    """The provider ``spec`` names, configured with a copy of ``config``; with ``constrained:
    true`` (the default for ``local:``) wrapped in small-model mode
    (:class:`~.constrained.ConstrainedProvider`)."""
    config = dict(config or {})
    constrained = config.get("constrained")
    if constrained is not None and not isinstance(constrained, bool):
        raise ProviderSpecError(f"constrained must be true or false, got {constrained!r}")
    provider = _create(spec, config)
    kind = spec.strip().partition(":")[0] if isinstance(spec, str) else ""
    if kind == "record":  # the recorded provider was built (and wrapped) by the inner call
        return provider
    is_local = kind == "local"
    if constrained or (constrained is None and is_local):
        from .constrained import ConstrainedProvider

        if not isinstance(provider, BaseLLMProvider):
            raise ProviderSpecError(
                "constrained: true needs a gmchat_nb provider (one with complete_structured)"
            )
        return ConstrainedProvider(provider)
    return provider


def _create(spec: Any, config: dict[str, Any]) -> BaseLLMProvider:
    if isinstance(spec, BaseLLMProvider):
        return spec
    if isinstance(spec, type):
        return _from_class(spec, config, spec.__name__)
    if not isinstance(spec, str) or not spec.strip():
        raise ProviderSpecError(f"provider must be a spec string ({FORMS}); got {spec!r}")
    kind, _, rest = spec.strip().partition(":")
    if kind == "offline" and not rest:
        from .offline import OfflineProvider

        return OfflineProvider.from_config(config)
    if kind == "local":
        from .local import LocalProvider

        if not rest:
            raise ProviderSpecError("local: needs the path of a GGUF file, e.g. local:model.gguf")
        return _from_class(LocalProvider, {**config, "model_path": rest}, spec)
    if kind == "scripted":
        from .scripted import ScriptedProvider

        return ScriptedProvider.from_config({**config, **({"path": rest} if rest else {})})
    if kind == "replay":
        from .replay import ReplayProvider

        return ReplayProvider.from_config({**config, **({"path": rest} if rest else {})})
    if kind == "record":
        from .replay import RecordingProvider

        target = config.pop("record_to", None)
        description = config.pop("record_description", None)
        if not rest or not target:
            raise ProviderSpecError(
                "record:SPEC wraps another provider and needs provider_config['record_to'] "
                "(the cassette file to write)"
            )
        return RecordingProvider(create_provider(rest, config), target, description)
    if kind in SDK_PROVIDERS:
        sdk, extra, module_name, class_name = SDK_PROVIDERS[kind]
        if importlib.util.find_spec(sdk) is None:
            raise MissingExtraError(kind, extra)
        if rest:
            config["model"] = rest
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            raise ProviderSpecError(f"the {kind} adapter is not available: {error}") from None
        return _from_class(getattr(module, class_name), config, spec)
    if "." in spec and not rest:
        try:
            cls = resolve_dotted(spec, key="provider", want_callable=False)
        except DottedPathError as error:
            raise ProviderSpecError(str(error)) from None
        return _from_class(cls, config, spec)
    raise ProviderSpecError(f"unknown provider {spec!r}; use {FORMS}")


def _from_class(cls: Any, config: dict[str, Any], spec: str) -> BaseLLMProvider:
    if isinstance(cls, type) and issubclass(cls, BaseLLMProvider):
        cls.check_configuration(config)
        return cls.from_config(config)
    if hasattr(cls, "from_config"):
        provider = cls.from_config(config)
    elif callable(cls):
        provider = cls()  # GeneralManager's protocol: constructed without arguments
    else:
        raise ProviderSpecError(f"{spec} is not a provider class")
    if not hasattr(provider, "complete"):
        raise ProviderSpecError(f"{spec} has no complete(messages, tools) method")
    return provider  # type: ignore[no-any-return]


def provider_label(provider: Any) -> str:
    """A short name for reports: ``openai:gpt-4.1-mini``, ``scripted``, a class name."""
    label = getattr(provider, "label", None)
    return str(label) if label else type(provider).__name__


def check_ready(provider: Any) -> None:
    """Raise when ``provider`` could not make any request (e.g. missing credentials).

    GeneralManager-protocol providers have no such check and pass.
    """
    ready = getattr(provider, "check_ready", None)
    if callable(ready):
        ready()


def config_pairs(pairs: Iterable[str], option: str = "--provider-config") -> dict[str, Any]:
    """``KEY=VALUE`` command-line pairs as a provider_config mapping. A VALUE that parses as JSON
    is that value (``max_tokens=256``, ``stream=false``); anything else is the string itself
    (``base_url=http://127.0.0.1:8080/v1``). A pair without ``=`` or key is a ValueError naming
    ``option``."""
    config: dict[str, Any] = {}
    for pair in pairs:
        key, equals, raw = pair.partition("=")
        if not equals or not key.strip():
            raise ValueError(f"{option} takes KEY=VALUE, got {pair!r}")
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw
        config[key.strip()] = value
    return config
