"""Framework-specific helpers shared by one framework's three notebooks (an
optimizer with the spec's Adam formula, log silencers, device setup).

Each `<framework>_support.py` imports its framework and is only ever imported
inside that framework's own environment; nothing here is framework-neutral
(that lives in `frameval.nb`). The cache key of a run includes its
framework's support module.
"""
