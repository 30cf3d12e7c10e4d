"""python -m frameval.envs torch mxnet ...: build environments by hand (all
frameworks without arguments), each with its kernel registered."""
import sys

from ..catalog import FRAMEWORKS
from .build import ensure_framework

for fw in sys.argv[1:] or FRAMEWORKS:
    e = ensure_framework(fw)
    print(fw, e.prefix)
