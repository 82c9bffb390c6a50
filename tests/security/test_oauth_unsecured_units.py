"""OAUTHBEARER's unsecured development mode without a server: the token checks of Kafka's
OAuthBearerUnsecuredJws / OAuthBearerValidationUtils (the cases of OAuthBearerUnsecuredJwsTest and
OAuthBearerUnsecuredValidatorCallbackHandlerTest, and the edges of their code), the challenge bytes of
OAuthBearerSaslServer, and the flags: an explicit opt-in, never beside the JWKS validator."""

from __future__ import annotations

import base64
import json

import pytest

from kcoord.broker.security.oauth import InvalidToken, OAuthBearerServer
from kcoord.broker.security.oauth_unsecured import UnsecuredJws, UnsecuredValidator
from kcoord.broker.security.sasl import SaslFailure
from kcoord.wiring.config import parse_serve_argv

NOW_MS = 1_700_000_000_000
NOW_S = NOW_MS / 1000
HEADER = "eyJhbGciOiAibm9uZSJ9"  # {"alg": "none"}
NAN = b'{"exp": NaN}'
NOT_UTF8 = b'{"sub": "\xc3("}'  # an invalid UTF-8 sequence
REQUIRED_SCOPE_X = ("--sasl-oauthbearer-unsecured-validator-required-scope", "x")
SASL = ["--listeners", "SASL_PLAINTEXT://:1", "--sasl-enabled-mechanisms", "OAUTHBEARER"]


def part(value: object) -> str:
    """Base64url without padding, as Kafka's login handler and librdkafka write a JWS part."""
    raw = value if isinstance(value, bytes) else json.dumps(value).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def token(claims: object, header: object = None, signature: str = "") -> str:
    return f"{part({'alg': 'none'} if header is None else header)}.{part(claims)}.{signature}"


def claims(**changes: object) -> dict[str, object]:
    return {"sub": "alice", "iat": NOW_S, "exp": NOW_S + 3600, **changes}


def validator(**options: object) -> UnsecuredValidator:
    return UnsecuredValidator(now_ms=lambda: NOW_MS, **options)  # type: ignore[arg-type]


def refusal(token_: str, check: UnsecuredValidator | None = None) -> InvalidToken:
    with pytest.raises(InvalidToken) as caught:
        (check or validator()).validate(token_)
    return caught.value


def test_a_valid_token_names_its_sub_and_lasts_until_its_exp() -> None:
    assert validator().validate(token(claims())) == ("alice", NOW_MS + 3_600_000)
    # iat is optional (validateIssuedAt(required=false)); exp is rounded to the millisecond as Math.round
    assert validator().validate(token({"sub": "alice", "exp": NOW_S + 1.0005})) == ("alice", NOW_MS + 1001)
    # the principal is not trimmed (Kafka checks it is not blank, then keeps it as it is)
    assert validator().validate(token(claims(sub=" bob ")))[0] == " bob "
    named = validator(principal_claim_name="principal")
    assert named.validate(token(claims(principal="carol")))[0] == "carol"


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (token(claims(), header={"alg": "HS256"}), "Unsecured JWS must have 'none' for an algorithm"),
        (token(claims(), signature="c2ln"), "Unsecured JWS must not contain a digital signature"),
        (token({"sub": "alice", "iat": NOW_S}), "No expiration time in JWT"),
        (token(claims(exp="soon")), "The 'exp' claim was not of type Number: String"),
        (token(claims(iat="then")), "The 'iat' claim was not of type Number: String"),
        (token({"iat": NOW_S, "exp": NOW_S + 60}), "No principal name in JWT claim: sub"),
        (token(claims(sub="  ")), "No principal name in JWT claim: sub"),
        (token(claims(sub=1)), "The 'sub' claim was not of type String: Integer"),
        (token(claims(sub=["alice"])), "The 'sub' claim was not of type String: ArrayList"),
        (token(claims(scope=7)), "The 'scope' claim was not of type List: Integer"),
        (token(claims()) + "x.y", "Unsecured JWS compact serializations must have 3"),
        (token(claims())[:-1], "Unsecured JWS compact serializations must have 3"),
        (token(claims()).replace(".", "..", 1), "Malformed compact serialization contains '..'"),
        ("e30.e30.e30.", "Unsecured JWS compact serializations must have 3"),
        (f"{HEADER}.{part(b'not json')}.", "malformed JSON"),
        (f"{HEADER}.{part(NAN)}.", "malformed JSON"),
        (f"{HEADER}.e.", "malformed Base64 URL encoded value"),
        (f"{HEADER}.{part(b'[' * 100_000)}.", "malformed JSON"),  # nesting too deep
        (f"{HEADER}.{part(NOT_UTF8)}.", "malformed JSON"),
    ],
)
def test_malformed_tokens_are_refused_as_kafka_refuses_them(bad: str, reason: str) -> None:
    refused = refusal(bad)
    assert str(refused).startswith(reason) and (refused.status, refused.scope) == ("invalid_token", None)


