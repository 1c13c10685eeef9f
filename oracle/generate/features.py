"""Statement generators beyond one table call: aliasing, control flow and Python constructs.

Each feature builds one candidate statement (simple or compound) from the builder's values
and hands it to ``Builder.attempt``, which keeps it only if it runs. They cover the study's
trigger classes that a straight-line op graph cannot: in-place writes through views
(``expand``, slicing, ``as_strided``, ``.data``, ``index_put_`` with duplicate indices), layout
chains, static and data-dependent branches and loops, and the non-tensor constructs no
fuzzer exercised (ModuleList truthiness, asserts, dict and ``partial`` dispatch,
``manual_seed`` inside forward, generators, module-level state, Python scalars from tensors,
``try``/``except``, closures). ``FEATURES`` maps each name to its function and default weight.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import torch

from .args import fill_call, render_kind
from .builder import Builder
from .table import OpSpec
from .values import Info, literal

Feature = Callable[[Builder], bool]


def _first_op(builder: Builder) -> OpSpec:
    """Any op: render_kind needs one for context, and no kind used here reads it."""
    return builder.table.ops[0]


def _aliasing_tags(builder: Builder, info: Info) -> tuple[str, ...]:
    """``aliased-mutation`` when another value shares ``info``'s storage, and
    ``input-mutation`` when an input does (or ``info`` is an input)."""
    sharing = [o for o in builder.pool.values()
               if info.storage and o.storage == info.storage and o.name != info.name]
    tags = ("aliased-mutation",) if sharing else ()
    if info.origin == "input" or any(o.origin == "input" for o in sharing):
        tags += ("input-mutation",)
    return tags


# ---- plain ops ----------------------------------------------------------------------------


def op(builder: Builder) -> bool:
    """``vN = <table call>``."""
    return builder.op_statement()


def view_op(builder: Builder) -> bool:
    """A view or layout op from the table (transpose, expand, as_strided, slicing...)."""
    return builder.op_statement(lambda spec: "view" in spec.tags or "layout" in spec.tags)


# ---- in-place and aliasing ----------------------------------------------------------------


def _inplace_call(builder: Builder, target: Info) -> tuple[str, str] | None:
    """``target.<op>_(...)`` text for an in-place op accepting ``target``, and the op id."""
    def accept(spec: OpSpec) -> bool:
        low, high = spec.rank
        return bool(spec.inplace and spec.method and target.dtype_name in spec.dtypes
                     and low <= target.rank <= high and (target.numel or not spec.nonempty))

    spec = builder.choose_op(accept)
    call = spec and fill_call(builder, spec, target, "method")
    if not call:
        return None
    prefix = f"{target.name}.{spec.method}("
    if not call.text.startswith(prefix):
        return None
    return f"{target.name}.{spec.inplace}(" + call.text[len(prefix):], spec.id


def inplace(builder: Builder) -> bool:
    """An in-place op on some value: an input, a local, or a view of either."""
    target = builder.pick(lambda i: i.origin in ("local", "input"))
    made = target and _inplace_call(builder, target)
    if not made:
        return False
    tags = ("inplace",) + _aliasing_tags(builder, target)
    return builder.attempt([made[0]], ops=(made[1],), features=tags, reads=(target.name,))


def view_then_write(builder: Builder) -> bool:
    """Take a view, then write through it: the base changes too."""
    if not view_op(builder):
        return False
    view = max(builder.pool.values(), key=lambda i: (i.born, i.name))
    made = _inplace_call(builder, view)
    if not made:
        return False
    tags = ("inplace", "write-through-view") + _aliasing_tags(builder, view)
    return builder.attempt([made[0]], ops=(made[1],), features=tags, reads=(view.name,))


def slice_assign(builder: Builder) -> bool:
    """``v[slices] = rhs`` or ``v[slices].copy_(rhs)``: a write into part of a tensor."""
    target = builder.pick(lambda i: i.rank >= 1 and i.origin in ("local", "input"))
    if target is None:
        return False
    index = render_kind(builder, "slices", target, _first_op(builder))
    rng = builder.rng
    source = builder.pick(lambda i: i.shape == target.shape and i.name != target.name)
    if source is not None and rng.random() < 0.5:
        rhs = f"{source.name}[{index}]"
    elif target.dtype == torch.bool:
        rhs = rng.choice(("True", "False"))
    else:
        rhs = literal(rng.choice((0, -1, 2, 0.5, -0.0, float("inf"), float("nan"))))
    if rng.random() < 0.3 and source is not None:
        line = f"{target.name}[{index}].copy_({rhs})"
    else:
        line = f"{target.name}[{index}] = {rhs}"
    tags = ("slice-assignment", "inplace") + _aliasing_tags(builder, target)
    return builder.attempt([line], features=tags,
                           reads=(target.name,))


def index_put(builder: Builder) -> bool:
    """``index_put_`` / ``index_add_`` / ``v[idx] += s`` with duplicate indices."""
    target = builder.pick(lambda i: i.rank >= 1 and i.shape[0] > 0 and i.dtype != torch.bool
                          and i.origin in ("local", "input"))
    if target is None:
        return False
    rng, size = builder.rng, target.shape[0]
    idx = [rng.randrange(size) for _ in range(rng.randint(2, 2 * size + 1))]
    index = f"torch.tensor({idx})"
    rest = target.shape[1:]
    values = f"torch.ones({literal((len(idx), *rest))}, dtype={target.dtype})"
    choice = rng.random()
    if choice < 0.4:
        line = f"{target.name}.index_put_(({index},), {values}, accumulate=True)"
    elif choice < 0.7:
        line = f"{target.name}.index_add_(0, {index}, {values})"
    else:
        line = f"{target.name}[{index}] += {literal(rng.choice((1, 2)))}"
    tags = ("index-put", "duplicate-indices", "inplace") + _aliasing_tags(builder, target)
    return builder.attempt([line], features=tags,
                           reads=(target.name,))


def data_write(builder: Builder) -> bool:
    """A write through ``.data`` (invisible to autograd), on a parameter or a local."""
    target = builder.pick(lambda i: i.dtype.is_floating_point and i.origin in ("param",
                                                                                "local"))
    if target is None:
        return False
    method = builder.rng.choice(("mul_(0.5)", "add_(1)", "clamp_(-1, 1)", "zero_()"))
    return builder.attempt([f"{target.name}.data.{method}"],
                           features=("data-write", "inplace"), reads=(target.name,))


def layout_chain(builder: Builder) -> bool:
    """transpose/permute → contiguous (or channels-last) → a later op reads it."""
    subject = builder.pick(lambda i: i.rank >= 2)
    if subject is None:
        return False
    rng, rank, name = builder.rng, subject.rank, builder.fresh()
    if rank == 4 and rng.random() < 0.4:
        chain = ".contiguous(memory_format=torch.channels_last)"
    elif rng.random() < 0.5:
        a, b = rng.sample(range(rank), 2)
        chain = f".transpose({a}, {b}).contiguous()"
    else:
        order = list(range(rank))
        rng.shuffle(order)
        chain = f".permute{literal(tuple(order))}.contiguous()"
    if not builder.attempt([f"{name} = {subject.name}{chain}"], (name,),
                           features=("layout-chain",), reads=(subject.name,)):
        return False
    return builder.op_statement() or True


# ---- control flow -------------------------------------------------------------------------


def _branches(builder: Builder, subject: Info) -> tuple[str, str, list[str]] | None:
    first = builder.same_expression(subject)
    second = first and builder.same_expression(subject)
    if not second:
        return None
    return first[0], second[0], [first[1], second[1]]


def _static_condition(builder: Builder, subject: Info) -> str:
    rng, shape = builder.rng, subject.shape
    options = [f"{subject.name}.dim() == {subject.rank}",
               f"{subject.name}.dtype == {subject.dtype}", f"{subject.name}.is_contiguous()",
               f"isinstance({subject.name}, torch.Tensor) and {subject.name}.numel() > 2"]
    if shape:
        dim = rng.randrange(len(shape))
        options.append(f"{subject.name}.shape[{dim}] > {rng.randint(0, 4)}")
    if builder.draft.inputs and rng.random() < 0.3:
        builder.draft.uses_self = True
        return "self.training"
    return rng.choice(options)


def _data_condition(builder: Builder, subject: Info) -> str:
    name = subject.name
    options = [f"({name} > 0).any()", f"{name}.float().sum() > 0",
               f"torch.isnan({name}.float()).any()", f"{name}.float().mean() < 0.5"]
    if subject.numel:
        options.append(f"{name}.max() > {literal(builder.rng.choice((0, 1, 0.5)))}")
        options.append(f"{name}.float().abs().sum().item() > 1.0")
    return builder.rng.choice(options)


def _if_else(builder: Builder, data: bool) -> bool:
    subject = builder.pick(lambda i: True)
    made = subject and _branches(builder, subject)
    if not made:
        return False
    cond = (_data_condition if data else _static_condition)(builder, subject)
    name = builder.fresh()
    if builder.rng.random() < 0.3:
        lines = [f"{name} = {made[0]} if {cond} else {made[1]}"]
    else:
        lines = [f"if {cond}:", f"    {name} = {made[0]}", "else:", f"    {name} = {made[1]}"]
    feature = "data-dependent-branch" if data else "static-branch"
    return builder.attempt(lines, (name,), tuple(made[2]), (feature,), reads=(subject.name,))


def static_branch(builder: Builder) -> bool:
    """``if`` on shapes, dtypes, ``self.training``: resolved while tracing."""
    return _if_else(builder, data=False)


def data_branch(builder: Builder) -> bool:
    """``if`` on tensor values: a graph break or a guard."""
    return _if_else(builder, data=True)


def _carried(builder: Builder) -> Info | None:
    """``vN = vK`` kept as its own statement: a loop-carried value with a fresh name."""
    subject = builder.pick(lambda i: True)
    if subject is None:
        return None
    name = builder.fresh()
    if not builder.attempt([f"{name} = {subject.name}"], (name,), reads=(subject.name,)):
        return None
    return builder.pool[name]


def for_range(builder: Builder) -> bool:
    """A static loop whose body reassigns a carried value."""
    carried = _carried(builder)
    made = carried and builder.same_expression(carried)
    if not made:
        return False
    body = made[0]
    if carried.dtype != torch.bool and builder.rng.random() < 0.5:
        body = f"({body}) + i"
    count = builder.rng.randint(1, 3)
    lines = [f"for i in range({count}):", f"    {carried.name} = {body}"]
    return builder.attempt(lines, (carried.name,), (made[1],), ("loop",))


def while_data(builder: Builder) -> bool:
    """A loop whose trip count depends on tensor values (bounded)."""
    carried = _carried(builder)
    made = carried and builder.same_expression(carried)
    if not made:
        return False
    counter = builder.fresh("c")
    limit = builder.rng.choice((1.0, 4.0, 16.0))
    lines = [f"{counter} = 0",
             f"while {carried.name}.float().abs().sum() > {limit} and {counter} < 3:",
             f"    {carried.name} = {made[0]}", f"    {counter} += 1"]
    return builder.attempt(lines, (carried.name,), (made[1],), ("data-dependent-loop",))


def tensor_loop(builder: Builder) -> bool:
    """Iterate over a tensor's first dimension (unrolled by Dynamo)."""
    subject = builder.pick(lambda i: i.rank >= 1 and 0 < i.shape[0] <= 6
                           and i.dtype != torch.bool)
    if subject is None:
        return False
    name = builder.fresh()
    lines = [f"{name} = torch.zeros_like({subject.name}[0])",
             f"for row in {subject.name}:", f"    {name} = {name} + row"]
    return builder.attempt(lines, (name,), features=("tensor-iteration", "loop"),
                           reads=(subject.name,))


