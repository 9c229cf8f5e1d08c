"""pytest options for tgrad's suite: ``--device cpu`` (default) or ``--device cuda``.

``--device cuda`` runs the same tests on a GPU; without one the whole session
is skipped with the reason.  The chosen device is the ``device`` fixture and
the default device for tensors created without ``device=``.
"""
import pytest


def pytest_addoption(parser):
    parser.addoption("--device", default="cpu", choices=("cpu", "cuda"),
                     help="device to run the tests on: cpu (Triton's interpreter) or cuda (compiled)")


def pytest_configure(config):
    import tgrad
    dev = config.getoption("--device")
    config._tgrad_skip = None
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
    return f"tgrad device: {config.getoption('--device')}"


@pytest.fixture(scope="session")
def device(request):
    """The device under test: "cpu" or "cuda"."""
    return request.config.getoption("--device")
