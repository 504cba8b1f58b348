"""The built-in crows in the real runtime: @rive-app/canvas (from node_modules/, as the page loads
it) in Debian's chromium through playwright. Time is playwright's clock, so the animation is stepped
frame by frame (never by wall-clock waits), and each input's pose is checked by the pixels of the
canvas in regions: flight lifts the crow, a landing brings it back, a failure turns it red and it
recovers, a celebration jumps, speaking opens the beak, listening tilts the head, the eye blinks,
the trust badge and the borrowed mark show. No console error, no object the runtime failed to
import. The page's own test with the real flock is in test_rive_page.py."""

import json

import pytest
import pytest_asyncio
from aiohttp import web

from soulstack.flock.rive.builtin import built_in
from soulstack.flock.rive.figures import FIGURES
from soulstack.flock.web.routes import vendor

pytestmark = pytest.mark.asyncio(loop_scope="module")

FRAME_MS = 1000 / 60
BREATH = 4  # pixels a head rises and falls as the crow breathes (what "back at rest" allows)
SCALE = 240 / 160  # canvas pixels per artboard unit

# One canvas per figure, each drawn by its artboard and driven through its `crow` machine; the
# test reads pixels with measure(). Colours are the page's palette (host/flock/rive/crow.py).
HARNESS = """<!doctype html><meta charset="utf-8"><title>crows</title><link rel="icon" href="data:,">
<style>body{margin:0;display:flex;flex-wrap:wrap;background:#eef5fa} canvas{width:160px;height:160px}
figure{margin:4px;text-align:center;font:12px sans-serif}</style>
<script src="/vendor/rive.js"></script>
<script>
rive.RuntimeLoader.setWasmUrl("/vendor/rive.wasm");
rive.RuntimeLoader.setWasmFallbackUrl(null);
rive.Rive.suppressDeprecationWarnings = ["state-machine-inputs"];
window.crows = {};
const NAMES = NAMES_JSON;
fetch("/crows.riv").then(r => r.arrayBuffer()).then(buffer => {
  for (const name of NAMES) {
    const figure = document.createElement("figure");
    const canvas = document.createElement("canvas");
    canvas.width = canvas.height = 240;
    canvas.id = name;
    figure.append(canvas, name);
    document.body.append(figure);
    const anim = new rive.Rive({ buffer: buffer.slice(0), canvas, artboard: name, stateMachines: "crow",
      autoplay: true, onLoad: () => {
        crows[name] = Object.fromEntries(anim.stateMachineInputs("crow").map(i => [i.name, i]));
      } });
  }
});
window.drive = (name, input, value) => {
  const i = crows[name][input];
  if (value === null) i.fire(); else i.value = value;
};
const near = (p, [r, g, b], tol) => Math.abs(p[0] - r) < tol && Math.abs(p[1] - g) < tol && Math.abs(p[2] - b) < tol;
const CLASSES = {
  hurt: [[0x7a, 0x2b, 0x2b], 18], green: [[0x1f, 0x7a, 0x4d], 25], accent: [[0xf2, 0xb1, 0x34], 22],
  jaw: [[0xd0, 0x8f, 0x1c], 18], borrowed: [[0xaa, 0x66, 0x00], 22], white: [[255, 255, 255], 14],
};
// Per colour class: how many pixels, their centroid, their lowest and highest rows, within a region.
window.measure = (name, region) => {
  const [x0, y0, x1, y1] = region || [0, 0, 240, 240];
  const data = document.getElementById(name).getContext("2d").getImageData(x0, y0, x1 - x0, y1 - y0).data;
  const out = {};
  for (const k of ["dark", ...Object.keys(CLASSES)]) out[k] = { n: 0, x: 0, y: 0, low: -1, top: 999 };
  for (let i = 0; i < data.length; i += 4) {
    const p = [data[i], data[i + 1], data[i + 2]];
    if (data[i + 3] < 200) continue;
    const x = x0 + (i / 4) % (x1 - x0), y = y0 + Math.floor(i / 4 / (x1 - x0));
    let kind = Object.keys(CLASSES).find(k => near(p, ...CLASSES[k]));
    if (!kind && Math.max(...p) < 110) kind = "dark";
    if (!kind) continue;
    const o = out[kind];
    o.n++; o.x += x; o.y += y; o.low = Math.max(o.low, y); o.top = Math.min(o.top, y);
  }
  for (const o of Object.values(out)) if (o.n) { o.x /= o.n; o.y /= o.n; }
  return out;
};
// How many pixels of two canvases differ clearly.
window.differ = (a, b) => {
  const [p, q] = [a, b].map(n => document.getElementById(n).getContext("2d").getImageData(0, 0, 240, 240).data);
  let n = 0;
  for (let i = 0; i < p.length; i += 4) {
    if (Math.abs(p[i] - q[i]) + Math.abs(p[i + 1] - q[i + 1]) + Math.abs(p[i + 2] - q[i + 2]) > 60) n++;
  }
  return n;
};
</script>"""