# ---- modules and Python constructs --------------------------------------------------------


def module_list(builder: Builder) -> bool:
    """A ModuleList (possibly empty) run in a loop or tested for truthiness."""
    subject = builder.pick(lambda i: i.dtype.is_floating_point and i.rank >= 1)
    if subject is None:
        return False
    rng, name = builder.rng, builder.fresh()
    field_name = builder.fresh("blocks")
    width = subject.shape[-1]
    pool = ["nn.ReLU()", "nn.Tanh()", "nn.Identity()", "nn.GELU()", "nn.Sigmoid()"]
    if width:
        pool.append(f"nn.Linear({width}, {width}, dtype={subject.dtype})")
    members = [rng.choice(pool) for _ in range(rng.choice((0, 1, 2, 3)))]
    init = [f"self.{field_name} = nn.ModuleList([{', '.join(members)}])"]
    choice = rng.random()
    if choice < 0.4:
        lines = [f"{name} = {subject.name}", f"for block in self.{field_name}:",
                 f"    {name} = block({name})"]
        features = ("modulelist",)
    else:
        fallback = builder.same_expression(subject)
        if fallback is None:
            return False
        blocks = f"self.{field_name}"
        test = rng.choice((blocks, f"not {blocks}", f"len({blocks}) > 1"))
        first, second = f"{blocks}[0]({subject.name})", f"{blocks}[1]({subject.name})"
        then, other = {blocks: (first, fallback[0]), f"not {blocks}": (fallback[0], first),
                       f"len({blocks}) > 1": (second, fallback[0])}[test]
        lines = [f"if {test}:", f"    {name} = {then}", "else:", f"    {name} = {other}"]
        features = ("modulelist", "modulelist-truthiness")
    builder.draft.uses_self = True
    return builder.attempt(lines, (name,), features=features, init=init,
                           reads=(subject.name,))


