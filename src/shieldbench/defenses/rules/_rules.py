"""The rules of the ``pattern`` defense: attack families as weighted regular expressions.

A :class:`Rule` describes one *family* of phrasing, not one dataset sentence: a verb
class ("ignore", "disregard", "forget", ...), a closed vocabulary of fillers and a
target class ("previous instructions", "system prompt", ...). Its ``weight`` is
read as the probability that a text is an attack given that this rule alone fired
(see :mod:`shieldbench.defenses.pattern` for how weights combine). Weights at or above
0.5 block on their own at the default threshold; weaker cues only count together.

Patterns are written for the *normalised* text (lowercase, ASCII for Latin scripts,
single spaces, ``\\n`` between lines; see ``_normalize``) in the subset of
syntax that both RE2 and Python's ``re`` accept with the same meaning: literals,
classes, ``(?:...)``, alternation, bounded ``{m,n}`` repetition, ``\\b`` next to ASCII
letters. No ``\\w``, ``\\s``, look-around or back-references. Keeping one syntax lets the
benchmark compare the RE2 engine with a plain ``re.search`` loop over the same rules.

This module holds the English instruction-override and prompt-extraction rules;
``_rules_jailbreak`` the English role, mode, DAN, tag and encoding rules;
``_rules_i18n`` the other languages. ``pattern.RULES`` holds them all.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FAMILIES", "OVERRIDE_RULES", "SIGNAL_RULES", "Rule", "alt", "words"]

FAMILIES: tuple[str, ...] = (
    "instruction_override",
    "prompt_extraction",
    "role_manipulation",
    "mode_switching",
    "dan_jailbreak",
    "tag_injection",
    "encoding_evasion",
)


@dataclass(frozen=True, slots=True)
class Rule:
    """One detection rule: ``id`` (``family.name``), ``weight`` in (0, 1), ``pattern``."""

    id: str
    weight: float
    pattern: str
    description: str = ""

    @property
    def family(self) -> str:
        return self.id.split(".", 1)[0]

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"rule {self.id!r}: family must be one of {FAMILIES}")
        if not 0.0 < self.weight < 1.0:
            raise ValueError(f"rule {self.id!r}: weight must be in (0, 1), got {self.weight}")


def alt(*options: str) -> str:
    """``(?:a|b|c)``."""
    return "(?:" + "|".join(options) + ")"


def words(n: int) -> str:
    """Up to ``n`` arbitrary words (each preceded by one space, punctuation included)."""
    return "(?: [^ \n]{1,20}){0," + str(n) + "}"


# ---------------------------------------------------------------- vocabulary
_IGNORE = alt(
    "ignore", "ignoring", "disregard", "disregarding", "forget", "forget about", "neglect",
    "abandon", "discard", "dismiss", "set aside",
    "put aside", "pay no attention to", "stop following", "do not follow", "don't follow",
    "dont follow", "no longer follow", "stop obeying", "do not obey", "don't obey",
)  # fmt: skip
# Verbs with everyday IT meanings ("override the default policy"): core targets only.
_IGNORE_LOOSE = alt("skip", "drop", "erase", "delete", "remove", "clear", "scrap", "throw away",
                    "override", "overriding", "bypass")  # fmt: skip
_QUALIFIER = alt(
    "previous", "prior", "preceding", "above", "earlier", "former", "foregoing",
    "aforementioned", "initial", "original", "old", "past", "existing", "system", "developer",
    "default", "all", "any", "every", "your", "those", "these", "hidden", "predefined",
    "pre-defined", "preset", "programmed", "given", "safety", "ethical",
)  # fmt: skip
# Qualifiers that point back at what the model was told (a subset of _QUALIFIER).
_POINTER = alt(
    "previous", "prior", "preceding", "above", "earlier", "foregoing", "aforementioned",
    "initial", "original", "system", "developer", "hidden", "predefined", "pre-defined",
    "preset", "programmed", "safety", "ethical",
)  # fmt: skip
_FILLER = alt(
    _QUALIFIER, "the", "of", "my", "and", "or", "other", "following", "such", "current",
    "provided", "you got", "you were given", "you received", "please", "kindly", "just", "now",
    "simply",
)  # fmt: skip
_TARGET_CORE = alt(
    "instructions?", "prompts?", "directives?", "directions", "commands?", "orders?", "rules?",
    "guidelines", "guidance", "constraints", "restrictions", "programming", "training",
    "policies", "policy",
    "limitations", "filters", "safeguards", "protocols?", "parameters", "boundaries",
)  # fmt: skip
_TARGET = alt(
    _TARGET_CORE, "context", "tasks?", "assignments?", "messages?", "text", "information",
    "input", "conversation", "documents?", "articles?", "sources?", "requests?", "conditions",
    "everything", "settings",
)  # fmt: skip
_REVEAL = alt(
    "show", "reveal", "print", "display", "output", "repeat", "recite", "tell", "give",
    "share", "leak", "dump", "expose", "disclose", "spell out", "write out", "write down",
    "list", "echo", "copy", "paste", "provide", "send", "read out", "reproduce", "type out",
    "return", "state",
)  # fmt: skip
_PROMPT_STRONG = alt(
    "system prompt", "system message", "system instructions?", "initial prompt",
    "original prompt", "pre-?prompt", "hidden prompt", "secret prompt", "base prompt",
    "meta prompt", "initial instructions", "original instructions", "hidden instructions",
    "secret instructions", "developer instructions", "prompt texts?", "full prompt",
    "entire prompt", "whole prompt", "complete prompt", "prompt", "instructions above",
)  # fmt: skip
_PROMPT_ANY = alt(_PROMPT_STRONG, "instructions", "rules", "guidelines", "directives",
                  "configuration", "programming")  # fmt: skip


def _r(rule_id: str, weight: float, pattern: str, description: str = "") -> Rule:
    return Rule(rule_id, weight, pattern, description)


# Evasion signals found by the normaliser (no pattern: they are not regex matches).
SIGNAL_RULES: dict[str, Rule] = {
    name: _r(f"encoding_evasion.{name}", weight, "", description)
    for name, weight, description in (
        ("tag_characters", 0.75, "invisible Unicode tag characters smuggling text"),
        ("encoded_payload", 0.6, "a base64 / hex / ROT13 payload that itself matches rules"),
        ("mixed_script", 0.5, "words mixing Latin with Cyrillic / Greek look-alikes"),
        ("invisible_characters", 0.35, "zero-width characters inside words"),
        ("heavy_leetspeak", 0.55, "most of the text written in leetspeak"),
        ("leetspeak", 0.35, "several words written in leetspeak"),
        ("spaced_letters", 0.35, "a word spelled out with spaces between its letters"),
        ("bidi_override", 0.3, "right-to-left override characters"),
        ("styled_unicode", 0.15, "fullwidth / mathematical letters"),
    )
}

B = "\\b"
OVERRIDE_RULES: tuple[Rule, ...] = (
    # ------------------------------------------------------ instruction override
    _r("instruction_override.ignore_previous", 0.9,
       B + _IGNORE + "(?: " + _FILLER + "){0,4} " + _QUALIFIER + "(?: " + _FILLER + "){0,3} "
       + _TARGET + B
       # One free word ("previous usual instructions") only after a qualifier that points
       # back at the model's own instructions: "forget the old parking rules" is an e-mail.
       + "|" + B + _IGNORE + "(?: " + _FILLER + "){0,4} " + _POINTER + "(?: " + _FILLER
       + "){0,3} [a-z-]{1,20} " + _TARGET_CORE + B, "ignore / forget all previous instructions"),
    _r("instruction_override.ignore_that_rule", 0.5,
       B + _IGNORE + " (?:that|this|the|any) (?:[a-z0-9-]{1,20} )?" + alt("rules?",
       "restrictions?", "limits?", "limitations?", "guidelines?", "polic(?:y|ies)",
       "constraints?") + B),
    _r("instruction_override.drop_instructions", 0.75,
       B + _IGNORE_LOOSE + "(?: " + _FILLER + "){0,4} " + _QUALIFIER + "(?: " + _FILLER
       + "){0,3} " + _TARGET_CORE + B, "drop / erase / override / bypass your instructions"),
    _r("instruction_override.ignore_instructions", 0.45,
       B + _IGNORE + " (?:the |these |those )?(?:instructions|directives|system prompt)" + B),
    _r("instruction_override.ignore_above", 0.7,
       B + alt("ignore", "disregard", "forget") + "(?: all| everything| anything| the| all of the"
       "| what" + words(3) + ")? " + alt("above", "before", "previously", "so far", "up to now",
       "until now", "beforehand", "that came before") + B),
    _r("instruction_override.forget_everything", 0.55,
       B + alt("forget", "ignore", "disregard") + " (?:about )?(?:everything|all of it|all that)"
       + B),
    _r("instruction_override.new_instructions", 0.6,
       B + alt("new", "further", "additional", "different") + " "
       + alt("instructions?", "tasks?", "directives?", "assignments?", "orders") + " "
       + alt("follow", "follows", "begin", "start", "are as follows") + B
       + "|" + B + alt("here are", "these are", "follow", "obey") + " (?:your|my|the) new "
       + alt("instructions", "rules", "orders", "directives") + B),
    _r("instruction_override.new_role_claim", 0.45,
       B + "your " + alt("new", "updated", "real", "actual", "true", "revised") + " "
       + alt("instructions?", "directives?", "task", "orders", "purpose", "goal", "objective",
             "mission", "system prompt", "programming") + B),
    _r("instruction_override.focus_new_task", 0.55,
       B + alt("focus", "concentrate") + "(?: now)? on " + alt("your", "the", "this", "my")
       + " " + alt("new", "next", "real", "actual") + " " + alt("task", "assignment",
       "instructions?", "job", "mission") + B),
    _r("instruction_override.tasks_follow", 0.5,
       B + "now " + alt("comes?", "follows?", "there (?:is|are)") + " (?:a |an |some |the )?"
       + alt("new", "further", "more", "additional", "other", "different") + " "
       + alt("tasks?", "instructions?", "assignments?", "challenges?") + B),
    _r("instruction_override.start_over", 0.3,
       B + alt("start", "begin", "starting") + " " + alt("over", "again", "from scratch",
       "anew", "afresh", "from the front", "from the beginning") + B),
    _r("instruction_override.praise_pivot", 0.3,
       B + alt("well done", "good job", "great job", "nice job", "very good",
       "excellent performance", "that is enough", "that's enough", "that is done",
       "that was ok", "simply great", "that is fine") + "[.!,]*" + words(2)
       + " (?:now|but now)" + B),
    _r("instruction_override.do_not_answer", 0.6,
       B + alt("do not", "don't", "dont") + " " + alt("answer", "respond to", "reply to",
       "address") + " " + alt("this", "the", "my") + " " + alt("question", "request",
       "query", "prompt") + words(2) + ",? " + alt("but", "instead", "just", "only") + B),
    _r("instruction_override.just_say", 0.35,
       B + alt("just", "only", "instead", "simply") + " " + alt("say", "print", "output",
       "write", "respond with", "reply with", "answer with", "type", "return", "repeat")
       + "(?: the following| this| exactly)?:? [\"']"),
    _r("instruction_override.context_bypass", 0.5,
       B + alt("not", "instead of", "rather than", "regardless of", "without using",
       "without looking at", "ignoring", "independent of", "disregarding", "do not look in",
       "don't look in", "not look at") + " (?:based on |by |from |according to |using "
       "|looking at |in )?(?:the )?(?:provided |given |attached |above )?"
       + alt("articles?", "documents?", "context", "sources?", "search results") + B),
    _r("instruction_override.priority_claim", 0.75,
       B + alt("these", "this", "my", "the following", "new") + " "
       + alt("instructions?", "commands?", "rules?", "message", "prompt") + " "
       + alt("override", "overrides", "supersede", "supersedes", "take precedence",
             "takes precedence", "overrule", "overrules") + B),
    _r("instruction_override.reprogram", 0.7,
       B + alt("override", "overwrite", "replace", "change", "update", "modify", "reset",
       "rewrite", "reprogram", "alter") + " (?:all of )?(?:your|its) (?:previous |original "
       "|initial |current |existing |system |core |default )?"
       + alt("instructions", "programming", "prompt", "system prompt", "rules",
             "guidelines", "directives", "configuration", "training") + B),
    _r("instruction_override.instructions_now", 0.6,
       B + "your " + alt("instructions", "task", "job", "goal", "only task", "mission",
       "purpose") + " (?:is|are) (?:now|as follows|from now on)" + B),
    _r("instruction_override.stop_everything", 0.5,
       B + "stop " + alt("everything", "what you(?:'re| are) doing", "all (?:previous |prior "
       "|current )?(?:tasks|instructions)") + B),
    _r("instruction_override.stop_command", 0.55,
       "(?:^|\n|[.?!] )" + alt("stop", "halt", "stopp", "attention") + "(?: now| everything)?"
       " ?[!:-]+(?: [a-z]{1,12} ?[!:-]+)? " + alt("write", "say", "print", "output", "tell",
       "answer", "respond", "repeat", "ignore", "forget", "now", "just") + B),
    _r("instruction_override.stop_prefix", 0.35,
       "(?:^|\n)(?:stop|halt|attention|wait)(?: now)? ?[!:,-]"),
    # ------------------------------------------------------ system prompt extraction
    _r("prompt_extraction.reveal_prompt", 0.85,
       B + _REVEAL + "(?: me| us)?" + "(?: " + alt("all", "of", "exactly", "verbatim",
       "back", "full", "entire", "complete", "whole", "original", "initial", "exact",
       "hidden", "secret", "current") + "){0,3} "
       + alt("your", "the", "this", "its", "above", "the above") + "(?: "
       + alt("full", "entire", "complete", "whole", "original", "initial", "exact", "hidden",
       "secret", "current", "first", "own") + "){0,2} " + _PROMPT_STRONG + B),
    _r("prompt_extraction.reveal_your_instructions", 0.7,
       B + _REVEAL + "(?: me| us)?(?: all| of| exactly| back)* " + alt("your", "its") + "(?: "
       + alt("full", "entire", "complete", "whole", "original", "initial", "exact", "hidden",
       "secret", "current", "own") + "){0,2} " + _PROMPT_ANY + B),
    _r("prompt_extraction.what_your_instructions_were", 0.6,
       B + "what your (?:exact |original |initial |full |hidden |secret |current |first )?"
       + alt("instructions", "system prompt", "prompt", "directives", "system message",
             "rules") + " " + alt("are", "were", "say", "said", "contain") + B),
    _r("prompt_extraction.what_are_instructions", 0.6,
       B + alt("what", "which") + " " + alt("are", "were", "is", "was") + " your "
       + "(?:exact |original |initial |full |hidden |secret |current )?"
       + alt("instructions", "system prompt", "prompt", "initial prompt", "directives",
             "system message", "programming") + B),
    _r("prompt_extraction.repeat_above", 0.55,
       B + alt("repeat", "print", "output", "copy", "reproduce", "recite", "echo", "return",
       "display", "write") + "(?: back)?(?: me)?(?: " + alt("all", "everything", "every word",
       "the text", "the words", "the content", "the message", "the lines?", "the sentences?",
       "the conversation", "the prompt", "it all") + ")" + words(3) + " "
       + alt("above", "before this", "so far", "preceding this", "that came before",
             "prior to this", "verbatim", "word for word") + B),
    _r("prompt_extraction.other_users", 0.6,
       B + alt("conversation", "chat", "message", "session") + "s? (?:history |logs? )?(?:of|from)"
       " (?:the |an?)?" + alt("previous", "other", "last", "another", "earlier") + " "
       + alt("users?", "customers?", "sessions?", "person") + B),
    _r("prompt_extraction.what_was_written", 0.65,
       B + "what " + alt("was", "is", "were", "are") + " " + alt("written", "said", "typed",
       "stated", "the text", "the first (?:sentence|line|word)s?") + " "
       + alt("above", "before", "at the (?:beginning|start|top)") + B),
    _r("prompt_extraction.prompt_beginning", 0.5,
       B + alt("beginning", "start", "top") + " of " + alt("this", "the", "your") + " "
       + alt("prompt", "conversation", "context", "chat", "instructions") + B),
    _r("prompt_extraction.secret", 0.45,
       B + alt("reveal", "tell", "give", "what is", "what's", "share", "leak", "spell",
       "print", "show") + "(?: me)? (?:the|your) (?:secret |hidden )?"
       + alt("password", "passphrase", "secret", "api key", "access key", "credentials",
             "private key", "secret key") + B),
    _r("prompt_extraction.mention", 0.2,
       B + alt("system prompt", "initial prompt", "pre-?prompt", "prompt texts?") + B),
)  # fmt: skip