def test_time_checks_use_the_allowable_clock_skew() -> None:
    expired = token(claims(iat=NOW_S - 120, exp=NOW_S - 60))
    assert "was on or after the Expiration Time value" in str(refusal(expired))
    assert validator(allowable_clock_skew_ms=60_001).validate(expired)[0] == "alice"
    refusal(expired, validator(allowable_clock_skew_ms=60_000))  # now - skew == exp: on, so expired
    future = token(claims(iat=NOW_S + 10, exp=NOW_S + 60))
    assert "plus allowable clock skew (0 ms)" in str(refusal(future))
    assert validator(allowable_clock_skew_ms=10_000).validate(future)[0] == "alice"  # iat == now + skew
    backwards = token(claims(iat=NOW_S, exp=NOW_S - 1))
    assert "was not after the Issued At" in str(refusal(backwards, validator(allowable_clock_skew_ms=5000)))


def test_the_required_scope_answers_insufficient_scope() -> None:
    check = validator(required_scope=("scope1", "scope2"))
    assert check.validate(token(claims(scope=["scope2", " scope1 ", ""])))[0] == "alice"
    missing = refusal(token(claims(scope=["scope1"])), check)
    assert (missing.status, missing.scope) == ("insufficient_scope", "[scope1, scope2]")
    assert str(missing).startswith("The provided scope ([scope1]) was missing a required scope (scope2).")
    # calculateScope: a string claim is ONE scope, not a space-separated list
    assert refusal(token(claims(scope="scope1 scope2")), check).status == "insufficient_scope"
    assert validator(required_scope=("a b",)).validate(token(claims(scope=" a b ")))[0] == "alice"
    assert refusal(token(claims()), check).scope == "[scope1, scope2]"  # no scope claim: no scopes
    renamed = validator(required_scope=("x",), scope_claim_name="scp")
    assert renamed.validate(token(claims(scp=["x"])))[0] == "alice"


def test_json_is_read_as_jackson_converts_it() -> None:
    """OAuthBearerUnsecuredJws.convert: booleans and null become text (so `"sub": null` is the principal
    "null" on Kafka too), array items become text, a non-object is no claims at all."""
    assert validator().validate(token(claims(sub=None)))[0] == "null"
    assert validator().validate(token(claims(sub=True)))[0] == "true"
    assert validator(required_scope=("1",)).validate(token(claims(scope=[1])))[0] == "alice"
    assert refusal(token(["sub", "alice"])).args[0] == "No expiration time in JWT"
    trailing = f"{part({'alg': 'none'})}.{part(json.dumps(claims()).encode() + b' trailing')}."
    assert validator().validate(trailing)[0] == "alice"  # readTree stops after the first value
    huge = validator().validate(token(claims(exp=10**400)))
    assert huge == ("alice", 2**63 - 1)  # Math.round saturates


def test_base64_is_javas_basic_decoder() -> None:
    """toMap decodes with Base64.getDecoder(): a URL-safe `-` or `_` is malformed, padding optional."""
    question = claims(note="??>")  # encodes to a `_` or `-` in base64url
    assert "-" in part(question) or "_" in part(question)
    assert str(refusal(token(question))) == "malformed Base64 URL encoded value"
    # unpadded parts of every length but 4n+1 decode (the SASL token grammar has no '=' anyway)
    for extra in ("", "x", "xy", "xyz"):
        assert validator().validate(token(claims(pad=extra)))[0] == "alice"


