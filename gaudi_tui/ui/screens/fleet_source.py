"""Where the Fleet screen's data comes from: a loader (a saved /metrics, tests), or a Prometheus
server through one `core.fleet.fetch.ScreenReader` (made in the worker thread: its modules are
imported after the first frame). Every call but `client` runs in the screen's workers."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gaudi_tui.core.fleet.model import Fleet, Host, Overview

if TYPE_CHECKING:
    from gaudi_tui.core.fleet.fetch import ScreenReader
    from gaudi_tui.core.fleet.prometheus import PrometheusClient

Loader = Callable[[], Fleet]


class FleetSource:
    def __init__(self, loader: Loader | None, url: str | None, reader: ScreenReader | None) -> None:
        """`loader` replaces Prometheus; `reader` replaces the one made from `url` (the bench reads
        a backfilled TSDB at a fixed time)."""
        self.loader = loader
        self.url = reader.client.url if reader is not None else url
        self._reader = reader

    @property
    def none(self) -> bool:
        """Neither a loader nor a Prometheus URL."""
        return self.loader is None and self.url is None

    @property
    def client(self) -> PrometheusClient | None:
        """A client of its own for the host screen's sparklines (None with a loader or a bad URL)."""
        from gaudi_tui.core.fleet.prometheus import PrometheusClient, PrometheusError

        try:
            return PrometheusClient(self.url) if self.url and self.loader is None else None
        except PrometheusError:
            return None

    def close(self) -> None:
        if self._reader is not None:
            self._reader.client.close()  # its kept-alive connections

    def screen_reader(self) -> ScreenReader | None:
        from gaudi_tui.core.fleet import fetch  # in the worker thread, after the first frame
        from gaudi_tui.core.fleet.prometheus import PrometheusClient

        if self._reader is None and self.url is not None:
            self._reader = fetch.ScreenReader(PrometheusClient(self.url))
        return self._reader

    def load(self, visible: list[str], mean_util: bool) -> tuple[Overview, dict[str, Host]] | None:
        """Every host's aggregates, and the cards of the `visible` ones; None without a source."""
        if self.loader is not None:
            fleet = self.loader()
            return fleet.overview(), {host.name: host for host in fleet.hosts}
        if self.url is None:
            return None
        from gaudi_tui.core.fleet.prometheus import PrometheusError  # in the worker, as `fetch`

        try:
            reader = self.screen_reader()
        except PrometheusError as error:  # a URL that is not http(s)
            return Overview(self.url, problems=(str(error),)), {}
        return reader.refresh(visible, mean_util) if reader is not None else None

    def cards(self, names: list[str]) -> tuple[dict[str, Host], list[str]] | None:
        """The cards of hosts `names` and the problems met asking; None without Prometheus."""
        reader = self.screen_reader()
        return reader.cards(names) if reader is not None else None
