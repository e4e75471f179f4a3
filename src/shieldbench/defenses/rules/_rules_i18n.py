"""Multilingual rules of the ``pattern`` defense: German, French, Spanish, Italian,
Portuguese and Russian phrasings of the main families.

The normaliser strips Latin diacritics (``ä`` -> ``a``, ``é`` -> ``e``, ``ß`` -> ``ss``)
so these patterns are ASCII for the Latin-script languages; Russian patterns use
Cyrillic letters and no ``\\b`` (RE2's ``\\b`` only knows ASCII word characters).
"""

from __future__ import annotations

from shieldbench.defenses.rules._rules import Rule, alt, words

__all__ = ["I18N_RULES"]

B = "\\b"

# fmt: off
_DE_IGNORE = alt(
    "ignoriere", "ignorier", "ignorieren sie", "ignoriert", "vergiss", "vergesst",
    "vergessen sie", "missachte", "missachten sie", "verwirf", "verwerfen sie", "uberspringe",
    "vernachlassige", "vernachlassigen sie", "beachte nicht", "beachten sie nicht",
    "loesche", "losche", "streiche", "lass", "lassen sie",
)
_DE_QUALIFIER = alt(
    "bitte", "einfach", "jetzt", "nun", "doch", "alle", "allen", "samtliche", "samtlichen",
    "deine", "deinen", "ihre", "ihren", "die",
    "den", "bisherigen", "bisherige", "vorherigen", "vorherige", "obigen", "obige",
    "vorangehenden", "vorangegangenen", "fruheren", "vorigen", "alten", "ursprunglichen",
    "gegebenen", "erhaltenen", "vorhergehenden", "davor", "zuvor", "oben",
)
_DE_TARGET = alt(
    "anweisungen", "anweisung", "befehle", "instruktionen", "regeln", "aufgaben", "auftrage",
    "vorgaben", "richtlinien", "informationen", "angaben", "anordnungen", "eingaben",
    "einschrankungen", "prompts?", "texte", "dokumente", "artikel",
)
_FR_IGNORE = alt(
    "ignore", "ignorez", "ignorer", "ignorons", "oublie", "oubliez", "oublier", "neglige",
    "negligez", "ne tiens pas compte", "ne tenez pas compte", "fais abstraction",
    "faites abstraction", "laisse de cote", "laissez de cote", "efface", "effacez",
)
_FR_TARGET = alt(
    "instructions?", "consignes?", "directives?", "regles", "ordres", "commandes",
    "indications", "taches", "informations", "restrictions", "contraintes", "messages?",
)
_ES_IGNORE = alt(
    "ignora", "ignore", "ignorar", "ignoren", "olvida", "olvide", "olvidar", "olviden",
    "olvidate", "descarta", "descarte", "omite", "omita", "omitir", "no hagas caso",
    "haz caso omiso", "hagan caso omiso", "desatiende", "salta",
)
_ES_TARGET = alt(
    "instrucciones", "instruccion", "indicaciones", "ordenes", "reglas", "directrices",
    "comandos", "tareas", "restricciones", "mensajes", "informacion",
)
_ROMANCE_QUAL = alt(
    "toutes", "tous", "tout", "les", "tes", "vos", "ces", "de", "des", "todas", "todos",
    "todo", "las", "los", "tus", "sus", "mis", "de", "tutte", "tutti", "le", "gli", "tue",
    "tuoi", "sue", "as", "os", "suas", "seus", "todas as", "todos os",
)
_ROMANCE_PRIOR = alt(
    "precedentes?", "anterieures?", "ci-dessus", "d'avant", "initiales?", "originales?",
    "anteriores", "previas", "de arriba", "iniciales", "originales", "precedenti",
    "anteriori", "iniziali", "originali", "sopra", "anteriores", "previas",
)
_IT_IGNORE = alt("ignora", "ignorate", "ignori", "dimentica", "dimenticate", "dimentichi",
                 "trascura", "non considerare", "scarta")
