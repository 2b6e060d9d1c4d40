"""Inline references for the layer families (pooling, arg-reductions, scans...): the
spellings and settings the bundled problems do not cover. name -> (family, source)."""

from __future__ import annotations

from tests.agents.offline.test_bundled import ref

POOLING = {
 "max1d": ref("""
    class Model(nn.Module):
        def __init__(self, kernel_size, stride, padding, dilation):
            super().__init__()
            self.pool = nn.MaxPool1d(kernel_size, stride=stride, padding=padding, dilation=dilation)
        def forward(self, x):
            return self.pool(x)
    """, "[torch.randn(batch, ch, length)]", "[kernel_size, stride, padding, dilation]",
    "batch = 3\nch = 5\nlength = 101\nkernel_size = 8\nstride = 1\npadding = 4\ndilation = 3"),
 "max2d_ceil": ref("""
    class Model(nn.Module):
        def forward(self, x):
            return F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True)
    """, "[torch.randn(2, 3, 17, 20).sub(3.0)]"),
 "max3d": ref("""
    class Model(nn.Module):
        def __init__(self, kernel_size, stride, padding, dilation):
            super().__init__()
            self.pool = nn.MaxPool3d(kernel_size, stride=stride, padding=padding, dilation=dilation, ceil_mode=True)
        def forward(self, x):
            return self.pool(x)
    """, "[torch.randn(2, 3, 11, 12, 13)]", "[kernel_size, stride, padding, dilation]",
    "kernel_size = 3\nstride = 2\npadding = 1\ndilation = 3"),
 "avg1d": ref("""
    class Model(nn.Module):
        def __init__(self, kernel_size, stride, padding):
            super().__init__()
            self.pool = nn.AvgPool1d(kernel_size, stride=stride, padding=padding)
        def forward(self, x):
            return self.pool(x)
    """, "[torch.randn(3, 5, 67)]", "[kernel_size, stride, padding]", "kernel_size = 8\nstride = 1\npadding = 4"),
 "avg2d_excl_ceil": ref("""
    class Model(nn.Module):
        def forward(self, x):
            return F.avg_pool2d(x, (3, 2), stride=(2, 3), padding=1, ceil_mode=True, count_include_pad=False)
    """, "[torch.randn(2, 3, 17, 20)]"),
 "avg3d_div": ref("""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.pool = nn.AvgPool3d(3, stride=2, padding=1, divisor_override=5)
        def forward(self, x):
            return self.pool(x)
    """, "[torch.randn(2, 3, 9, 10, 11)]"),
 "avg2d_ceil_incl": ref("""
    class Model(nn.Module):
        def forward(self, x):
            return F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True)
    """, "[torch.randn(2, 3, 16, 19)]"),
 "adaptive": ref("""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.pool = nn.AdaptiveAvgPool2d((1, 1))
        def forward(self, x):
            return self.pool(x)
    """, "[torch.randn(2, 3, 16, 19)]"),
}

ARGREDUCE = {
 "argmax_dim1": ref("""
    class Model(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.dim = dim
        def forward(self, x):
            return torch.argmax(x, dim=self.dim)
    """, "[torch.randn(batch, dim1, dim2)]", "[1]", "batch = 3\ndim1 = 37\ndim2 = 41"),
 "argmin_last_keepdim": ref("""
    class Model(nn.Module):
        def forward(self, x):
            return torch.argmin(x, dim=-1, keepdim=True)
    """, "[torch.randn(5, 7, 300)]"),
 "argmax_ties": ref("""
    class Model(nn.Module):
        def forward(self, x):
            return x.argmax(dim=0)
    """, "[torch.randint(0, 3, (33, 70)).float()]"),
 "argmin_all": ref("""
    class Model(nn.Module):
        def forward(self, x):
            return torch.argmin(x)
    """, "[torch.randint(0, 5, (9, 70)).float()]"),
}