BADGE = [0, 195, 45, 240]  # bottom left: the trust badge
MARK = [195, 195, 240, 240]  # bottom right: the borrowed mark
EYE = [140, 110, 180, 158]  # around the eye, however the crow breathes
HEAD = [140, 95, 240, 175]  # the head and beak, perched (the legs are below it)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def harness():
    async def page(request):
        return web.Response(text=HARNESS.replace("NAMES_JSON", json.dumps(list(FIGURES))), content_type="text/html")

    async def riv(request):
        return web.Response(body=built_in(), content_type="application/octet-stream")

    app = web.Application()
    app.router.add_get("/", page)
    app.router.add_get("/crows.riv", riv)
    app.router.add_get("/vendor/{name}", vendor)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/"
    await runner.cleanup()


class Crows:
    """The harness page, its clock stepped by frames."""

    def __init__(self, page):
        self.page = page

    async def frames(self, n):
        for _ in range(n):  # one frame at a time: each requestAnimationFrame sees its own 16.7 ms
            await self.page.clock.run_for(int(FRAME_MS))

    async def drive(self, name, input, value=None):
        await self.page.evaluate("([n, i, v]) => drive(n, i, v)", [name, input, value])

    async def measure(self, name, region=None):
        return await self.page.evaluate("([n, r]) => measure(n, r)", [name, region])


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def crows(browser, harness, tmp_path_factory):
    context = await browser.new_context(viewport={"width": 900, "height": 420})
    page = await context.new_page()
    messages = []
    page.on("console", lambda m: messages.append((m.type, m.text)))
    page.on("pageerror", lambda e: messages.append(("pageerror", str(e))))
    await page.clock.install()  # time flows while the wasm and the file load...
    await page.goto(harness)
    await page.wait_for_function(f"Object.keys(crows).length === {len(FIGURES)}")
    await page.clock.pause_at(await page.evaluate("Date.now()") + 100)  # ...then moves only when stepped
    crows = Crows(page)
    await crows.frames(20)
    crows.shots = tmp_path_factory.mktemp("rive-poses")
    yield crows
    failed = [m for m in messages if m[0] in ("error", "pageerror") or "Failed to import" in m[1]]
    await context.close()
    assert failed == [], failed


async def shot(crows, name):
    path = crows.shots / f"{name}.png"
    await crows.page.screenshot(path=path)
    print(f"screenshot: {path}")


async def test_ten_distinct_figures_are_drawn(crows):
    await shot(crows, "1-ten-crows-perched")
    seen = {}
    for name in FIGURES:
        m = await crows.measure(name)
        assert m["dark"]["n"] > 3000, (name, m["dark"])  # a crow, not an empty canvas
        seen[name] = m
    names = list(FIGURES)
    for n, a in enumerate(names):  # every two figures differ by a trait's worth of pixels at least
        for b in names[n + 1 :]:
            assert await crows.page.evaluate("([a, b]) => differ(a, b)", [a, b]) > 150, (a, b)
    # The Sentry holds its head higher than any crow of the roster, the stooped Elder lower.
    beaks = {name: m["jaw"]["top"] for name, m in seen.items()}
    roster = [beaks[n] for n in FIGURES if n not in ("Sentry", "Elder")]
    assert beaks["Sentry"] < min(roster) - 4 and beaks["Elder"] > max(roster) + 4, beaks


async def test_take_off_fly_and_land(crows):
    rest = (await crows.measure("Hugin"))["dark"]["y"]
    await crows.drive("Hugin", "takeoff")
    await crows.drive("Hugin", "flying", True)
    await crows.frames(45)
    flying = (await crows.measure("Hugin"))["dark"]["y"]
    assert flying < rest - 40 * SCALE / 1.5, (rest, flying)  # lifted by most of its 46 units
    await crows.frames(40)  # still up: flight loops while `flying` holds
    assert (await crows.measure("Hugin"))["dark"]["y"] < rest - 30
    await shot(crows, "2-hugin-flying")
    await crows.drive("Hugin", "land")
    await crows.drive("Hugin", "flying", False)
    await crows.frames(50)
    assert abs((await crows.measure("Hugin"))["dark"]["y"] - rest) < 3


