"""Shared fixtures: where the test data and the CLI are (set by the ctest entry; defaults for a
plain `pytest tests/python` from the repository with PYTHONPATH=build/python)."""
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def testdata():
    path = pathlib.Path(os.environ.get("WL_TESTDATA_DIR", ROOT.parent / "shared" / "testdata"))
    if not path.is_dir():
        pytest.skip(f"no test data at {path}")
    return path


@pytest.fixture(scope="session")
def stories(testdata):
    return testdata / "llama2c-stories260K" / "stories260K.bin"


# The servers of the remote-source tests (test_remote.py, test_hub.py): nginx (HTTP and HTTPS), moto and s3rver
# (S3) and a fault-injecting HTTP server.
from remote_servers import any_s3, fault_http, moto, nginx, nginx_tls, s3, s3rver  # noqa: E402,F401
