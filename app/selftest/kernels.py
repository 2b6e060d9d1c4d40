"""The kernel that part (d) times: a fused ``gelu(x) * sigmoid(g) + 0.5 * x``, as
native C for the CPU and as Triton for CUDA, with its reference problem."""

from __future__ import annotations

REFERENCE = """
import torch
import torch.nn as nn
import torch.nn.functional as F
class Model(nn.Module):
    def forward(self, x, g):
        return F.gelu(x) * torch.sigmoid(g) + 0.5 * x
rows = {rows}
cols = {cols}
def get_inputs():
    return [torch.randn(rows, cols), torch.randn(rows, cols)]
def get_init_inputs():
    return []
"""

C_SOURCE = r"""
#include <math.h>
#include <stdint.h>
void gelu_gate(const float* restrict x, const float* restrict g, float* restrict y, int64_t n) {
    #pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)) / (1.0f + expf(-g[i])) + 0.5f * v;
    }
}
"""
C_PROTO = "void gelu_gate(const float* x, const float* g, float* y, int64_t n)"
CPU_CANDIDATE = f'''
import torch
import torch.nn as nn
from kforge_native import load_c
lib = load_c(r"""{C_SOURCE}""", ["{C_PROTO}"], name="gelu_gate")
class ModelNew(nn.Module):
    def forward(self, x, g):
        x = x.contiguous(); g = g.contiguous()
        y = torch.empty_like(x)
        lib.gelu_gate(x, g, y, x.numel())
        return y
'''

TRITON_CANDIDATE = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl

@triton.jit
def gelu_gate_kernel(x_ptr, g_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # x, g: inputs; y: output; n: element count; BLOCK: elements per program
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    g = tl.load(g_ptr + offs, mask=mask)
    gelu = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offs, gelu / (1.0 + tl.exp(-g)) + 0.5 * x, mask=mask)

class ModelNew(nn.Module):
    def forward(self, x, g):
        x = x.contiguous(); g = g.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        gelu_gate_kernel[(triton.cdiv(n, 1024),)](x, g, y, n, BLOCK=1024)
        return y
'''
