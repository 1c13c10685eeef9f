"""a RuntimeError caught by try/except eagerly escapes the compiled function as TorchRuntimeError

Issue: https://github.com/pytorch/pytorch/issues/175608
Expect: compile-error
Trigger: Python semantics/control flow
Verdict note: not silent: the compiled call raises where eager returns, which the oracle reports
as `compile-error` (a failing verdict); it is kept apart from the silent miscompilations
Differs: eager returns x + 1 (the except branch), compiled raises torch._dynamo.exc.TorchRuntimeError
Status: reproduces on 2.13.0+cpu; closed upstream
"""
# eqrewrite-oracle: backend=inductor
import torch


class Repro(torch.nn.Module):
    def forward(self, x):
        try:
            with torch.no_grad():
                torch.linalg.inv(x)          # not square: RuntimeError
        except RuntimeError:
            return x + 1
        return x


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 3)]
