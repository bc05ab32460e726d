"""Exponential backoff with jitter, for a subscription's reconnects.

Why jitter: after a lawnd restart every subscriber's stream breaks at the same moment; without it they would
all come back in lock-step and hit lawnd's recovery together, attempt after attempt.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass
class Backoff:
    """Delays of initial, initial*multiplier, ... capped at maximum, each scaled by a random 0.5..1.0.

    next_delay() advances; reset() starts over, as a subscription does once a stream delivers again.
    """

    initial: float = 0.1  # Seconds.
    maximum: float = 10.0  # Seconds.
    multiplier: float = 2.0
    rng: random.Random = field(default_factory=random.Random, repr=False)
    _attempt: int = field(default=0, repr=False)

    def next_delay(self) -> float:
        ceiling = min(self.maximum, self.initial * self.multiplier ** self._attempt)
        if ceiling < self.maximum:
            self._attempt += 1
        return ceiling * self.rng.uniform(0.5, 1.0)

    def reset(self) -> None:
        self._attempt = 0
