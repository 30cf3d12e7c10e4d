"""What a GPU kernel starts with (issue #48, deliverable 4), checked on the CPU:
the kernel's variables are plain data, nothing here simulates a GPU."""
import pytest

from frameval import execute
from frameval.envs.kernels import kernel_extra
from frameval.plan import build_plan

pytestmark = pytest.mark.fast


def test_no_framework_takes_the_gpus_memory_up_front():
    assert kernel_extra("jax", "gpu")["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert kernel_extra("tensorflow", "gpu")["TF_FORCE_GPU_ALLOW_GROWTH"] == "true"
    for fw in ("torch", "jax", "tensorflow", "paddle", "mindspore", "megengine", "mxnet"):
        assert kernel_extra(fw, "gpu")["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"  # NVML's index is the framework's
        assert "CUDA_DEVICE_ORDER" not in kernel_extra(fw, "cpu") and "XLA_PYTHON_CLIENT_PREALLOCATE" not in kernel_extra(fw, "cpu")


def test_the_gpu_kernels_variables_are_in_the_run_environment_the_cache_key_reads():
    run, = build_plan("jax", "lenet", "graph", "gpu", "quick", [])
    assert execute.kernel_environ(run)["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
