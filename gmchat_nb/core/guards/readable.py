"""Whether the mutation intent gate can read a message's language at all.

What: :func:`can_read` says whether a user's message is in a language the intent gate reads
(English, German, French, Spanish, Japanese). Where it cannot, the gate's silence means nothing
("Aggiungi il pezzo Bolt" asks for a change the gate would not see), so a change the model
proposes goes to the person as a confirmation with a note instead of being refused
(:mod:`.intent`).

The rule, in three steps over the message's letters (digits, punctuation and symbols do not
count; a message without letters is readable, there is nothing in another language in it):

1. **Script.** Each letter is Latin, kana (hiragana, katakana), Han, or another script
   (Cyrillic, Greek, Hangul, Arabic, Hebrew, Devanagari, Thai …). Han counts as read only beside
   kana: Japanese sentences carry kana, Chinese never does. When half of the letters or more are
   in scripts the gate does not read, it cannot read the message ("添加零件", "부품을 추가해").
2. **Japanese.** A message with kana is Japanese, which the gate reads (Latin words beside it
   are names: "Boltを追加して").
3. **Latin words.** For each of English, German, French and Spanish, the share of the
   message's Latin words that are among that language's common words (:data:`COMMON_WORDS`,
   some 300 to 400 each: articles, pronouns, prepositions, question words, auxiliaries, the
   words of a data question and every change verb form the gate knows; a plural counts as its
   stem). A word is two letters or more and not glued to a digit: one-letter words ("a", "o",
   "y", "à") are shared by most languages and say nothing, and "M8" is a code. The gate reads
   the message when the best share is at least :data:`READ_SHARE`, two words in five. Every
   sentence of a language uses its function words, so a question the gate reads scores high
   ("Which parts are low on stock?" 6 of 6 in English, "Welche Teile haben wenig Bestand?" 5 of
   5 in German) and two in five leaves room for the names and nouns a terse one is about ("show
   parts bolt hex nut"); a sentence in Italian, Portuguese or Dutch shares a word or two with
   one of the four at most ("Aggiungi il pezzo Bolt al magazzino": French knows "il", Spanish
   "al", 1 of 6 each; "Welke leveranciers hebben we?": English "we", 1 of 4). Counting per
   language, not over the four together, keeps those few shared words from adding up. In the
   gate's tests (tests/core/guards/test_intent*.py) the messages in the four languages score
   0.5 or more (but for "Bórrala" and "Cámbialo a 5", which the gate reads as requests before
   any share counts) and those in other languages a third at most.

Why a rule and not a language identifier: the question is not "which language is this" but "is
it one whose requests the gate would see", and a rule over the same words the gate reads answers
that exactly and explains every verdict. Measured while choosing: py3langid 0.4.0 (a 4.6 MB
wheel, 97 languages) named another language for 12 of 35 short messages in the four languages
("List all open orders" Dutch, "yes" Walloon, "Umsatz pro Monat" Occitan), which would have
sent a model's change for a read-only English question to the person instead of refusing it;
lingua-language-detector 2.1.1, accurate on short text, is a 96 MB wheel. An error of the rule
either way is safe: a message in a language the gate reads taken as unread makes a
proposed change a confirmation with a note (a person decides, never a silent change); one in
another language taken as read is refused as before this rule.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

from .intent_languages import KNOWN_WORDS

__all__ = ["COMMON_WORDS", "READ_SHARE", "can_read"]

READ_SHARE: Final = 0.4
"""The least share of a message's Latin words one language must know for the gate to read it."""