def assertion(builder: Builder) -> bool:
    """``assert`` on shapes, dtypes or values (all true for the program's inputs)."""
    subject = builder.pick(lambda i: True)
    if subject is None:
        return False
    name = subject.name
    options = [f"assert {name}.dim() == {subject.rank}, 'unexpected rank'",
               f"assert {name}.dtype == {subject.dtype}",
               f"assert {name}.numel() == {subject.numel}, f'got {{{name}.shape}}'",
               f"assert ({name}.float().abs() >= 0).any() or {name}.numel() == 0 "
               f"or {name}.float().isnan().all()"]
    return builder.attempt([builder.rng.choice(options)], features=("assert",),
                           reads=(name,))


_PARTIALS = ("partial(torch.mul, other=2.0)", "partial(torch.add, other=-1)",
             "partial(torch.clamp, min=-1.0)", "partial(torch.sub, alpha=2, other=0.5)",
             "partial(torch.where, torch.tensor(True))")


def dict_dispatch(builder: Builder) -> bool:
    """Functions in a dict (``functools.partial`` values, odd keys) looked up or iterated."""
    subject = builder.pick(lambda i: i.dtype != torch.bool)
    if subject is None:
        return False
    rng = builder.rng
    table, name = builder.fresh("fns"), builder.fresh()
    keys = rng.sample(['"scale"', '"shift"', "(0, 'a')", "3", '"clip"'], 3)
    entries = ", ".join(f"{k}: {v}" for k, v in zip(keys, rng.sample(_PARTIALS[:4], 3)))
    lines = [f"{table} = {{{entries}}}"]
    if rng.random() < 0.5:
        lines.append(f"{name} = {table}[{rng.choice(keys)}]({subject.name})")
    else:
        lines += [f"{name} = {subject.name}", f"for key, fn in {table}.items():",
                  f"    {name} = fn({name})"]
    return builder.attempt(lines, (name,), features=("dict-dispatch", "partial"),
                           reads=(subject.name,))


