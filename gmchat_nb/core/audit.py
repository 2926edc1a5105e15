"""Audit events: who asked what, which tools ran and what they answered, with secrets removed.

The settings are GeneralManager's (``enabled``, ``level``, ``logger``, ``max_result_size``,
``redact_fields``), but redaction is sharper. GeneralManager redacts every key that merely
*contains* a term, so ``session_key`` and ``input_tokens`` vanish from its logs, while a bearer
token in a value passes untouched. Here a key is redacted when one of its *words* is a term (or
the term's plural), a short list of well-known counters and identifiers is exempt, and string
values are scanned for things shaped like credentials wherever they appear.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from .dotted import resolve_dotted

__all__ = [
    "ALWAYS_REDACTED_WORDS",
    "AUDIT_LEVELS",
    "DEFAULT_REDACT_FIELDS",
    "NOT_SECRET_KEYS",
    "REDACTED",
    "AuditLog",
    "key_is_secret",
    "redact_text",
]

REDACTED: Final = "[REDACTED]"
"""What a redacted value becomes."""

AUDIT_LEVELS: Final = ("off", "messages", "tool_calls", "all")
"""Accepted levels; ``all`` is an alias of ``tool_calls``."""

DEFAULT_REDACT_FIELDS: Final = ("password", "secret", "token", "key", "credential")
"""GeneralManager's default ``redact_fields``."""


_MESSAGE_EVENTS: Final = frozenset({"user_message", "assistant_message"})

ALWAYS_REDACTED_WORDS: Final = frozenset(
    {
        "authorization",
        "cookie",
        # Single words that fuse a term with another word, so word splitting cannot see them.
        "apikey",
        "passwd",
        "passphrase",
        "accesstoken",
        "refreshtoken",
        "privatekey",
        "clientsecret",
    }
)
"""Key words redacted whatever ``redact_fields`` says (plurals included)."""

NOT_SECRET_KEYS: Final = frozenset(
    {
        "input_tokens",
        "output_tokens",
        "total_tokens",
        "max_tokens",
        "max_output_tokens",
        "max_completion_tokens",
        "prompt_tokens",
        "completion_tokens",
        "cached_tokens",
        "reasoning_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
        "session_key",
        "conversation_key",
        "primary_key",
        "idempotency_key",
        "cache_key",
        "sort_key",
    }
)
"""Keys (as lowercase words joined by ``_``, so ``inputTokens`` counts) that name counters or
identifiers, never credentials."""

_CHUNK = re.compile(r"[^A-Za-z0-9]+")
# "APIKey" -> API, Key; "apiKey" -> api, Key; "password2" -> password, 2.
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")

_CREDENTIAL = re.compile(
    "|".join(
        (
            # A bearer token has a digit or punctuation, or is long: "the bearer of bad news" stays.
            r"\b[Bb]earer\s+(?:(?=[A-Za-z0-9\-._~+/]*[0-9\-._~+/])[A-Za-z0-9\-._~+/]{6,}"
            r"|[A-Za-z]{20,})=*",
            r"\bsk-[A-Za-z0-9_\-]{16,}",  # OpenAI / Anthropic (sk-proj-..., sk-ant-...)
            r"\bgh[pousr]_[A-Za-z0-9]{20,}",  # GitHub tokens
            r"\bgithub_pat_[A-Za-z0-9_]{20,}",
            # A JWT: header and payload are base64url JSON objects, so both start with "eyJ";
            # requiring that keeps dotted names and versions ("a.b.c", "1.2.3") intact.
            r"\beyJ[A-Za-z0-9_\-]{4,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*",
            r"\bAKIA[0-9A-Z]{16}\b",  # AWS access key id
            r"\bxox[abposr]-[A-Za-z0-9\-]{10,}",  # Slack
            r"\bAIza[0-9A-Za-z_\-]{35}",  # Google API key
        )
    )
)
# user:password@ in URLs, and credential-named query parameters (Jupyter's ?token=...).
_URL_PASSWORD = re.compile(r"(?<=://)([^/\s:@]+):[^/\s@]+(?=@)")
_QUERY_SECRET = re.compile(
    r"(?i)([?&](?:token|access_token|api_key|apikey|key|password|secret|client_secret)=)[^&#\s]+"
)


def _words(key: str) -> list[str]:
    words = [word.lower() for chunk in _CHUNK.split(key) for word in _WORD.findall(chunk)]
    return words or [key.lower()]


def _is_form(word: str, term: str) -> bool:
    if word == term or word == term + "s":
        return True
    return term.endswith(("s", "x", "z", "ch", "sh")) and word == term + "es"


def _contains_term(words: list[str], term: list[str]) -> bool:
    # A multi-word term ("api_key") must appear as consecutive words; its last word may be plural.
    size = len(term)
    for start in range(len(words) - size + 1):
        window = words[start : start + size]
        if window[:-1] == term[:-1] and _is_form(window[-1], term[-1]):
            return True
    return False


def _term_words(redact_fields: Iterable[str]) -> list[list[str]]:
    terms = [_words(str(term)) for term in redact_fields if term]
    return terms + [[word] for word in sorted(ALWAYS_REDACTED_WORDS)]


def _is_secret(key: str, terms: list[list[str]]) -> bool:
    words = _words(key)
    if "_".join(words) in NOT_SECRET_KEYS:
        return False
    return any(_contains_term(words, term) for term in terms)


def key_is_secret(key: str, redact_fields: Iterable[str] = DEFAULT_REDACT_FIELDS) -> bool:
    """Whether a mapping key names a secret: one of its words (snake_case, camelCase and kebab
    split, lowercased) is a term of ``redact_fields`` or :data:`ALWAYS_REDACTED_WORDS`, or that
    word's plural — unless the whole key is one of :data:`NOT_SECRET_KEYS`."""
    return _is_secret(key, _term_words(redact_fields))


