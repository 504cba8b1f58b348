"""The one way a test fake serves itself: an aiohttp app on 127.0.0.1, started by `async with`."""

from aiohttp import web


class LoopbackServer:
    """Subclasses build their app in `make_app()`. Set `port` before starting to ask
    for a fixed one (0, the default, takes any free port); after start it holds the bound port."""

    port = 0
    _runner = None

    def make_app(self) -> web.Application:  # pragma: no cover - every fake builds its own
        raise NotImplementedError

    async def start(self):
        self._runner = web.AppRunner(self.make_app(), access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()
        self.port = self._runner.addresses[0][1]
        return self

    async def stop(self):
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self):
        return await self.start()

    async def __aexit__(self, *exc):
        await self.stop()