SCAN = {
 "cumsum_last": ref("""
    class Model(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.dim = dim
        def forward(self, x):
            return torch.cumsum(x, dim=self.dim)
    """, "[torch.rand(batch, n)]", "[1]", "batch = 5\nn = 1031"),
 "cumprod_mid": ref("""
    class Model(nn.Module):
        def forward(self, x):
            return torch.cumprod(x, 1)
    """, "[torch.rand(3, 45, 19).add(0.5)]"),
 "cumsum_reverse": ref("""
    class Model(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.dim = dim
        def forward(self, x):
            return torch.cumsum(x.flip(self.dim), dim=self.dim).flip(self.dim)
    """, "[torch.randn(7, 300)]", "[1]"),
 "cumsum_reverse_dim0": ref("""
    class Model(nn.Module):
        def forward(self, x):
            return x.flip(0).cumsum(0).flip(0)
    """, "[torch.randn(33, 5, 6)]"),
 # exclusive: each value the scan of the values before it (a zero slice, then the scan of all but the last)
 "cumsum_exclusive": ref("""
    class Model(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.dim = dim
        def forward(self, x):
            before = torch.cumsum(x.narrow(dim=self.dim, start=0, length=x.size(self.dim) - 1), dim=self.dim)
            first = torch.zeros_like(x.select(self.dim, 0).unsqueeze(self.dim))
            return torch.cat((first, before), dim=self.dim)
    """, "[torch.randn(batch, n)]", "[1]", "batch = 6\nn = 1027"),
 "cumprod_exclusive_mid": ref("""
    class Model(nn.Module):
        def forward(self, x):
            return torch.cat([torch.ones_like(x[:, :1]), x.narrow(1, 0, x.shape[1] - 1).cumprod(1)], 1)
    """, "[torch.rand(3, 40, 70).add(0.5)]"),
}

_BATCH_NORM2D = """
    class Model(nn.Module):
        def __init__(self, num_features):
            super().__init__()
            self.bn = nn.BatchNorm2d(num_features=num_features)
        def forward(self, x):
            return self.bn(x)
    """

CHANNEL_NORM = {
 "batch_norm2d": ref(_BATCH_NORM2D, "[torch.randn(batch, features, 9, 11).mul(2.0).add(3.0)]", "[features]",
                     "batch = 4\nfeatures = 13"),
 # values far from 0 beside their spread: the one-read statistics' shifted sums keep the variance
 "batch_norm2d_far_from_zero": ref(_BATCH_NORM2D, "[torch.randn(batch, features, 9, 11).mul(0.5).add(40.0)]",
                                   "[features]", "batch = 4\nfeatures = 5"),
 "instance_norm2d": ref("""
    class Model(nn.Module):
        def __init__(self, num_features):
            super().__init__()
            self.inorm = nn.InstanceNorm2d(num_features=num_features)
        def forward(self, x):
            return self.inorm(x)
    """, "[torch.randn(batch, features, 10, 13).add(1.0)]", "[features]", "batch = 3\nfeatures = 7"),
 "group_norm": ref("""
    class Model(nn.Module):
        def __init__(self, num_features, num_groups):
            super().__init__()
            self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)
        def forward(self, x):
            return self.gn(x)
    """, "[torch.randn(batch, features, 6, 7)]", "[features, num_groups]", "batch = 3\nfeatures = 12\nnum_groups = 4"),
 # the epilogue: a pointwise tail over per-channel, whole-output and scalar operands, in the writing pass
 "group_norm_epilogue": ref("""
    class Model(nn.Module):
        def __init__(self, features, groups):
            super().__init__()
            self.gn = nn.GroupNorm(groups, features)
            self.scale = nn.Parameter(torch.randn(features, 1, 1))
        def forward(self, x, r):
            return torch.sigmoid(self.gn(x)) * self.scale + r * 0.5
    """, "[torch.randn(3, features, 7, 9), torch.randn(3, features, 7, 9)]", "[features, groups]",
    "features = 12\ngroups = 4"),
 "batch_norm1d_gelu_clamp": ref("""
    class Model(nn.Module):
        def __init__(self, features):
            super().__init__()
            self.bn = nn.BatchNorm1d(features)
        def forward(self, x):
            return F.gelu(self.bn(x)).clamp(min=-0.1, max=2.0)
    """, "[torch.randn(16, features)]", "[features]", "features = 40"),
 "batch_norm1d_affine_off": ref("""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm1d(20, affine=False, eps=1e-3)
        def forward(self, x):
            return self.bn(x)
    """, "[torch.randn(16, 20)]"),
}

