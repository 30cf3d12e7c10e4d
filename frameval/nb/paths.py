"""Per-user folders: the rule lives in `frameval/paths.py` (standard library
only, importable before the runner environment exists, without numpy); this
module re-exports it for the notebooks, which import it as `frameval.nb.paths`."""
from frameval.paths import (APP, data_cache_dir, envs_dir, hand_run_framework, hand_runs_dir,  # noqa: F401
                            user_cache_dir, user_data_dir)

__all__ = ["APP", "user_cache_dir", "user_data_dir", "data_cache_dir", "envs_dir", "hand_runs_dir", "hand_run_framework"]
