"""The C templates of the cpu backend, one module per family, with the same interface
as the Triton ones: ``render(match, params) -> str`` (a complete candidate that builds
its kernels with ``kforge_native.load_c``) and ``PARAM_SPACE`` (best guess first).

The family names and their modules are listed once, in ``templates.NAMES``
(``templates.CPU_FAMILIES`` maps them to the modules here)."""
