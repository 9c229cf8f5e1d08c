"""What the sixth batch of real PyTorch programs (CTC speech toy, spatial transformer, pruning, neural ODE, GP
regression, TorchScript use) needed.  Reference values marked "PyTorch 2.13" were printed by /work/venv-torch."""
import io

import numpy as np
import pytest

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F
import tgrad.nn.utils.prune as prune

CPU_ONLY = True     # expectations are values PyTorch printed on cpu (linspace's cpu rounding among them)


def _lp():
    x = tgrad.arange(5 * 2 * 4, dtype=tgrad.float32).reshape(5, 2, 4)
    return (x.sin() * 2).log_softmax(2)


def test_ctc_loss_values_and_grad_match_pytorch():
    lp = _lp().requires_grad_()
    tg = tgrad.tensor([[1, 2, 2], [3, 1, 0]])
    il, tl = tgrad.tensor([5, 4]), tgrad.tensor([3, 2])
    loss = F.ctc_loss(lp, tg, il, tl, reduction="none")
    np.testing.assert_allclose(loss.tolist(), [7.35969352722168, 1.7026485204696655], rtol=1e-6)   # PyTorch 2.13
    assert type(loss.grad_fn).__name__ == "CtcLossBackward0"
    loss.sum().backward()
    g0 = [[0.0650378093123436, -0.6049752235412598, 0.4443332254886627, 0.09560452401638031],     # PyTorch 2.13
          [0.6039010286331177, 0.18330581486225128, -0.8007598519325256, 0.013553030788898468],
          [-0.5823550820350647, 0.06410308927297592, -0.07347280532121658, 0.5917249917984009],
          [-0.171989306807518, 0.062401700764894485, -0.4410344660282135, 0.5506216883659363],
          [-0.19665199518203735, 0.5390046834945679, -0.3733386993408203, 0.030985992401838303]]
    np.testing.assert_allclose(lp.grad[:, 0].numpy(), g0, atol=2e-6)
    np.testing.assert_array_equal(lp.grad[4, 1].numpy(), 0)           # past input_lengths[1] = 4
    np.testing.assert_allclose(lp.grad[1, 1].numpy(), [-0.01615794189274311, -0.31623750925064087,
                                                       0.5339074730873108, -0.20151203870773315], atol=2e-6)


def test_ctc_loss_reductions_concatenated_targets_and_module():
    lp = _lp()
    il, tl = [5, 4], (3, 2)
    assert F.ctc_loss(lp, tgrad.tensor([[1, 2, 2], [3, 1, 0]]), il, tl).item() == pytest.approx(1.6522777080535889,
                                                                                                   rel=1e-6)
    flat = tgrad.tensor([1, 2, 2, 3, 1])
    assert F.ctc_loss(lp, flat, il, tl, reduction="sum").item() == pytest.approx(9.062341690063477, rel=1e-6)
    m = nn.CTCLoss(blank=0, reduction="sum")
    assert m(lp, flat, il, tl).item() == pytest.approx(9.062341690063477, rel=1e-6)
    with pytest.raises(RuntimeError, match="input_lengths to have value at most 5"):
        F.ctc_loss(lp, flat, [6, 4], tl)


def test_ctc_loss_zero_infinity():
    lp = _lp()[:2].clone().requires_grad_()          # 3 labels "1 2 2" need >= 4 frames: infeasible in 2
    z = F.ctc_loss(lp, tgrad.tensor([[1, 2, 2], [3, 1, 0]]), [2, 2], [3, 2], reduction="none", zero_infinity=True)
    np.testing.assert_allclose(z.tolist(), [0.0, 1.993422031402588], rtol=1e-6)           # PyTorch 2.13
    z.sum().backward()
    np.testing.assert_array_equal(lp.grad[:, 0].numpy(), 0)
    assert lp.grad.abs().sum().item() == pytest.approx(2.061774253845215, rel=1e-5)


BICUBIC = {  # PyTorch 2.13: grid_sample(arange(16) 4x4, affine_grid(theta, (1,1,3,5)) * 1.3, mode='bicubic')
    (False, "zeros"): [0.5440369248390198, 1.0958746671676636, 1.7098177671432495, 2.26633358001709, 2.240738868713379,
                       7.662474155426025, 7.6734137535095215, 8.111363410949707, 9.728636741638184, 5.234960079193115,
                       8.82530689239502, 10.127983093261719, 12.272693634033203, 14.701057434082031, 3.141026735305786],
    (False, "reflection"): [0.7146064043045044, 1.012385606765747, 1.6446877717971802, 2.2280144691467285,
                            2.696646213531494, 7.240684509277344, 7.6490478515625, 8.111363410949707,
                            8.755087852478027, 8.947271347045898, 13.072468757629395, 13.942240715026855,
                            14.613463401794434, 15.189751625061035, 15.078548431396484],
    (True, "border"): [0.006400466430932283, 0.27087870240211487, 1.0109494924545288, 1.697641372680664,
                       2.4547715187072754, 7.079469203948975, 7.492431163787842, 7.949871063232422, 8.570073127746582,
                       8.809950828552246, 12.766237258911133, 13.754707336425781, 14.565601348876953,
                       15.322723388671875, 15.396343231201172],
}


