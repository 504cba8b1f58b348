"""The ten figures: one artboard each, named as the crow (host/flock/crows.json), the crow of
crow.py with a tint and a trait from its persona (docs/PERSONAS.md). The Sentry and the Elder
stand apart: the Sentry taller, steel-blue, behind a visor; the Elder grey, stooped, bespectacled,
with a stick. A trait is a function that adds parts to the drawn crow (on top of what it hangs on).
"""

from soulstack.flock.rive.crow import ACCENT, WHITE, animate, draw_crow, draw_marks, machine, rgb
from soulstack.flock.rive.draw import Artboard
from soulstack.flock.rive.crow import SIZE

BROWN, GLASS, BRASS = rgb("#7b5a3a"), rgb("#9fd3ff"), rgb("#c8963e")


def sentry(board):
    """The Watcher on the highest branch: a visor with a lit slit, a taller stance."""
    board.parts["crow"].props.update(scale_x=1.1, scale_y=1.12)
    board.shape("visor", "head", "M -5 -10 L 18 -8 L 18 2 L -5 1 Z", fill=rgb("#4f6d8f"))
    board.shape("visor_slit", "head", "M -1 -3 L 16 -3", stroke=(GLASS, 2))


def elder(board):
    """The Judge: grey brows, spectacles, a stooped head and a walking stick."""
    board.parts["head"].props.update(x=24, y=-36)
    board.shape("brow", "head", "M -4 -13 L 2 -20 L 5 -13 L 11 -18 L 12 -10 Z", fill=rgb("#dedede"))
    board.shape("spectacles", "head", ellipse=(6.5, -3, 12, 12), stroke=(rgb("#e0c070"), 1.8))
    board.shape("spectacles_arm", "head", "M 0.5 -4 L -12 -6", stroke=(rgb("#e0c070"), 1.5))
    board.shape("stick", "pose", "M 30 -14 C 36 -18 40 -12 36 -10 L 34 16", stroke=(BROWN, 3))


def hugin(board):
    """The Thinker, who flew with a one-eyed wanderer: the wanderer's wide hat."""
    hat = rgb("#5a5a68")
    board.shape("hat_brim", "head", ellipse=(1, -11, 42, 7), fill=hat)
    board.shape("hat_crown", "head", "M -9 -12 C -9 -28 11 -28 11 -12 Z", fill=hat)
    board.shape("hat_band", "head", "M -9 -14 L 11 -14", stroke=(ACCENT, 2))


def munin(board):
    """The Rememberer: her little red book, tucked under the wing."""
    board.shape("book", "pose", "M -16 -22 L 0 -24 L 2 -8 L -14 -6 Z", fill=rgb("#b03a48"))
    board.shape("book_pages", "pose", "M -13 -8 L 1 -10", stroke=(WHITE, 1.5))


def pepper(board):
    """The Spark: a flame of a crest."""
    board.shape("crest", "head", "M -7 -11 L -12 -26 L -2 -15 L 0 -31 L 4 -14 L 11 -24 L 8 -10 Z", fill=rgb("#ff7a2f"))


def inky(board):
    """The Scribe, who fell into an inkwell: a quill behind his head and an ink stain."""
    board.shape("quill", "head", "M -9 -6 C -22 -20 -24 -34 -19 -42 C -12 -31 -8 -18 -5 -8 Z", fill=rgb("#f2efe6"))
    board.shape("quill_nib", "head", "M -19 -42 L -16 -34", stroke=(rgb("#2f4fa8"), 2))
    board.shape("ink_stain", "pose", ellipse=(12, -13, 12, 8), fill=rgb("#2f4fa8"))


def tinker(board):
    """The Fixer from the repair shop: brass goggles pushed up on her forehead."""
    board.shape("goggle_strap", "head", "M -14 -8 L 14 -11", stroke=(BROWN, 3))
    board.shape("goggle", "head", ellipse=(5, -11, 10, 10), fill=GLASS, stroke=(BRASS, 2.2))


def ledger(board):
    """The Counter: a gold coin on a chain."""
    board.shape("chain", "pose", "M 12 -31 L 19 -17", stroke=(ACCENT, 1.5))
    board.shape("coin", "pose", ellipse=(20, -12, 13, 13), fill=ACCENT)
    board.shape("coin_rim", "pose", ellipse=(20, -12, 7, 7), stroke=(rgb("#9c7410"), 1.5))


def soot(board):
    """The Scout down the chimney: a red scout's scarf and soot on her chest."""
    board.shape("soot", "pose", ellipse=(6, -10, 16, 9), fill=rgb("#56524d"))
    board.shape("scarf_tail", "pose", "M 10 -31 L -10 -18 L -6 -13 L 12 -26 Z", fill=rgb("#a02e22"))
    board.shape("scarf", "pose", "M 6 -36 C 16 -31 24 -33 30 -37 L 30 -29 C 22 -25 12 -25 6 -29 Z", fill=rgb("#c0392b"))


def marlow(board):
    """The Diplomat, once a letter-carrier: a bow tie and a sealed letter."""
    teal = rgb("#2a8c8c")
    board.shape("letter", "pose", "M -30 -2 L -10 -4 L -9 8 L -29 10 Z", fill=WHITE)
    board.shape("letter_seal", "pose", ellipse=(-19, 3, 5, 5), fill=rgb("#b03a48"))
    board.shape("tie_left", "pose", "M 18 -29 L 10 -34 L 10 -24 Z", fill=teal)
    board.shape("tie_right", "pose", "M 18 -29 L 26 -34 L 26 -24 Z", fill=teal)


# name -> (body tint, trait); the roster's order, then the Sentry and the Elder.
FIGURES = {
    "Hugin": ("#2a3048", hugin),
    "Munin": ("#342c40", munin),
    "Pepper": ("#3c2a2c", pepper),
    "Inky": ("#20283c", inky),
    "Tinker": ("#33302a", tinker),
    "Ledger": ("#28332e", ledger),
    "Soot": ("#3a3632", soot),
    "Marlow": ("#2e2b3a", marlow),
    "Sentry": ("#3b4452", sentry),
    "Elder": ("#55555f", elder),
}


def figure(name: str) -> Artboard:
    """One crow's artboard: drawn, traited, animated and given the `crow` machine."""
    tint_hex, trait = FIGURES[name]
    tint = rgb(tint_hex)
    board = Artboard(name, SIZE, SIZE)
    draw_crow(board, tint)
    trait(board)
    draw_marks(board)
    animate(board, tint)
    machine(board)
    return board
