"""The search loop, its budgets and its trajectory."""

from ..comparison import FASTEST, Comparison, compare, compare_attempt, compare_record
from ..trajectory import Attempt, Round, Trajectory
from .budget import LimitsExceeded, SearchConfig, TargetReached
from .loop import Search, replay

__all__ = ["FASTEST", "Attempt", "Comparison", "LimitsExceeded", "Round", "Search", "SearchConfig", "TargetReached",
           "Trajectory", "compare", "compare_attempt", "compare_record", "replay"]
