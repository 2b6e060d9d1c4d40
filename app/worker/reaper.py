"""The reaper thread of every worker: sends again the jobs whose worker died
and the queued jobs whose message the broker lost (app/jobs/sending/reaper.py says
which and how).

It ticks every second, asking the broker only whether it is up and whether it
restarted (Redis' run_id changes with every restart). A full pass runs every
`max(2, KFORGE_STALE_AFTER_S / 3)` s, and at once when the broker is back
(reachable again, or restarted): then a queued job is sent again when its
message is not waiting in the broker and it was sent more than
RECONNECT_WINDOW_S ago, so messages lost with the broker (no persistence,
sends that failed meanwhile) are sent within a second or two of its return,
not after a staleness window. Brokers that cannot be asked (the embedded
SQLite transport) keep the long window: the reaper cannot see their queues.
"""

from __future__ import annotations

import logging
import threading
import time

from ..jobs.sending.broker import broker_epoch
from ..jobs.sending.reaper import reap
from ..outages import dependency_down
from ..settings import get_settings

log = logging.getLogger("kforge.worker")
TICK_S = 1.0
# A message sent this recently may be on its way to a worker's claim rather than lost.
RECONNECT_WINDOW_S = 2.0


class Reaper:
    def __init__(self) -> None:
        self.epoch: str | None = None
        self.broker_down = False
        self.last_pass = 0.0

    def tick(self) -> list[str] | None:
        """One tick: a pass when one is due (its ids), else None."""
        settings = get_settings()
        try:
            epoch = broker_epoch()
        except Exception as exc:
            if not self.broker_down:
                log.warning("broker unreachable (%s: %s); re-sending once it is back", type(exc).__name__, exc)
            self.broker_down = self.epoch is not None  # at start-up, a normal pass once it answers
            return None
        back = epoch is not None and self.epoch is not None and (self.broker_down or epoch != self.epoch)
        every = max(2.0, settings.stale_after_s / 3)
        if not back and time.monotonic() - self.last_pass < every:
            return None
        normal = max(settings.stale_after_s, 30.0)
        try:
            sent = reap(settings.db_url, settings.stale_after_s, RECONNECT_WINDOW_S if back else normal)
        except Exception as exc:
            if dependency_down(exc) == "broker":
                self.broker_down = True
            raise
        self.epoch, self.broker_down, self.last_pass = epoch, False, time.monotonic()
        return sent

    def run(self) -> None:
        while True:
            try:
                sent = self.tick()
                if sent:
                    log.info("re-enqueued %d job(s): %s", len(sent), ", ".join(sent))
            except Exception as exc:
                log.warning("reaper pass failed (%s: %s)", type(exc).__name__, exc,
                            exc_info=dependency_down(exc) is None)
                self.last_pass = time.monotonic()  # a failed pass waits as long as a good one
            time.sleep(TICK_S)


def start() -> None:
    threading.Thread(target=Reaper().run, daemon=True, name="kforge-reaper").start()
