"""The mutation intent gate in French, Spanish and Japanese: requests and refusals of a change.

What: :func:`clause_stance` says whether one clause of a user's message (casefolded, NFKC) asks
for a change in French, Spanish or Japanese, refuses one, or does neither; :data:`KNOWN_WORDS`
are the change verbs' forms, for :mod:`.readable` (a word the gate reads is evidence that it
reads the language).

Why these forms: as in English and German (:mod:`.intent`), a request is a change verb used as
one -- an imperative at the start of a clause ("Ajoute la pièce Bolt", "Añade la pieza Bolt"),
a polite form with the infinitive ("peux-tu supprimer …", "¿puedes borrarlo?", "je voudrais
modifier …", "quiero cambiar …"), or in Japanese a する-noun or a verb's て-form with a request
ending ("部品を追加して", "削除してください", "変更をお願いします", "価格を変えて") or a
bare "…を追加" ending a clause. Questions about changes use other forms ("Qu'est-ce qui a été
modifié ?", "¿Qué se eliminó?", "何が変更されましたか") and are not requests; negations ("ne
change rien", "no borres nada", "変更しないで") are refusals.

French is matched with its accents as written: they tell an imperative from a past participle at
a clause's start ("Modifie le prix" asks, "Modifié quand ?" does not). Spanish drops the accents
of a word's stem but keeps one on its last letter: the enclitic imperative "cámbialo" is matched
as "cambialo", while "eliminé" (I deleted) stays apart from the imperative "elimine".
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final, Literal

__all__ = ["KNOWN_WORDS", "clause_stance"]

Stance = Literal["change", "no_change", "neutral"]


def _forms(text: str) -> list[str]:
    """The words of ``text`` (a table of forms written as running text, to keep it readable)."""
    return text.split()


# -- French ----------------------------------------------------------------------------------------

# Imperatives (tu, vous, nous) and infinitives of the common change verbs. Unaccented spellings
# are added only where they cannot be a past participle ("creez" yes, "cree" no: "créé").
_FR_IMPERATIVES: Final = _forms(
    "ajoute ajoutez ajoutons crée créez creez créons modifie modifiez modifions change changez "
    "changeons mets mettez mettons supprime supprimez supprimons efface effacez effaçons renomme "
    "renommez corrige corrigez enregistre enregistrez retire retirez remplace remplacez augmente "
    "augmentez diminue diminuez baisse baissez réduis réduisez reduis reduisez annule annulez "
    "marque marquez assigne assignez attribue attribuez archive archivez ferme fermez définis "
    "définissez definissez insère insérez inserez édite éditez editez déplace déplacez deplacez "
    "validez approuve approuvez rejette rejetez activez désactive désactivez desactivez "
    "rouvre rouvrez saisis saisissez"
)
_FR_INFINITIVES: Final = _forms(
    "ajouter créer creer modifier changer mettre supprimer effacer renommer corriger enregistrer "
    "retirer remplacer augmenter diminuer baisser réduire reduire annuler marquer assigner "
    "attribuer archiver fermer définir definir insérer inserer éditer editer déplacer deplacer "
    "valider approuver rejeter activer désactiver desactiver rouvrir saisir"
)
_FR_IMP: Final = "|".join(_FR_IMPERATIVES)
_FR_INF: Final = "|".join(_FR_INFINITIVES)
# A verb followed by what makes it a read ("crée un graphique", "mets-les dans un tableau",
# "ponlo en una tabla") or, for the verbs that are also nouns, a noun ("baisse des ventes",
# "marca del producto"). One list for both languages: a French clause is also read as Spanish
# (with its stem accents dropped), where "crée" is "cree".
_READ_FILLERS: Final = (
    r"moi|nous|le|la|les|lui|leur|en|un|une|des|du|de|d'|l'|dans|sous|forme|ça|cela|resultats?|"
    r"résultats?|donnees|données|me|nos|lo|los|las|una|unos|unas|el|como|del|datos"
)
_READ_THINGS: Final = (
    r"graphiques?|graphes?|tableaux?|tableau|listes?|resumes?|résumés?|rapports?|diagrammes?|"
    r"exports?|csv|apercus?|aperçus?|syntheses?|synthèses?|courbes?|camemberts?|histogrammes?|"
    r"graficos?|graficas?|tablas?|listas?|listados?|resumen(?:es)?|informes?|reportes?|"
    r"diagramas?|exportacion|hojas?"
)
_NOT_A_CHANGE: Final = rf"(?![-\s]+(?:(?:{_READ_FILLERS})\s*){{0,4}}(?:{_READ_THINGS})\b)"
# Verbs that are also common nouns or adjectives ("Marque des produits ?", "¿Marca más
# vendida?", "baja existencia"): imperatives only when a determiner follows ("Marque la
# commande 7", "Marca el pedido 7"), or a clitic is attached ("márcalo", "marque-la").
_NOUNISH: Final = r"(?:marque|baisse|archive|ferme|marca|baja|sube|cierre|ajuste|fija|activa)"
_DETERMINERS: Final = (
    r"(?:le|la|les|ce|cet|cette|ces|mon|ma|mes|son|sa|ses|leur|leurs|tous|toutes|tout|un|une|"
    r"el|los|las|lo|este|esta|estos|estas|ese|esa|esos|esas|todos|todas|todo|una|mi|mis|su|sus|"
    r"nuestro|nuestra|nuestros|nuestras)"
)
_NOUNS: Final = rf"{_NOUNISH}(?:\s|$)(?!\s*(?:{_DETERMINERS}(?:\s|$)|l'))"
_FR_CLITICS: Final = r"(?:(?:me|te|nous|vous|le|la|les|lui|leur|y|en|bien|aussi|vite)\s+|[mtld]')*"
_FR_LEAD: Final = (
    r"(?:(?:ok|okay|d'accord|oui|alors|maintenant|puis|et|aussi|ensuite|bon|bonjour|salut|merci|"
    r"s'il\s+te\s+plaît|s'il\s+vous\s+plaît|stp|svp|vas-y\s+et|allez)\s+)*"
)
_FR_REQUEST: Final = re.compile(
    rf"^{_FR_LEAD}(?!{_NOUNS})(?:{_FR_IMP}){_NOT_A_CHANGE}(?=[\s-]|$)"
    # "peux-tu ajouter", "pourriez-vous me créer", "tu peux le supprimer"
    rf"|\b(?:(?:peux|pourrais|pouvez|pourriez|veux|voudrais|voulez|voudriez)-(?:tu|vous)|"
    rf"(?:tu|vous)\s+(?:peux|pourrais|pouvez|pourriez|veux|voudrais|voulez|voudriez))"
    rf"\s+(?:s'il\s+(?:te|vous)\s+plaît\s+|stp\s+|svp\s+)?{_FR_CLITICS}(?:{_FR_INF})\b"
    # "je voudrais modifier", "j'aimerais ajouter", "nous devons supprimer"
    rf"|\b(?:je\s+|j')(?:voudrais|veux|souhaite|souhaiterais|aimerais|dois)\s+{_FR_CLITICS}"
    rf"(?:{_FR_INF})\b"
    rf"|\bnous\s+(?:voudrions|voulons|souhaitons|aimerions|devons)\s+{_FR_CLITICS}(?:{_FR_INF})\b"
    # "merci d'ajouter", "veuillez supprimer", "il faut modifier"
    rf"|\b(?:merci|veuillez|il\s+faut|faut|pense\s+à|n'oublie\s+pas)\s+(?:de\s+|d')?{_FR_CLITICS}"
    rf"(?:{_FR_INF})\b"
)
_FR_REFUSAL: Final = re.compile(
    rf"(?<![\w'])(?:ne\s+|n')(?:(?:me|te|le|la|les|lui|leur|y|en|rien|pas|jamais|plus|surtout)\s+"
    rf"|[mlt]')*(?:{_FR_IMP}|{_FR_INF}|touche|touchez|toucher)\b"
    rf"|\bsans\s+(?:rien\s+)?(?:{_FR_INF}|toucher)\b"
    rf"|\b(?:aucune?|pas\s+de)\s+(?:modification|changement|suppression|ajout|mise\s+à\s+jour)s?\b"
    rf"|\b(?:{_FR_IMP}|touche)\s+(?:à\s+)?rien\b"
)

# -- Spanish (matched with the stem's accents dropped, see the module's doc) ----------------------

# Imperatives (tú and usted) and their negative (tú) forms, and infinitives.
_ES_IMPERATIVES: Final = _forms(
    "anade anada agrega agregue crea cree modifica modifique cambia cambie actualiza actualice "
    "pon ponga establece establezca borra borre elimina elimine suprime suprima renombra renombre "
    "corrige corrija registra registre quita reemplaza reemplace sustituye sustituya aumenta "
    "aumente sube suba reduce reduzca disminuye disminuya baja baje cancela cancele anula anule "
    "marca marque asigna asigne archiva archive cierra cierre inserta inserte edita edite mueve "
    "mueva fija fije ajusta ajuste aprueba apruebe rechaza rechace activa desactiva desactive "
    "guarda guarde"
)
_ES_NEGATIVES: Final = _forms(
    "anadas agregues crees modifiques cambies actualices pongas establezcas borres elimines "
    "suprimas renombres corrijas registres quites reemplaces sustituyas aumentes subas reduzcas "
    "disminuyas bajes canceles anules marques asignes archives cierres insertes edites muevas "
    "fijes ajustes apruebes rechaces actives desactives guardes toques toque"
)
_ES_INFINITIVES: Final = _forms(
    "anadir agregar crear modificar cambiar actualizar poner establecer borrar eliminar suprimir "
    "renombrar corregir registrar quitar reemplazar sustituir aumentar subir reducir disminuir "
    "bajar cancelar anular marcar asignar archivar cerrar insertar editar mover fijar ajustar "
    "aprobar rechazar activar desactivar guardar"
)
_ES_ENCLITIC: Final = r"(?:me|nos)?(?:lo|la|los|las|le|les)?"
_ES_IMP: Final = rf"(?:{'|'.join(_ES_IMPERATIVES)}|da\s+de\s+(?:alta|baja)|dé\s+de\s+(?:alta|baja))"
_ES_INF: Final = rf"(?:{'|'.join(_ES_INFINITIVES)}|dar\s+de\s+(?:alta|baja))"
_ES_CLITICS: Final = r"(?:(?:me|te|nos|le|les|lo|la|los|las|se)\s+)?"
_ES_LEAD: Final = (
    r"(?:(?:por\s+favor|porfa|ok|okay|vale|bueno|ahora|luego|y|tambien|entonces|si|sí|hola|"
    r"gracias|oye|venga|pues)\s+)*"
)
# A Spanish imperative is the third person's present too: "¿Cambia el precio cada mes?" asks
# whether the price changes. So an imperative counts only outside a question.
_ES_IMPERATIVE: Final = re.compile(
    rf"^{_ES_LEAD}(?!{_NOUNS}){_ES_IMP}{_ES_ENCLITIC}{_NOT_A_CHANGE}(?=\s|$)"
)
_ES_REQUEST: Final = re.compile(
    # "¿puedes añadir …?", "¿me podrías borrarlo?", "¿podría usted cambiar …?"
    rf"(?<!\bse\s)\b(?:puedes|podrias|puede|podria|pueden|podrian|quieres|querrias)\s+"
    rf"(?:usted\s+|ustedes\s+|por\s+favor\s+)?{_ES_CLITICS}{_ES_INF}{_ES_ENCLITIC}\b"
    # "quiero cambiar", "me gustaría añadir", "hay que actualizar", "favor de eliminar"
    rf"|\b(?:quiero|quisiera|necesito|queremos|quisieramos|necesitamos|deseo|desearia|"
    rf"me\s+gustaria|nos\s+gustaria|hay\s+que|tienes\s+que|tiene\s+que|debes|favor\s+de|"
    rf"por\s+favor)\s+{_ES_CLITICS}{_ES_INF}{_ES_ENCLITIC}\b"
)
_ES_REFUSAL: Final = re.compile(
    rf"\b(?:no|nunca|jamas|sin)\s+(?:(?:me|te|le|lo|la|los|las|les|nos|se|nada|hay\s+que|"
    rf"quiero|necesito|hace\s+falta|debes|debe|vayas\s+a|vaya\s+a)\s+){{0,2}}"
    rf"(?:{'|'.join(_ES_NEGATIVES)}|{_ES_INF}|{_ES_IMP})\b"
    rf"|\b(?:ningun|ninguna|sin)\s+(?:cambios?|modificacion(?:es)?)\b"
)

# -- Japanese --------------------------------------------------------------------------------------

# する-nouns of a change ("追加する") and the て-forms of native change verbs ("変えて").
_JA_NOUNS: Final = (
    "新規作成|新規登録|名前変更|追加|作成|登録|更新|変更|削除|設定|修正|編集|入力|記録|取り消し|"
    "取消|キャンセル|改名|承認|却下|有効化|無効化|割り当て|割当|移動|置換|置き換え|訂正|反映|保存|"
    "追記|消去|解除|アップデート|リネーム|差し替え"
)
_JA_TE: Final = (
    "変えて|消して|作って|入れて|加えて|付けて|つけて|直して|書き換えて|増やして|減らして|"
    "上げて|下げて|外して|取り除いて|置き換えて|足して|移して|戻して|閉じて|差し替えて"
)
_JA_NEGATED: Final = (
    "変え|消さ|作ら|入れ|加え|付け|つけ|直さ|書き換え|増やさ|減らさ|上げ|下げ|外さ|触ら|"
    "いじら|足さ|移さ|戻さ|閉じ"
)
# What follows a て-form to make it a request: "…してください", "…してくれますか", "…して" alone
# at the clause's end; not a past tense ("…してくれた", "…してもらいました": it was done).
_JA_ASKING: Final = (
    r"(?:ください|下さい|くれ(?!た)|くださる|もらえ|もらいたい|いただけ|いただきたい|頂け|頂きたい|"
    r"ほしい|欲しい|ちょうだい|おいて|(?:ね|よ)?$)"
)
_JA_REQUEST: Final = re.compile(
    rf"(?:{_JA_NOUNS})を?(?:して{_JA_ASKING}|しよう|しましょう|したい|しろ|せよ|"
    rf"お願い|願い|よろしく|頼む|頼みます)"
    rf"|(?:{_JA_TE}){_JA_ASKING}"
    r"|(?:変え|消し|作り|入れ|加え|直し|増やし|減らし)たい"
    rf"|を(?:{_JA_NOUNS})(?:する)?$"
)
_JA_REFUSAL: Final = re.compile(
    rf"(?:{_JA_NOUNS})(?:は|を|も)?(?:しない|せず|しません|しなくて|しちゃだめ|不要|禁止|いらない)"
    rf"|(?:{_JA_NEGATED})(?:ない|ず|ません)"
)
# What a change verb makes that is a read: "グラフを作成して", "表にして", "一覧を作って".
_JA_READS: Final = re.compile(
    r"(?:グラフ|チャート|表|一覧|リスト|レポート|報告書|図|集計|まとめ|サマリー|要約|csv|"
    r"エクセル|excel)(?:を|で|に)?$"
)
_JA_QUESTION: Final = re.compile(r"何|なに|どれ|どの|どこ|いつ|誰|だれ|どう|なぜ|か$")


def _japanese(clause: str) -> Stance:
    if _JA_REFUSAL.search(clause):
        return "no_change"
    for match in _JA_REQUEST.finditer(clause):
        if _JA_READS.search(clause[: match.start()]):
            continue  # the thing made is a chart or a table
        if match.group().startswith("を") and _JA_QUESTION.search(clause):
            continue  # "何を追加？": a bare ending in a question asks nothing
        return "change"
    return "neutral"


def _stem_accents_dropped(text: str) -> str:
    """``text`` without the combining marks of each word's letters but its last ("cámbialo" ->
    "cambialo", "añade" -> "anade", "eliminé" stays)."""
    decomposed = unicodedata.normalize("NFD", text)
    kept: list[str] = []
    marks: list[str] = []  # the marks of the letter just read, kept only if it ends a word
    for char in decomposed:
        if unicodedata.combining(char):
            marks.append(char)
            continue
        if marks and not char.isalpha():
            kept.extend(marks)
        marks.clear()
        kept.append(char)
    kept.extend(marks)
    return unicodedata.normalize("NFC", "".join(kept))


_HAS_KANA: Final = re.compile(r"[\u3040-\u30ff]")


def clause_stance(clause: str, *, question: bool = False) -> Stance:
    """What one clause (casefolded and NFKC-normalised) says about changing data in French,
    Spanish or Japanese; ``question``: it ends with "?" or starts with "¿". A refusal outweighs
    a request in the same clause."""
    spanish = _stem_accents_dropped(clause)
    if _FR_REFUSAL.search(clause) or _ES_REFUSAL.search(spanish):
        return "no_change"
    if _HAS_KANA.search(clause):
        stance = _japanese(clause)
        if stance != "neutral":
            return stance
    if _FR_REQUEST.search(clause) or _ES_REQUEST.search(spanish):
        return "change"
    if not question and _ES_IMPERATIVE.search(spanish):
        return "change"
    return "neutral"


KNOWN_WORDS: Final[dict[str, frozenset[str]]] = {
    "fr": frozenset(_FR_IMPERATIVES + _FR_INFINITIVES),
    "es": frozenset(_ES_IMPERATIVES + _ES_NEGATIVES + _ES_INFINITIVES),
}
"""The change verbs' forms by language (Spanish as matched, stem accents dropped)."""
