"""The parameters every notebook of a workload declares, in every framework
(ilkarman-style shared params). A test checks each notebook's `parameters`
cell against these lists; the runner validates `-p` values against the cell.
"""
from ..catalog import APIS, BY_KEY, DEVICES, HIGH_API_NOTEBOOKS, MODES, PRECISIONS, WORKLOAD_PARAMS, not_offered


def collect(namespace: dict, workload: str) -> dict:
    """The run's parameters from the notebook's globals (after papermill injects).
    A mode or device no framework knows stops the notebook here, by hand too
    (the runner refuses them before anything runs)."""
    params = {k: namespace[k] for k in WORKLOAD_PARAMS[workload] if k in namespace}
    for name, allowed in (("mode", MODES), ("device", DEVICES), ("api", APIS), ("precision", PRECISIONS)):
        if name in params and params[name] not in allowed:
            raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}, not {params[name]!r}")
    return params


def check_api(framework: str, params: dict):
    """api="high" in a notebook that has no high-level training loop stops here (the
    runner leaves such runs out of its plan before anything runs)."""
    why = not_offered(framework, params)
    if why:
        raise ValueError(why)
    if params.get("api") == "high" and framework not in HIGH_API_NOTEBOOKS:
        has = BY_KEY[framework].high_api if framework in BY_KEY else ""
        raise ValueError(f"api='high': {framework} " + (f"has {has}, but its notebook does not train through it yet"
                                                        if has else "has no high-level training API"))
