"""lockgate's SigV4 signer judged by two independent authorities: AWS's published test suite
and botocore's ``SigV4Auth`` (a test-only oracle: the product never imports botocore).

AWS's suite (tests/data/aws-sigv4-testsuite, Apache-2.0, see its README): every case whose
request lockgate could send. Left out, with why: the two duplicate-header cases (a mapping
holds one value per name, and lockgate never repeats a header), ``post-sts-header-after``
(the token added after signing; lockgate and botocore sign it) and the path-normalisation
cases (``get-relative``, ``get-slash``...: lockgate signs the path it sends, never one with
dot segments).

botocore: the exact requests lockgate sends (ECR ``GetAuthorizationToken`` with its
``X-Amz-Target`` and JSON body, with and without a session token, in partitions other than
``aws``) and a GET with reserved characters, signed by both at the same instant; the
``Authorization`` headers must be identical.
"""

from __future__ import annotations

import datetime
import json
import urllib.parse
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from botocore import auth as botocore_auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials as BotoCredentials

from lockgate.registry.cloud import sigv4

SUITE = json.loads((Path(__file__).parents[2] / "data" / "aws-sigv4-testsuite" / "cases.json").read_text())
SUITE_TIME = datetime.datetime(2015, 8, 30, 12, 36, tzinfo=datetime.UTC)
ECR_TARGET = "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken"


@pytest.mark.parametrize("case", SUITE["cases"], ids=[c["name"] for c in SUITE["cases"]])
def test_sigv4_matches_the_aws_test_suite(case: dict[str, Any]) -> None:
    config = SUITE["config"]
    # the headers the case signs (its .req also shows an unsigned Content-Length)
    signed_names = case["authz"].split("SignedHeaders=")[1].split(",")[0].split(";")
    token = ""
    headers: dict[str, str] = {}
    for name, value in case["headers"]:
        if name.lower() not in signed_names:
            continue
        if name.lower() == "x-amz-security-token":
            token = value  # lockgate adds the session token itself, signed
        elif name.lower() not in ("host", "x-amz-date"):
            headers[name] = value
    host = dict((k.lower(), v) for k, v in case["headers"])["host"]
    keys = sigv4.AwsKeys(config["accessKeyId"], config["secretAccessKey"], token)
    signed = sigv4.sign(
        case["method"],
        f"https://{host}{case['uri']}",
        headers,
        case["body"].encode(),
        keys=keys,
        region=config["region"],
        service=config["service"],
        now=SUITE_TIME,
    )
    assert signed["Authorization"] == case["authz"], case["creq"]


def _botocore_authorization(
    method: str,
    url: str,
    headers: dict[str, str],
    body: bytes,
    *,
    keys: sigv4.AwsKeys,
    region: str,
    service: str,
    now: datetime.datetime,
) -> str:
    request = AWSRequest(method=method, url=url, headers=dict(headers), data=body)
    credentials = BotoCredentials(keys.access_key_id, keys.secret_access_key, keys.session_token or None)
    # botocore reads the clock once per signature: the same instant as lockgate's
    with mock.patch.object(botocore_auth, "get_current_datetime", return_value=now.replace(tzinfo=None)):
        botocore_auth.SigV4Auth(credentials, service, region).add_auth(request)
    return str(request.headers["Authorization"])


ECR_CASES = {
    "ecr-session-keys": ("https://api.ecr.eu-west-1.amazonaws.com/", "eu-west-1", "tok/en+with=chars"),
    "ecr-long-term-keys": ("https://api.ecr.us-east-2.amazonaws.com/", "us-east-2", ""),
    "ecr-china-partition": ("https://api.ecr.cn-north-1.amazonaws.com.cn/", "cn-north-1", "cn-token"),
    "ecr-stand-in-port": ("http://127.0.0.1:34567/aws/ecr/", "eu-west-1", "session"),
}


@pytest.mark.parametrize("name", sorted(ECR_CASES))
def test_the_ecr_request_lockgate_signs_is_signed_the_same_by_botocore(name: str) -> None:
    """What ``aws.mint`` sends, byte for byte: POST, ``application/x-amz-json-1.1``,
    ``X-Amz-Target``, body ``{}``."""
    url, region, token = ECR_CASES[name]
    keys = sigv4.AwsKeys("ASIAEXAMPLEKEYID0001", "secret/with+slash=", token)
    now = datetime.datetime(2026, 12, 3, 4, 5, 6, tzinfo=datetime.UTC)
    headers = {"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": ECR_TARGET}
    ours = sigv4.sign("POST", url, headers, b"{}", keys=keys, region=region, service="ecr", now=now)
    theirs = _botocore_authorization(
        "POST", url, headers, b"{}", keys=keys, region=region, service="ecr", now=now
    )
    assert ours["Authorization"] == theirs
    assert ("X-Amz-Security-Token" in ours) == bool(token)


def test_a_get_with_reserved_characters_in_path_and_query_is_signed_the_same_by_botocore() -> None:
    keys = sigv4.AwsKeys("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "t")
    query = urllib.parse.urlencode({"b": "x y", "a": "1/2", "c": "ü~*"}, quote_via=urllib.parse.quote)
    url = f"https://example.amazonaws.com/a%20b/c~d/{urllib.parse.quote('é')}?{query}"
    now = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    ours = sigv4.sign("GET", url, {}, b"", keys=keys, region="eu-west-1", service="service", now=now)
    theirs = _botocore_authorization(
        "GET", url, {}, b"", keys=keys, region="eu-west-1", service="service", now=now
    )
    assert ours["Authorization"] == theirs


def test_a_one_character_change_is_a_different_signature() -> None:
    """The comparison can fail: botocore disagrees as soon as one signed field differs."""
    keys = sigv4.AwsKeys("ASIAEXAMPLEKEYID0001", "secret", "token")
    now = datetime.datetime(2026, 12, 3, 4, 5, 6, tzinfo=datetime.UTC)
    url = "https://api.ecr.eu-west-1.amazonaws.com/"
    headers = {"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": ECR_TARGET}
    ours = sigv4.sign("POST", url, headers, b"{}", keys=keys, region="eu-west-1", service="ecr", now=now)
    wrong_target = {**headers, "X-Amz-Target": ECR_TARGET.replace("Get", "get")}
    theirs = _botocore_authorization(
        "POST", url, wrong_target, b"{}", keys=keys, region="eu-west-1", service="ecr", now=now
    )
    assert ours["Authorization"] != theirs