def redact_text(text: str) -> str:
    """``text`` with every credential-shaped part (bearer tokens, ``sk-`` keys, GitHub tokens,
    JWTs, URL passwords, ``?token=`` values, ...) replaced by ``[REDACTED]``."""
    text = _CREDENTIAL.sub(REDACTED, text)
    text = _URL_PASSWORD.sub(lambda match: f"{match.group(1)}:{REDACTED}", text)
    return _QUERY_SECRET.sub(lambda match: f"{match.group(1)}{REDACTED}", text)


class AuditLog:
    """Sends sanitized audit events to a sink.

    ``logger`` is ``None`` (JSON lines on the stdlib logger ``gmchat_nb.audit`` at INFO), a
    callable receiving one dict, or a dotted path to such a callable (an unresolvable path is a
    ``ValueError`` here, not at the first event). ``level`` ``"off"`` sends nothing,
    ``"messages"`` only ``user_message`` and ``assistant_message``, ``"tool_calls"`` (alias
    ``"all"``) everything. Tool ``result`` values are JSON-serialised and cut to
    ``max_result_size`` characters (``None``: never cut). A failing sink never breaks a turn.
    """

    def __init__(
        self,
        *,
        enabled: bool = False,
        level: str = "off",
        logger: Callable[[dict[str, Any]], object] | str | None = None,
        max_result_size: int | None = 4096,
        redact_fields: Iterable[str] = DEFAULT_REDACT_FIELDS,
    ) -> None:
        normalized = str(level).lower()
        if normalized not in AUDIT_LEVELS:
            raise ValueError(f"audit.level must be one of {list(AUDIT_LEVELS)}, not {level!r}")
        if max_result_size is not None and (
            isinstance(max_result_size, bool)
            or not isinstance(max_result_size, int)
            or max_result_size <= 0
        ):
            raise ValueError(
                f"audit.max_result_size must be a positive integer or None, not {max_result_size!r}"
            )
        if isinstance(redact_fields, str):
            # A single term given as a string would otherwise redact by its letters.
            redact_fields = (redact_fields,)
        self.enabled = bool(enabled)
        self.level = "tool_calls" if normalized == "all" else normalized
        self.max_result_size = max_result_size
        self.redact_fields: tuple[str, ...] = tuple(str(term).lower() for term in redact_fields)
        self._terms = _term_words(self.redact_fields)
        self._sink: Callable[[dict[str, Any]], object]
        if logger is None:
            self._sink = _log_json
        elif isinstance(logger, str):
            self._sink = resolve_dotted(logger, key="audit.logger")
        elif callable(logger):
            self._sink = logger
        else:
            raise ValueError(f"audit.logger must be a callable or a dotted path, not {logger!r}")

    @classmethod
    def from_settings(cls, audit: object) -> AuditLog:
        """From a settings object with ``enabled``, ``level``, ``logger``, ``max_result_size``
        and ``redact_fields`` attributes (or a mapping with those keys; missing ones take the
        spec's defaults)."""
        defaults: dict[str, Any] = {
            "enabled": False,
            "level": "off",
            "logger": None,
            "max_result_size": 4096,
            "redact_fields": DEFAULT_REDACT_FIELDS,
        }
        values = {
            name: (
                audit.get(name, default)
                if isinstance(audit, Mapping)
                else getattr(audit, name, default)
            )
            for name, default in defaults.items()
        }
        return cls(**values)

    def admits(self, event_type: str) -> bool:
        """Whether :meth:`emit` would send an event of this type (skip building costly payloads)."""
        if not self.enabled or self.level == "off":
            return False
        return self.level == "tool_calls" or event_type in _MESSAGE_EVENTS

    def sanitize(self, event_type: str, payload: Mapping[str, Any]) -> dict[str, Any]:
        """The event as a sink receives it: ``{"event_type": ..., **payload}`` redacted, with
        ``result`` serialised and truncated."""
        # event_type comes first and cannot be overridden: a payload must not disguise its type.
        event: dict[str, Any] = {"event_type": event_type}
        for key, value in payload.items():
            if key == "event_type":
                continue
            event[key] = self._result(value) if key == "result" else self._redact_item(key, value)
        return event

    def emit(self, event_type: str, payload: Mapping[str, Any]) -> None:
        """Send one event when enabled and the level admits it. Never raises: auditing must not
        break a turn, so a failing sink (or an unserialisable payload) is logged and dropped."""
        if not self.admits(event_type):
            return
        try:
            self._sink(self.sanitize(event_type, payload))
        except Exception:
            logging.getLogger(__name__).exception(
                "audit logger failed on a %s event; the event was dropped", event_type
            )

    # -- redaction -----------------------------------------------------------------------------

    def _redact_item(self, key: object, value: Any) -> Any:
        if _is_secret(str(key), self._terms):
            return REDACTED
        return self._redact(value)

    def _redact(self, value: Any) -> Any:
        if isinstance(value, str):
            return redact_text(value)
        if isinstance(value, Mapping):
            return {key: self._redact_item(key, item) for key, item in value.items()}
        if isinstance(value, list | tuple | set | frozenset):
            return [self._redact(item) for item in value]
        return value

    def _result(self, value: Any) -> str:
        text = json.dumps(self._redact(value), sort_keys=True, default=str)
        if self.max_result_size is not None and len(text) > self.max_result_size:
            return text[: self.max_result_size] + "..."
        return text


def _log_json(event: dict[str, Any]) -> None:
    logging.getLogger("gmchat_nb.audit").info(json.dumps(event, sort_keys=True, default=str))
