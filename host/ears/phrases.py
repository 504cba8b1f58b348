"""What ears tells the soul, in the soul's language (a Chinese soul is told in Chinese, as its person speaks).

The `why` and `error` inside are the recogniser's or the body's own words: they stay as they came.
"""

TOLD = {
    "en": {
        "no_words": "someone spoke to me ({body} heard it) but I couldn't make out the words",
        "failed": "someone spoke to me ({body} heard it) but I couldn't make out the words: {why}",
        "unspoken": "I answered what someone said to {body}, but it could not speak: {error}",
    },
    "zh": {
        "no_words": "有人对我说话了（{body}听到了），但我没听清说的是什么",
        "failed": "有人对我说话了（{body}听到了），但我没听清：{why}",
        "unspoken": "我回答了有人对{body}说的话，但它没能说出来：{error}",
    },
}


def told(language: str, what: str, **parts) -> str:
    """The sentence `what` for a soul living in `language` (English for any language without its own)."""
    return TOLD.get(language, TOLD["en"])[what].format(**parts)
