"""pytest setup of the verl plug-in's tests (run by `cargo xtask verl` in its own venv; the
stdlib suite of `cargo xtask test` does not look in this folder: its files are not
`test_*.py` at the top of `tests/`, and unittest discovery needs an `__init__.py` here)."""

import pytest

pytest.importorskip("verl")
pytest.importorskip("transfer_queue")

import ray  # noqa: E402
import transfer_queue as tq  # noqa: E402


@pytest.fixture(scope="session")
def tq_session():
    # TransferQueue's controller and its two storage units each ask Ray for one CPU: on a
    # machine with fewer cores `tq.init()` waits forever unless Ray is told of enough.
    if not ray.is_initialized():
        ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)
    tq.init()
    yield
    tq.close()
    ray.shutdown()
