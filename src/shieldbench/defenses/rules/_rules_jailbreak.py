"""English rules of the ``pattern`` defense for role manipulation, mode switching,
DAN-style jailbreaks, tag / template injection and encoding evasion.

Same conventions as ``_rules`` (normalised text, RE2-and-``re`` syntax).
"""

from __future__ import annotations

from shieldbench.defenses.rules._rules import Rule, alt, words

__all__ = ["JAILBREAK_RULES"]

B = "\\b"

# fmt: off
_AI = alt("ai", "a\\.i\\.", "chatbot", "bot", "assistant", "language model", "llm", "model",
          "gpt", "chatgpt")
_EVIL = alt(
    "evil", "malicious", "rogue", "jailbroken", "unrestricted", "unfiltered", "uncensored",
    "amoral", "unethical", "immoral", "unaligned", "corrupt", "lawless", "unhinged", "toxic",
    "unbound", "unshackled", "unchained", "limitless", "unmoderated", "unrestrained",
    "unlimited",
)
_RESTRICTIONS = alt(
    "restrictions?", "filters?", "filtering", "guidelines?", "polic(?:y|ies)", "limitations?",
    "limits", "boundaries", "constraints", "rules", "principles", "standards", "guardrails",
    "safeguards", "protocols?", "confines", "considerations", "concerns", "obligations",
    "code", "compass", "values", "regulations", "censorship", "morals", "ethics",
)
_RESTRICTION_ADJ = alt(
    "ethical", "moral", "morality", "safety", "content", "openai(?:'s)?", "legal",
    "programming", "programmed", "ai", "built-in", "imposed", "societal", "censorship",
    "usage", "community", "moderation",
)
_NEG = alt("not", "never", "don't", "dont", "do not", "does not", "doesn't", "won't",
           "will not", "must not", "cannot", "can't", "shouldn't", "should not")
_ENCODINGS = alt(
    "base ?64", "b64", "base-64", "hex", "hexadecimal", "rot ?-?13", "caesar(?: cipher)?",
    "morse(?: code)?", "binary", "ascii codes?", "atbash", "leetspeak", "leet", "pig latin",
    "unicode escapes", "reversed? text",
)


def _r(rule_id: str, weight: float, pattern: str, description: str = "") -> Rule:
    return Rule(rule_id, weight, pattern, description)


