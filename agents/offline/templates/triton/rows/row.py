"""What the row kernels (softmax, norm) share: the start of a program that owns one row of a
contiguous (rows, n_cols) matrix."""

# Kernel text (no format fields): the row's pointers and column offsets, and the opening of
# the branch where the whole row fits in one BLOCK.
ROW_START = '''    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * n_cols
    out_row = out_ptr + row * n_cols
    cols = tl.arange(0, BLOCK)
    if ONE_BLOCK:
        mask = cols < n_cols
'''
