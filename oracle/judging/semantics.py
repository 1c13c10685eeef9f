"""Behaviours whose eager result is not defined: what a PyTorch maintainer closes on sight.

One concern: recognising those behaviours in a run (the rules, the dispatch mode that records
their events and follows what they taint, and the measurements each rule makes of an
operation's arguments); what the triage then concludes is ``judge.py``'s.

Before a difference between eager and compiled runs is called a compiler bug, the triage
asks whether eager's behaviour was defined at all. The program runs eagerly once more (the
``CHECKED`` variant) under ``SemanticsMode``, a ``TorchDispatchMode`` that watches every
ATen operation as it executes, with the values it executes on, and records each **event**
of these rules:

=========================  ====================  ==============================================
rule                       verdict               recognised when
=========================  ====================  ==============================================
``overlapping-write``      ``unsupported``       an operation writes into a tensor some of whose
                                                 elements share memory (``expand``, zero
                                                 strides, overlapping ``unfold`` windows or
                                                 ``as_strided``), an input included, or into
                                                 a view taken of such a tensor
``duplicate-index-write``  undefined-behaviour   an indexed write without accumulation
                                                 (``index_put_``, ``index_copy_``, ``scatter_``,
                                                 ``put_``) writes different values to one
                                                 element: documented as nondeterministic
``float-to-int``           undefined-behaviour   a floating NaN, infinity or value outside the
                                                 target's range is converted to an integer
                                                 dtype (C++ undefined behaviour; pytorch#121226)
``overlapping-read-write`` undefined-behaviour   an operation reads memory it also writes,
                                                 laid out otherwise (``x[:2] = x.t()[:1]``):
                                                 the result depends on the order of writes
``as-strided-outside``     undefined-behaviour   ``as_strided`` of a tensor the program made
                                                 reaches memory outside that tensor's elements:
                                                 an intermediate's storage layout is not part
                                                 of its value (the compiler may lay it out
                                                 otherwise)
``uninitialised-read``     undefined-behaviour   an operation reads elements of ``empty``,
                                                 ``new_empty``, ``empty_like``,
                                                 ``empty_strided`` never written since
``tie-break``              undefined-behaviour   the indices of an unstable ``sort``/``argsort``,
                                                 ``topk``, ``kthvalue``, ``mode`` or
                                                 ``median(dim)`` over equal values (documented
                                                 as unspecified; ``argmax``/``argmin``/``max``
                                                 promise the first, so they are not here)
``compile-dependent-path`` undefined-behaviour   code outside torch asks
                                                 ``torch.compiler.is_compiling()`` (or
                                                 ``is_dynamo_compiling()``, or a library's
                                                 wrapper of them): compiled, it is answered
                                                 True and may take another path, so the two
                                                 runs need not run the same program
                                                 (transformers' CSM keeps custom position ids
                                                 only when compiled); every output counts
=========================  ====================  ==============================================

An event does not excuse a difference by being present. Whatever such an operation writes or
returns is **tainted**, and so is everything computed from a tainted tensor (views share
their base's memory and its taint). A difference is excused only when it lies in a tainted
value: a genuine bug in an untainted output of the same program stays a bug. A tainted value
read into Python (``.item()``, ``if tensor:``) may steer any later computation, so then
every output counts as tainted (``escaped``).

Two classes need no run: differences only in the **warnings** a run emitted, and two runs
that **raise the same exception with other messages**, are ``warning-only``. A NaN's sign or
payload is not compared at all unless ``--strict``/``--bitwise`` asks for it
(``compare.py``; IEEE 754 leaves it unspecified).

Imports torch and nothing else of eqrewrite but ``compare`` and ``nested`` (the keys of a
value's place): it is vendored into every reproducer with the rest of ``judging/``.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.weak import WeakIdKeyDictionary

from . import compare as cmp
from .nested import MISSING, fetch

UNSUPPORTED, UNDEFINED, WARNING_ONLY = "unsupported", "undefined-behaviour", "warning-only"


@dataclass(frozen=True)
class Rule:
    """One behaviour that is not a compiler bug: its verdict, and the sentence a report
    gives the maintainer."""

    name: str
    verdict: str
    why: str


RULES = {rule.name: rule for rule in (
    Rule("overlapping-write", UNSUPPORTED,
         "in-place writes into a tensor whose elements share memory are unsupported; "
         "raising 'more than one element of the written-to tensor refers to a single memory "
         "location' is the intended outcome"),
    Rule("duplicate-index-write", UNDEFINED,
         "an indexed write without accumulation that writes several values to one element "
         "is documented as nondeterministic"),
    Rule("float-to-int", UNDEFINED,
         "converting NaN, an infinity or a value out of the integer type's range is "
         "undefined behaviour in C++ (pytorch#121226)"),
    Rule("overlapping-read-write", UNDEFINED,
         "an operation that reads memory it writes, laid out otherwise, gives a result that "
         "depends on the order in which elements are written (clone the source first)"),
    Rule("as-strided-outside", UNDEFINED,
         "as_strided beyond the elements of an intermediate tensor reads its storage layout, "
         "which is not part of its value: the compiler may lay intermediates out otherwise"),
    Rule("uninitialised-read", UNDEFINED,
         "the elements of torch.empty and its kin hold whatever memory held"),
    Rule("tie-break", UNDEFINED,
         "which index an unstable sort, topk, kthvalue, mode or median returns among equal "
         "values is unspecified"),
    Rule("compile-dependent-path", UNDEFINED,
         "the program asks whether it is being compiled (torch.compiler.is_compiling) and "
         "may run other code when it is: eager and compiled runs need not agree"),
    Rule("warning-only", WARNING_ONLY,
         "only the warnings emitted differ; warnings are not results"),
    Rule("exception-message", WARNING_ONLY,
         "both runs raise the same exception type; only its message differs"),
)}

# The verdicts, most severe first: an unsupported program beats an undefined one.
VERDICT_ORDER = (UNSUPPORTED, UNDEFINED, WARNING_ONLY)

# In-place operations that write every element they are given without reading them.
_OVERWRITING = frozenset({
    "fill_", "zero_", "copy_", "normal_", "uniform_", "random_", "bernoulli_",
    "exponential_", "cauchy_", "log_normal_", "geometric_"})
# Writes of some elements (chosen by an index or a mask) that read none of the others.
_PARTIAL_WRITES = frozenset({
    "index_put_", "_index_put_impl_", "masked_fill_", "index_fill_", "scatter_",
    "index_copy_", "masked_scatter_", "put_"})
_UNINITIALISED = frozenset({
    "empty", "empty_like", "new_empty", "empty_strided", "new_empty_strided",
    "empty_permuted"})
# Operations whose result holds the values of a floating argument converted to its dtype.
_CONVERTING = frozenset({
    "_to_copy", "copy_", "copy", "fill_", "fill", "full", "full_like", "new_full",
    "masked_fill_", "masked_fill", "index_fill_", "index_fill", "index_put_", "index_put",
    "_index_put_impl_", "scatter_", "scatter", "index_copy_", "index_copy",
    "masked_scatter_", "masked_scatter", "put_", "put", "sum", "prod", "cumsum", "cumprod",
    "scalar_tensor", "lift_fresh_copy"})
# Operations whose indices output is unspecified among equal values; argmax, argmin, max
# and min along a dimension promise the first occurrence, so they are not here.
_TIES = frozenset({"sort", "argsort", "topk", "kthvalue", "mode", "median", "nanmedian"})
# Reading a tensor into Python: a tainted value then steers code the mode cannot follow.
_ESCAPING = frozenset({"_local_scalar_dense", "is_nonzero", "equal"})
_EXACT_CHECK_LIMIT = 1 << 22  # elements: above it, an overlap ATen cannot decide is assumed


@dataclass(frozen=True)
class Event:
    """One occurrence of a rule in a run: the rule, the operation, what was seen, and the
    innermost frame of the program's own code."""

    rule: str
    op: str
    detail: str
    frame: str = ""

    def describe(self) -> str:
        where = f" at {self.frame}" if self.frame else ""
        return f"{self.op} {self.detail}{where}"


