"""pytest options for tgrad's suite: ``--device cpu`` (default) or ``--device cuda``.

``--device cuda`` runs the same tests on cuda tensors: on a GPU when the machine has one, else on the
fake driver (tests/fakecuda: Triton's real compile for the fake device's architecture and its real
launcher, each kernel then run on the host), with ``--fake-cuda-cc 80|90`` and ``--fake-cuda-devices``.
``--cuda-driver real|fake`` forces the choice; without a GPU or a C compiler the session is skipped
with the reason.  The chosen device is the ``device`` fixture and the default device for tensors
created without ``device=``.
"""
import os

import pytest

os.environ.setdefault("TGRAD_TAPE_CACHE", "0")    # tests trace (tests/kernels/test_tape_cache.py turns it on)


def pytest_addoption(parser):
    parser.addoption("--device", default="cpu", choices=("cpu", "cuda"),
                     help="device to run the tests on: cpu (Triton's interpreter) or cuda (compiled)")
    parser.addoption("--cuda-driver", default="auto", choices=("auto", "real", "fake"),
                     help="with --device cuda: the machine's libcuda (real), tests/fakecuda (fake), "
                          "or the real one when it loads and the fake otherwise (auto)")
    parser.addoption("--fake-cuda-cc", default=os.environ.get("FAKECUDA_CC", "90"), choices=("80", "90"),
                     help="compute capability of the fake driver's devices")
    parser.addoption("--fake-cuda-devices", default=os.environ.get("FAKECUDA_DEVICES", "2"),
                     help="number of fake devices")


def _real_driver_loads():
    import ctypes
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


def pytest_configure(config):
    dev = config.getoption("--device")
    config._tgrad_skip = None
    config._tgrad_driver = None
    if dev == "cuda":
        choice = config.getoption("--cuda-driver")
        if choice == "fake" or (choice == "auto" and not _real_driver_loads()):
            import fakecuda
            try:
                env = fakecuda.environ(int(config.getoption("--fake-cuda-devices")),
                                       int(config.getoption("--fake-cuda-cc")))
            except fakecuda.Unavailable as e:
                config._tgrad_skip = f"--device cuda: no GPU here and {e}"
                return
            for k in ("TRITON_LIBCUDA_PATH", "FAKECUDA_DEVICES", "FAKECUDA_CC", "FAKECUDA_EXEC"):
                os.environ[k] = env[k]
            import tgrad
            assert fakecuda.install() is not None, "the fake driver did not load (a real libcuda came first?)"
            config._tgrad_driver = f"fake driver, sm_{env['FAKECUDA_CC']}, {env['FAKECUDA_DEVICES']} device(s)"
            # Python processes the tests start cannot run kernels on the fake driver (it runs each one through
            # callbacks in the process that installed them): they default to cpu (fakecuda.run_python undoes this)
            os.environ["TGRAD_DEVICE"] = "cpu"
    import tgrad
    if dev == "cuda" and not tgrad.cuda.is_available():
        from tgrad.memory import cuda_driver
        config._tgrad_skip = f"--device cuda: {cuda_driver.unavailable_reason()}"
        return
    tgrad.set_default_device(dev)


def pytest_collection_modifyitems(config, items):
    if config._tgrad_skip:
        mark = pytest.mark.skip(reason=config._tgrad_skip)
        for item in items:
            item.add_marker(mark)


def pytest_report_header(config):
    extra = f" ({config._tgrad_driver})" if getattr(config, "_tgrad_driver", None) else ""
    return f"tgrad device: {config.getoption('--device')}{extra}"


@pytest.fixture(scope="session")
def device(request):
    """The device under test: "cpu" or "cuda"."""
    return request.config.getoption("--device")


@pytest.fixture(autouse=True)
def _cpu_only_modules(request):
    """Modules that test the cpu executors themselves (``CPU_ONLY = True``) and tests marked
    ``@pytest.mark.cpu_only(reason=...)`` (cpu behaviour, e.g. ``autocast("cpu")``) run on cpu under any --device."""
    cpu_only = getattr(request.module, "CPU_ONLY", False) or request.node.get_closest_marker("cpu_only")
    if not cpu_only or request.config.getoption("--device") == "cpu":
        yield
        return
    import tgrad
    prev = tgrad.get_default_device()
    tgrad.set_default_device("cpu")
    try:
        yield
    finally:
        tgrad.set_default_device(prev)
