"""The crow: its parts, its animations and its state machine, as readable source.

One artboard per figure (figures.py), each with the state machine `crow` and every input of the
contract (docs/ui-inputs.md). Coordinates are the artboard's pixels, y down; the crow faces right
and its feet rest on the artboard's floor. Paths are SVG path strings: redraw a part in a vector
editor and paste its `d` here.

Six layers, each animating its own properties (the runtime keeps whatever a layer set last, and a
later layer wins a property two layers share, so they share none):

| layer     | states                                      | inputs                           | animates            |
|-----------|---------------------------------------------|----------------------------------|---------------------|
| flight    | perched, takeoff, flying, landing, falling  | takeoff, flying, land, fail      | the crow, its wing  |
| mood      | calm (breathing), celebrate, droop          | celebrate, fail                  | its pose and colour |
| attention | still, speaking (beak), listening (head)    | talk, listen                     | its head, its jaw   |
| blink     | blink                                       | —                                | its eyelid          |
| trust     | stranger, regular, trusted                  | trust                            | the badge           |
| borrowed  | home, away                                  | borrowed                         | the ⇄ mark          |
"""

from soulstack.flock.rive.draw import LOOP, ONE_SHOT, Artboard, State

SIZE = 160
FLOOR = 134  # the crow's origin (its hips) when perched; its feet reach the floor below
LIFT = 46  # how far it rises in flight, within the artboard (the page carries it further)


def rgb(hex_colour: str) -> int:
    return 0xFF000000 | int(hex_colour.lstrip("#"), 16)


# The page's palette (host/flock/web/flock.css).
CROW, WING, ACCENT, JAW, OK, BAD = (rgb(c) for c in ("#2b2b35", "#44444f", "#f2b134", "#d08f1c", "#1f7a4d", "#7a2b2b"))
WHITE, PUPIL, GREY, BORROWED = rgb("#ffffff"), rgb("#16161c"), rgb("#9a9a9a"), rgb("#aa6600")


def draw_crow(board: Artboard, tint: int, wing: int = WING) -> None:
    """The crow's own parts, back to front, in the order later traits can hang things on:
    crow (flies) > pose (breathes, jumps, droops) > body, wing, head > eye, eyelid, beak, jaw."""
    board.node("crow", x=SIZE / 2, y=FLOOR)
    board.node("pose", "crow")
    for side, d in (("left", "M -6 -6 L -9 12 L -14 15"), ("right", "M 6 -6 L 6 12 L 11 15")):
        board.shape(f"leg_{side}", "pose", d, stroke=(ACCENT, 2.5))
    board.shape("tail", "pose", "M -20 -22 L -52 -36 L -47 -22 L -54 -10 L -18 -12 Z", fill=tint)
    board.shape("body", "pose", ellipse=(0, -20, 56, 38), fill=tint)
    board.node("wing", "pose", x=4, y=-28)
    board.shape("wing_feathers", "wing", "M 8 -4 C -4 -12 -26 -8 -34 10 C -18 14 -2 10 10 4 Z", fill=wing)
    board.node("head", "pose", x=20, y=-42)
    board.shape("head_round", "head", ellipse=(0, 0, 30, 30), fill=tint)
    board.shape("eye", "head", ellipse=(6, -3, 9, 9), fill=WHITE)
    board.shape("pupil", "head", ellipse=(7.5, -3, 4.5, 4.5), fill=PUPIL)
    board.shape("eyelid", "head", ellipse=(0, 0, 10.5, 10.5), fill=tint, x=6, y=-3, scale_y=0.05)
    board.shape("beak", "head", "M 11 -6 L 31 0 L 11 2 Z", fill=ACCENT)
    board.node("jaw", "head", x=11, y=2)
    board.shape("jaw_beak", "jaw", "M 0 -1 L 17 -1 L 0 5 Z", fill=JAW)


def draw_marks(board: Artboard) -> None:
    """The trust badge (bottom left) and the borrowed mark (bottom right), outside the crow so they
    stay put while it flies."""
    board.node("badge", x=14, y=SIZE - 14)
    board.shape("stranger", "badge", ellipse=(0, 0, 16, 16), stroke=(GREY, 2.5))
    board.shape("regular", "badge", ellipse=(0, 0, 18, 18), fill=ACCENT, opacity=0)
    board.node("trusted", "badge", opacity=0)
    board.shape("trusted_disc", "trusted", ellipse=(0, 0, 18, 18), fill=OK)
    board.shape("trusted_tick", "trusted", "M -5 0 L -1 4 L 5 -4", stroke=(WHITE, 2.5))
    board.node("borrowed", x=SIZE - 14, y=SIZE - 14, opacity=0)
    board.shape("borrowed_disc", "borrowed", ellipse=(0, 0, 20, 20), fill=BORROWED)
    board.shape("borrowed_there", "borrowed", "M -6 -3 L 6 -3 L 3 -6", stroke=(WHITE, 2))
    board.shape("borrowed_back", "borrowed", "M 6 3 L -6 3 L -3 6", stroke=(WHITE, 2))


