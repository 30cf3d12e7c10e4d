"""The parameters every notebook of a workload declares, in every framework
(ilkarman-style shared params). A test checks each notebook's `parameters`
cell against these lists; the runner validates `-p` values against the cell.
"""
from ..workloads import WORKLOAD_PARAMS  # noqa: F401 - one list, shared with the runner


def collect(namespace: dict, workload: str) -> dict:
    """The run's parameters from the notebook's globals (after papermill injects)."""
    return {k: namespace[k] for k in WORKLOAD_PARAMS[workload] if k in namespace}
