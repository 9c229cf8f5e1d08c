import pytest


def pytest_addoption(parser):
    parser.addoption("--device", default="cpu", help="device to run the tests on (cpu or cuda)")


@pytest.fixture
def device(request):
    return request.config.getoption("--device")