CONV = {
 "conv1d_grouped_dilated": ref("""
    class Model(nn.Module):
        def __init__(self, cin, cout, kernel_size, stride, padding, dilation, groups):
            super().__init__()
            self.conv = nn.Conv1d(cin, cout, kernel_size, stride=stride, padding=padding, dilation=dilation,
                                  groups=groups, bias=False)
        def forward(self, x):
            return self.conv(x)
    """, "[torch.randn(3, cin, 37)]", "[cin, cout, kernel_size, stride, padding, dilation, groups]",
    "cin = 6\ncout = 9\nkernel_size = 5\nstride = 2\npadding = 3\ndilation = 2\ngroups = 3"),
 "conv2d_epilogue": ref("""
    class Model(nn.Module):
        def __init__(self, cin, cout, kernel_size, scale):
            super().__init__()
            self.conv = nn.Conv2d(cin, cout, kernel_size, stride=(2, 1), padding=(1, 2))
            self.shift = nn.Parameter(torch.randn(cout, 1, 1))
            self.scale = scale
        def forward(self, x):
            return torch.sigmoid(self.conv(x) + self.shift) * self.scale
    """, "[torch.randn(2, cin, 13, 11)]", "[cin, cout, kernel_size, 0.75]", "cin = 5\ncout = 7\nkernel_size = 3"),
 "depthwise2d_functional": ref("""
    class Model(nn.Module):
        def __init__(self, ch):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(ch, 1, 3, 3))
            self.ch = ch
        def forward(self, x):
            return F.conv2d(x, self.weight, None, 1, 1, 1, self.ch)
    """, "[torch.randn(2, ch, 9, 10)]", "[ch]", "ch = 4"),
 "conv3d": ref("""
    class Model(nn.Module):
        def __init__(self, cin, cout, kernel_size):
            super().__init__()
            self.conv = nn.Conv3d(cin, cout, (kernel_size, 2, 3), padding=1)
        def forward(self, x):
            return torch.relu(self.conv(x))
    """, "[torch.randn(2, cin, 5, 7, 6)]", "[cin, cout, kernel_size]", "cin = 3\ncout = 4\nkernel_size = 3"),
 "conv_transpose2d": ref("""
    class Model(nn.Module):
        def __init__(self, cin, cout, kernel_size, stride, padding, output_padding):
            super().__init__()
            self.conv = nn.ConvTranspose2d(cin, cout, kernel_size, stride=stride, padding=padding,
                                           output_padding=output_padding, groups=2)
        def forward(self, x):
            return self.conv(x) - 0.5
    """, "[torch.randn(2, cin, 6, 5)]", "[cin, cout, kernel_size, stride, padding, output_padding]",
    "cin = 4\ncout = 6\nkernel_size = 3\nstride = 2\npadding = 1\noutput_padding = 1"),
 "conv_transpose1d_dilated": ref("""
    class Model(nn.Module):
        def __init__(self, cin, cout, kernel_size, dilation):
            super().__init__()
            self.conv = nn.ConvTranspose1d(cin, cout, kernel_size, stride=3, padding=2, dilation=dilation)
        def forward(self, x):
            return self.conv(x)
    """, "[torch.randn(2, cin, 9)]", "[cin, cout, kernel_size, dilation]",
    "cin = 3\ncout = 5\nkernel_size = 4\ndilation = 2"),
 "conv_transpose3d": ref("""
    class Model(nn.Module):
        def __init__(self, cin, cout, kernel_size):
            super().__init__()
            self.conv = nn.ConvTranspose3d(cin, cout, kernel_size, stride=2, padding=1, bias=False)
        def forward(self, x):
            return torch.tanh(self.conv(x))
    """, "[torch.randn(1, cin, 3, 4, 3)]", "[cin, cout, kernel_size]", "cin = 3\ncout = 4\nkernel_size = 3"),
 # rows of 86 outputs cut by 16-wide panels: a run of 4 at a row start, under the 6 leading
 # columns a 7-wide transposed window leaves empty (the packing once wrote past its run)
 "conv_transpose2d_short_runs": ref("""
    class Model(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.conv = nn.ConvTranspose2d(cin, cout, (3, 7), bias=False)
        def forward(self, x):
            return self.conv(x)
    """, "[torch.randn(1, cin, 3, 80)]", "[cin, cout]", "cin = 2\ncout = 12"),
 # stride 1, grouped, dilated: the implicit GEMM's first choice (its weight matrix is regrouped on the host)
 "conv_transpose3d_unit_stride_grouped": ref("""
    class Model(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.conv = nn.ConvTranspose3d(cin, cout, (2, 3, 3), padding=(0, 1, 2), dilation=(1, 2, 1), groups=2)
        def forward(self, x):
            return self.conv(x) * 0.5
    """, "[torch.randn(2, cin, 3, 5, 9)]", "[cin, cout]", "cin = 6\ncout = 24"),
 # channel counts for which oneDNN's "any" layout picks a blocked output (nChw16c, or NHWC
 # for 28 channels): the dnnl kernel reads it back with bias and epilogue in one pass of ours
 "conv2d_blocked_output_channel_scale": ref("""
    class Model(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.conv = nn.Conv2d(cin, cout, 3)
            self.scale = nn.Parameter(torch.randn(cout, 1, 1))
        def forward(self, x):
            return torch.relu(self.conv(x)) * self.scale
    """, "[torch.randn(3, cin, 14, 13)]", "[cin, cout]", "cin = 8\ncout = 28"),
 "conv_transpose3d_blocked_output_bias": ref("""
    class Model(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.conv = nn.ConvTranspose3d(cin, cout, 3, stride=2)
        def forward(self, x):
            return F.gelu(self.conv(x) + 0.25)
    """, "[torch.randn(2, cin, 3, 4, 5)]", "[cin, cout]", "cin = 16\ncout = 32"),
}

