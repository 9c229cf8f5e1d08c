"""F.scaled_dot_product_attention's math path (cpu with dropout) in ATen's order: query and key each scaled by
sqrt(|scale|) before the matmul (the sign on query), as ``_scaled_dot_product_attention_math`` does, not the
product scaled after.  One-element heads make q k^T one product per weight and an identity value makes the output
the dropped-out attention weights themselves, so every other step is order-free: the outputs are PyTorch 2.13's
bits (printed by it for these inputs, ``torch.manual_seed(seed)`` before each call; the scale-after order matched
67-81 percent of them)."""
import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F

CPU_ONLY = True     # PyTorch's cpu generator and its math path

TORCH = {   # (seed, scale, is_causal): PyTorch 2.13's output, flattened
    (5, 0.3, True): [1.4285714626312256, 0.0, 0.0, 0.0, 0.0, 0.0, 0.8853927254676819, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.44775551557540894, 0.09753512591123581, 0.0, 0.0, 0.0, 0.0, 0.4558674395084381, 0.13254621624946594, 0.049495745450258255, 0.0, 0.0, 0.0, 0.3654371201992035, 0.253548264503479, 0.18943782150745392, 0.19003543257713318, 0.0, 0.0, 0.0, 0.22708182036876678, 0.38934364914894104, 0.0, 0.22413356602191925],
    (6, -0.7, False): [0.14367088675498962, 0.0, 0.0, 0.31922727823257446, 0.31824982166290283, 0.23870114982128143, 0.002051856368780136, 0.0, 0.0, 0.0, 0.6223358511924744, 0.07878684997558594, 0.0, 0.0011476383078843355, 0.04019676521420479, 0.0, 0.6643961668014526, 0.0375266969203949, 0.0010205850703641772, 0.003688681870698929, 0.06586235761642456, 0.0, 0.0, 0.06229346618056297, 0.06273429095745087, 0.0, 0.21530568599700928, 0.4250513017177582, 0.0, 0.21178528666496277, 0.0, 0.4015260934829712, 0.0829039216041565, 0.0, 0.0, 0.08547080308198929],
    (7, 2.2, False): [0.6577059626579285, 0.39946067333221436, 0.0, 0.05349401384592056, 0.0, 0.0, 1.389916181564331, 0.03862835466861725, 0.0, 0.0, 2.2019207790435757e-08, 1.457939015381271e-05, 1.418839693069458, 0.009731410071253777, 1.3626724637560983e-07, 0.0, 2.0213879181607552e-11, 0.0, 1.4038177728652954, 0.0, 0.0, 0.0, 2.2704287339081475e-09, 3.4311974559386726e-06, 0.0, 0.0, 0.0, 0.0, 0.002648546127602458, 0.0, 1.0584314622974489e-05, 9.651040454627946e-05, 0.013736219145357609, 0.0, 0.6861492991447449, 0.012480937875807285],
}


@pytest.mark.parametrize("seed, scale, causal", list(TORCH))
def test_math_path_scales_query_and_key_as_aten(seed, scale, causal):
    q = tgrad.tensor(np.sin(np.arange(6) * 0.7 + 0.1).reshape(1, 1, 6, 1).astype(np.float32) * 3)
    k = tgrad.tensor(np.cos(np.arange(6) * 0.9).reshape(1, 1, 6, 1).astype(np.float32) * 2)
    v = tgrad.tensor(np.broadcast_to(np.eye(6, dtype=np.float32), (1, 1, 6, 6)).copy())
    tgrad.manual_seed(seed)
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3, is_causal=causal, scale=scale)
    np.testing.assert_array_equal(out.numpy().ravel(), np.array(TORCH[seed, scale, causal], np.float32))
