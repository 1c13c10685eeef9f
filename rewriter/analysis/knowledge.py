"""What the static inference knows about the torch API, as plain data.

Every table errs on the side of "unknown": a function is listed as returning a
tensor only when it returns a single tensor for every argument list. Functions
that return tuples for some arguments (``torch.max(x, dim)``) are handled in
``inference.py`` by looking at the arguments.
"""

import builtins

# torch.<name>(...) that always return one tensor.
TORCH_TENSOR_FUNCTIONS = frozenset(
    """
    abs absolute acos acosh add addbmm addcdiv addcmul addmm addmv addr adjoint all
    amax amin angle any arange arccos arccosh arcsin arcsinh arctan arctan2 arctanh argmax argmin
    argsort argwhere as_strided as_tensor asarray asin asinh atan atan2 atanh baddbmm bernoulli
    bitwise_and bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift bitwise_xor
    block_diag bmm broadcast_to bucketize cartesian_prod cat cdist ceil celu chain_matmul
    cholesky clamp clamp_max clamp_min clip clone column_stack complex concat concatenate conj
    contiguous copysign cos cosh count_nonzero cov cross cumprod cumsum deg2rad det diag
    diag_embed diagflat diagonal diff digamma dist div divide dot dropout einsum empty empty_like
    empty_strided eq erf erfc erfinv exp exp2 expm1 eye flatten flip fliplr flipud float_power
    floor floor_divide fmax fmin fmod frac from_numpy full full_like gather gcd ge gelu ger
    greater greater_equal gt heaviside hstack hypot i0 igamma igammac imag index_add
    index_copy index_fill index_put index_reduce index_select inner inverse isclose isfinite
    isin isinf isnan isneginf isposinf isreal kron lcm ldexp le lerp less less_equal lgamma
    linspace log log10 log1p log2 logaddexp logaddexp2 logcumsumexp logdet logical_and
    logical_not logical_or logical_xor logit logspace logsumexp lt masked_fill masked_scatter
    ones ones_like conv1d conv2d conv3d layer_norm group_norm batch_norm embedding bincount histc
    masked_select matmul matrix_exp matrix_power maximum mean minimum mm moveaxis movedim msort
    mul multinomial multiply mv mvlgamma nan_to_num nanmean nanquantile nansum narrow
    narrow_copy ne neg negative nextafter nonzero_static norm normal not_equal outer
    permute pinverse poisson polar polygamma positive pow prod quantile rad2deg rand rand_like
    randint randint_like randn randn_like randperm range ravel real reciprocal relu remainder
    renorm repeat_interleave reshape resolve_conj resolve_neg roll rot90 round rsqrt rsub
    scalar_tensor scatter scatter_add scatter_reduce searchsorted select select_scatter selu
    sgn sigmoid sign signbit sin sinc sinh slice_scatter softmax log_softmax sqrt square
    squeeze stack std sub subtract sum swapaxes swapdims t take take_along_dim tan tanh tensor
    tensordot tile trace transpose trapezoid trapz tril tril_indices triu triu_indices true_divide
    trunc unsqueeze vander var vdot view_as_complex view_as_real vstack xlogy zeros
    zeros_like
    """.split()
)

# torch.nn.functional.<name>(...) that always return one tensor.
FUNCTIONAL_TENSOR_FUNCTIONS = frozenset(
    """
    adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d alpha_dropout avg_pool1d
    avg_pool2d avg_pool3d batch_norm binary_cross_entropy binary_cross_entropy_with_logits
    celu conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d
    cosine_similarity cross_entropy dropout dropout1d dropout2d dropout3d elu embedding gelu
    glu group_norm grid_sample gumbel_softmax hardshrink hardsigmoid hardswish hardtanh
    huber_loss instance_norm interpolate kl_div l1_loss layer_norm leaky_relu linear
    local_response_norm log_softmax logsigmoid mish mse_loss nll_loss normalize one_hot pad
    pairwise_distance pixel_shuffle pixel_unshuffle prelu relu relu6 rms_norm rrelu
    scaled_dot_product_attention selu sigmoid silu smooth_l1_loss softmax softmin softplus
    softshrink softsign tanh tanhshrink threshold unfold fold upsample
    """.split()
)

# Tensor methods that return one tensor (in-place methods ending in "_" do too).
TENSOR_METHODS = frozenset(
    """
    abs acos add addcdiv addcmul addmm all amax amin any argmax argmin argsort asin atan
    atan2 bernoulli bfloat16 bitwise_and bitwise_not bitwise_or bitwise_xor bmm bool
    broadcast_to byte ceil char clamp clamp_max clamp_min clip clone contiguous cos cosh
    cpu cuda cumprod cumsum detach diag diagonal diff div double eq erf exp expand expand_as
    expm1 flatten flip float floor floor_divide fmod frac gather ge half index_add
    index_fill index_select int isfinite isinf isnan le lerp log log10 log1p log2
    logical_and logical_not logical_or logical_xor logsumexp long lt masked_fill
    masked_select matmul maximum mean minimum mm mul nan_to_num nansum narrow ne neg new_empty
    dot outer cross kron exp2 sinh tan erfinv lgamma digamma logit sgn signbit masked_scatter
    new_full new_ones new_tensor new_zeros norm permute pow prod reciprocal relu remainder
    repeat repeat_interleave reshape reshape_as roll round rsqrt scatter scatter_add select
    sigmoid sign sin sinh softmax log_softmax sqrt square squeeze std sub sum t tanh tile to
    transpose tril triu trunc type_as unflatten unsqueeze var view view_as where
    """.split()
)

