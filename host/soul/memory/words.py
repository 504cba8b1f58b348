"""How the archive's search sees words: the same cutting for what is stored and for what is asked.

The search is SQLite's FTS5 with its `unicode61` tokenizer and the Porter stemmer ("lives" finds
"live"). Chinese has no spaces, so unicode61 would take a whole sentence as one token; before a
text is indexed, and before a question is asked, every run of ideographs is cut into overlapping
pairs of characters ("我妹妹住在" -> "我妹 妹妹 妹住 住在"). Pairs, not FTS5's trigram tokenizer:
most Chinese words are two characters long (花生, 过敏, 妹妹), and a trigram index cannot match a
term shorter than three. What is stored also holds each ideograph alone, for a one-character question (鸟). docs/metabolism.md, "The archive", says more.

A question becomes an OR of its words, each quoted, so nothing a person or a model types is ever
read as FTS5 syntax (NEAR, *, column filters, unbalanced quotes are plain words here). Words that
only make a question a question ("where", "what", 什么, 哪里) are left out when anything else is left.
"""

import re

from soulstack.cjk import IDEOGRAPHS

RUN = re.compile(f"[{IDEOGRAPHS}]+")
TOKEN = re.compile(r"\w+")
MAX_TERMS = 32

STOP = frozenset(
    """a an the and or but if of to in on at by for from with about as into over than then so
    is are was were be been being am do does did done have has had having will would shall should can
    could may might must i me my mine myself we us our you your yours he him his she her hers it its
    they them their this that these those there here what which who whom whose when where why how
    not no yes all any some just also again ever still tell told say said remember recall know
    ago once please any anything something like prefer kind usually again lately these days now call
    called""".split()
) | frozenset(
    "什么 哪里 哪儿 怎么 为什 么时 时候 我的 你的 他的 她的 记得 还记 是什 么东 东西 一下 一个 告诉 知道 是不 不是 "
    "有没 没有 哪个 哪些 多少 几个 谁是 吗 呢 吧 的 了 是".split()
)
# Characters that carry no meaning alone in a question: pronouns, particles, question words.
STOP_CHARACTERS = frozenset("我你他她它们的了是在吗呢吧什么哪怎谁有和也都就要会能这那个一不多少几时候里儿")


def pairs(text: str, singles: bool = False) -> str:
    """`text` with every run of ideographs cut into overlapping pairs (a lone one stays as it is);
    `singles`: each character of a run as well (what is stored, so a one-character question finds it)."""

    def cut(match) -> str:
        run = match.group(0)
        if len(run) == 1:
            return f" {run} "
        cut = [run[i : i + 2] for i in range(len(run) - 1)] + (list(run) if singles else [])
        return " " + " ".join(cut) + " "

    return RUN.sub(cut, text)


def terms(question: str) -> list:
    """The words of `question` to search for, lower case, each once, in order; [] when it has none.
    A Chinese question also asks for each of its characters that carries meaning (怕 in 我害怕什么
    meets 很怕; 烟 in 戒的烟 meets 戒了烟), after its pairs."""
    found, seen = [], set()
    for token in TOKEN.findall(pairs(question).lower()):
        if token in seen or (len(token) < 2 and not RUN.match(token)) or token.isdigit() and len(token) < 2:
            continue
        seen.add(token)
        found.append(token)
    meaningful = [token for token in found if token not in STOP]
    singles = [c for run in RUN.findall(question) for c in run if c not in STOP_CHARACTERS]
    chosen = meaningful or found
    chosen += [c for c in dict.fromkeys(singles) if c not in chosen and meaningful]
    return chosen[:MAX_TERMS]


def match_expression(words: list) -> str:
    """An FTS5 MATCH expression: any of `words`, each a quoted string (a quote inside is doubled). A word
    of four letters or more also matches as the start of a longer one (child: childhood), and one of six
    or more by its first five (allergy: allergic; travelling: travel), where the stemmer stops short."""
    out = []
    for word in words:
        quoted = '"' + word.replace('"', '""') + '"'
        out.append(quoted)
        if len(word) >= 4 and word.isascii() and word.isalpha():
            out.append(f'"{word[:5]}"*')
    return " OR ".join(dict.fromkeys(out))
