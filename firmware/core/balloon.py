"""The speech balloon: text wrapped to the screen and scrolled when it does not fit."""

HOLD_MS = 1500  # each page of lines stays this long before scrolling by one line
LINGER_MS = 3000  # the balloon stays this long after speech ended and the last line was shown


# Iterating a MicroPython str makes each character a qstr, which is never freed: a Chinese-speaking
# robot lost heap for every distinct character it had ever said (1,120 bytes for 300 of them, and
# a few thousand are in daily use). So the text is walked as its UTF-8 bytes, and only whole
# lines are decoded back.


def _after(data, at):
    """Where the character that starts at `at` in UTF-8 `data` ends."""
    lead = data[at]
    return min(len(data), at + (1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4))


def _cells(data, at):
    """The cells the character at `at` takes: CJK and other wide glyphs (from U+2E80) two."""
    lead = data[at]
    if lead < 0xE0:
        return 1
    if lead >= 0xF0:
        return 2
    second = data[at + 1] if at + 1 < len(data) else 0
    return 2 if ((lead & 0x0F) << 12 | (second & 0x3F) << 6) >= 0x2E80 else 1


def _tokens(data):
    """(start, end, cells) of words, single spaces, and each wide glyph on its own (CJK text has
    no spaces to break at)."""
    word_at, cells, at = 0, 0, 0
    while at < len(data):
        after, width = _after(data, at), _cells(data, at)
        if data[at] == 0x20 or width == 2:
            if cells:
                yield word_at, at, cells
            yield at, after, width
            word_at, cells = after, 0
        else:
            cells += width
        at = after
    if cells:
        yield word_at, len(data), cells


def wrap(text, columns):
    """Lines of at most `columns` cells: breaks at spaces, splits words longer than a line."""
    lines = []
    for paragraph in text.replace("\r", "").encode("utf-8", "surrogatepass").split(b"\n"):
        line, used, space = b"", 0, False
        for start, end, size in _tokens(paragraph):
            if paragraph[start] == 0x20:
                space = bool(line)
                continue
            need = size + (1 if space else 0)
            if used + need <= columns:
                line, used = line + (b" " if space else b"") + paragraph[start:end], used + need
            elif size <= columns:
                lines.append(line)
                line, used = paragraph[start:end], size
            else:
                if space and used + 1 < columns:
                    line, used = line + b" ", used + 1
                at = start
                while at < end:  # hard split of a word longer than a line
                    after, width = _after(paragraph, at), _cells(paragraph, at)
                    if used + width > columns:
                        lines.append(line)
                        line, used = b"", 0
                    line, used = line + paragraph[at:after], used + width
                    at = after
            space = False
        lines.append(line)
    while lines and not lines[-1]:
        lines.pop()
    return [line.decode("utf-8", "ignore") for line in lines]


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
