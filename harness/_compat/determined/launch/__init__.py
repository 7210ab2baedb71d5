"""``determined.launch``: Determined's launch layers, run by ``harness.launch``.

``python3 -m determined.launch.torch_distributed [TORCH_OVERRIDES... --] (--trial T | SCRIPT...)``
is ``python3 -m harness.launch.torch_distributed`` with the same arguments.
"""