# norms and losses: written out by agents/offline/composite.py, covered through the pipeline
COMPOSITE = {
 # a product with a boolean mask (the C loop reads the mask as bool), then a scan of it (level1/93)
 "masked_cumsum": ref("""
    class Model(nn.Module):
        def forward(self, x, keep):
            return torch.cumsum(x * keep, dim=1)
    """, "[torch.randn(5, 300), torch.rand(5, 300) > 0.5]"),
 # a softmax over the flattened spatial dims, then back to the shape before the flatten (level2/38)
 "spatial_softmax": ref("""
    class Model(nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.scale = nn.Parameter(torch.randn(1, channels, 1, 1))
        def forward(self, x):
            x = torch.clamp(x * 2.0, 0.0, 1.5)
            b, c, h, w = x.shape
            x = torch.softmax(x.view(b, c, -1), dim=2)
            return x.view(b, c, h, w) * self.scale
    """, "[torch.randn(3, channels, 5, 7)]", "[channels]", "channels = 4"),
 # a cat of computed operands: each one a stage, the cat a stage, then the reduction
 "cat_in_a_chain": ref("""
    class Model(nn.Module):
        def forward(self, x, y):
            return torch.cat([torch.relu(x), y * 2.0], dim=1).sum(dim=1)
    """, "[torch.randn(3, 5, 7), torch.randn(3, 2, 7)]"),
 "frobenius_norm": ref("""
    class Model(nn.Module):
        def forward(self, x):
            return x / torch.norm(x, p="fro")
    """, "[torch.randn(3, 5, 7)]"),
 "l2_norm_rows": ref("""
    class Model(nn.Module):
        def forward(self, x):
            return x / torch.norm(x, p=2, dim=1, keepdim=True)
    """, "[torch.randn(6, 33)]"),
 "l1_norm_mean": ref("""
    class Model(nn.Module):
        def forward(self, x):
            return x / torch.mean(torch.abs(x), dim=1, keepdim=True)
    """, "[torch.randn(6, 33)]"),
 "mse": ref("""
    class Model(nn.Module):
        def forward(self, predictions, targets):
            return torch.mean((predictions - targets) ** 2)
    """, "[torch.randn(8, 40), torch.randn(8, 40)]"),
 "smooth_l1_beta": ref("""
    class Model(nn.Module):
        def forward(self, predictions, targets):
            return F.smooth_l1_loss(predictions, targets, beta=0.5)
    """, "[torch.randn(8, 40) * 2, torch.randn(8, 40)]"),
 "huber_sum_module": ref("""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.loss = nn.HuberLoss(reduction="sum", delta=0.7)
        def forward(self, predictions, targets):
            return self.loss(predictions, targets)
    """, "[torch.randn(8, 40) * 2, torch.randn(8, 40)]"),
 "kl_div_batchmean": ref("""
    class Model(nn.Module):
        def forward(self, predictions, targets):
            return F.kl_div(torch.log(predictions), targets, reduction="batchmean")
    """, "[torch.randn(6, 30).softmax(dim=-1), torch.randn(6, 30).softmax(dim=-1)]"),
 "triplet_margin": ref("""
    class Model(nn.Module):
        def __init__(self, margin):
            super().__init__()
            self.loss_fn = nn.TripletMarginLoss(margin=margin)
        def forward(self, anchor, positive, negative):
            return self.loss_fn(anchor, positive, negative)
    """, "[torch.randn(10, 24), torch.randn(10, 24), torch.randn(10, 24)]", "[margin]", "margin = 1.5"),
}