_EN: Final = """
a an the this that these those it its i me my we us our you your he she they them their his her
who whom whose what which when where why how whether if than then there here and or but not no
nor yes so also only just very too all any each every some many much more most less least few
several other another same such both either neither none nothing something anything everything
is are was were be been being am do does did done doing have has had having can could will would
shall should may might must need needs let lets don t s ll ve re d m isn aren wasn weren doesn
didn hasn haven won wouldn couldn shouldn of in on at to for from by with without about into onto
over under between among per via after before since until during through up down out off than as
like please thanks thank ok okay hi hello hey now today yesterday tomorrow ago last next first
second third top bottom new old open closed current total count number average mean sum max min
maximum minimum list show give tell find get see look explain compare sort group filter search
display find check know want like part parts item items order orders customer customers supplier
suppliers product products price prices cost costs stock inventory quantity quantities amount
value values revenue sales sale invoice invoices payment payments date dates day days week weeks
month months year years time status name names id ids record records row rows table chart data
low high highest lowest largest smallest biggest best worst above below under over between most
per each by year month quarter average growth trend report summary overview details detail
currently still already again yet ever never always often
"""
_DE = """
der die das den dem des ein eine einen einem einer eines kein keine keinen keinem keiner ich du
er sie es wir ihr mich mir dich dir uns euch sich mein meine dein deine unser unsere ihre ihren
wer wen wem wessen was welche welcher welches welchen welchem wann wo wohin woher warum wieso
weshalb wie wieviel wieviele viele viel mehr meisten weniger wenig alle alles jede jeder jedes
jeden manche einige andere und oder aber sondern denn nicht nein ja doch auch nur noch schon
sehr zu zum zur im in am an auf aus bei mit nach von vor seit bis für durch gegen ohne um über
unter zwischen pro ist sind war waren sein bin bist seid wird werden wurde wurden hat haben hatte
hatten habe kann können könnte könnten soll sollen sollte muss müssen darf dürfen will wollen
möchte möchten gibt gab es dies diese dieser dieses dem bitte danke hallo heute gestern morgen
letzte letzten letzter nächste erste ersten neue neuen alt alte offen offene gesamt summe anzahl
durchschnitt mittelwert höchste niedrigste größte kleinste zeige zeig zeigen liste liste auflisten
gib finde suche vergleiche sortiere gruppiere teil teile teilen artikel auftrag aufträge
bestellung bestellungen kunde kunden lieferant lieferanten produkt produkte preis preise kosten
bestand lager menge mengen betrag wert werte umsatz umsätze rechnung rechnungen zahlung datum tag
tage woche wochen monat monate jahr jahre status name namen nummer tabelle daten niedrig hoch
unter über pro je mal als dass ob wenn dann da dort hier jetzt gmbh ag
"""
_FR = """
le la les l un une des du de d au aux ce cet cette ces ça cela ceci je j me m moi tu te t toi il
elle on nous vous ils elles se s lui leur leurs mon ma mes ton ta tes son sa ses notre nos votre
vos qui que qu quoi quel quelle quels quelles lequel laquelle lesquels où quand comment pourquoi
combien est sont était étaient été être suis es sommes êtes ai as a avons avez ont avait avaient
eu avoir fait faire peut peux pouvez pourrait dois doit veux veut voudrais faut y en et ou mais
donc car ni ne n pas plus moins très trop tout tous toute toutes chaque aucun aucune rien
quelque quelques autre autres même dans sur sous avec sans pour par chez entre vers depuis
pendant avant après selon oui non merci bonjour salut stp svp plaît s'il aujourd'hui hier demain
dernier dernière derniers dernières prochain premier première nouveau nouvelle nouveaux ancien
ouvert ouverte ouvertes total totale nombre moyenne somme maximum minimum plus moins montre
montrez affiche affichez liste listez donne donnez dis dites trouve cherche compare trie
groupe pièce pièces article articles commande commandes client clients fournisseur
fournisseurs produit produits prix coût coûts stock stocks inventaire quantité quantités montant
valeur valeurs chiffre affaires ventes vente facture factures paiement date dates jour jours
semaine semaines mois année années an ans statut nom noms numéro tableau données bas basse haut
haute élevé élevée faible ici là maintenant encore déjà
"""
_ES = """
el la los las lo un una unos unas al del de a en con sin por para sobre entre hasta desde hacia
segun durante ante tras yo me mi mis tu tus te ti usted ustedes el ella ellos ellas nos nosotros
nosotras vosotros su sus le les se que qué quien quién quienes cual cuál cuales cuáles cuando
cuándo donde dónde como cómo cuanto cuánto cuantos cuántos cuanta cuánta cuantas cuántas porque
por qué es son era eran fue fueron ser estar esta está estan están este estos estas ese esa esos
esas hay habia había tiene tienen tenemos tengo tienes ha han hemos he hecho puede puedes pueden
podemos podria podrías debe deben quiero quiere queremos necesito y o u pero ni no si sí mas más
menos muy mucho muchos mucha muchas poco pocos poca pocas todo todos toda todas cada ningun
ninguno ninguna nada algo algun alguno alguna algunos algunas otro otros otra otras mismo misma
favor gracias hola ok vale hoy ayer mañana ultimo último ultima última ultimos últimos proximo
primero primera nuevo nueva nuevos nuevas viejo abierto abierta abiertos total numero número
promedio media suma maximo máximo minimo mínimo muestra muestrame muéstrame muestrales lista
listame dame dime busca encuentra compara ordena agrupa pieza piezas articulo articulos artículo
artículos pedido pedidos orden ordenes órdenes cliente clientes proveedor proveedores producto
productos precio precios costo costos coste costes stock existencias inventario cantidad
cantidades importe valor valores ventas venta factura facturas pago pagos fecha fechas dia dias
día días semana semanas mes meses año años estado nombre nombres tabla datos bajo baja alto alta
aqui aquí ahora ya todavia todavía
"""


