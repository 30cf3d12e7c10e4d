"""PyTorch: its record (standard library only; frameval/frameworks/__init__.py)."""
from ..record import Framework

FRAMEWORK = Framework(
    "torch", "PyTorch", order=1, aliases=("pytorch",), packages=("torch",), notes="torch.md", colour="#ee4c2c",
    # float32 as the framework computes by default, or strictly (nb/precision.py); both modes (#68)
    offers={"precision": {"cpu": ("default", "highest"), "gpu": ("default", "highest")},
            "mode": {"cpu": ("graph", "eager"), "gpu": ("graph", "eager")}},
    workarounds={
        "inductor-layout-opt-conv-grad": r"layout_optimization\s*=\s*False",
        "dynamo-backward-in-step": r"trace_autograd_ops\s*=\s*True",
        "dynamo-lstm-allow-rnn": r"recurrence written in torch ops",
    },
    # dynamo, AOTAutograd and inductor (with sympy and setuptools' compiler helpers) load at the first compile;
    # the rest, lazily inside it: left to the first run, 152 modules (inductor's pattern passes and device
    # back-ends, export, sympy's units and groups) were compiled to bytecode inside its check, which the
    # report reads as torch's compile cost (measured on torch 2.13.0 CPU: sys.modules before and after a
    # compile of a conv/BatchNorm/Adam step and a dynamic-batch forward)
    # first, not bytecode: inductor's vector-ISA probe, built once per environment beside the rest (isa_probe.py)
    warm_imports=("frameval.frameworks.torch.isa_probe:start",
                  "torch._dynamo", "torch._functorch.aot_autograd", "torch._inductor.compile_fx",
                  "torch._inductor.codegen.cpp", "torch._inductor.scheduler", "torch._inductor.graph",
                  "torch._inductor.codecache", "torch._inductor.async_compile",
                  "torch._inductor.compile_worker.subproc_pool", "torch._inductor.fx_passes.post_grad",
                  "torch.utils.cpp_extension", "sympy",
                  "torch._dynamo:list_backends", "torch._inductor.codegen.common:init_backend_registration",
                  "torch._inductor.fx_passes.joint_graph:lazy_init", "torch._inductor.fx_passes.post_grad:lazy_init",
                  "torch._inductor.codegen.cpu_device_op_overrides", "torch._inductor.codegen.cuda.device_op_overrides",
                  "torch._inductor.codegen.mps_device_op_overrides", "torch._inductor.codegen.mtia.device_op_overrides",
                  "torch._inductor.codegen.xpu.device_op_overrides", "torch._inductor.fx_passes.apply_gumbel_max_trick",
                  "torch._inductor.fx_passes.efficient_conv_bn_eval", "torch.export._trace",
                  "torch._dynamo.repro.after_dynamo", "torch._inductor.compiler_bisector",
                  "torch._subclasses.schema_check_mode", "torch.fx.experimental.validator",
                  "torch._inductor.cudagraph_trees", "torch._inductor.runtime.caching", "torch._inductor.choices",
                  "torch._inductor.bounds", "torch._inductor.hooks", "torch._inductor.codegen.memory_planning",
                  "torch._inductor.codegen.segmented_tree", "torch._inductor.extern_node_serializer",
                  "torch._functorch._aot_autograd.subclass_codegen",
                  "torch._functorch._activation_checkpointing.remat_using_tags_for_fwd_loss_bwd_graph_pass",
                  "torch._dynamo.dce_extra_outputs", "torch._higher_order_ops.passes.inline_invoke_subgraph",
                  "torch.utils._cpp_embed_headers", "torch.distributed.tensor.experimental",
                  "sympy.combinatorics", "sympy.physics.units", "sympy.tensor.tensor", "torch.utils.serialization"))
