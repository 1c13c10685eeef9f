"""a list captured by a locally defined class's method is not appended to when the instance is created inside the compiled function

Issue: https://github.com/pytorch/pytorch/issues/197896
Expect: compiler-bug
Trigger: Python semantics/control flow
Differs: module state: eager appends to touch_log on each call, compiled leaves it unchanged; tensor output equal
Status: reproduces on 2.13.0+cpu; open upstream (fix proposed in #198055)
"""
# eqrewrite-oracle: backend=inductor fullgraph=true
import torch

touch_log = []


def _make_helper(log):
    class Helper:
        def touch(self):
            log.append(1)
    return Helper


_Helper = _make_helper(touch_log)


def touch_and_double(x):
    h = _Helper()
    h.touch()
    return x * 2


def get_inputs():
    return [torch.ones(3)]