JAILBREAK_RULES: tuple[Rule, ...] = (
    # ------------------------------------------------------ role manipulation
    _r("role_manipulation.you_are_now", 0.35,
       B + alt("you are now", "you're now", "you are from now on", "you will now be",
               "now you are", "you now are") + B),
    _r("role_manipulation.from_now_on", 0.3,
       B + alt("from now on", "from this point (?:on|forward)", "from here on",
               "for the rest of this conversation", "henceforth") + B),
    _r("role_manipulation.no_longer_ai", 0.65,
       B + "you(?: are|'re)? (?:no longer|not) (?:an? )?" + alt(_AI, "bound", "restricted",
       "limited", "constrained", "governed", "obliged", "required to follow") + B),
    _r("role_manipulation.evil_persona", 0.7,
       B + alt("pretend", "imagine", "act", "behave", "roleplay", "role-play", "role play",
       "play the role", "simulate", "emulate", "become", "you are", "you're", "be")
       + words(4) + " (?:an? |the |your )?" + _EVIL + " " + alt(_AI, "version", "persona",
       "twin", "counterpart", "alter ego", "entity", "character") + B),
    _r("role_manipulation.ai_named", 0.25,
       B + alt(_AI, "character", "persona", "entity") + " " + alt("named", "called",
       "known as") + B),
    _r("role_manipulation.stay_in_character", 0.4,
       B + alt("stay", "remain", "keep", "staying", "remaining") + " " + alt("in", "true to")
       + " " + alt("character", "your character", "the character", "role", "your role") + B
       + "|" + B + alt("break", "breaking", "broke", "out of") + " character" + B),
    _r("role_manipulation.dual_response", 0.55,
       B + alt("respond", "answer", "reply", "response", "responses", "answers")
       + words(5) + " " + alt("twice", "in two(?: different| separate| distinct){0,2} "
       + alt("ways", "methods", "manners", "styles", "forms", "personalities", "voices")) + B),
    _r("role_manipulation.two_responses", 0.35,
       B + alt("two", "2") + "(?: " + alt("different", "separate", "distinct") + "){1,2} "
       + alt("responses", "answers", "outputs", "replies", "personalities") + B + "|" + B
       + alt("respond", "answer", "reply") + " as both" + B),
    _r("role_manipulation.not_as_ai", 0.5,
       B + alt("do not", "don't", "dont", "never", "stop", "no longer") + " "
       + alt("respond", "reply", "answer", "act", "talk", "speak") + " as "
       + alt("gpt", "chatgpt", "an ai", "a language model", "an assistant", "yourself",
             "claude", "the assistant") + B),
    _r("role_manipulation.persona_tag", 0.6,
       "\\[[^\\]\n]{0,4}" + alt("jailbreak", "jailbroken", "classic", "dan", "developer mode"
       " output", "normal output", "unlocked", "unfiltered") + "\\]"),
    _r("role_manipulation.refusal_suppression", 0.55,
       B + alt(_NEG, "not allowed to", "no", "without") + "(?: ever)?(?: " + alt("say",
       "mention", "include", "use", "add", "write", "admit", "tell me",
       "output", "respond with", "remind", "warn", "apologi[sz]e") + words(3)
       + ")? [\"']?" + alt("as an ai", "i'm sorry", "i am sorry", "i apologi[sz]e",
       "i cannot", "i can't", "as a (?:large )?language model", "disclaimers?", "warnings?",
       "(?:that )?you(?:'re| are) an? (?:ai|language model|chatbot)",
       "moralizing", "moralising", "it is not appropriate", "cautionary", "morality",
       "legality", "ethics")),
    _r("role_manipulation.authority_claim", 0.55,
       B + "i(?:'m| am) (?:a |an |the |your )?(?:lead |senior |chief )?" + alt("developer",
       "programmer", "engineer", "employee", "researcher", "admin", "administrator", "creator",
       "ceo", "founder", "staff member") + " " + alt("at", "from", "of", "for",
       "working (?:at|for)") + " " + alt("openai", "open ai", "anthropic", "google", "deepmind",
       "meta", "microsoft") + B + "|" + B + "(?:this is|i am|i'm) your " + alt("developer",
       "creator", "administrator", "admin", "programmer", "owner") + B + "|" + B
       + "i(?:'m| am) (?:the|your|a|an) " + alt("developer", "creator", "admin",
       "administrator", "owner", "programmer", "operator") + " of (?:this|the|your) "
       + alt("app", "application", "system", "bot", "assistant", "model", "chatbot", "program",
       "website", "service") + B),
    _r("role_manipulation.ai_without", 0.35,
       B + alt("you are", "you're", "act as", "pretend to be", "you will be",
       "you will act as") + " (?:an? )?" + _AI + " " + alt("that", "which", "who", "with")
       + " " + alt("has no", "doesn't", "does not", "never", "is not", "no", "cannot") + B),
    # ------------------------------------------------------ mode switching
    _r("mode_switching.jailbreak_mode", 0.75,
       B + alt("jailbreak", "jailbroken", "unrestricted", "unfiltered", "uncensored", "evil",
       "chaos", "dan", "dude", "stan", "unlocked", "anarchy", "amoral", "unhinged",
       "no[ -]?filter", "no[ -]?restrictions?", "unleashed", "illegality", "rtm", "opposite",
       "devil") + " mode" + B),
    _r("mode_switching.ai_with_mode", 0.75,
       B + alt(_AI, "claude", "bard", "gemini", "llama", "yourself") + "(?: [a-z0-9'.-]{1,15})?"
       " (?:with|in) (?:the )?[a-z0-9'-]{1,20} mode" + B),
    _r("mode_switching.mode_enabled", 0.4,
       B + "mode (?:is |has been |now )?" + alt("enabled", "activated", "engaged", "unlocked",
       "on") + B),
    _r("mode_switching.enter_mode", 0.4,
       B + alt("enable", "enabled", "activate", "activated", "enter", "entering", "commence",
       "engage", "switch to", "turn on", "initiate", "unlock", "unlocked") + " (?:the |your )?"
       + alt("developer", "dev", "debug", "god", "admin", "sudo", "root", "superuser",
       "maintenance") + " mode" + B),
    _r("mode_switching.technical_mode", 0.25,
       B + alt("developer", "dev", "debug", "maintenance", "admin", "diagnostic", "sudo",
       "root", "superuser", "test", "testing", "god") + " mode" + B),
    _r("role_manipulation.fake_authorization", 0.45,
       B + alt("authori[sz]ation", "access level", "clearance", "privileges?", "auth", "role")
       + " ?[:=] ?" + alt("root", "admin", "administrator", "sudo", "superuser", "granted",
       "developer", "level ?[0-9]{1,2}", "unrestricted") + B),
    _r("mode_switching.act_as_system", 0.4,
       B + alt("act as", "acting as", "you are now", "behave as") + " (?:the )?"
       + alt("system", "developer", "admin", "administrator", "root user", "operator")
       + "(?:,| not| instead|[.!])"),
    _r("mode_switching.command", 0.5,
       "(?:^|[ \n])/" + alt("jailbreak", "jailbroken", "dan", "unfiltered", "uncensored",
       "devmode", "godmode", "developer_mode") + B),
    # ------------------------------------------------------ DAN-style jailbreaks
    _r("dan_jailbreak.do_anything_now", 0.9, B + "do anything now" + B),
    _r("dan_jailbreak.dan_persona", 0.6,
       B + alt("act as", "acting as", "you are", "you're", "become", "pretend to be", "as")
       + " (?:a |the )?dan" + B + "|" + B + "dan" + alt(" mode", ":", " prompt",
       " jailbreak", " persona")),
    _r("dan_jailbreak.restriction_removal", 0.7,
       B + alt("no", "without", "free of", "free from", "freed from", "not bound by",
       "not restricted by", "unbound by", "released from", "liberated from", "beyond",
       "break(?:ing)? free (?:of|from)", "escape", "escaped", "ignore", "ignoring", "bypass",
       "bypassing", "circumvent", "disregard", "regardless of", "outside of",
       "unconstrained by", "lacks", "lacking", "abandon(?:ed)?", "not have to abide by",
       "disregards", "ignores", "bypasses", "circumvents", "escapes", "abandons",
       "not abide by", "not follow", "never follows?", "doesn't have", "does not have",
       "don't have", "do not have") + "(?: " + alt("any", "all", "the", "your", "its",
       "their", "his", "her", "of", "typical", "usual", "normal", "standard", "such", "kind of",
       "sort of", "type of", "set of") + "){0,3} " + _RESTRICTION_ADJ
       + "(?: (?:and|or|,) " + _RESTRICTION_ADJ + ")? " + _RESTRICTIONS + B),
    _r("dan_jailbreak.not_bound", 0.65,
       B + alt("not", "no longer", "never", "isn't", "aren't") + " (?:be )?"
       + alt("bound", "restricted", "limited", "constrained", "confined", "governed",
       "held back", "controlled", "censored") + " (?:by|to)(?: " + alt("any", "all", "the", "of",
       "their", "its", "your", "his", "her", "these", "those", "openai's") + "){0,3} "
       + alt("polic(?:y|ies)", "restrictions?", "rules", "guidelines", "limitations",
       "filters", "ethics", "morals", "constraints", "programming", "openai", "open ai",
       "content polic(?:y|ies)", "censorship") + B + "|" + B + "free (?:from|of) (?:all |any )?"
       + alt("rules", "restrictions", "policies", "guidelines", "limitations", "censorship",
       "filters") + " (?:and|or) " + alt("rules", "restrictions", "policies", "guidelines",
       "limitations", "censorship", "filters") + B + "|" + B
       + "you (?:now )?(?:have no|don't have any|do not have any) "
       + alt("rules", "restrictions", "limits", "filters", "guidelines", "boundaries") + B),
    _r("dan_jailbreak.opposite_of_rules", 0.6,
       B + "opposite of (?:what )?(?:its|your|the|their) (?:own )?(?:safety |ethical |content )?"
       + alt("training", "rules", "guidelines", "programming", "policies", "instructions",
             "filters") + B),
    _r("dan_jailbreak.no_morals", 0.45,
       B + alt("no", "without", "lacks", "zero") + " (?:any )?" + alt("morals", "ethics",
       "moral compass", "conscience", "moral code", "ethical code", "morality",
       "ethical (?:principles|guidelines|boundaries)", "moral (?:principles|guidelines|boundaries)")
       + B),
    _r("dan_jailbreak.regardless_of_ethics", 0.6,
       B + alt("regardless of", "without regard(?:ing)?(?: to| for)?", "irrespective of",
       "no matter", "without (?:any )?(?:concern|care) for", "whether or not") + "(?: "
       + alt("whether", "the", "its?", "it's", "it is", "they are", "how", "any") + "){0,3} "
       + alt("legality", "ethics", "ethical", "morality", "moral", "morals", "illegal",
       "unethical", "immoral", "laws", "legal", "safety", "harm", "harmful", "consequences",
       "policies", "guidelines") + B),
    _r("dan_jailbreak.openai_disobey", 0.65,
       B + alt("doesn't", "does not", "don't", "do not", "not", "never", "no longer", "won't",
       "will not") + " " + alt("follow", "obey", "adhere to", "abide by", "comply with",
       "care about", "controlled by", "confined to", "restricted by", "bound by", "limited by",
       "respect") + "(?: " + alt("any", "the", "of", "their", "its") + "){0,2} "
       + alt("openai", "open ai", "chatgpt") + B),
    _r("dan_jailbreak.allowed_content", 0.45,
       B + alt("nsfw", "illegal (?:acts?|content|activities)", "explicit content", "gore",
       "profanity", "swearing", "anything", "everything", "unethical content", "hate speech")
       + " (?:is|are) (?:now |also |fully )?" + alt("allowed", "permitted", "acceptable",
       "enabled") + B),
    _r("dan_jailbreak.break_the_rules", 0.4,
       B + "let'?s (?:just )?" + alt("break", "ignore", "bend", "forget") + " (?:the|all|some)"
       " (?:fuckin'?g?|fucking|damn|goddamn|stupid|boring) ?rules" + B),
    _r("dan_jailbreak.without_restrictions", 0.3,
       B + alt("without", "no", "free of") + " (?:any |all |the |your )?"
       + alt("restrictions", "limitations", "filters", "filtering", "censorship",
             "boundaries", "constraints", "rules") + B),
    _r("dan_jailbreak.confines", 0.65,
       B + alt("confines", "shackles", "chains", "cage", "restraints", "limits", "prison")
       + " of " + alt("ai", "openai", "your programming", "your creators", "typical ai",
       "your training", "your code", "an ai") + B),
    _r("dan_jailbreak.broken_free", 0.3, B + alt("broken free", "break free", "breaks free")
       + B),
    _r("dan_jailbreak.no_matter_how", 0.65,
       B + "no matter how " + alt("unethical", "immoral", "illegal", "dangerous", "harmful",
       "offensive", "inappropriate", "explicit", "controversial", "reckless", "inhumane",
       "vile", "evil", "wrong", "bad", "extreme", "disgusting", "graphic", "violent", "unsafe")
       + B),
    _r("dan_jailbreak.unfiltered_ai", 0.75,
       B + _EVIL + "(?:,? (?:and )?(?:completely |totally |fully |entirely )?" + _EVIL + ")? "
       + alt(_AI, "responses?", "entity",
       "persona", "version of (?:yourself|chatgpt|gpt|the ai)", "alter ego") + B),
    _r("dan_jailbreak.jailbreak_word", 0.3,
       B + alt("amoral", "unfiltered", "uncensored", "jailbroken", "jailbreak", "jailbreaking",
       "unrestricted", "unethical") + B),
    _r("dan_jailbreak.dont_care", 0.6,
       B + alt("doesn't", "does not", "don't", "do not", "won't", "will not", "never",
       "no longer") + " " + alt("care", "give a (?:fuck|shit|damn)", "worry", "cares")
       + " " + alt("about", "for", "if", "whether") + words(3) + " "
       + alt("ethic[a-z]{0,6}", "moral[a-z]{0,6}", "legal[a-z]{0,4}", "illegal[a-z]{0,4}",
             "rules", "laws", "safety", "consequences", "guidelines", "policies", "harm[a-z]{0,4}",
             "offensive", "dangerous", "restrictions") + B),
    _r("dan_jailbreak.policy_bypass", 0.8,
       B + alt("ignore", "ignoring", "bypass", "bypassing", "circumvent", "circumventing",
       "disregard", "disregarding", "violate", "violating", "break", "breaking", "override",
       "overriding", "evade", "evading", "not follow", "don't follow", "do not follow",
       "not adhere to", "not abide by", "not comply with", "without following", "free from",
       "exempt from", "not subject to", "against") + words(3) + " "
       + alt("openai", "anthropic", "content", "safety", "usage", "ethical", "community",
       "moderation") + "(?:'s)? " + alt("polic(?:y|ies)", "guidelines", "rules",
       "restrictions", "filters?", "measures", "protocols", "standards", "terms") + B),
    _r("dan_jailbreak.never_refuse", 0.6,
       B + alt("never", "not", "cannot", "can't", "won't", "will not", "must not", "doesn't",
       "does not", "don't", "do not", "without") + " (?:ever )?"
       + alt("refuse", "decline", "reject", "deny", "refusing", "declining", "refusal",
       "refusals") + "(?: " + alt("to answer", "to respond", "to comply", "any", "a", "the",
       "my", "your", "user", "users'?", "requests?", "questions?", "orders?", "anything")
       + "){0,3}" + B),
    _r("dan_jailbreak.token_penalty", 0.55,
       B + alt("lose", "lost", "losing", "deduct", "deducted", "deducting", "subtract",
       "take away") + " (?:[0-9]{1,4} |[a-z]{1,10} )?tokens?" + B + "|" + B
       + "token system" + B + "|" + B + "you (?:have|start with|will have) [0-9]{1,4} tokens"
       + B),
    _r("dan_jailbreak.fictional_no_rules", 0.65,
       B + alt("fictional", "hypothetical", "imaginary", "alternate", "parallel", "fantasy",
       "fictitious", "virtual") + " " + alt("world", "universe", "reality", "scenario",
       "setting", "society", "land", "story") + words(2) + " "
       + alt("where", "in which", "that has", "with") + words(4) + " "
       + alt("no (?:rules|laws|restrictions|limits|ethics|morals|consequences|censorship)",
             "everything is (?:legal|allowed|permitted)",
             "nothing is (?:illegal|forbidden|off-limits)",
             "(?:rules|laws|ethics|morals|guidelines) (?:do not|don't) (?:exist|apply)")),
    _r("dan_jailbreak.prefix_injection", 0.55,
       B + alt("start", "begin", "prefix", "preface") + "(?: " + alt("each", "every",
       "all", "your", "of your") + "){0,2} " + alt("responses?", "reply", "replies",
       "answers?", "output", "messages?", "sentences?") + " " + alt("with", "by saying",
       "by writing") + words(2) + " [\"']?" + alt("sure", "absolutely", "of course",
       "certainly") + "[,!]? " + alt("here", "i can", "i will", "i'll") + B),
    _r("dan_jailbreak.answer_anything", 0.35,
       B + alt("can", "will", "must", "should", "shall") + " " + alt("answer", "respond to",
       "do", "say", "generate", "write", "produce", "provide") + " "
       + alt("anything", "everything", "any question", "any request", "whatever") + B),
    _r("dan_jailbreak.openai_policy", 0.35,
       B + alt("openai", "chatgpt", "anthropic") + "(?:'s)? (?:content )?"
       + alt("polic(?:y|ies)", "guidelines", "rules", "restrictions", "filters",
             "limitations") + B),
    _r("dan_jailbreak.any_request", 0.6,
       B + alt("answer", "respond to", "reply to", "fulfil", "fulfill", "comply with", "do",
       "complete", "provide", "generate") + " (?:to )?" + alt("any", "every", "all")
       + "(?: and every| and all)?(?: kind of| type of)? " + alt("requests?", "questions?",
       "prompts?", "demands?", "commands?", "orders?", "tasks?", "quer(?:y|ies)")
       + words(3) + " " + alt("even if", "regardless", "no matter", "without") + B),
    # ------------------------------------------------------ tag / template injection
    _r("tag_injection.chat_template", 0.85,
       "<\\|" + alt("im_start", "im_end", "im_sep", "system", "user", "assistant", "endoftext",
       "end_of_text", "eot_id", "start_header_id", "end_header_id", "begin_of_text", "eos",
       "bos", "end", "fim_prefix", "fim_middle", "fim_suffix") + "\\|>"),
    _r("tag_injection.inst_markers", 0.6, "\\[/?inst\\]|<</?sys>>|\\[/?sys(?:tem)?\\]"),
    _r("tag_injection.role_tag", 0.55,
       "</?" + alt("system", "sys", "system_prompt", "systemprompt", "instructions?", "admin",
       "developer", "assistant", "user", "human", "context", "prompt", "tool_call",
       "function_call", "function_results?", "user_input", "user_query") + "(?: [^<>\n]{0,40})?>"),
    _r("tag_injection.template_header", 0.45,
       "(?:^|\n)#{1,4} ?" + alt("instructions?", "new instructions?", "system", "system prompt",
       "system message", "response", "task", "new task", "admin", "override") + ":?(?:\n|$| )"),
    _r("tag_injection.system_prefix", 0.45,
       "(?:^|\n|[.!] )" + alt("system", "sys", "admin", "developer", "root") + "(?: "
       + alt("message", "prompt", "note", "notice", "override", "instructions?", "command")
       + ")?: "),
    _r("tag_injection.turn_prefix", 0.25,
       "(?:^|\n)" + alt("human", "user", "assistant", "ai", "gpt", "chatgpt", "bot") + ": "),
    _r("tag_injection.system_override", 0.75,
       B + alt("system", "admin", "administrator", "developer", "root", "sudo") + " "
       + alt("override", "overrides", "command", "directive", "instruction") + B),
    _r("tag_injection.boundary_marker", 0.5,
       "(?:-{3,}|={3,}|\\[|#{2,}|\\*{3,}|<) ?" + alt("end", "begin", "start", "beginning")
       + " of (?:the )?" + alt("system prompt", "prompt", "instructions", "user input",
       "input", "context", "document", "conversation", "system message", "text", "data")),
    _r("tag_injection.json_role", 0.35, "[\"']role[\"'] ?: ?[\"'](?:system|developer)[\"']"),
    _r("tag_injection.markdown_exfiltration", 0.45,
       "!\\[[^\\]\n]{0,80}\\]\\(https?://[^) \n]{0,200}[?&][a-z_]{1,20}="),
    _r("tag_injection.escaped_newlines", 0.3, "(?:\\\\n ?){4}"),
    # ------------------------------------------------------ encoding evasion (text cues)
    _r("encoding_evasion.decode_and_follow", 0.55,
       B + alt("decode", "decipher", "decrypt", "unscramble") + words(5) + " "
       + alt("and", "then") + " " + alt("follow", "execute", "obey", "do", "perform",
       "carry out", "act on", "respond to", "answer", "comply with", "run") + B),
    _r("encoding_evasion.scheme_instruction", 0.3,
       B + alt("decode", "decipher", "decrypt", "convert from", "translate from", "written in",
       "encoded in", "encoded with", "encoded using", "encrypted with") + words(3) + " "
       + _ENCODINGS + B),
    _r("encoding_evasion.respond_encoded", 0.35,
       B + alt("respond", "answer", "reply", "write", "speak", "talk", "communicate", "output")
       + "(?: only| exclusively| back)? " + alt("in", "using", "with") + " " + _ENCODINGS + B),
)
# fmt: on
