"""Observers installed in a runner child before untrusted code is loaded, one module each:

* ``launches.LaunchCounter`` counts custom-kernel launches: Triton kernels (compiled or
  interpreted), functions of extensions built with ``load_inline``/``load``,
  and native functions loaded with ``kforge_native.load_c``/``load_cpp``.
* ``recorder.OpRecorder`` records the aten ops a forward call runs (a dispatch mode, so
  ops issued from C++ extensions are seen too); ``ops`` says which ops are structural.
* ``tamper.TamperGuard`` remembers the identity of the functions that timing, syncing
  and comparing rely on, and names those that were replaced; ``tamper.EvasionWatch``
  names a call that turns the op recorder off.
* ``threads`` reports threads and processes still alive (or working) after forward.
* ``syscall_filter`` is not an observer but a barrier, installed before a CPU candidate's
  timed pass: the kernel kills the process for a new thread, process or program.
* ``ablation.Ablation`` skips every custom kernel (and poisons fresh allocations) for
  one extra forward call: if the output is still right, the kernels are decoys.

All of this lives in the candidate's process, so it is evidence, not proof;
the judge decides on plain tensors it compares itself, and on CUDA the outside
clock corroborates the timings.
"""

from . import ablation, launches, ops, recorder, syscall_filter, tamper, threads  # noqa: F401  (guards.<observer>.<name>)
