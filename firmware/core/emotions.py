"""Free-form emotion words -> faces: the ONE word list, used by the robot and imported by the host.

The soul says what it feels in its own words ("a bit wistful", "开心"). Body
Protocol v1's reference faces are happy, sad, angry, sleepy and neutral; the
robot also draws doubtful. A body maps any word onto the faces it can show:
exact word, then a known word inside the phrase, then neutral. A word whose
face the body cannot show goes to the nearest face it can (NEAREST), so
"unsure" is doubtful on the robot and neutral on a body without that face.

Runs on MicroPython and CPython (no str.isascii, no casefold there).
"""

REFERENCE = ("happy", "sad", "angry", "sleepy", "neutral")
FACES = ("neutral", "happy", "angry", "sad", "sleepy", "doubtful")  # what the robot draws
FALLBACK = "neutral"
# A face a body lacks -> the face nearest in feeling that every body has.
NEAREST = {"doubtful": "neutral"}

WORDS = {
    "happy": (
        "joy",
        "joyful",
        "glad",
        "cheerful",
        "content",
        "delighted",
        "excited",
        "pleased",
        "smile",
        "smiling",
        "grateful",
        "amused",
        "playful",
        "proud",
        "love",
        "loving",
        "warm",
        "elated",
        "hopeful",
        "calm happy",
        "开心",
        "高兴",
        "快乐",
        "喜悦",
    ),
    "sad": (
        "unhappy",
        "lonely",
        "down",
        "blue",
        "gloomy",
        "sorrow",
        "sorrowful",
        "melancholy",
        "hurt",
        "disappointed",
        "crying",
        "grief",
        "miserable",
        "homesick",
        "wistful",
        "伤心",
        "难过",
        "孤独",
        "悲伤",
    ),
    "angry": (
        "furious",
        "annoyed",
        "irritated",
        "mad",
        "frustrated",
        "cross",
        "grumpy",
        "rage",
        "outraged",
        "upset",
        "生气",
        "愤怒",
        "烦",
    ),
    "sleepy": (
        "tired",
        "drowsy",
        "sleeping",
        "asleep",
        "exhausted",
        "yawning",
        "weary",
        "bored",
        "困",
        "累",
        "困倦",
        "睡",
    ),
    "doubtful": (
        "doubt",
        "unsure",
        "uncertain",
        "confused",
        "puzzled",
        "skeptical",
        "sceptical",
        "suspicious",
        "wondering",
        "curious",
        "hesitant",
        "perplexed",
        "疑惑",
        "怀疑",
        "困惑",
        "thinking",
        "pondering",
        "思考",  # the flock's busy face while its crows fly
    ),
    "neutral": ("calm", "okay", "ok", "fine", "plain", "idle", "平静"),
}

_PUNCTUATION = ".,!?;:'\"()"


def _is_ascii(text):
    # Not a walk over its characters: on MicroPython that interns each one, for good (core/balloon.py).
    return len(text.encode("utf-8", "surrogatepass")) == len(text)


def table(faces, words=None, fallback=FALLBACK):
    """word -> face for a body showing `faces`; `words` (face -> words) defaults to WORDS.

    A face not in `faces` lends its words to NEAREST[face] (or `fallback`).
    """
    words = WORDS if words is None else words
    lookup = {}
    for face in words:
        shown = face if face in faces else NEAREST.get(face, fallback)
        if shown not in faces:
            shown = fallback
        for word in words[face]:
            lower = word.lower()  # a new string each time on MicroPython: kept only where it differs
            lookup[word if lower == word else lower] = shown
    for face in faces:
        lookup[face] = face
    return lookup


def match(lookup, emotion, fallback=FALLBACK):
    """The face `lookup` (from table()) gives `emotion` (any string); `fallback` when nothing fits."""
    word = (emotion or "").strip().lower()
    if word in lookup:
        return lookup[word]
    # "very happy", "a bit tired", "happy!": look for a known word inside the phrase.
    for token in word.replace("-", " ").replace("_", " ").split():
        token = token.strip(_PUNCTUATION)
        if token in lookup:
            return lookup[token]
    # Chinese has no spaces: look for a known non-ASCII word anywhere in the phrase, the longest
    # first ("困惑" is confused, "困" sleepy), so the answer never hangs on a dict's order.
    best = None
    for known in lookup:
        if not _is_ascii(known) and known in word:
            if best is None or len(known) > len(best) or (len(known) == len(best) and known < best):
                best = known
    return lookup[best] if best is not None else fallback


_ROBOT = table(FACES)


def nearest_face(emotion):
    """The robot's face nearest in feeling to `emotion`."""
    return match(_ROBOT, emotion)


def all_words():
    """Every word this module knows, faces included: what the agreement test walks."""
    seen = list(FACES)
    for face in WORDS:
        for word in WORDS[face]:
            seen.append(word)
    return seen
