"""TensorFlow: its record (standard library only; frameval/frameworks/__init__.py)."""
from ..record import Framework

FRAMEWORK = Framework(
    "tensorflow", "TensorFlow", order=2, aliases=("tf",), packages=("tensorflow", "tensorflow-cpu", "keras"),
    # float32 as the framework computes by default, or strictly (nb/precision.py); both modes (#68)
    offers={"precision": {"cpu": ("default", "highest", "bf16"), "gpu": ("default", "highest")},
            "mode": {"cpu": ("graph", "eager"), "gpu": ("graph", "eager")}},
    notes="tensorflow.md", high_api="keras.Model.fit", colour="#ff8f00",
    kernel_env={"TF_CPP_MIN_LOG_LEVEL": "3"},
    # issue #48: TensorFlow takes all of a GPU's memory up front by default, so its peak read the pool's size
    gpu_kernel_env={"TF_FORCE_GPU_ALLOW_GROWTH": "true"},
    # numpy.random's pickling support, loaded in the first run
    warm_imports=("numpy.random",),
    workarounds={
        "adam-eps": {
            "pattern": r"fw\.SpecAdamW?\(",
            "summary": "Keras' Adam adds epsilon before the bias correction (and defaults to 1e-7), and AdamW inherits it; fw.SpecAdam and fw.SpecAdamW feed epsilon*sqrt(1-b2^t) to the same update, the spec's",
            "versions": "2.21.0",
            "found_by": "the check's update errors, and test accuracy after 2 epochs (AdamW: the same defect, the GPT's check)",
            "cost": "none: the same kernel",
        },
        "same-padding-asymmetric": {
            "pattern": r"ZeroPadding2D\(2\)",
            "summary": "'same' padding is asymmetric at stride 2 (conv: 1 before, 2 after; transposed conv: crops 1 and 2), the spec pads 2 on every side; the discriminator pads explicitly (ZeroPadding2D(2) + 'valid'), the generator crops the full output (Cropping2D)",
            "versions": "2.21.0",
            "found_by": "comparing layer outputs with PyTorch's",
            "cost": "the DCGAN step took ~17% more than with 'same' layers (one measurement, 1 thread)",
            "substitute": "explicit padding and cropping layers",
        },
        "keras-export-duplicate-variables": {
            "pattern": r"tf\.saved_model\.save\(",
            "summary": "Keras' SavedModel writer (Model.export, keras.export.ExportArchive) stores every weight twice, as the Keras variable and as the tf.Variable inside it (keras-team/keras#23553); fw.export writes the same SavedModel with tf.saved_model.save of a tf.Module that tracks the tf.Variables alone",
            "versions": "2.21.0 (keras 3.15.1)",
            "found_by": "the serving measurement's size (#70): LeNet's SavedModel twice its 61,706 weights",
            "cost": "none: the same function and format, half the bytes",
        },
    })
