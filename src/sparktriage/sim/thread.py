"""Run the simulator in a thread of this process (tests whose client needs no GIL of its own).

`SimThread(config)` binds 127.0.0.1 on a free port, serves from its own event loop in a
daemon thread, and stops on leaving the block. `toy_server(ToyConfig(...))` is the toy
language model (toy.py) served as the model `fake` with a 4096-token context, as the
garbage probe's tests use it. Timing ground truth needs a process of its own: process.py.
"""

from __future__ import annotations

import asyncio
import threading

from sparktriage.sim.scenario import SimConfig
from sparktriage.sim.server import SimServer
from sparktriage.sim.toy import ToyConfig


class SimThread:
    """A simulator serving from a daemon thread; use as a context manager."""

    def __init__(self, config: SimConfig | dict) -> None:
        self.config = config if isinstance(config, SimConfig) else SimConfig.model_validate(config)
        self.server = SimServer(self.config, "127.0.0.1", 0)
        self.url = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sparktriage-sim", daemon=True)
        self._error: BaseException | None = None

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        try:
            self._loop.run_until_complete(self.server.run(on_ready=self._on_ready))
        except BaseException as exc:  # noqa: BLE001 - reported by __enter__
            self._error = exc
            self._ready.set()
        finally:
            self._loop.close()

    def _on_ready(self, url: str) -> None:
        self.url = url
        self._ready.set()

    def __enter__(self) -> "SimThread":
        self._thread.start()
        self._ready.wait(30)
        if self._error is not None or not self.url:
            raise RuntimeError(f"simulator thread did not start: {self._error}")
        return self

    def __exit__(self, *exc) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.server.stop)
        self._thread.join(10)

    @property
    def requests(self) -> list[dict]:
        """Bodies of the toy model's requests so far."""
        return self.server.toy_requests


def toy_server(config: ToyConfig | None = None) -> SimThread:
    """The toy language model as model `fake` (the probe tests' server)."""
    return SimThread(SimConfig(scenarios={"fake": {}}, max_model_len=4096, version="fake-1",
                               toy=config or ToyConfig()))
