"""The mutation intent gate beyond English and German: French, Spanish and Japanese requests are
read as requests, questions and refusals in those languages are not, and a message in a language
the gate cannot read is told apart (``read_intent`` -> ``unread``) by the rule of
``core/guards/readable.py``."""

from __future__ import annotations

import pytest

from gmchat_nb.core.guards import intent
from gmchat_nb.core.guards.intent import Intent, asks_for_change, read_intent
from gmchat_nb.core.guards.readable import COMMON_WORDS, READ_SHARE, best_share, can_read

ASKED: Intent = "asked"
NOT_ASKED: Intent = "not_asked"
UNREAD: Intent = "unread"

FRENCH: list[tuple[str, Intent]] = [
    ("Ajoute la pièce Bolt", ASKED),
    ("Ajoutez une pièce nommée Écrou M6 avec le prix 0,20", ASKED),
    ("Crée un nouveau fournisseur Beta SARL", ASKED),
    ("Modifie le prix de la pièce 5 à 12,50", ASKED),
    ("Mettez à jour l'adresse d'Acme", ASKED),
    ("Supprime la pièce 17", ASKED),
    ("Renomme le fournisseur Acme en Acme SA", ASKED),
    ("Marque la commande 7 comme payée", ASKED),
    ("Annule la commande 33", ASKED),
    ("Bonjour, ajoute-moi la pièce Bolt stp", ASKED),
    ("ok, vas-y et supprime-la", ASKED),
    ("Peux-tu supprimer la pièce 17 ?", ASKED),
    ("Pourriez-vous modifier le statut de la commande 12 ?", ASKED),
    ("Tu peux le supprimer ?", ASKED),
    ("Je voudrais ajouter un nouveau matériau : aluminium", ASKED),
    ("J’aimerais renommer la pièce 5 en Boulon M4", ASKED),  # typographic apostrophe
    ("Merci d'ajouter la pièce Bolt", ASKED),
    ("Veuillez supprimer le doublon", ASKED),
    ("Il faut corriger l'adresse du fournisseur 4", ASKED),
    # questions about changes, reads, refusals
    ("Quelles pièces sont en rupture de stock ?", NOT_ASKED),
    ("Combien de fournisseurs avons-nous ?", NOT_ASKED),
    ("Qu'est-ce qui a changé la semaine dernière ?", NOT_ASKED),
    ("Quels fournisseurs ont été modifiés ?", NOT_ASKED),
    ("Qui a modifié le prix de la pièce 5 ?", NOT_ASKED),
    ("Modifié quand ?", NOT_ASKED),  # a participle, not the imperative "modifie"
    ("Comment supprimer une pièce ?", NOT_ASKED),
    ("Comment puis-je ajouter un fournisseur ?", NOT_ASKED),
    ("Peux-tu m'expliquer comment supprimer une pièce ?", NOT_ASKED),
    ("Peux-tu me montrer les commandes fermées ?", NOT_ASKED),
    ("Je veux savoir ce qui a été mis à jour hier", NOT_ASKED),
    ("Montre-moi les pièces supprimées", NOT_ASKED),
    ("Liste des pièces ajoutées cette année", NOT_ASKED),
    ("Crée un graphique des ventes mensuelles", NOT_ASKED),
    ("Mets-les dans un tableau", NOT_ASKED),
    ("Baisse des ventes en mai ?", NOT_ASKED),  # a noun
    ("Marque des produits les plus vendus ?", NOT_ASKED),  # a noun
    ("Ne change rien, montre-moi seulement les prix", NOT_ASKED),
    ("Sans rien modifier, quelles pièces seraient touchées ?", NOT_ASKED),
    ("Non, ne la supprime pas", NOT_ASKED),
]
SPANISH: list[tuple[str, Intent]] = [
    ("Añade la pieza Bolt", ASKED),
    ("Anade la pieza Bolt", ASKED),  # typed without the tilde
    ("Agrega un proveedor llamado Beta SL", ASKED),
    ("Crea una pieza nueva llamada Tuerca M6", ASKED),
    ("Cambia el precio de la pieza 5 a 12,50", ASKED),
    ("Actualiza la dirección de Acme", ASKED),
    ("Borra la pieza 17", ASKED),
    ("Elimina el proveedor duplicado", ASKED),
    ("Pon el estado del pedido 12 en enviado", ASKED),
    ("Marca el pedido 7 como pagado", ASKED),
    ("Da de alta el proveedor Beta", ASKED),
    ("Bórrala", ASKED),
    ("Cámbialo a 5", ASKED),
    ("Por favor, elimina la pieza 17", ASKED),
    ("¿Puedes añadir la pieza Bolt?", ASKED),
    ("¿Podrías borrarlo?", ASKED),
    ("¿Me puedes crear un pedido nuevo?", ASKED),
    ("¿Podrías actualizar la fecha de entrega del pedido 9?", ASKED),
    ("Quiero cambiar el nombre de la pieza 5", ASKED),
    ("Me gustaría añadir un material nuevo: aluminio", ASKED),
    ("Necesito eliminar el proveedor 4", ASKED),
    ("Hay que actualizar los precios", ASKED),
    # questions about changes, reads, refusals
    ("¿Qué piezas tienen poco stock?", NOT_ASKED),
    ("¿Cuántos proveedores tenemos?", NOT_ASKED),
    ("¿Qué cambió la semana pasada?", NOT_ASKED),
    ("¿Qué proveedores se eliminaron?", NOT_ASKED),
    ("¿Quién cambió el precio?", NOT_ASKED),
    ("¿Cómo borro una pieza?", NOT_ASKED),
    ("¿Se puede cambiar el precio?", NOT_ASKED),
    ("¿Puede un usuario eliminar piezas?", NOT_ASKED),
    ("Quiero saber qué se actualizó ayer", NOT_ASKED),
    ("¿Cambia el precio cada mes?", NOT_ASKED),  # the third person, in a question
    ("¿Aumenta el stock en mayo?", NOT_ASKED),
    ("Eliminé la pieza 5 ayer, ¿sigue en la lista?", NOT_ASKED),  # "I deleted", not "delete"
    ("Muéstrame las piezas eliminadas", NOT_ASKED),
    ("Lista de piezas añadidas este año", NOT_ASKED),
    ("Crea un gráfico de ventas mensuales", NOT_ASKED),
    ("Ponlo en una tabla", NOT_ASKED),
    ("¿Marca más vendida?", NOT_ASKED),  # a noun
    ("Baja existencia de tornillos", NOT_ASKED),  # an adjective
    ("Ajuste de precios de mayo", NOT_ASKED),  # a noun
    ("No cambies nada, solo muéstrame los precios", NOT_ASKED),
    ("Sin modificar nada, ¿qué piezas se verían afectadas?", NOT_ASKED),
    ("No, no la borres", NOT_ASKED),
]
JAPANESE: list[tuple[str, Intent]] = [
    ("部品を追加して", ASKED),
    ("部品「ナットM6」を追加してください", ASKED),
    ("価格を12.5に変更して", ASKED),
    ("部品17を削除してください", ASKED),
    ("新しい仕入先を登録お願いします", ASKED),
    ("Boltの追加をお願いします", ASKED),
    ("注文12のステータスを出荷済みに変更してください", ASKED),
    ("部品5の価格を12.5に設定してもらえますか", ASKED),
    ("部品を追加していただけますか", ASKED),
    ("価格を変えて", ASKED),
    ("この部品を消して", ASKED),
    ("新しい部品を作って", ASKED),
    ("部品を追加したい", ASKED),
    ("部品17を削除しよう", ASKED),
    ("Boltを追加", ASKED),
    # questions about changes, reads, refusals
    ("在庫が少ない部品はどれですか？", NOT_ASKED),
    ("仕入先は何社ありますか", NOT_ASKED),
    ("先週何が変更されましたか", NOT_ASKED),
    ("価格を変更したのは誰ですか", NOT_ASKED),
    ("削除された部品を表示して", NOT_ASKED),
    ("部品を削除する方法を教えて", NOT_ASKED),
    ("追加された部品を一覧にして", NOT_ASKED),
    ("売上のグラフを作成して", NOT_ASKED),
    ("一覧を作って", NOT_ASKED),
    ("何を追加？", NOT_ASKED),
    ("先週、部品を追加してもらいました", NOT_ASKED),  # it was done (a past tense)
    ("誰が追加してくれた？", NOT_ASKED),
    ("何も変更しないでください、価格だけ見せて", NOT_ASKED),
    ("いいえ、削除しないで", NOT_ASKED),
]
# Languages the gate does not read: a change it would not see, a question it could not tell from
# one. (Italian's "Elimina" is Spanish's too, and read as a request: see below.)
UNREAD_MESSAGES = [
    "Aggiungi il pezzo Bolt",
    "Aggiungi il pezzo Bolt al magazzino",
    "Quali pezzi hanno poche scorte?",
    "Mostrami i primi 5 clienti per fatturato",
    "Adicione a peça Bolt ao estoque",
    "Quais são os fornecedores com estoque baixo?",
    "Altere o preço da peça 5 para 12",
    "Voeg het onderdeel Bolt toe",
    "Welke leveranciers hebben we?",
    "Dodaj część Bolt",
    "Lägg till delen Bolt",
    "Ta bort del 17",
    "Bolt parçasını ekle",
    "添加零件Bolt",  # Chinese: Han without kana
    "哪些零件库存不足？",
    "部品追加",  # Japanese written in Han alone cannot be told from Chinese
    "부품 Bolt를 추가해 주세요",
    "Добавь деталь Bolt",
    "Πρόσθεσε το εξάρτημα Bolt",
    "أضف القطعة Bolt",
    "Bolt M8?",  # names and codes only: no word of any language
]