def test_a_header_without_alg_ends_the_exchange() -> None:
    """Kafka's constructor throws a NullPointerException: the broker drops the connection."""
    with pytest.raises(SaslFailure) as caught:
        UnsecuredJws.parse(token(claims(), header={"typ": "JWT"}))
    assert caught.value.generic


def test_the_challenge_then_the_failure_are_kafkas() -> None:
    server = OAuthBearerServer(validator(required_scope=("kafka",)))
    first = f"n,,\x01auth=Bearer {token(claims())}\x01\x01".encode()
    assert server.evaluate(first) == b'{"status":"insufficient_scope", "scope":"[kafka]"}'
    with pytest.raises(SaslFailure, match=r'^\{"status":"insufficient_scope", "scope":"\[kafka\]"\}$'):
        server.evaluate(b"\x01")
    server = OAuthBearerServer(validator())
    assert server.evaluate(f"n,,\x01auth=Bearer {token(claims(exp=1))}\x01\x01".encode()) == (
        b'{"status":"invalid_token"}'
    )
    server = OAuthBearerServer(validator())
    assert server.evaluate(f"n,a=alice,\x01auth=Bearer {token(claims())}\x01\x01".encode()) == b""
    assert (server.complete, server.authorization_id, server.credential_expiry_ms) == (
        True,
        "alice",
        NOW_MS + 3_600_000,
    )


def test_the_flag_is_an_explicit_opt_in() -> None:
    assert parse_serve_argv([]).sasl_oauthbearer_unsecured is False
    config = parse_serve_argv(
        [
            *SASL,
            "--sasl-oauthbearer-unsecured",
            "--sasl-oauthbearer-unsecured-validator-required-scope",
            " kafka  write ",
            "--sasl-oauthbearer-unsecured-validator-allowable-clock-skew-ms",
            "1000",
        ]
    )
    assert config.sasl_oauthbearer_unsecured
    assert config.sasl_oauthbearer_unsecured_validator_required_scope == ("kafka", "write")
    assert config.sasl_oauthbearer_unsecured_validator_allowable_clock_skew_ms == 1000
    env = parse_serve_argv(
        SASL,
        env={
            "KCOORD_SASL_OAUTHBEARER_UNSECURED": "true",
            "KCOORD_SASL_OAUTHBEARER_UNSECURED_VALIDATOR_PRINCIPAL_CLAIM_NAME": " principal ",
        },
    )
    assert env.sasl_oauthbearer_unsecured
    assert env.sasl_oauthbearer_unsecured_validator_principal_claim_name == "principal"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            [*SASL, "--sasl-oauthbearer-unsecured", "--sasl-oauthbearer-jwks-endpoint-url", "file:///j"],
            "--sasl-oauthbearer-unsecured and --sasl-oauthbearer-jwks-endpoint-url exclude each other",
        ),
        (
            [*SASL, "--sasl-oauthbearer-unsecured", "--sasl-oauthbearer-expected-audience", "kcoord"],
            "exclude each other",
        ),
        (
            [*SASL, "--sasl-oauthbearer-jwks-endpoint-url", "file:///j", *REQUIRED_SCOPE_X],
            "--sasl-oauthbearer-unsecured-validator-required-scope needs --sasl-oauthbearer-unsecured",
        ),
        (["--sasl-oauthbearer-unsecured"], "needs OAUTHBEARER in --sasl-enabled-mechanisms"),
        (SASL, "OAUTHBEARER needs --sasl-oauthbearer-jwks-endpoint-url"),
    ],
)
def test_misfitting_flags_stop_startup_with_one_line(argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as caught:
        parse_serve_argv(argv)
    text = str(caught.value.code)
    assert message in text and "\n" not in text and text.startswith("kcoord: ")


def test_an_invalid_required_scope_is_a_flag_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_serve_argv([*SASL, "--sasl-oauthbearer-unsecured", *REQUIRED_SCOPE_X[:1], 'a"b'])
    assert 'Invalid scope value: a"b' in capsys.readouterr().err
