"""an Adam-like step with a .item() graph break, called in a loop: in-place addcdiv_/addcmul_ go wrong from the 3rd step

Issue: https://github.com/pytorch/pytorch/issues/185382
Expect: compiler-bug
Trigger: optimisation sequence
Differs: output float32: 16 of 16 parameters differ (max abs diff ~2.4e-3 after 5 steps, about half of the total update); correct with dynamo.capture_scalar_outputs=true (no graph break) and also with TORCHINDUCTOR_FORCE_DISABLE_CACHES=1: the wrong result comes from a cached artifact reused across the per-step recompiles
Status: reproduces on 2.13.0+cpu with default settings; closed upstream
"""
# eqrewrite-oracle: backend=inductor
import torch


def _adam_step(param, grad, m, v, step_t):
    step_t.add_(1)
    m.mul_(0.9).add_(grad, alpha=0.1)
    v.mul_(0.999).addcmul_(grad, grad, value=0.001)
    step = step_t.item()                      # graph break
    bc1 = 1 - 0.9 ** step
    bc2 = 1 - 0.999 ** step
    step_size = 0.001 / bc1
    denom = (v.sqrt() / (bc2 ** 0.5)).add_(1e-8)
    param.addcdiv_(m, denom, value=-step_size)


def train_loop(param_data, grad_data):
    p = param_data.detach().clone()     # detached: the in-place updates are not differentiated
    g = grad_data.detach().clone()
    m = torch.zeros_like(p)
    v = torch.zeros_like(p)
    step_t = torch.zeros(())
    for _ in range(5):
        _adam_step(p, g, m, v, step_t)
    return p


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(16), torch.randn(16)]