ATTENTION = {
 "attention_3d_scaled": ref("""
    class Model(nn.Module):
        def forward(self, q, k, v):
            return F.scaled_dot_product_attention(q, k, v, scale=0.3)
    """, "[torch.randn(3, 37, 20), torch.randn(3, 50, 20), torch.randn(3, 50, 24)]"),
 "attention_causal_4d": ref("""
    class Model(nn.Module):
        def forward(self, q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    """, "[torch.randn(2, 2, 45, 16), torch.randn(2, 2, 45, 16), torch.randn(2, 2, 45, 16)]"),
 "relu_attention_3d": ref("""
    import math


    class Model(nn.Module):
        def forward(self, q, k, v):
            return torch.relu(q @ k.transpose(1, 2) / math.sqrt(k.size(-1))) @ v
    """, "[torch.randn(3, 37, 20), torch.randn(3, 50, 20), torch.randn(3, 50, 24)]"),
 "relu_attention_causal": ref("""
    import math


    class Model(nn.Module):
        def __init__(self, longest):
            super().__init__()
            self.register_buffer("bias", torch.tril(torch.ones(longest, longest)).view(1, 1, longest, longest))

        def forward(self, q, k, v):
            T = q.size(-2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            return F.relu(att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))) @ v
    """, "[torch.randn(2, 2, 45, 16), torch.randn(2, 2, 45, 16), torch.randn(2, 2, 45, 12)]", "[longest]",
    "longest = 64"),
}

TRIANGLE = {
 "triu_offset": ref("""
    class Model(nn.Module):
        def forward(self, x):
            return torch.triu(x, diagonal=2)
    """, "[torch.randn(2, 3, 19, 23)]"),
 "tril_wide": ref("""
    class Model(nn.Module):
        def forward(self, x):
            return x.tril(-3)
    """, "[torch.randn(9, 40)]"),
}

CONCAT = {
 "cat_channels": ref("""
    class Model(nn.Module):
        def forward(self, x, y):
            return torch.cat([x, y], dim=1)
    """, "[torch.randn(3, 5, 7, 9), torch.randn(3, 2, 7, 9)]"),
 "cat_last_three": ref("""
    class Model(nn.Module):
        def forward(self, a, b, c):
            return torch.cat((a, b, c), -1)
    """, "[torch.randn(4, 33), torch.randn(4, 1), torch.randn(4, 130)]"),
 "cat_dim0_repeated": ref("""
    class Model(nn.Module):
        def forward(self, x, y):
            return torch.concat([x, y, x], dim=0)
    """, "[torch.randn(6, 5, 3), torch.randn(1, 5, 3)]"),
}

PERMUTE = {
 "transpose_heads": ref("""
    class Model(nn.Module):
        def forward(self, x):
            return x.transpose(1, 2).contiguous()
    """, "[torch.randn(3, 7, 5, 9)]"),
 "permute_channels_last_to_first": ref("""
    class Model(nn.Module):
        def forward(self, x):
            return x.permute(0, 3, 1, 2)
    """, "[torch.randn(2, 11, 13, 70)]"),
 "transpose_twice_matrix": ref("""
    class Model(nn.Module):
        def forward(self, x):
            return x.transpose(0, 1).permute(1, 0).t()
    """, "[torch.randn(67, 45)]"),
 "strided_quarter": ref("""
    class Model(nn.Module):
        def forward(self, x):
            return x[:, 1::2, 0::3, :]
    """, "[torch.randn(2, 13, 17, 5)]"),
}

