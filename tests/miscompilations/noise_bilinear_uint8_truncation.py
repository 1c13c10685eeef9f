"""bilinear upsampling of an image, truncated back to uint8: the decomposition rounds 1 ulp differently, flipping exact integers

Issue: https://github.com/pytorch/pytorch/issues/185894
Expect: compiler-bug
Disputed: upstream closed this as expected float32 behaviour. The output is uint8, compared
exactly, and the oracle never excuses an exactly compared value (a real bug can hide in one
integer as easily), so it reports a compiler-bug; it counts neither as a bug nor as a control
Trigger: interpolation
Differs: uint8 output: 15 of 1728 values differ by 1; the float values before the cast differ by ~1 ulp just below exact integers (eager equals a float64 run, compiled is 1 lower there)
Status: reproduces on 2.13.0+cpu; closed upstream: "Not a Dynamo/Inductor/cudagraphs bug — it's the ATen upsample_bilinear2d decomposition rounding differently than the eager kernel. Expected float32 behavior" (both equally close to a float64 reference)
"""
# eqrewrite-oracle: backend=inductor
import torch
import torch.nn.functional as F


def upsample_to_uint8(img):
    y = F.interpolate(img.float(), scale_factor=1.5, mode="bilinear", align_corners=False)
    return y.to(torch.uint8)


def get_inputs():
    torch.manual_seed(0)
    return [torch.randint(0, 256, (1, 3, 16, 16), dtype=torch.uint8)]