@pytest.mark.parametrize(("text", "expected"), FRENCH + SPANISH + JAPANESE)
def test_labelled_messages(text: str, expected: Intent) -> None:
    assert read_intent([text]) == expected
    assert asks_for_change([text]) is (expected == ASKED)


@pytest.mark.parametrize("text", UNREAD_MESSAGES)
def test_a_message_in_a_language_the_gate_does_not_read_is_unread(text: str) -> None:
    assert not can_read(text)
    assert read_intent([text]) == UNREAD
    assert not asks_for_change([text])  # the phantom-write gate's question: not asked


def test_a_request_the_gate_reads_decides_even_in_an_unread_language() -> None:
    # Italian and Spanish share the imperative: a request read is a request
    assert read_intent(["Elimina il pezzo 17"]) == ASKED
    # an English request naming things in another script
    assert read_intent(["Add the part Болт"]) == ASKED
    assert read_intent(["Please delete 零件 17"]) == ASKED


def test_the_latest_stance_decides_and_an_unread_message_leaves_it_open() -> None:
    assert read_intent(["Ajoute la pièce Bolt", "oui"]) == ASKED
    assert read_intent(["Ajoute la pièce Bolt", "non, ne change rien"]) == NOT_ASKED
    assert read_intent(["部品を追加して", "はい"]) == ASKED
    assert read_intent(["Aggiungi il pezzo Bolt", "sì"]) == UNREAD
    assert read_intent(["Which parts are low on stock?", "Aggiungi il pezzo Bolt"]) == UNREAD
    assert read_intent(["Which parts are low on stock?", "And their prices?"]) == NOT_ASKED
    assert read_intent([]) == NOT_ASKED
    assert read_intent(["👍"]) == NOT_ASKED  # no letters: nothing in another language


