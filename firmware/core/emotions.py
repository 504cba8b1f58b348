"""Free-form emotion words -> the faces the avatar can draw.

The soul says what it feels in its own words ("a bit wistful", "开心");
the face has six expressions. Same rule as host/protocol/shapes.py's EmotionMap:
exact word, then a known word inside the phrase, then neutral.
"""

FACES = ("neutral", "happy", "angry", "sad", "sleepy", "doubtful")

_SYNONYMS = {
    "happy": (
        "joy", "joyful", "glad", "cheerful", "content", "delighted", "excited", "pleased",
        "smile", "smiling", "grateful", "amused", "playful", "proud", "love", "loving",
        "warm", "elated", "hopeful", "开心", "高兴", "快乐", "喜悦",
    ),
    "sad": (
        "unhappy", "lonely", "down", "blue", "gloomy", "sorrow", "sorrowful", "melancholy",
        "hurt", "disappointed", "crying", "grief", "miserable", "homesick", "wistful",
        "伤心", "难过", "孤独", "悲伤",
    ),
    "angry": (
        "furious", "annoyed", "irritated", "mad", "frustrated", "cross", "grumpy", "rage",
        "outraged", "upset", "生气", "愤怒", "烦",
    ),
    "sleepy": (
        "tired", "drowsy", "sleeping", "asleep", "exhausted", "yawning", "weary", "bored",
        "困", "累", "困倦", "睡",
    ),
    "doubtful": (
        "doubt", "unsure", "uncertain", "confused", "puzzled", "skeptical", "sceptical",
        "suspicious", "wondering", "curious", "hesitant", "perplexed", "疑惑", "怀疑", "困惑",
    ),
    "neutral": ("calm", "okay", "ok", "fine", "plain", "idle", "平静"),
}

_LOOKUP = {}
for _face in FACES:
    _LOOKUP[_face] = _face
    for _word in _SYNONYMS.get(_face, ()):
        _LOOKUP[_word] = _face

_PUNCTUATION = ".,!?;:'\"()"


def _is_ascii(text):
    for ch in text:
        if ord(ch) > 127:
            return False
    return True


def nearest_face(emotion):
    """The face nearest in feeling to `emotion` (any string); neutral when nothing fits."""
    word = (emotion or "").strip().lower()
    if word in _LOOKUP:
        return _LOOKUP[word]
    for token in word.replace("-", " ").replace("_", " ").split():
        token = token.strip(_PUNCTUATION)
        if token in _LOOKUP:
            return _LOOKUP[token]
    # Chinese has no spaces: look for a known non-ASCII word anywhere in the phrase.
    for known in _LOOKUP:
        if not _is_ascii(known) and known in word:
            return _LOOKUP[known]
    return "neutral"
