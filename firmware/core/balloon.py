"""The speech balloon: text wrapped to the screen and scrolled when it does not fit."""

HOLD_MS = 1500  # each page of lines stays this long before scrolling by one line
LINGER_MS = 3000  # the balloon stays this long after speech ended and the last line was shown


def _width(ch):
    # CJK and other wide glyphs take two cells in the face's font.
    return 2 if ord(ch) >= 0x2E80 else 1


def _tokens(paragraph):
    """Words, single spaces, and each wide glyph on its own (CJK text has no spaces to break at)."""
    word = ""
    for ch in paragraph:
        if ch == " " or _width(ch) == 2:
            if word:
                yield word
                word = ""
            yield ch
        else:
            word += ch
    if word:
        yield word


def wrap(text, columns):
    """Lines of at most `columns` cells: breaks at spaces, splits words longer than a line."""
    lines = []
    for paragraph in text.replace("\r", "").split("\n"):
        line, used, space = "", 0, False
        for token in _tokens(paragraph):
            if token == " ":
                space = bool(line)
                continue
            size = 0
            for ch in token:
                size += _width(ch)
            need = size + (1 if space else 0)
            if used + need <= columns:
                line, used = line + (" " if space else "") + token, used + need
            elif size <= columns:
                lines.append(line)
                line, used = token, size
            else:
                if space and used + 1 < columns:
                    line, used = line + " ", used + 1
                for ch in token:  # hard split of a word longer than a line
                    if used + _width(ch) > columns:
                        lines.append(line)
                        line, used = "", 0
                    line, used = line + ch, used + _width(ch)
            space = False
        lines.append(line)
    while lines and not lines[-1]:
        lines.pop()
    return lines


class Balloon:
    def __init__(self, columns=24, rows=2):
        self.columns = columns
        self.rows = rows
        self.lines = []
        self.shown_at = 0
        self.hide_at = None  # None while speaking

    def show(self, text, now_ms):
        self.lines = wrap(text, self.columns)
        self.shown_at = now_ms
        self.hide_at = None

    def _scroll_ms(self):
        return max(0, len(self.lines) - self.rows) * HOLD_MS

    def done_speaking(self, now_ms):
        """Speech ended: finish scrolling to the last lines, linger, then hide."""
        self.hide_at = max(now_ms, self.shown_at + HOLD_MS + self._scroll_ms()) + LINGER_MS

    def clear(self):
        self.lines = []

    def visible(self, now_ms):
        """The rows to draw now (empty when the balloon is hidden)."""
        if not self.lines:
            return []
        if self.hide_at is not None and now_ms >= self.hide_at:
            self.lines = []
            return []
        steps = max(0, len(self.lines) - self.rows)
        offset = int(min(steps, max(0, now_ms - self.shown_at) // HOLD_MS))
        return self.lines[offset : offset + self.rows]