# The change verbs of English and German (intent.py's tables, which a test keeps in step).
_EN_CHANGES: Final = """
change changing update updating set setting rename renaming create creating add adding insert
inserting delete deleting remove removing mark marking assign assigning reassign reassigning
move moving increase increasing decrease decreasing raise raising lower lowering reduce reducing correct
correcting fix fixing edit editing modify modifying replace replacing make making put putting
record recording register registering archive archiving cancel cancelling canceling close closing
reopen reopening approve approving reject rejecting activate activating deactivate deactivating
enable enabling disable disabling alter altering adjust adjusting drop dropping erase erasing
touch touching
"""
_DE_CHANGES: Final = """
ändere änder aktualisiere setze setz lösche lösch erstelle erstell füge lege leg entferne trage
trag korrigiere benenne markiere storniere erhöhe senke verringere ersetze bearbeite weise
schließe archiviere ändern aktualisieren setzen löschen erstellen anlegen hinzufügen hinzu
entfernen eintragen korrigieren umbenennen markieren stornieren erhöhen senken verringern
ersetzen bearbeiten zuweisen schließen archivieren
"""


def _words(*texts: str) -> frozenset[str]:
    return frozenset(word for text in texts for word in text.split())


def _plain(word: str) -> str:
    """A Spanish word as the vocabulary matches it: without accents (people type Spanish
    without them as often as with)."""
    decomposed = unicodedata.normalize("NFD", word)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


COMMON_WORDS: Final[dict[str, frozenset[str]]] = {
    "en": _words(_EN, _EN_CHANGES),
    "de": _words(_DE, _DE_CHANGES),
    "fr": _words(_FR) | KNOWN_WORDS["fr"],
    "es": frozenset(_plain(word) for word in _words(_ES) | KNOWN_WORDS["es"]),
}
"""The common words of each Latin-script language the gate reads (Spanish without accents)."""

# A word: two letters or more, not glued to a digit ("M8" is a code, not a word).
_LATIN_WORD: Final = re.compile(r"(?<![^\W_])[^\W\d_]{2,}(?![^\W_])")


def _script(char: str) -> str:
    """``latin``, ``kana``, ``han`` or ``other`` for a letter."""
    code = ord(char)
    if 0x3040 <= code <= 0x30FF or 0x31F0 <= code <= 0x31FF or 0xFF66 <= code <= 0xFF9F:
        return "kana"
    if (
        0x4E00 <= code <= 0x9FFF
        or 0x3400 <= code <= 0x4DBF
        or 0xF900 <= code <= 0xFAFF
        or 0x20000 <= code <= 0x3134F
        or char in "々〆"
    ):
        return "han"
    try:
        name = unicodedata.name(char)
    except ValueError:
        return "other"
    return "latin" if name.startswith("LATIN") else "other"


def _known(word: str, words: frozenset[str]) -> bool:
    # a plural or a third person ("suppliers", "piezas", "commandes") counts as its stem
    return word in words or (len(word) > 3 and word.endswith("s") and word[:-1] in words)


def best_share(text: str) -> float:
    """The largest share of ``text``'s Latin words that one of English, German, French and
    Spanish knows (0 when it has none)."""
    words = [w for w in _LATIN_WORD.findall(text) if _script(w[0]) == "latin"]
    if not words:
        return 0.0
    shares = []
    for language, known in COMMON_WORDS.items():
        seen = [_plain(w) for w in words] if language == "es" else words
        shares.append(sum(_known(word, known) for word in seen) / len(seen))
    return max(shares)


def can_read(text: str) -> bool:
    """Whether the intent gate reads the language of ``text`` (the module's rule); ``text`` is
    normalised here (NFKC, casefolded, typographic apostrophes made plain)."""
    plain = unicodedata.normalize("NFKC", text).casefold().replace("\u2019", "'")
    counts = {"latin": 0, "kana": 0, "han": 0, "other": 0}
    for char in plain:
        if char.isalpha():
            counts[_script(char)] += 1
    letters = sum(counts.values())
    if not letters:
        return True
    unread = counts["other"] + (0 if counts["kana"] else counts["han"])
    if unread * 2 >= letters:
        return False
    if counts["kana"]:
        return True
    return best_share(plain) >= READ_SHARE
