"""The search loop, its budgets and its trajectory."""

from .budget import LimitsExceeded, SearchConfig, TargetReached
from .comparison import FASTEST, Comparison, compare, compare_attempt, compare_record
from .loop import Search, replay
from .trajectory import Attempt, Round, Trajectory

__all__ = ["FASTEST", "Attempt", "Comparison", "LimitsExceeded", "Round", "Search", "SearchConfig", "TargetReached",
           "Trajectory", "compare", "compare_attempt", "compare_record", "replay"]