@pytest.mark.parametrize("ac,pad", list(BICUBIC))
def test_grid_sample_bicubic_matches_pytorch(ac, pad):
    img = tgrad.arange(16.).view(1, 1, 4, 4)
    th = tgrad.tensor([[[0.8, 0.2, 0.1], [-0.1, 0.9, 0.05]]])
    g = F.affine_grid(th, (1, 1, 3, 5), align_corners=ac) * 1.3
    out = F.grid_sample(img, g, mode="bicubic", padding_mode=pad, align_corners=ac)
    np.testing.assert_allclose(out.flatten().numpy(), BICUBIC[ac, pad], rtol=1e-5, atol=1e-5)


def test_grid_sample_bicubic_gradients_match_pytorch():
    img = tgrad.arange(16.).view(1, 1, 4, 4).requires_grad_()
    th = tgrad.tensor([[[0.8, 0.2, 0.1], [-0.1, 0.9, 0.05]]])
    g = (F.affine_grid(th, (1, 1, 2, 3), align_corners=False) * 1.3).detach().requires_grad_()
    F.grid_sample(img, g, mode="bicubic", align_corners=False).pow(2).sum().backward()
    np.testing.assert_allclose(g.grad.flatten().numpy(), [16.755531311035156, 42.64581298828125, 10.328852653503418,
                               42.593509674072266, -17.696237564086914, 65.04182434082031, -104.3109130859375,
                               -309.4031982421875, 122.44947052001953, -14.611618995666504, -656.4857788085938,
                               97.95558166503906], rtol=1e-4)                                  # PyTorch 2.13
    np.testing.assert_allclose(img.grad.flatten().numpy()[:6], [1.5505706071853638, 2.537842273712158,
                               3.1423492431640625, 6.849656581878662, 3.205599308013916, 2.3566555976867676], rtol=1e-5)


def test_prune_l1_reparametrizes_and_remove_restores():
    tgrad.manual_seed(0)
    lin = nn.Linear(4, 3)
    w = lin.weight.detach().numpy().copy()
    prune.l1_unstructured(lin, "weight", amount=0.25)
    assert [n for n, _ in lin.named_parameters()] == ["bias", "weight_orig"]
    assert list(dict(lin.named_buffers())) == ["weight_mask"]
    keep = np.ones(12)
    keep[np.argsort(np.abs(w).ravel(), kind="stable")[:3]] = 0
    np.testing.assert_array_equal(lin.weight_mask.numpy().ravel(), keep)
    np.testing.assert_array_equal(lin.weight.detach().numpy(), w * keep.reshape(3, 4))
    assert type(lin.weight.grad_fn).__name__ == "MulBackward0" and prune.is_pruned(lin)
    prune.l1_unstructured(lin, "weight", amount=2)             # a container: 2 more among the 9 kept
    assert int((lin.weight_mask == 0).sum()) == 5 and len(lin._forward_pre_hooks) == 1
    prune.remove(lin, "weight")
    assert [n for n, _ in lin.named_parameters()] == ["bias", "weight"] and not prune.is_pruned(lin)
    assert int((lin.weight == 0).sum()) == 5
    with pytest.raises(ValueError, match="has to be pruned before pruning can be removed"):
        prune.remove(lin, "weight")
    with pytest.raises(ValueError, match="should either be a float in the range"):
        prune.l1_unstructured(lin, "weight", amount=1.5)


def test_prune_structured_global_and_custom():
    tgrad.manual_seed(1)
    a, b = nn.Linear(5, 4), nn.Linear(4, 2)
    prune.ln_structured(a, "weight", amount=0.5, n=2, dim=0)
    norms = np.linalg.norm(a.weight_orig.detach().numpy(), axis=1)
    np.testing.assert_array_equal(a.weight_mask.numpy().sum(1), np.where(norms >= np.sort(norms)[2], 5, 0))
    ws = np.concatenate([a.weight.detach().numpy().ravel(), b.weight.detach().numpy().ravel()])
    prune.global_unstructured([(a, "weight"), (b, "weight")], pruning_method=prune.L1Unstructured, amount=0.5)
    # amount applies to the 18 entries still kept (PyTorch's container): the 9 smallest of them go
    assert int((a.weight == 0).sum()) + int((b.weight == 0).sum()) == 10 + 9
    kept = np.concatenate([a.weight.detach().numpy().ravel(), b.weight.detach().numpy().ravel()])
    alive = np.sort(np.abs(ws[ws != 0]))
    np.testing.assert_array_equal(np.sort(np.abs(kept[kept != 0])), alive[9:])
    c = prune.custom_from_mask(nn.Linear(3, 2), "weight", tgrad.tensor([[1, 0, 1], [0, 1, 0]]))
    np.testing.assert_array_equal((c.weight != 0).numpy(), [[True, False, True], [False, True, False]])