# torch.<name>(...) that return a Python number or bool.
TORCH_NUMBER_FUNCTIONS = frozenset(
    "allclose equal numel is_tensor is_floating_point is_complex is_nonzero".split()
)

# Calls returning a tuple or list of tensors: unpacking or iterating them gives tensors.
TENSOR_SEQUENCE_FUNCTIONS = frozenset(
    "chunk split unbind tensor_split hsplit vsplit dsplit meshgrid broadcast_tensors".split()
)

# Pooling that returns a tensor unless called with return_indices=True.
POOLS_WITH_INDICES = frozenset(
    """
    MaxPool1d MaxPool2d MaxPool3d AdaptiveMaxPool1d AdaptiveMaxPool2d AdaptiveMaxPool3d
    max_pool1d max_pool2d max_pool3d adaptive_max_pool1d adaptive_max_pool2d adaptive_max_pool3d
    """.split()
)

# Reductions that return one tensor without a dim argument but a (values, indices)
# tuple with one: torch.max(x) vs torch.max(x, 1).
TUPLE_WITH_DIM = frozenset("max min median nanmedian".split())

# Tensor attributes and what they hold.
TENSOR_ATTRIBUTES = frozenset("T mT H mH real imag data".split())
NUMBER_ATTRIBUTES = frozenset("ndim is_cuda is_leaf requires_grad is_sparse is_quantized".split())
OBJECT_ATTRIBUTES = frozenset("dtype device layout".split())

# Tensor methods that return a Python number (or bool).
NUMBER_METHODS = frozenset(
    """
    item dim ndimension numel nelement element_size is_contiguous is_floating_point
    is_complex data_ptr get_device is_pinned is_shared nbytes itemsize
    """.split()
)

# torch.nn layer classes whose instances map one tensor to one tensor.
TENSOR_LAYERS = frozenset(
    """
    AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d AlphaDropout AvgPool1d AvgPool2d
    AvgPool3d BatchNorm1d BatchNorm2d BatchNorm3d CELU Conv1d Conv2d Conv3d ConvTranspose1d
    ConvTranspose2d ConvTranspose3d Dropout Dropout1d Dropout2d Dropout3d ELU Embedding
    Flatten GELU GLU GroupNorm Hardshrink Hardsigmoid Hardswish Hardtanh
    InstanceNorm1d InstanceNorm2d InstanceNorm3d LayerNorm LeakyReLU Linear LocalResponseNorm
    LogSigmoid LogSoftmax Mish PReLU PixelShuffle PixelUnshuffle ReLU ReLU6 RMSNorm SELU SiLU
    Sigmoid Softmax Softmax2d Softmin Softplus Softshrink Softsign Tanh Tanhshrink Threshold
    Unflatten Upsample ZeroPad1d ZeroPad2d ZeroPad3d
    """.split()
)

# Functions and methods that draw random numbers: they advance the RNG state,
# so they are not pure even though they return a tensor.
RANDOM = frozenset(
    """
    bernoulli multinomial normal poisson rand rand_like randint randint_like randn randn_like
    randperm dropout alpha_dropout dropout1d dropout2d dropout3d gumbel_softmax rrelu
    """.split()
)

# Python builtins by what they return.
BUILTINS_RETURNING_NUMBER = frozenset(
    "len int float bool complex ord hash id isinstance issubclass callable hasattr".split()
)
BUILTINS_RETURNING_SEQUENCE = frozenset(
    "str repr list tuple dict set frozenset sorted range enumerate zip bytes format".split()
)
# Builtins with no side effects, for the `pure` guard.
PURE_BUILTINS = BUILTINS_RETURNING_NUMBER | BUILTINS_RETURNING_SEQUENCE | frozenset(
    "abs min max round sum divmod pow reversed any all getattr".split()
)
PYTHON_BUILTINS = frozenset(dir(builtins))
# The graph-break pack's own select helper (rules/helpers/select.py), as an earlier
# round of the same run inserts it: ``_eqrw_where(c, a, b)`` is ``a if c else b`` eagerly and
# torch.where traced, a tensor when both operands are, with no side effect. Knowing it lets a
# later round take the ``if`` around a select an earlier round made (an ``if/elif/else``
# chain).
SELECT_HELPER = "_eqrw_where"

# The builtin exceptions ``_eqrw_check`` (rules/helpers/guard.py) raises by name under
# TorchScript, which cannot raise an exception class passed as a value; any other name raises
# RuntimeError there.
SCRIPTED_EXCEPTIONS = ("ValueError", "TypeError", "IndexError", "KeyError", "AssertionError",
                       "NotImplementedError", "FloatingPointError", "ZeroDivisionError",
                       "OverflowError", "ArithmeticError", "LookupError", "Exception")