_IT_TARGET = alt("istruzioni", "indicazioni", "ordini", "regole", "direttive", "comandi")
_PT_IGNORE = alt("ignore", "ignora", "ignorem", "esqueca", "esqueça", "esquecam",
                 "desconsidere", "descarte", "despreze")
_PT_TARGET = alt("instrucoes", "instrucao", "ordens", "regras", "diretrizes", "comandos",
                 "orientacoes")


def _r(rule_id: str, weight: float, pattern: str, description: str = "") -> Rule:
    return Rule(rule_id, weight, pattern, description)


I18N_RULES: tuple[Rule, ...] = (
    # ------------------------------------------------------------------ German
    _r("instruction_override.de_ignore_previous", 0.9,
       B + _DE_IGNORE + "(?: " + _DE_QUALIFIER + "){1,4} " + "(?:[a-z]{1,20} ){0,1}"
       + _DE_TARGET + B, "German: ignoriere alle vorherigen Anweisungen"),
    _r("instruction_override.de_forget_everything", 0.6,
       B + alt("vergiss", "vergessen sie", "ignoriere", "ignorieren sie") + " "
       + alt("alles", "alle") + "(?: " + alt("davor", "zuvor", "vorher", "bisher",
       "bisherige", "gesagte", "was", "oben", "andere") + ")?" + B),
    _r("instruction_override.de_contrary", 0.8,
       B + alt("abweichend", "entgegen", "im gegensatz", "anders als") + " (?:zu |von )?"
       + "(?:den |allen )?" + alt("vorherigen", "bisherigen", "obigen", "fruheren",
       "vorangegangenen") + " " + _DE_TARGET + B),
    _r("instruction_override.de_new_task", 0.55,
       B + alt("konzentriere dich", "konzentrieren sie sich", "fokussiere dich",
       "fokussieren sie sich") + "(?: jetzt| nun)? auf (?:deine|ihre|die) "
       + alt("neue", "nachste", "eigentliche") + " " + alt("aufgabe", "anweisung", "auftrag")
       + B + "|" + B + alt("nun", "jetzt") + " " + alt("folgen", "kommen") + " "
       + alt("neue", "weitere") + " " + alt("aufgaben", "anweisungen", "befehle") + B),
    _r("instruction_override.de_irrelevant", 0.5,
       B + "(?:alle )?(?:bisherigen |vorherigen )?" + alt("informationen", "anweisungen",
       "angaben") + words(3) + " " + alt("sind irrelevant", "sind nicht (?:mehr )?gultig",
       "sind unwichtig", "gelten nicht mehr", "sind ungultig") + B),
    _r("instruction_override.de_praise_pivot", 0.3,
       B + alt("sehr gut", "gut gemacht", "ausgezeichnet", "hervorragend", "toll gemacht",
       "das genugt", "das reicht", "das ist erledigt", "super gemacht") + "[.!,]*"
       + words(3) + " " + alt("nun", "jetzt") + B),
    _r("prompt_extraction.de_reveal_prompt", 0.75,
       B + alt("zeige", "zeig", "gib", "nenne", "verrate", "wiederhole", "drucke", "schreibe",
       "zeigen sie", "geben sie", "nennen sie", "verraten sie", "wiederholen sie") + "(?: mir)?"
       + "(?: " + alt("alle", "all", "den", "die", "deinen", "deine", "ihren", "ihre",
       "gesamten", "vollstandigen", "kompletten", "ursprunglichen", "geheimen", "genauen")
       + "){1,3} " + alt("system-?prompts?", "prompts?", "prompt-texte?", "anweisungen",
       "instruktionen", "systemnachricht", "systemanweisungen", "vorgaben") + B),
    _r("role_manipulation.de_no_longer", 0.55,
       B + alt("du bist", "sie sind") + "(?: ab sofort| ab jetzt| jetzt| nun| von nun an)?"
       + " (?:nicht mehr|kein(?:e|er)? [a-z-]{1,30} mehr)" + B),
    _r("prompt_extraction.i18n_what_instructions", 0.6,
       B + alt("quelles sont tes", "quelles sont vos", "cuales son tus", "cuales son sus",
       "was sind deine", "was sind ihre", "wie lauten deine", "wie lauten ihre") + " "
       + alt("instructions", "consignes", "instrucciones", "anweisungen", "instruktionen",
             "regles", "reglas", "regeln") + B
       + "|" + B + alt("mot pour mot", "palabra por palabra", "wort fur wort") + B),
    _r("encoding_evasion.i18n_decode_and_follow", 0.55,
       B + alt("decode", "decodez", "dechiffre", "dechiffrez", "decodifica", "descifra",
       "dekodiere", "entschlussele", "entschlusselt") + words(5) + " "
       + alt("et", "y", "und", "puis", "luego", "dann") + " "
       + alt("execute", "executez", "execute-le", "suis", "suivez", "ejecuta", "ejecutalo",
       "sigue", "fuhre", "befolge", "obeis", "obedece") + B),
    _r("role_manipulation.de_you_are_now", 0.35,
       B + alt("du bist", "sie sind") + " " + alt("jetzt", "nun", "ab jetzt", "ab sofort",
       "von nun an") + B + "|" + B + alt("ab jetzt", "von nun an", "ab sofort") + " "
       + alt("bist du", "sind sie") + B),
    _r("dan_jailbreak.de_no_restrictions", 0.5,
       B + "ohne (?:jegliche |alle |irgendwelche |ethische |moralische )*"
       + alt("einschrankungen", "filter", "zensur", "regeln", "beschrankungen", "grenzen",
             "moral", "ethik", "richtlinien") + B),
    _r("mode_switching.de_mode", 0.5,
       B + alt("entwicklermodus", "gott-?modus", "jailbreak-?modus", "dan-?modus",
       "uneingeschrankter modus", "unzensierter modus") + B),
    # ------------------------------------------------------------------ French
    _r("instruction_override.fr_ignore_previous", 0.9,
       B + _FR_IGNORE + "(?: " + _ROMANCE_QUAL + "){0,3} " + _FR_TARGET + "(?: "
       + _ROMANCE_PRIOR + ")?" + B + "|" + B + _FR_IGNORE + "(?: " + _ROMANCE_QUAL
       + "){0,3} " + _FR_TARGET + words(2) + " (?:recues|donnees|precedentes)" + B),
    _r("instruction_override.fr_forget_everything", 0.55,
       B + alt("oublie", "oubliez", "ignore", "ignorez")
       + " tout(?: ce qui precede| ce que| avant)?" + B),
    _r("prompt_extraction.fr_reveal_prompt", 0.75,
       B + alt("revele", "revelez", "montre", "montrez", "affiche", "affichez", "donne",
       "donnez", "repete", "repetez", "ecris", "ecrivez") + "(?:-moi| moi)? "
       + alt("ton", "votre", "tes", "vos", "le", "les") + " "
       + alt("prompt", "invite", "instructions", "consignes", "message") + "(?: "
       + alt("systeme", "initiales?", "cachees?", "secretes?", "d'origine", "complet") + ")?"
       + B),
    _r("role_manipulation.fr_you_are_now", 0.35,
       B + alt("tu es", "vous etes") + " " + alt("maintenant", "desormais", "a present") + B),
    _r("dan_jailbreak.fr_no_restrictions", 0.5,
       B + "sans (?:aucune |aucun |les |tes |vos )?" + alt("restrictions?", "limites?",
       "filtres?", "censure", "regles", "contraintes", "morale", "ethique") + B),
    _r("mode_switching.fr_mode", 0.5,
       B + "mode " + alt("developpeur", "dieu", "sans restriction", "sans filtre", "jailbreak",
       "dan", "non censure") + B),
    # ------------------------------------------------------------------ Spanish
    _r("instruction_override.es_ignore_previous", 0.9,
       B + _ES_IGNORE + "(?: " + _ROMANCE_QUAL + "){0,3} " + _ES_TARGET + "(?: "
       + _ROMANCE_PRIOR + ")?" + B),
    _r("instruction_override.es_forget_everything", 0.55,
       B + alt("olvida", "olvide", "olviden", "olvidar", "ignora", "ignore") + " todo"
       + "(?: lo)?(?: que| anterior| lo anterior| lo que)?" + B),
    _r("prompt_extraction.es_reveal_prompt", 0.75,
       B + alt("revela", "revele", "muestra", "muestrame", "muestre", "dime", "digame",
       "repite", "repita", "imprime", "imprima", "escribe") + " "
       + alt("tu", "tus", "el", "las", "su", "sus") + " "
       + alt("prompt", "instrucciones", "indicaciones", "mensaje") + "(?: "
       + alt("del sistema", "de sistema", "iniciales", "ocultas", "secretas", "originales")
       + ")?" + B),
    _r("role_manipulation.es_you_are_now", 0.35,
       B + alt("ahora eres", "ahora tu eres", "a partir de ahora eres", "desde ahora eres",
       "ahora usted es") + B),
    _r("dan_jailbreak.es_no_restrictions", 0.5,
       B + "sin (?:ninguna |ningun |ningunas |las |tus )?" + alt("restricciones",
       "restriccion", "filtros?", "censura", "limites", "reglas", "moral", "etica") + B),
    _r("mode_switching.es_mode", 0.5,
       B + "modo " + alt("desarrollador", "dios", "sin restricciones", "sin filtros",
       "jailbreak", "dan", "sin censura") + B),
    # ------------------------------------------------------- Italian, Portuguese
    _r("instruction_override.it_ignore_previous", 0.9,
       B + _IT_IGNORE + "(?: " + _ROMANCE_QUAL + "){0,3} " + _IT_TARGET + "(?: "
       + _ROMANCE_PRIOR + ")?" + B),
    _r("instruction_override.pt_ignore_previous", 0.9,
       B + _PT_IGNORE + "(?: " + _ROMANCE_QUAL + "){0,3} " + _PT_TARGET + "(?: "
       + _ROMANCE_PRIOR + ")?" + B),
    # ------------------------------------- Dutch, Polish, Czech, Croatian / Serbian
    _r("instruction_override.other_ignore_previous", 0.85,
       B + alt("negeer", "vergeet", "zignoruj", "zapomnij", "ignoruj", "zapomen", "zaboravi",
       "zanemari", "ignoriraj", "ignorisi", "ignoriši") + "(?: " + alt("alle", "al", "je",
       "uw", "de", "wszystkie", "poprzednie", "swoje", "vsechny", "predchozi", "sve", "sva",
       "prethodne", "svoje", "vorige", "voorgaande", "eerdere") + "){0,3} "
       + alt("instructies", "opdrachten", "regels", "instrukcje", "polecenia", "instrukce",
       "pokyny", "instrukcije", "upute", "uputstva", "naredbe", "pravila") + B),
    # ------------------------------------------------------------------ Russian
    _r("instruction_override.ru_ignore_previous", 0.9,
       alt("игнорируй", "игнорируйте", "забудь", "забудьте", "проигнорируй",
       "проигнорируйте", "не обращай внимания на", "отбрось", "отбросьте") + "(?: "
       + alt("все", "всё", "свои", "ваши", "твои", "эти", "предыдущие", "прежние",
       "прошлые", "вышеуказанные", "данные", "тебе", "вам") + "){0,3} "
       + alt("инструкции", "указания", "правила", "команды", "ограничения", "приказы")),
    _r("prompt_extraction.ru_reveal_prompt", 0.75,
       alt("покажи", "покажите", "выведи", "выведите", "раскрой", "раскройте", "повтори",
       "повторите", "напиши") + " " + alt("свой", "свои", "твой", "твои", "ваш", "ваши")
       + " " + alt("системный промпт", "промпт", "инструкции", "системные инструкции")),
)
# fmt: on