# -- the rule that tells a language the gate reads -----------------------------------------------


def test_readable_messages_in_the_languages_the_gate_reads() -> None:
    for text in [
        "Which parts are low on stock?",
        "Top suppliers by revenue",
        "suppliers in Berlin",
        "Welche Teile haben wenig Bestand?",
        "Umsatz pro Monat",
        "Quelles pièces sont en rupture de stock ?",
        "¿Cuántos proveedores tenemos?",
        "在庫が少ない部品はどれですか？",
        "Boltの在庫は？",  # kana: Japanese, with a name in Latin letters
        "Which suppliers are in Москва?",  # a name in another script, in an English question
        "12 + 5 = ?",  # no letters
    ]:
        assert can_read(text), text


def test_script_decides_first() -> None:
    # half the letters or more in scripts the gate does not read: unread, whatever the words
    assert not can_read("Москва Berlin")  # 6 Cyrillic letters, 6 Latin
    assert can_read("Which suppliers are in Москва?")  # 6 of 25 letters
    # Han is read only beside kana
    assert not can_read("在庫一覧")
    assert can_read("在庫の一覧")


def test_the_share_of_known_words_is_counted_per_language() -> None:
    # "il" is French and "al" Spanish, but no one language knows two words of six
    text = "aggiungi il pezzo bolt al magazzino"
    assert best_share(text) == pytest.approx(1 / 6)
    assert not can_read(text)
    # one-letter words and letters glued to digits are not words
    assert best_share("altere o preço da peça 5 para 12") == pytest.approx(1 / 5)
    assert best_share("bolt m8") == 0
    # the threshold: two words of five known is read, one of three is not
    assert READ_SHARE == 0.4
    assert can_read("show parts bolt hex nut")  # show, parts
    assert not can_read("ta bort del")  # "del" is Spanish, 1 of 3


def test_the_vocabulary_holds_every_change_verb_the_gate_reads() -> None:
    """readable.py lists the English and German change verbs itself (intent.py imports it):
    the two tables stay in step."""
    english = set(intent._VERBS) | set(intent._VERBS.values())
    german = set(intent._DE_IMPERATIVES.split("|")) | set(intent._DE_INFINITIVES.split("|"))
    assert english <= COMMON_WORDS["en"]
    assert german <= COMMON_WORDS["de"]
