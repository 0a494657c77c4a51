"""Programming models (Table 12.2): map-only, map-reduce, iterative map-reduce.

Written against engines.base.Engine only; apps pass `engine_for(ctx)` and `timer=ctx`.
"""

from .iterative import IterativeResult, iterative_map_reduce
from .kv import KeyValues
from .map_only import ItemError, ItemOutcome, map_only
from .map_reduce import ShuffleStats, map_reduce

__all__ = [
    "ItemError",
    "ItemOutcome",
    "IterativeResult",
    "KeyValues",
    "ShuffleStats",
    "iterative_map_reduce",
    "map_only",
    "map_reduce",
]