def flaps(start: int, end: int, every: int = 10, up: float = -0.9, down: float = 0.5) -> list:
    return [(f, up if n % 2 == 0 else down) for n, f in enumerate(range(start, end + 1, every // 2))]


def animate(board: Artboard, tint: int) -> None:
    top = FLOOR - LIFT
    hurt = BAD
    board.animation("perched", 60, LOOP)
    board.animation(
        "takeoff",
        30,
        crow__y=[(0, FLOOR), (8, FLOOR + 4), (30, top, "out")],
        crow__rotation=[(0, 0.0), (30, -0.12)],
        wing__rotation=[(0, 0.0), *flaps(5, 30)],
    )
    board.animation(
        "flying",
        40,
        LOOP,
        crow__y=[(0, top), (20, top - 6), (40, top)],
        crow__rotation=[(0, -0.12, "hold")],
        wing__rotation=[(0, 0.4), *flaps(10, 40, up=-0.9, down=0.4)],
    )
    board.animation(
        "landing",
        36,
        crow__y=[(0, top), (28, FLOOR + 3, "out"), (36, FLOOR)],
        crow__rotation=[(0, -0.12), (28, 0.05), (36, 0.0)],
        wing__rotation=[(0, 0.4), (8, -0.9), (16, 0.3), (24, -0.6), (36, 0.0)],
    )
    board.animation(
        "falling",
        90,
        crow__y=[(0, top), (24, FLOOR + 4, "in"), (32, FLOOR - 3), (40, FLOOR)],
        crow__rotation=[(0, -0.1), (20, 0.9), (40, 0.5), (75, 0.5), (90, 0.0)],
        wing__rotation=[(0, 0.4), (20, 1.2), (60, 1.0), (90, 0.0)],
    )
    board.animation("calm", 240, LOOP, pose__scale_y=[(0, 1.0), (120, 1.045), (240, 1.0)])
    board.animation(
        "celebrate",
        60,
        pose__y=[(0, 0.0), (15, -18, "out"), (30, 0.0, "in"), (42, -8, "out"), (54, 0.0, "in")],
        pose__rotation=[(0, 0.0), (15, -0.25), (30, 0.2), (45, -0.1), (60, 0.0)],
        pose__scale_y=[(0, 1.0), (8, 0.9), (15, 1.1), (30, 1.0)],
    )
    board.animation(
        "droop",
        150,
        pose__scale_y=[(0, 1.0), (20, 0.86), (120, 0.88), (150, 1.0)],
        pose__rotation=[(0, 0.0), (20, 0.22), (120, 0.2), (150, 0.0)],
        body__fill=[(0, tint), (12, hurt), (120, hurt), (150, tint)],
        head_round__fill=[(0, tint), (12, hurt), (120, hurt), (150, tint)],
    )
    board.animation("still", 60, LOOP)
    chatter = [0.0, 0.75, 0.1, 0.65, 0.05, 0.75, 0.0, 0.6, 0.1, 0.75, 0.05, 0.5, 0.0]
    board.animation(
        "speaking",
        120,
        jaw__rotation=[(10 * n, value) for n, value in enumerate(chatter)],
        head__rotation=[(0, 0.0), (10, -0.04), (110, -0.03), (120, 0.0)],
    )
    board.animation("listening", 120, head__rotation=[(0, 0.0), (14, 0.32), (106, 0.3), (120, 0.0)])
    board.animation("blink", 220, LOOP, eyelid__scale_y=[(0, 0.05, "hold"), (200, 0.05), (206, 1.0), (212, 0.05)])
    for name in ("stranger", "regular", "trusted"):
        shown = {f"{other}__opacity": [(0, 1.0 if other == name else 0.0, "hold")] for other in TRUST}
        board.animation(f"trust_{name}", 1, ONE_SHOT, **shown)
    board.animation("home", 1, borrowed__opacity=[(0, 0.0, "hold")])
    board.animation("away", 1, borrowed__opacity=[(0, 1.0, "hold")])


TRUST = ("stranger", "regular", "trusted")


def machine(board: Artboard) -> None:
    for name in ("takeoff", "land", "fail", "talk", "listen", "celebrate"):
        board.input(name, "trigger")
    board.input("flying", "boolean")
    board.input("borrowed", "boolean")
    board.input("trust", "number", 0.0)

    flight = board.layer(
        "flight",
        *(State(n, n) for n in ("perched", "takeoff", "flying", "landing", "falling")),
    )
    flight.go("perched", "takeoff", ("trigger", "takeoff"))
    flight.go("perched", "takeoff", ("flying", True))  # a page opened while it is out
    flight.go("takeoff", "falling", ("trigger", "fail"))
    flight.go("takeoff", "flying", exit_time=100)
    flight.go("flying", "landing", ("trigger", "land"))
    flight.go("flying", "falling", ("trigger", "fail"))
    flight.go("flying", "landing", ("flying", False))  # grounded without a landing (a skipped item)
    flight.go("landing", "perched", exit_time=100)
    flight.go("falling", "perched", exit_time=100)

    mood = board.layer("mood", State("calm", "calm"), State("celebrate", "celebrate"), State("droop", "droop"))
    mood.go("calm", "celebrate", ("trigger", "celebrate"))
    mood.go("calm", "droop", ("trigger", "fail"))
    mood.go("celebrate", "droop", ("trigger", "fail"))
    mood.go("droop", "celebrate", ("trigger", "celebrate"))
    mood.go("celebrate", "calm", exit_time=100)
    mood.go("droop", "calm", exit_time=100)

    attention = board.layer(
        "attention", State("still", "still"), State("speaking", "speaking"), State("listening", "listening")
    )
    attention.go("still", "speaking", ("trigger", "talk"))
    attention.go("still", "listening", ("trigger", "listen"))
    attention.go("speaking", "listening", ("trigger", "listen"))
    attention.go("listening", "speaking", ("trigger", "talk"))
    attention.go("speaking", "still", exit_time=100)
    attention.go("listening", "still", exit_time=100)

    board.layer("blink", State("blink", "blink"))

    trust = board.layer("trust", *(State(name, f"trust_{name}") for name in TRUST))
    for name in TRUST:
        for other_level, other in enumerate(TRUST):
            if other != name:
                trust.go(name, other, ("trust", "==", float(other_level)))

    borrowed = board.layer("borrowed", State("home", "home"), State("away", "away"))
    borrowed.go("home", "away", ("borrowed", True))
    borrowed.go("away", "home", ("borrowed", False))
