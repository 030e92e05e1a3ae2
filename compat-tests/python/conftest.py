"""Shared fixtures: the broker under test comes from $STRAIT_BOOTSTRAP."""
import os
import uuid

import pytest


@pytest.fixture(scope="session")
def bootstrap():
    return os.environ.get("STRAIT_BOOTSTRAP", "127.0.0.1:9092")


@pytest.fixture
def topic_name():
    def make(prefix):
        return f"{prefix}-{uuid.uuid4().hex[:8]}"
    return make
