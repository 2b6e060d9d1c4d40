"""The Triton templates of the triton and cuda backends, one module per family:
``render(match, params) -> str`` (a complete candidate whose kernels are
``@triton.jit``) and ``PARAM_SPACE`` (launch parameters, best guess first).

The family names and their modules are listed once, in ``templates.NAMES``
(``templates.FAMILIES`` maps them to the modules here); what both backends'
templates share sits beside this folder (``common``, ``ops``, ``settings``,
``conv_host``, and the pipeline's ``compose``)."""
