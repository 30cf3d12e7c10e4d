"""PyTorch: its record (standard library only; frameval/frameworks/__init__.py)."""
from ..record import Framework

FRAMEWORK = Framework(
    "torch", "PyTorch", order=1, aliases=("pytorch",), packages=("torch",), notes="torch.md", colour="#ee4c2c",
    # float32 as the framework computes by default, or strictly (nb/precision.py); both modes (#68)
    # float16 AMP (a GradScaler) waits for a GPU to be checked on (#69, #71): not declared yet
    offers={"precision": {"cpu": ("default", "highest", "bf16"), "gpu": ("default", "highest", "bf16")},
            "mode": {"cpu": ("graph", "eager"), "gpu": ("graph", "eager")}},
    workarounds={
        "inductor-layout-opt-conv-grad": {
            "pattern": r"layout_optimization\s*=\s*False",
            "summary": "inductor's layout optimisation breaks the convolutions' backward: wrong gradients on the CPU (zero for LeNet's convolutions at batch 16, ~1e-3 off for the DCGAN generator), an AssertionError on convolution_backward's strides in the DCGAN on an H100; turned off",
            "versions": "2.13.0 (CPU), 2.11.0+cu130 (GPU)",
            "found_by": "the check (convolution weight gradients against the reference); the H100 run",
            "cost": "not measured: inductor keeps the default layout",
        },
        "dynamo-backward-in-step": {
            "pattern": r"trace_autograd_ops\s*=\s*True",
            "summary": "loss.backward() inside the compiled step leaves every .grad None after it (after zero_grad; an earlier build raised a NameError in dynamo's resume function), so Adam trains nothing; the backward is torch.autograd.grad assigned to .grad (grad_step), traced with trace_autograd_ops",
            "versions": "2.13.0",
            "found_by": "building the graph-mode notebooks; the check (every gradient missing)",
            "cost": "none: the same gradients, inside the step's graph",
        },
        "dynamo-lstm-allow-rnn": {
            "pattern": r"recurrence written in torch ops",
            "summary": "dynamo does not trace nn.LSTM, and allow_rnn = True fails on the CPU (TypeError: mkldnn_rnn_layer); graph mode runs nn.LSTM's parameters through the recurrence written in torch ops",
            "versions": "2.13.0",
            "found_by": "building the graph-mode notebook (torch.compile raised)",
            "cost": "the 20 unrolled steps take about a minute to compile (in the check); eager mode runs nn.LSTM",
            "substitute": "LSTM recurrence in torch ops (graph mode)",
        },
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