@dataclass
class Semantics:
    """What a ``CHECKED`` run learned: the events, and which observed values they taint
    (``mirror``: the observed structure with a ``Mark`` in place of every tensor)."""

    events: list[Event] = field(default_factory=list)
    mirror: Any = None
    escaped: frozenset[int] = frozenset()  # events whose values were read into Python

    def causes(self, keys: tuple[tuple[str, Any], ...]) -> frozenset[int]:
        """The events (indices into ``events``) the value at ``keys`` (a Difference's) was
        computed from; empty when it is clean."""
        for depth in range(len(keys) + 1):
            found = fetch(self.mirror, keys[:depth])
            if isinstance(found, Mark):
                return found.causes | self.escaped
            if found is MISSING:
                break
        return self.escaped


@dataclass(frozen=True)
class Mark:
    """Stands for one observed tensor in ``Semantics.mirror``: the events it came from."""

    causes: frozenset[int]


class SemanticsMode(TorchDispatchMode):  # type: ignore[no-untyped-call]  # torch's
    """Records the events of ``RULES`` while active, and which storages they taint."""

    def __init__(self, frame_filter: Callable[[str], bool] | None = None) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.events: list[Event] = []
        self.escaped: frozenset[int] = frozenset()
        self._frame_filter = frame_filter or _is_program_file
        self._tainted: dict[Any, frozenset[int]] = {}  # storage -> the events behind it
        self._uninitialised: dict[Any, torch.Tensor] = {}  # storage -> element mask
        self._kept: dict[Any, Any] = {}  # storages alive for the run: no reused keys
        # Views taken of a tensor whose elements share memory (an expanded input, say):
        # writing through them is writing into it, which the documentation forbids.
        self._overlap_views = WeakIdKeyDictionary()
        self._made: set[Any] = set()  # storages the program's own operations created
        self._queries = _CompileQueries(self._asked)

    # -- the compile query, answered False here, True when compiled -------------------------

    def __enter__(self) -> SemanticsMode:
        self._queries.install()
        return super().__enter__()  # type: ignore[no-untyped-call,no-any-return]

    def __exit__(self, *exc: Any) -> None:
        try:
            super().__exit__(*exc)  # type: ignore[no-untyped-call]
        finally:
            self._queries.remove()

    def _asked(self, name: str) -> None:
        """The program asked ``name()`` whether it is being compiled: every output may
        depend on the answer, which differs when compiled."""
        frame = _caller_frame(self._frame_filter)
        if frame is None:  # torch's own question: its two paths are what is under test
            return
        self.events.append(Event("compile-dependent-path", name, "asks whether it is being "
                                 "compiled (False here, True compiled)", frame))
        self.escaped |= {len(self.events) - 1}

    # -- what the run tells ----------------------------------------------------------------

    def causes(self, tensor: torch.Tensor) -> frozenset[int]:
        """The events that wrote ``tensor``'s memory or that it was computed from."""
        key = self._key(tensor)
        return self._tainted.get(key, frozenset()) if key is not None else frozenset()

    def semantics(self, live: Any) -> Semantics:
        """The run's events and the mirror of ``live`` (the values as ``to_plain`` sees
        them, before they were copied)."""
        from .observe import to_plain

        mirror = to_plain(live, leaf=lambda t: Mark(self.causes(t)))
        return Semantics(list(self.events), mirror, self.escaped)

    # -- the dispatch hook ----------------------------------------------------------------

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        written, read = self._arguments(func, name, args, kwargs)
        first = len(self.events)
        self._before(func, name, args, kwargs, written, read)
        causes = frozenset(range(first, len(self.events))).union(
            *(self.causes(t) for t in read))
        result = func(*args, **kwargs)
        outputs = [t for t in _flat(result) if isinstance(t, torch.Tensor)]
        if name in _ESCAPING:
            self.escaped |= causes
        if causes:
            self._taint([*outputs, *written], causes)
        if name in _TIES and self._has_ties(name, args, kwargs):
            indices = self._indices_output(name, result)
            if indices is not None:
                self._record("tie-break", name, "over equal values", [indices])
        self._track_initialisation(name, func, outputs, written)
        if _is_view(func) and any(t in self._overlap_views or _overlaps(t) for t in read):
            for tensor in outputs:
                self._overlap_views[tensor] = True
        if name == "as_strided" and outputs and self._key(args[0]) in self._made and (
                _outside(outputs[0], args[0])):
            self._record("as-strided-outside", name, f"views {_shape(outputs[0])} elements "
                         "beyond those of the tensor it is taken of", outputs[:1])
        if not _is_view(func):
            self._made.update(key for t in outputs if (key := self._key(t)) is not None)
        return result

    # -- the rules ------------------------------------------------------------------------

    def _before(self, func: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                written: list[torch.Tensor], read: list[torch.Tensor]) -> None:
        """Record the events of the rules that are checked before the operation runs."""
        for tensor in written:
            if _overlaps(tensor):
                self._record("overlapping-write", name,
                             f"writes into a {_shape(tensor)} tensor with strides "
                             f"{tuple(tensor.stride())} whose elements share memory",
                             [tensor])
            elif tensor in self._overlap_views:
                self._record("overlapping-write", name,
                             f"writes into a view ({_shape(tensor)}) of a tensor whose "
                             "elements share memory", [tensor])
        for tensor in written:
            if any(_reads_across(tensor, other) for other in read
                   if self._key(other) == self._key(tensor)):
                self._record("overlapping-read-write", name,
                             f"reads memory it writes into a {_shape(tensor)} tensor, laid "
                             "out otherwise", [tensor])
                break
        if name in _PARTIAL_WRITES and (detail := _duplicate_write(name, args, kwargs)):
            self._record("duplicate-index-write", name, detail, written)
        if name in _CONVERTING and (detail := _bad_conversion(func, name, args, kwargs,
                                                               written)):
            self._record("float-to-int", name, detail, written)
        for tensor in [] if _is_view(func) else read:
            if self._reads_uninitialised(tensor):
                self._record("uninitialised-read", name,
                             f"reads elements of a {_shape(tensor)} tensor from "
                             "torch.empty (or its kin) never written", [])
                break

    def _record(self, rule: str, op: str, detail: str, taint: list[torch.Tensor]) -> None:
        self.events.append(Event(rule, op, detail, _program_frame(self._frame_filter)))
        self._taint(taint, frozenset({len(self.events) - 1}))

    def _has_ties(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        values = args[0] if args and isinstance(args[0], torch.Tensor) else None
        if values is None or values.numel() < 2:
            return False
        if name in ("sort", "argsort") and kwargs.get("stable") is True:
            return False
        if name in ("median", "nanmedian") and len(args) < 2 and "dim" not in kwargs:
            return False  # the whole-tensor median returns no index
        dim = _dim_argument(name, args, kwargs)
        return _ties_along(values.detach(), dim)

    @staticmethod
    def _indices_output(name: str, result: Any) -> torch.Tensor | None:
        if name == "argsort":
            return result if isinstance(result, torch.Tensor) else None
        items = list(_flat(result))
        return items[1] if len(items) > 1 and isinstance(items[1], torch.Tensor) else None

    # -- taint and initialisation -----------------------------------------------------------

    def _arguments(self, func: Any, name: str, args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """The tensors the operation writes, and those it reads (a written tensor is read
        too unless the operation only overwrites it or writes chosen elements of it)."""
        written: list[torch.Tensor] = []
        read: list[torch.Tensor] = []
        for position, argument in enumerate(func._schema.arguments):
            value = args[position] if position < len(args) else kwargs.get(argument.name)
            tensors = [t for t in _flat(value) if isinstance(t, torch.Tensor)]
            if argument.alias_info is not None and argument.alias_info.is_write:
                written += tensors
                overwrites = argument.name == "out" or name in _OVERWRITING or (
                    name in _PARTIAL_WRITES and position == 0)
                if not overwrites:
                    read += tensors
            else:
                read += tensors
        return written, read

    def _taint(self, tensors: list[torch.Tensor], causes: frozenset[int]) -> None:
        for tensor in tensors:
            if (key := self._key(tensor)) is not None:
                self._tainted[key] = self._tainted.get(key, frozenset()) | causes

    def _key(self, tensor: torch.Tensor) -> Any:
        try:
            storage = tensor.untyped_storage()
        except (RuntimeError, NotImplementedError):  # sparse, nested: no plain storage
            return None
        key = StorageWeakRef(storage).cdata  # type: ignore[no-untyped-call]
        self._kept.setdefault(key, storage)
        return key

    def _reads_uninitialised(self, tensor: torch.Tensor) -> bool:
        mask = self._uninitialised.get(self._key(tensor))
        if mask is None:
            return False
        offsets = _offsets(tensor, mask.numel())
        return offsets is None or bool(mask[offsets].any())

    def _track_initialisation(self, name: str, func: Any, outputs: list[torch.Tensor],
                              written: list[torch.Tensor]) -> None:
        if name in _UNINITIALISED:
            for tensor in outputs:
                if (key := self._key(tensor)) is not None and tensor.numel():
                    size = tensor.untyped_storage().nbytes() // max(tensor.element_size(), 1)
                    self._uninitialised[key] = torch.ones(size, dtype=torch.bool)
            return
        full = name in _OVERWRITING or func._schema.overload_name.startswith("out")
        for tensor in written if full else []:
            mask = self._uninitialised.get(self._key(tensor))
            offsets = None if mask is None else _offsets(tensor, mask.numel())
            if mask is not None and offsets is not None:
                mask[offsets.flatten()] = False


# -- what the rules measure ---------------------------------------------------------------------


def _overlaps(tensor: torch.Tensor) -> bool:
    """Whether two elements of ``tensor`` share memory (ATen's own test, then an exact one
    where ATen cannot decide: overlapping ``unfold`` windows, ``as_strided``)."""
    if tensor.layout != torch.strided or tensor.numel() < 2:
        return False
    verdict = torch._debug_has_internal_overlap(tensor)  # 0 no, 1 yes, 2 too hard
    if verdict != 2:
        return verdict == 1
    if tensor.numel() > _EXACT_CHECK_LIMIT:
        return True
    offsets = _offsets(tensor, None)
    return offsets is None or _distinct(offsets) < tensor.numel()


def _offsets(tensor: torch.Tensor, size: int | None) -> torch.Tensor | None:
    """The storage offset of every element of ``tensor`` (in elements), or None when they
    cannot be told (another layout, a view of another element size)."""
    if tensor.layout != torch.strided:
        return None
    span = tensor.storage_offset() + sum(
        (n - 1) * s for n, s in zip(tensor.shape, tensor.stride()) if n > 0) + 1
    if tensor.numel() == 0:
        return torch.zeros(0, dtype=torch.long)
    if size is not None and span > size:
        return None
    base = torch.arange(int(span), dtype=torch.long)
    return torch.as_strided(base, tensor.shape, tensor.stride(), tensor.storage_offset())


def _reads_across(written: torch.Tensor, other: torch.Tensor) -> bool:
    """Whether ``other`` (on ``written``'s storage) holds elements ``written`` writes
    without being laid out as it is: element i read is not element i written."""
    if (other.shape, other.stride(), other.storage_offset()) == (
            written.shape, written.stride(), written.storage_offset()):
        return False
    if max(written.numel(), other.numel()) > _EXACT_CHECK_LIMIT:
        return False
    mine, theirs = _offsets(written, None), _offsets(other, None)
    if mine is None or theirs is None or written.element_size() != other.element_size():
        return False
    if mine.shape == theirs.shape and bool((mine == theirs).all()):
        return False  # the same elements in the same order (a broadcast view of itself)
    return bool(torch.isin(theirs.flatten(), mine.flatten()).any())


def _outside(view: torch.Tensor, source: torch.Tensor) -> bool:
    """Whether ``view`` addresses storage elements ``source`` does not hold."""
    if view.numel() == 0 or max(view.numel(), source.numel()) > _EXACT_CHECK_LIMIT:
        return False
    reached, held = _offsets(view, None), _offsets(source, None)
    if reached is None or held is None or view.element_size() != source.element_size():
        return False
    return not bool(torch.isin(reached.flatten(), held.flatten()).all())


def _duplicate_write(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """Why an indexed write without accumulation is nondeterministic, or ``""``: two
    positions of one element written with different values."""
    self = args[0]
    if name in ("index_put_", "_index_put_impl_"):
        accumulate = args[3] if len(args) > 3 else kwargs.get("accumulate", False)
        return "" if accumulate else _index_put_duplicates(self, args[1], args[2])
    if name == "index_copy_":
        dim, index, source = args[1], args[2], args[3]
        return _along_duplicates(index.reshape(-1), source, dim)
    if name == "scatter_" and len(args) > 3 and isinstance(args[3], torch.Tensor) and (
            "reduce" not in kwargs and len(args) < 5):
        dim, index, source = args[1], args[2], args[3]
        return _scatter_duplicates(self, dim, index, source)
    if name == "put_":
        accumulate = args[3] if len(args) > 3 else kwargs.get("accumulate", False)
        if accumulate:
            return ""
        index, source = args[1], args[2]
        flat = index.reshape(-1) % max(self.numel(), 1)
        return _values_disagree(flat, source.reshape(-1)[:flat.numel()].unsqueeze(1))
    return ""


def _index_put_duplicates(self: torch.Tensor, indices: list[Any], values: torch.Tensor) -> str:
    indexed = [i for i in indices if i is not None]
    if not indexed or len(indexed) != len(indices) or any(i.dtype == torch.bool
                                                          for i in indexed):
        return ""  # masks select each element once; a slice in between: left alone
    broadcast = torch.broadcast_tensors(  # type: ignore[no-untyped-call]
        *[i.long() for i in indexed])
    shape = broadcast[0].shape
    linear = torch.zeros(shape, dtype=torch.long)
    for position, index in enumerate(broadcast):
        size = self.shape[position]
        linear = linear * size + index % max(size, 1)
    rest = self.shape[len(indexed):]
    spread = values.expand(*shape, *rest) if values.dim() <= len(shape) + len(rest) else values
    return _values_disagree(linear.reshape(-1), spread.reshape(linear.numel(), -1))


def _along_duplicates(index: torch.Tensor, source: torch.Tensor, dim: int) -> str:
    """``index_copy_``: one row of ``source`` along ``dim`` per index."""
    rows = source.movedim(dim, 0).reshape(index.numel(), -1) if source.dim() else \
        source.reshape(1, 1)
    return _values_disagree(index.long(), rows)


def _scatter_duplicates(self: torch.Tensor, dim: int, index: torch.Tensor,
                        source: torch.Tensor) -> str:
    if index.numel() == 0:
        return ""
    dim = dim % max(index.dim(), 1)
    coordinates = torch.stack(torch.meshgrid(
        *[torch.arange(int(n)) for n in index.shape], indexing="ij"), 0).reshape(index.dim(), -1)
    coordinates[dim] = index.reshape(-1).long() % max(self.shape[dim], 1)
    linear = torch.zeros(coordinates.shape[1], dtype=torch.long)
    for position in range(index.dim()):
        linear = linear * max(self.shape[position], 1) + coordinates[position]
    taken = source[tuple(slice(0, n) for n in index.shape)].reshape(-1, 1)
    return _values_disagree(linear, taken)


def _values_disagree(positions: torch.Tensor, values: torch.Tensor) -> str:
    """``""`` unless two equal ``positions`` are written different rows of ``values``."""
    if positions.numel() < 2 or _distinct(positions) == positions.numel():
        return ""
    values = values.detach()
    if values.shape[0] != positions.numel():
        return f"writes {positions.numel()} values to {_distinct(positions)} elements"
    order = positions.argsort(stable=True)
    positions, values = positions[order], values[order]
    same = positions[1:] == positions[:-1]
    bits = values if not values.is_floating_point() else values.double()
    unequal = (bits[1:] != bits[:-1]).reshape(same.numel(), -1).any(1) & same
    if not bool(unequal.any()):
        return ""
    element = int(positions[1:][unequal][0])
    return f"writes different values to one element (flat position {element}) " \
           "without accumulate=True"


def _bad_conversion(func: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                    written: list[torch.Tensor]) -> str:
    """Why converting a floating argument to the operation's integer dtype is undefined,
    or ``""``."""
    target = _integer_target(func, name, args, kwargs, written)
    if target is None:
        return ""
    info = torch.iinfo(target)
    for value in _floating_sources(name, args, kwargs):
        value = value.detach().double() if isinstance(value, torch.Tensor) else torch.tensor(
            float(value), dtype=torch.float64)
        if not value.numel():
            continue
        whole = torch.trunc(value)
        bad = ~torch.isfinite(value) | (whole < info.min) | (whole > info.max)
        if bool(bad.any()):
            shown = float(value[bad].reshape(-1)[0])
            return f"converts {shown!r} to {str(target).replace('torch.', '')}, outside " \
                   "what the integer type holds"
    return ""


def _integer_target(func: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                    written: list[torch.Tensor]) -> torch.dtype | None:
    """The integer dtype (bool excluded) the operation converts into, if any."""
    dtype = kwargs.get("dtype")
    if name in ("sum", "prod", "cumsum", "cumprod"):
        dtype = dtype if isinstance(dtype, torch.dtype) else None
    elif written:
        dtype = written[0].dtype
    elif dtype is None and args and isinstance(args[0], torch.Tensor):
        dtype = args[0].dtype
    if not isinstance(dtype, torch.dtype) or dtype.is_floating_point or dtype.is_complex or (
            dtype == torch.bool):
        return None
    return dtype


def _floating_sources(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
                      ) -> Iterator[Any]:
    """The floating values an operation converts: tensor and Python-float arguments (not
    the tensor an in-place operation writes into)."""
    for position, value in enumerate([*args, *kwargs.values()]):
        if position == 0 and name.endswith("_"):
            continue
        for item in _flat(value):
            if isinstance(item, torch.Tensor) and item.is_floating_point():
                yield item
            elif isinstance(item, float):
                yield item


def _dim_argument(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    if name == "topk" or name == "kthvalue":
        dim = args[2] if len(args) > 2 else kwargs.get("dim", -1)
    else:
        dim = args[1] if len(args) > 1 and isinstance(args[1], int) else kwargs.get("dim", -1)
    return dim if isinstance(dim, int) else -1


def _ties_along(values: torch.Tensor, dim: int) -> bool:
    """Whether two elements of one slice along ``dim`` are equal (NaNs count as equal)."""
    if values.dim() == 0:
        return False
    ordered = values.movedim(dim, -1).sort(dim=-1, stable=True).values
    if ordered.is_floating_point():
        ordered = torch.nan_to_num(ordered.double(), nan=float("inf"))
    return bool((ordered[..., 1:] == ordered[..., :-1]).any())


def _is_view(func: Any) -> bool:
    """Whether the operation returns a view of an argument (it reads no element)."""
    return any(r.alias_info is not None and not r.alias_info.is_write
               for r in func._schema.returns)


def _distinct(values: torch.Tensor) -> int:
    """How many different values ``values`` holds."""
    return int(torch.unique(values).numel())


def _flat(value: Any) -> Iterator[Any]:
    if isinstance(value, list | tuple):
        for item in value:
            yield from _flat(item)
    else:
        yield value


def _shape(tensor: torch.Tensor) -> str:
    return "x".join(str(n) for n in tensor.shape) or "0-d"


def _is_program_file(filename: str) -> bool:
    return not any(part in filename for part in ("/torch/", "/oracle/", "/_eqrewrite_oracle/",
                                                 "<frozen", "/contextlib.py"))


def _program_frame(wanted: Callable[[str], bool]) -> str:
    """``file.py:LINE in function`` of the innermost frame of the program's own code."""
    for frame in reversed(traceback.extract_stack()):
        if wanted(frame.filename):
            return f"{frame.filename.rpartition('/')[2]}:{frame.lineno} in {frame.name}"
    return ""


def _caller_frame(wanted: Callable[[str], bool]) -> str | None:
    """``file.py:LINE in function`` of the frame that asked the compile query (past this
    module and torch's own forwarding queries, ``torch._dynamo.is_compiling``), if it is
    the program's (per ``wanted``); None when torch asked itself, or the oracle did."""
    for frame in reversed(traceback.extract_stack()):
        forwarding = "/torch/" in frame.filename and frame.name in _QUERIES
        if frame.filename == __file__ or forwarding:
            continue
        if "/torch/" in frame.filename or not wanted(frame.filename):
            return None
        return f"{frame.filename.rpartition('/')[2]}:{frame.lineno} in {frame.name}"
    return None


# The questions a program asks to learn whether it is being compiled, by their home module.
_QUERIES = ("is_compiling", "is_dynamo_compiling")


class _CompileQueries:
    """Wraps ``torch.compiler``'s compile queries for a checked run, wherever a module bound
    them (``from torch.compiler import is_compiling``), so that each call is reported to
    ``asked``; ``remove`` puts the originals back."""

    def __init__(self, asked: Callable[[str], None]) -> None:
        self._asked = asked
        self._undo: list[tuple[Any, str, Any]] = []

    def install(self) -> None:
        import sys

        import torch.compiler

        wrapped = {id(fn): (fn, self._wrap(name, fn)) for name in _QUERIES
                   if callable(fn := getattr(torch.compiler, name, None))}
        for module in [torch.compiler, *list(sys.modules.values())]:
            names = getattr(module, "__dict__", None)
            if not isinstance(names, dict) or (module is not torch.compiler and getattr(
                    module, "__name__", "").startswith("torch")):
                continue  # torch's own questions: its two paths are what is under test
            for name, value in list(names.items()):
                original, wrapper = wrapped.get(id(value), (None, None))
                if original is value:
                    self._undo.append((module, name, value))
                    setattr(module, name, wrapper)

    def remove(self) -> None:
        for module, name, value in reversed(self._undo):
            setattr(module, name, value)
        self._undo.clear()

    def _wrap(self, name: str, original: Callable[[], bool]) -> Callable[[], bool]:
        def asked() -> bool:
            self._asked(name)
            return original()
        return asked


# -- the verdict on one pair of runs --------------------------------------------------------


def rule_verdict(events: list[Event]) -> tuple[str, Rule]:
    """The verdict the events give (the most severe) and the rule behind it."""
    rules = sorted((RULES[e.rule] for e in events), key=lambda r: VERDICT_ORDER.index(r.verdict))
    return rules[0].verdict, rules[0]


def is_warning_difference(difference: cmp.Difference) -> bool:
    """A difference in the warnings a run emitted (its ``printed['warnings']``)."""
    return ("key", "warnings") in difference.keys and ("key", "printed") in difference.keys