def seeded_random(builder: Builder) -> bool:
    """``torch.manual_seed`` inside forward, then random draws."""
    subject = builder.pick(lambda i: i.dtype in (torch.float32, torch.float64))
    if subject is None:
        return False
    rng, name = builder.rng, builder.fresh()
    draw = rng.choice((f"torch.rand_like({subject.name})", f"torch.randn_like({subject.name})",
                       f"F.dropout({subject.name}, p=0.5, training=True)",
                       f"{subject.name} * torch.rand({literal(subject.shape)}, "
                       f"dtype={subject.dtype})"))
    lines = [f"torch.manual_seed({rng.randint(0, 99)})", f"{name} = {draw}"]
    return builder.attempt(lines, (name,), features=("manual-seed", "rng"),
                           settings={"inductor.fallback_random": True}, reads=(subject.name,))


def generator(builder: Builder) -> bool:
    """A local generator function or a generator expression consumed in forward."""
    subject = builder.pick(lambda i: i.dtype != torch.bool)
    if subject is None:
        return False
    rng, name = builder.rng, builder.fresh()
    if subject.rank >= 1 and subject.shape[0] and rng.random() < 0.5:
        lines = [f"{name} = sum(row * {rng.choice((0.5, 2, -1))} "
                 f"for row in {subject.name}.unbind(0))"]
        features = ("generator-expression",)
    else:
        function = builder.fresh("gen")
        lines = [f"def {function}(t):", "    yield t + 1", "    yield t * 2",
                 "    return 'done'",
                 f"{name} = torch.stack(list({function}({subject.name})))"]
        features = ("generator",)
    return builder.attempt(lines, (name,), features=features, reads=(subject.name,))


