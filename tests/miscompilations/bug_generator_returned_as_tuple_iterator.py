"""a generator returned from a compiled function comes back as an exhausted-ahead tuple_iterator

Issue: https://github.com/pytorch/pytorch/issues/198190
Expect: compiler-bug
Trigger: Python semantics/control flow
Differs: returned object: eager a `generator` (yields x*1, x*2, then StopIteration.value == "done"), compiled a `tuple_iterator` (same yields, StopIteration.value None, no .send/.throw)
Status: reproduces on 2.13.0+cpu; open upstream
"""
# eqrewrite-oracle: backend=inductor
import torch


def make_generator(x):
    def gen():
        yield x * 1
        yield x * 2
        return "done"
    return gen()


def get_inputs():
    return [torch.ones(2)]