async def test_a_failure_falls_turns_red_and_recovers(crows):
    rest = await crows.measure("Munin")
    assert rest["hurt"]["n"] == 0
    await crows.drive("Munin", "takeoff")
    await crows.drive("Munin", "flying", True)
    await crows.frames(45)
    await crows.drive("Munin", "fail")
    await crows.drive("Munin", "flying", False)
    await crows.frames(30)
    hurt = await crows.measure("Munin")
    assert hurt["hurt"]["n"] > 1500, hurt["hurt"]  # the droop's colour
    await shot(crows, "3-munin-failed")
    await crows.frames(150)
    after = await crows.measure("Munin")
    assert after["hurt"]["n"] == 0 and abs(after["dark"]["y"] - rest["dark"]["y"]) < 3


async def test_a_celebration_jumps_and_comes_down(crows):
    rest = (await crows.measure("Pepper"))["dark"]["y"]
    await crows.drive("Pepper", "celebrate")
    await crows.frames(15)
    assert (await crows.measure("Pepper"))["dark"]["y"] < rest - 12
    await crows.frames(60)
    assert abs((await crows.measure("Pepper"))["dark"]["y"] - rest) < 3


async def test_speaking_opens_the_beak_and_listening_tilts_the_head(crows):
    async def gape():  # from the upper beak's top to the jaw's lowest pixel: breathing moves both alike
        m = await crows.measure("Inky", HEAD)
        return m["jaw"]["low"] - m["accent"]["top"]

    shut = await gape()
    await crows.drive("Inky", "talk")
    # The chatter's first wide-open key is its tenth frame. Looked at frame by frame up to twice that, not
    # at a fixed frame: on a loaded CI machine the ninth frame once showed the jaw only half open (a gape
    # of 5 px), so which stepped frame the runtime draws it widest on is not fixed.
    stepped, opened = 0, shut
    while opened <= shut + 5 and stepped < 20:
        await crows.frames(1)
        stepped, opened = stepped + 1, await gape()
    assert opened > shut + 5, (shut, opened)  # the jaw drops
    await shot(crows, "4-inky-speaking")
    await crows.frames(139 - stepped)
    assert abs(await gape() - shut) <= 2
    rest = await crows.measure("Inky", HEAD)
    await crows.drive("Inky", "listen")
    await crows.frames(30)
    listening = await crows.measure("Inky", HEAD)
    assert listening["accent"]["y"] > rest["accent"]["y"] + 5, (rest["accent"], listening["accent"])  # beak down
    await crows.frames(120)
    assert abs((await crows.measure("Inky", HEAD))["accent"]["y"] - rest["accent"]["y"]) <= BREATH


async def test_the_eye_blinks_now_and_then(crows):
    open_eye = (await crows.measure("Soot", EYE))["white"]["n"]
    assert open_eye > 20
    seen = []
    for _ in range(115):  # one blink cycle is 220 frames; the lid is down for about 6
        await crows.frames(2)
        seen.append((await crows.measure("Soot", EYE))["white"]["n"])
    assert min(seen) < open_eye * 0.3, seen
    assert sum(n >= open_eye * 0.6 for n in seen) > 100, seen  # open nearly all the time (it breathes)
    assert sum(n < open_eye * 0.3 for n in seen) < 6, seen  # a blink, not a nap


async def test_the_trust_badge_and_the_borrowed_mark(crows):
    name = "Ledger"
    for level, (green, accent) in ((2, (True, False)), (1, (False, True)), (0, (False, False))):
        await crows.drive(name, "trust", level)
        await crows.frames(3)
        badge = await crows.measure(name, BADGE)
        assert (badge["green"]["n"] > 100, badge["accent"]["n"] > 100) == (green, accent), (level, badge)
    assert (await crows.measure(name, MARK))["borrowed"]["n"] == 0
    await crows.drive(name, "borrowed", True)
    await crows.drive(name, "trust", 2)
    await crows.frames(3)
    assert (await crows.measure(name, MARK))["borrowed"]["n"] > 100
    await shot(crows, "5-ledger-trusted-and-borrowed")
    await crows.drive(name, "borrowed", False)
    await crows.frames(3)
    assert (await crows.measure(name, MARK))["borrowed"]["n"] == 0