def module_state(builder: Builder) -> bool:
    """Module-level state changed in forward: a list appended to, a dict or global counter."""
    subject = builder.pick(lambda i: True)
    if subject is None:
        return False
    rng, name = builder.rng, builder.fresh()
    choice = rng.random()
    if choice < 0.35:
        store = builder.fresh("TRACE").upper()
        record = rng.choice((f"{subject.name}.shape", f"{subject.name}.dtype",
                             f"{subject.name}.dim()"))
        return builder.attempt([f"{store}.append({record})"], features=("module-state",),
                               module_lines=[f"{store} = []"], reads=(subject.name,))
    if choice < 0.7 and subject.dtype != torch.bool:
        store = builder.fresh("STATE").upper()
        lines = [f"{store}['calls'] += 1", f"{name} = {subject.name} * {store}['calls']"]
        return builder.attempt(lines, (name,), features=("module-state",),
                               module_lines=[f"{store} = {{'calls': 0}}"],
                               reads=(subject.name,))
    counter = builder.fresh("COUNT").upper()
    lines = [f"{counter} += 1"]
    return builder.attempt(lines, features=("module-state", "global-rebinding"),
                           module_lines=[f"{counter} = 0"], global_names=(counter,))


def python_scalar(builder: Builder) -> bool:
    """A Python number taken from a tensor (``item()``, ``float()``, shapes) and used."""
    subject = builder.pick(lambda i: True)
    if subject is None:
        return False
    rng, scalar = builder.rng, builder.fresh("s")
    options = [f"{subject.name}.dim()"] + ([f"{subject.name}.shape[-1]",
                                            f"len({subject.name})"] if subject.rank else [])
    if subject.numel and subject.dtype != torch.bool:
        options += [f"{subject.name}.max().item()", f"float({subject.name}.float().sum())"]
    value = rng.choice(options)
    tags = ("python-scalar", "item") if "item" in value or "float(" in value else (
        "python-scalar",)
    if not builder.attempt([f"{scalar} = {value}"], (scalar,), features=tags,
                           reads=(subject.name,)):
        return False
    return builder.op_statement() or True


def try_except(builder: Builder) -> bool:
    """``try``/``except RuntimeError`` around an op that fails for some layouts."""
    subject = builder.pick(lambda i: i.rank >= 1)
    if subject is None:
        return False
    name = builder.fresh()
    lines = ["try:", f"    {name} = {subject.name}.view(-1)", "except RuntimeError:",
             f"    {name} = {subject.name}.reshape(-1) * 2"]
    return builder.attempt(lines, (name,), features=("try-except",), reads=(subject.name,))


def closure(builder: Builder) -> bool:
    """A lambda or nested function over a local value."""
    subject = builder.pick(lambda i: True)
    made = subject and builder.same_expression(subject)
    if not made:
        return False
    function, name = builder.fresh("fn"), builder.fresh()
    body = re.sub(rf"\b{re.escape(subject.name)}\b", "t", made[0])
    if builder.rng.random() < 0.5:
        lines = [f"{function} = lambda t: {body}", f"{name} = {function}({subject.name})"]
    else:
        lines = [f"def {function}(t):", f"    return {body}",
                 f"{name} = {function}({subject.name})"]
    return builder.attempt(lines, (name,), (made[1],), ("closure",), reads=(subject.name,))


def comprehension(builder: Builder) -> bool:
    """A list comprehension over slices, stacked back."""
    subject = builder.pick(lambda i: i.rank >= 1 and 0 < i.shape[0] <= 6)
    if subject is None:
        return False
    name = builder.fresh()
    dim = builder.rng.randrange(subject.rank)
    lines = [f"{name} = torch.stack([part.flip(0) if k % 2 else part for k, part in "
             f"enumerate({subject.name}.unbind({dim}))], dim={dim})"]
    return builder.attempt(lines, (name,), features=("list-comprehension",),
                           reads=(subject.name,))


FEATURES: dict[str, tuple[Feature, float]] = {
    "op": (op, 40.0),
    "view-op": (view_op, 6.0),
    "inplace": (inplace, 6.0),
    "view-then-write": (view_then_write, 4.0),
    "slice-assignment": (slice_assign, 3.0),
    "index-put": (index_put, 2.0),
    "data-write": (data_write, 1.5),
    "layout-chain": (layout_chain, 3.0),
    "static-branch": (static_branch, 2.5),
    "data-branch": (data_branch, 3.0),
    "loop": (for_range, 2.0),
    "data-loop": (while_data, 1.5),
    "tensor-loop": (tensor_loop, 1.0),
    "modulelist": (module_list, 2.0),
    "assert": (assertion, 1.5),
    "dict-dispatch": (dict_dispatch, 1.5),
    "manual-seed": (seeded_random, 1.0),
    "generator": (generator, 1.5),
    "module-state": (module_state, 1.5),
    "python-scalar": (python_scalar, 2.0),
    "try-except": (try_except, 0.8),
    "closure": (closure, 1.2),
    "comprehension": (comprehension, 1.0),
}
