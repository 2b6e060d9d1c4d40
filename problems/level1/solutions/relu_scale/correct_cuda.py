# device: cuda
"""relu(x) * scale in one CUDA C++ kernel (load_inline): the cuda backend's path, judged on a GPU only."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

// y[i] = max(x[i], 0) * scale over n contiguous floats, one element per thread.
__global__ void relu_scale_kernel(const float* __restrict__ x, float* __restrict__ y, long n, float scale) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.0f) * scale;
}

torch::Tensor relu_scale(torch::Tensor x, double scale) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat, "a float32 CUDA tensor");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    long n = xc.numel();
    int threads = 256;
    long blocks = (n + threads - 1) / threads;
    if (n > 0) {
        relu_scale_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
            xc.data_ptr<float>(), y.data_ptr<float>(), n, (float)scale);
    }
    return y;
}
"""

ext = load_inline("kforge_relu_scale", cpp_sources="torch::Tensor relu_scale(torch::Tensor x, double scale);",
                  cuda_sources=CUDA_SOURCE, functions=["relu_scale"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return ext.relu_scale(x, float(self.scale))
