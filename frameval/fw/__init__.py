"""Framework-neutral code that runs inside a framework's environment, as a
script (`python -m frameval.fw.behaviour FRAMEWORK`, `python -m frameval.fw.gemm
FRAMEWORK THREADS`): the behaviour cases, the common mistakes, the GEMM timer.
Each framework's own side of them (its adapter, its spelling of the mistakes,
its matrix product) is a part of its folder, frameval/frameworks/<fw>/, loaded
by name (`frameworks.part`).
"""
