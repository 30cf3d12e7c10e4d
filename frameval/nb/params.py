"""The parameters every notebook of a workload declares, in every framework
(ilkarman-style shared params). A test checks each notebook's `parameters`
cell against these lists; the runner validates `-p` values against the cell.
"""
COMMON = ("mode", "device", "epochs", "batch_size", "lr", "seed", "threads", "max_train_samples", "out_dir")
WORKLOAD_PARAMS = {
    "lenet": COMMON + ("dataset",),
    "dcgan": COMMON + ("dataset",),
    "lstm": COMMON + ("window", "hidden", "series"),
}


def collect(namespace: dict, workload: str) -> dict:
    """The run's parameters from the notebook's globals (after papermill injects)."""
    return {k: namespace[k] for k in WORKLOAD_PARAMS[workload] if k in namespace}
