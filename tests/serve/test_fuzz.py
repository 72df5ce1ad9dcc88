"""The OpenAPI schema fuzzed by schemathesis (bounded budget): no request the schema
allows, or nearly allows, makes the server answer 5xx."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

import ieqa
from ieqa.serve.app import ServeConfig, create_app
from ieqa.serve.auth import TokenSet

from .helpers import running

TOKEN = "fuzz-token"
#: examples per operation (7 operations): about 10 s on two cores
MAX_EXAMPLES = 25


def _app():
    config = ServeConfig(tokens=TokenSet([TOKEN]), max_batch=8, max_wait_ms=2, max_body_mb=2,
                         timeout_s=20)
    return create_app(ieqa.create_scorer("classic"), rule="mean", config=config)


schema = schemathesis.openapi.from_dict(_app().openapi())


@pytest.fixture(scope="module")
def base_url():
    with running(_app()) as url:
        yield url


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=5000, derandomize=True,
          suppress_health_check=list(HealthCheck))
def test_no_server_errors(case, base_url):
    response = case.call(base_url=base_url, headers={"Authorization": f"Bearer {TOKEN}"},
                         timeout=30)
    assert response.status_code < 500, (case.method, case.path, response.status_code, response.text)
    case.validate_response(response, checks=[not_a_server_error])
