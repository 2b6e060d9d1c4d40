"""The search loop, its budgets and its trajectory."""

from .budget import LimitsExceeded, SearchConfig, TargetReached
from .loop import Search, replay
from .trajectory import Attempt, Round, Trajectory

__all__ = ["Attempt", "LimitsExceeded", "Round", "Search", "SearchConfig", "TargetReached", "Trajectory", "replay"]
