"""Search text is the user's, so it is hostile by default: operators of FTS5 and tsquery, broken
Unicode, a 10 KB paste, nothing but stopwords. None of it errors on either backend, and a
question with nothing relevant recalls nothing, by keywords and by meaning."""

from __future__ import annotations

import pytest

from gmchat_nb.core.knowledge import KnowledgeBook
from gmchat_nb.core.knowledge.terms import search_terms
from gmchat_nb.core.knowledge.vectors import embedder
from gmchat_nb.core.project import Project
from gmchat_nb.core.store import ChatStore

from .projects import book_of, query, recalled, recalled_ids

# text that means nothing here, written to break a query language
HOSTILE = [
    '"',
    "'",
    '"unbalanced',
    "what's churn?",
    "churn by region?",
    "net-revenue",
    "-revenue",
    "NEAR(revenue churn)",
    "revenue NEAR churn",
    "NEAR",
    "*",
    "churn*",
    "(",
    ")",
    "((churn)",
    "AND OR NOT",
    "churn AND",
    "churn & | ! <-> :*",
    "'; DROP TABLE knowledge; --",
    "body:churn",
    "{name body}: churn",
    "^churn",
    "\ud800",
    "churn \udfff rate",
    "\x00churn\x00",
    "Straße naïve 日本語 x² ١٢٣ ﬁnance 🚀",
    "the of and which what is are",
    "",
    "   \n\t ",
    "weather " * 1500,  # ~12 KB of one word
    "".join(f"w{i} " for i in range(2500)),  # ~14 KB of distinct words
]
# the same operators around words that are relevant here
TOPICAL = [
    '"titanium',
    "titanium?",
    "titanium-parts",
    "-titanium",
    "NEAR(titanium parts)",
    "titanium*",
    "((titanium)",
    "titanium AND parts",
    "titanium & | ! <-> :* parts",
    "\ud800titanium parts",
    "titanium parts " + "x" * 10_000,
]


@pytest.fixture
def book(store: ChatStore, demo: Project) -> KnowledgeBook:
    assert embedder() is not None, "the [knowledge] extra (wordllama) is part of the dev setup"
    return book_of(store, demo, "alice", vectors="auto")


@pytest.fixture
def kept(book: KnowledgeBook) -> dict[str, str]:
    """The kinds of entry a project keeps, by what they are about."""
    return {
        "titanium": book.add_verified_query(
            "titanium parts",
            "Which parts are made of titanium?",
            [query(material__name="Titanium")],
        ).id,
        "projects": book.add_definition(
            "active project", "a project whose status is active or planned"
        ).id,
        "suppliers": book.add_verified_query(
            "suppliers by country",
            "How many suppliers are based in each country?",
            [query("Supplier", ["name", "country"])],
        ).id,
        "note": book.add_note("amounts in EUR").id,
    }


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_hostile_text_never_errors_and_recalls_nothing(
    book: KnowledgeBook, kept: dict[str, str], mode: str
) -> None:
    for text in HOSTILE:
        assert recalled(book, text, mode) == [], text[:40]
        book.store.search_knowledge_words(book.project_key, "alice", search_terms(text), limit=5)
        book.list(search=text)


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_operators_around_relevant_words_recall_only_what_is_relevant(
    book: KnowledgeBook, kept: dict[str, str], mode: str
) -> None:
    for text in TOPICAL:
        recalled = set(recalled_ids(book, text, mode))
        assert recalled <= {kept["titanium"]}, text[:40]
    assert recalled_ids(book, "NEAR(titanium parts)", mode) == [kept["titanium"]]


@pytest.mark.parametrize(
    "question",
    [
        "What is the weather in Paris tomorrow?",
        "Write me a poem about the sea.",
        "Who won the football match yesterday?",
        "How do I bake sourdough bread?",
    ],
)
def test_nothing_relevant_recalls_nothing(
    book: KnowledgeBook, kept: dict[str, str], question: str
) -> None:
    assert recalled(book, question, "keyword") == []
    assert recalled(book, question, "hybrid") == []


def test_a_relevant_question_recalls_what_it_is_about(
    book: KnowledgeBook, kept: dict[str, str]
) -> None:
    for question, topic in (
        ("Which parts are made of titanium?", "titanium"),
        ("How many suppliers are in each country?", "suppliers"),
        ("Show the active projects", "projects"),
    ):
        for mode in ("keyword", "hybrid"):
            assert recalled_ids(book, question, mode) == [kept[topic]], (
                question,
                mode,
            )


def test_a_search_of_the_list_takes_any_text(book: KnowledgeBook, kept: dict[str, str]) -> None:
    assert [r.id for r in book.list(search="TITANIUM")] == [kept["titanium"]]
    assert [r.id for r in book.list(search='"(titanium* parts')] == [kept["titanium"]]
    assert book.list(search="churn NEAR revenue") == []
