"""Offline bundles (issue #30): the wheels of the runner and framework
environments and the data caches in one folder, with a manifest of every
file's SHA-256, made where there is a network (`run_all.py bundle OUT`) and
used where there is none (`run_all.py --offline BUNDLE`).

    manifest.py   the manifest: the target (Python, platform), the environments, every file's hash;
                  the checks `--offline` makes before anything runs (standard library only)
    offline.py    using a bundle: uv/pip told to install from it alone, its data caches copied in
                  (standard library only)
    wheels.py     making one: pins resolved for the target with uv, wheels fetched with pip,
                  sizes from the index's metadata for --dry-run (runner environment)
    make.py       the bundle command's work: environments, data, manifest, sizes printed
    trim.py       a runner bundle trimmed to what a target interpreter lacks (standard library only)
    runner_venv.py  the runner on that interpreter: a venv over it, the bundle's wheels added
                  offline (standard library only)
"""