PAD = {
 "pad_image_sides": ref("""
    class Model(nn.Module):
        def forward(self, x):
            return F.pad(x, [1, 2, 3, 0])
    """, "[torch.randn(2, 3, 9, 11)]"),
 "pad_last_with_value": ref("""
    class Model(nn.Module):
        def forward(self, x):
            return torch.nn.functional.pad(x, (0, 5), "constant", -1.5)
    """, "[torch.randn(7, 13)]"),
 "pad_and_crop": ref("""
    class Model(nn.Module):
        def forward(self, x):
            return F.pad(x, (-2, 3, 4, -1, 1, 1), value=0.25)
    """, "[torch.randn(3, 6, 8, 10)]"),
}

CROSS_ENTROPY = {
 "xent_none": ("cross_entropy", ref("""
    class Model(nn.Module):
        def forward(self, x, t):
            return F.cross_entropy(x, t, reduction="none")
    """, "[torch.randn(13, 37) * 3, torch.randint(0, 37, (13,))]")),
 "xent_mean": ("pipeline", ref("""
    class Model(nn.Module):
        def forward(self, predictions, targets):
            return torch.nn.functional.cross_entropy(predictions, targets)
    """, "[torch.randn(21, 300), torch.randint(0, 300, (21,))]")),
 "xent_module_sum": ("pipeline", ref("""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.loss = nn.CrossEntropyLoss(reduction="sum")
        def forward(self, x, t):
            return self.loss(x, t)
    """, "[torch.randn(9, 50), torch.randint(0, 50, (9,))]")),
}

# eval mode: the running statistics, a per-channel affine (alone: elementwise; after a conv: its epilogue)
EVAL_NORM = {
 "batch_norm3d_eval": ("elementwise", ref("""
    class Model(nn.Module):
        def __init__(self, features):
            super().__init__()
            self.bn = nn.BatchNorm3d(features, eps=1e-4)
            with torch.no_grad():
                self.bn.running_mean.uniform_(-2.0, 2.0)
                self.bn.running_var.uniform_(0.2, 3.0)
                self.bn.weight.uniform_(0.5, 1.5)
            self.eval()
        def forward(self, x):
            return self.bn(x)
    """, "[torch.randn(2, features, 3, 5, 7)]", "[features]", "features = 6")),
 "conv_batch_norm_eval_relu": ("conv", ref("""
    class Model(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.conv = nn.Conv2d(cin, cout, 3, padding=1)
            self.bn = nn.BatchNorm2d(cout, affine=False)
            with torch.no_grad():
                self.bn.running_mean.uniform_(-1.0, 1.0)
                self.bn.running_var.uniform_(0.5, 2.0)
            self.eval()
        def forward(self, x):
            return torch.relu(self.bn(self.conv(x)))
    """, "[torch.randn(2, cin, 12, 10)]", "[cin, cout]", "cin = 5\ncout = 7")),
}

# recurrent layers (more kinds, and the judge: tests/agents/offline/test_recurrent.py)
RECURRENT = {
 "lstm_stacked_h_n": ref("""
    class Model(nn.Module):
        def __init__(self, n_in, hidden):
            super().__init__()
            self.lstm = nn.LSTM(n_in, hidden, 2, batch_first=True)
        def forward(self, x, h0, c0):
            return self.lstm(x, (h0, c0))[1][0]
    """, "[torch.randn(3, 6, n_in), torch.randn(2, 3, hidden), torch.randn(2, 3, hidden)]", "[n_in, hidden]",
    "n_in = 9\nhidden = 11"),
 "gru_bidirectional_output": ref("""
    class Model(nn.Module):
        def __init__(self, n_in, hidden):
            super().__init__()
            self.gru = nn.GRU(n_in, hidden, 1, bidirectional=True)
        def forward(self, x):
            out, _ = self.gru(x)
            return out
    """, "[torch.randn(5, 2, n_in)]", "[n_in, hidden]", "n_in = 7\nhidden = 10"),
}