def test_trapezoid_family_matches_numpy():
    y = tgrad.tensor([[1.0, 3.0, 2.0, 5.0], [0.5, -1.0, 4.0, 2.0]])
    x = tgrad.tensor([0.0, 0.5, 2.0, 2.5])
    yn, xn = y.numpy(), x.numpy()
    np.testing.assert_allclose(tgrad.trapezoid(y, x).numpy(), np.trapezoid(yn, xn, axis=-1), rtol=1e-6)
    np.testing.assert_allclose(tgrad.trapezoid(y, dx=0.5, dim=0).numpy(), np.trapezoid(yn, dx=0.5, axis=0), rtol=1e-6)
    np.testing.assert_allclose(tgrad.trapz(y, x).numpy(), np.trapezoid(yn, xn), rtol=1e-6)
    cum = np.stack([[np.trapezoid(r[:k + 1], xn[:k + 1]) for k in range(1, 4)] for r in yn])
    np.testing.assert_allclose(tgrad.cumulative_trapezoid(y, x).numpy(), cum, rtol=1e-6)
    cum2 = np.stack([[np.trapezoid(r[:k + 1], dx=2.0) for k in range(1, 4)] for r in yn])
    np.testing.assert_allclose(tgrad.cumulative_trapezoid(y, dx=2.0).numpy(), cum2, rtol=1e-6)
    yg = y.clone().requires_grad_()
    tgrad.trapezoid(yg).sum().backward()
    np.testing.assert_array_equal(yg.grad.numpy(), [[0.5, 1, 1, 0.5]] * 2)


def test_linalg_error_class_name_is_pytorchs():
    with pytest.raises(tgrad.linalg.LinAlgError) as e:
        tgrad.linalg.cholesky(tgrad.tensor([[1.0, 2.0], [2.0, 1.0]]))
    assert type(e.value).__name__ == "_LinAlgError" and isinstance(e.value, RuntimeError)


def test_jit_script_trace_share_state_and_save_load():
    tgrad.manual_seed(2)
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    x = tgrad.randn(5, 3)
    s, t = tgrad.jit.script(net), tgrad.jit.trace(net, x)
    assert isinstance(s, tgrad.jit.ScriptModule) and type(s).__name__ == "RecursiveScriptModule"
    assert isinstance(s, nn.Sequential) and s[0].weight is net[0].weight
    np.testing.assert_array_equal(s(x).detach().numpy(), net(x).detach().numpy())
    np.testing.assert_array_equal(t(x).detach().numpy(), net(x).detach().numpy())
    buf = io.BytesIO()
    tgrad.jit.save(s, buf)
    buf.seek(0)
    loaded = tgrad.jit.load(buf)
    np.testing.assert_array_equal(loaded(x).detach().numpy(), net(x).detach().numpy())
    f = tgrad.jit.script(lambda a: a * 2)
    assert f(3) == 6 and not tgrad.jit.is_scripting() and tgrad.jit.annotate(int, 4) == 4
    with pytest.raises(RuntimeError, match="only implemented for modules in eval mode"):
        tgrad.jit.freeze(s)


def test_linspace_float32_rounds_as_pytorch():
    # PyTorch 2.13 cpu: float32 step, then start + step * i (first half) / end - step * (n - 1 - i) rounded once
    r = tgrad.linspace(-1, 1, 16).tolist()
    assert r[3] == -0.5999999642372131 and r[6] == -0.19999995827674866 and r[9] == 0.19999995827674866
    assert (tgrad.linspace(-1, 1, 16) * 15 / 16).tolist()[3] == -0.5624999403953552
    assert tgrad.linspace(1e-4, 0.02, 50).tolist()[17] == np.float32(np.float32(1e-4) + np.float64(
        np.float32(np.float32(np.float32(0.02) - np.float32(1e-4)) / np.float32(49))) * 17)
    assert tgrad.linspace(0, 1, 5, dtype=tgrad.float64).tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]


def test_weight_norm_deprecation_warns_from_the_library_once():
    # PyTorch's FutureWarning points into its own weight_norm.py, so the default filter shows it once per process
    import warnings
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        nn.utils.weight_norm(nn.Linear(2, 2))
    assert len(w) == 1 and w[0].category is FutureWarning and w[0].filename.endswith("weight_norm.py")
