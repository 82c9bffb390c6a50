"""The authorizer's decision table, row by row against Kafka's rules, and the indexed lookup against a
brute-force evaluation (Hypothesis).

Rows cite apache/kafka metadata/.../authorizer/StandardAuthorizerData.java (SAD: authorize,
findAclRule, checkSection, findResult, MatchingRuleBuilder.build) and clients/.../server/authorizer/
Authorizer.java (authorizeByResourceType); their behaviour is also what Kafka's
StandardAuthorizerTest checks (testSimpleAuthorizations, testDenyPrecedenceWithOperationAll,
testPrefixAcls, testAuthorizationWithManyAcls).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcoord.broker.security.authorizer import StandardAuthorizer, client_address, implies
from kcoord.broker.security.principal import KafkaPrincipal
from kcoord.coordinator.metadata.acl_model import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    creation_error,
    filter_error,
)

Op, P, R, T = AclOperation, AclPermissionType, ResourceType, PatternType
ALICE = KafkaPrincipal("User", "alice")
BOB = KafkaPrincipal("User", "bob")
HOST = "/10.0.0.1"


def acl(
    name: str,
    operation: AclOperation = Op.READ,
    permission: AclPermissionType = P.ALLOW,
    principal: str = "User:alice",
    host: str = "*",
    pattern: PatternType = T.LITERAL,
    resource_type: ResourceType = R.TOPIC,
) -> AclBinding:
    return AclBinding(resource_type, name, pattern, principal, host, operation, permission)


@dataclass(frozen=True)
class Row:
    why: str  # the Kafka rule, cited
    acls: tuple[AclBinding, ...]
    operation: AclOperation
    name: str
    allowed: bool
    principal: KafkaPrincipal = ALICE
    host: str = HOST
    allow_everyone: bool = False
    super_users: tuple[str, ...] = ()


ROWS = [
    Row("SAD.authorize: super users are allowed everything, even under a DENY",
        (acl("t", Op.ALL, P.DENY),), Op.WRITE, "t", True, super_users=("User:alice",)),
    Row("MatchingRuleBuilder.build: no ACL for the resource -> noAclRule, deny by default",
        (), Op.READ, "t", False),
    Row("allow.everyone.if.no.acl.found=true: no ACL for the resource -> allow",
        (), Op.READ, "t", True, allow_everyone=True),
    Row("allow.everyone applies per resource: ACLs on other resources do not matter",
        (acl("other"),), Op.READ, "t", True, allow_everyone=True),
    Row("build: the resource has an ACL (for someone else) and none for the caller -> deny even with"
        " allow.everyone", (acl("t", principal="User:bob"),), Op.READ, "t", False, allow_everyone=True),
    Row("findResult: LITERAL name match, principal, any host, same operation -> allow",
        (acl("t"),), Op.READ, "t", True),
    Row("checkSection: a LITERAL ACL on a prefix of the name does not match",
        (acl("to"),), Op.READ, "topic", False),
    Row("findAclRule: LITERAL `*` matches every name of the type",
        (acl("*"),), Op.READ, "anything", True),
    Row("the wildcard is per resource type: a TOPIC `*` says nothing about a GROUP",
        (acl("*"),), Op.READ, "g", False),
    Row("checkSection: PREFIXED matches names starting with it",
        (acl("orders-", pattern=T.PREFIXED),), Op.READ, "orders-eu", True),
    Row("PREFIXED matches the name equal to the prefix", (acl("orders", pattern=T.PREFIXED),),
        Op.READ, "orders", True),
    Row("PREFIXED longer than the name does not match", (acl("orders-eu", pattern=T.PREFIXED),),
        Op.READ, "orders", False),
    Row("findResult: principal User:* matches every user",
        (acl("t", principal="User:*"),), Op.READ, "t", True),
    Row("matchingPrincipals is {principal, User:*} only: a Group:* ACL is not a wildcard for users",
        (acl("t", principal="Group:*"),), Op.READ, "t", False),
    Row("findResult: the host must equal the caller's IP", (acl("t", host="10.0.0.2"),), Op.READ, "t", False),
    Row("findResult: the caller's IP as getHostAddress (no leading /) matches",
        (acl("t", host="10.0.0.1"),), Op.READ, "t", True),
    Row("findResult: operation must match", (acl("t", Op.WRITE),), Op.READ, "t", False),
    Row("IMPLIES_DESCRIBE: an ALLOW READ implies DESCRIBE", (acl("t", Op.READ),), Op.DESCRIBE, "t", True),
    Row("IMPLIES_DESCRIBE: an ALLOW WRITE implies DESCRIBE", (acl("t", Op.WRITE),), Op.DESCRIBE, "t", True),
    Row("IMPLIES_DESCRIBE: an ALLOW DELETE implies DESCRIBE", (acl("t", Op.DELETE),), Op.DESCRIBE, "t", True),
    Row("IMPLIES_DESCRIBE: an ALLOW ALTER implies DESCRIBE", (acl("t", Op.ALTER),), Op.DESCRIBE, "t", True),
    Row("IMPLIES_DESCRIBE: CREATE does not imply DESCRIBE", (acl("t", Op.CREATE),), Op.DESCRIBE, "t", False),
    Row("DESCRIBE does not imply READ", (acl("t", Op.DESCRIBE),), Op.READ, "t", False),
    Row("IMPLIES_DESCRIBE_CONFIGS: ALLOW ALTER_CONFIGS implies DESCRIBE_CONFIGS",
        (acl("t", Op.ALTER_CONFIGS),), Op.DESCRIBE_CONFIGS, "t", True),
    Row("ALTER does not imply DESCRIBE_CONFIGS", (acl("t", Op.ALTER),), Op.DESCRIBE_CONFIGS, "t", False),
    Row("findResult: ALL allows every operation", (acl("t", Op.ALL),), Op.ALTER_CONFIGS, "t", True),
    Row("findResult: a DENY only speaks for its own operation: DENY READ does not deny DESCRIBE",
        (acl("t", Op.READ, P.DENY), acl("t", Op.DESCRIBE)), Op.DESCRIBE, "t", True),
    Row("... but the resource has ACLs: DENY READ alone leaves DESCRIBE denied (no allow)",
        (acl("t", Op.READ, P.DENY),), Op.DESCRIBE, "t", False),
    Row("DENY over ALLOW on the same resource", (acl("t"), acl("t", Op.READ, P.DENY)), Op.READ, "t", False),
    Row("DENY ALL denies every operation (testDenyPrecedenceWithOperationAll)",
        (acl("t", Op.ALL), acl("t", Op.ALL, P.DENY)), Op.DESCRIBE, "t", False),
    Row("a wildcard DENY beats a literal ALLOW", (acl("t"), acl("*", Op.READ, P.DENY)), Op.READ, "t", False),
    Row("a PREFIXED DENY beats a literal ALLOW",
        (acl("orders-eu"), acl("orders-", Op.READ, P.DENY, pattern=T.PREFIXED)), Op.READ, "orders-eu", False),
    Row("a literal DENY beats a PREFIXED ALLOW",
        (acl("orders-", pattern=T.PREFIXED), acl("orders-eu", Op.READ, P.DENY)), Op.READ, "orders-eu", False),
    Row("a DENY for User:* denies alice",
        (acl("t"), acl("t", Op.READ, P.DENY, "User:*")), Op.READ, "t", False),
    Row("a DENY from another host does not apply",
        (acl("t"), acl("t", Op.READ, P.DENY, host="10.9.9.9")), Op.READ, "t", True),
    Row("a DENY for bob does not apply to alice", (acl("t"), acl("t", Op.READ, P.DENY, "User:bob")),
        Op.READ, "t", True),
    Row("bob is not alice", (acl("t"),), Op.READ, "t", False, principal=BOB),
    Row("CLUSTER: ALLOW ALTER implies DESCRIBE on kafka-cluster",
        (acl("kafka-cluster", Op.ALTER, resource_type=R.CLUSTER),), Op.DESCRIBE, "kafka-cluster", True),
]  # fmt: skip


@pytest.mark.parametrize("row", ROWS, ids=[row.why[:60] for row in ROWS])
def test_decision_table(row: Row) -> None:
    authorizer = StandardAuthorizer(row.super_users, row.allow_everyone)
    for binding in row.acls:
        authorizer.add(binding)
    resource_type = row.acls[0].resource_type if row.acls else R.TOPIC
    if row.name == "g":
        resource_type = R.GROUP
    decision = authorizer.authorize(row.principal, row.host, row.operation, resource_type, row.name)
    assert decision is row.allowed, row.why


def test_ipv6_host_is_matched_in_javas_form() -> None:
    """getHostAddress() of ::1 is 0:0:0:0:0:0:0:1: an ACL must name that form to match."""
    assert client_address("/::1") == "0:0:0:0:0:0:0:1"
    assert client_address("/127.0.0.1") == "127.0.0.1"
    assert client_address("/::ffff:10.0.0.1") == "10.0.0.1"  # an IPv4-mapped address is an Inet4Address
    assert client_address("/fe80::1%eth0") == "fe80:0:0:0:0:0:0:1%eth0"
    authorizer = StandardAuthorizer()
    authorizer.add(acl("t", host="0:0:0:0:0:0:0:1"))
    assert authorizer.authorize(ALICE, "/::1", Op.READ, R.TOPIC, "t")
    assert not authorizer.authorize(ALICE, "/127.0.0.1", Op.READ, R.TOPIC, "t")


def test_remove_restores_the_default_decision() -> None:
    authorizer = StandardAuthorizer(allow_everyone_if_no_acl_found=True)
    binding = acl("orders-", Op.READ, P.DENY, pattern=T.PREFIXED)
    assert authorizer.add(binding) and not authorizer.add(binding)
    assert not authorizer.authorize(ALICE, HOST, Op.READ, R.TOPIC, "orders-1")
    assert authorizer.remove(binding) and not authorizer.remove(binding)
    assert authorizer.authorize(ALICE, HOST, Op.READ, R.TOPIC, "orders-1")
    assert len(authorizer) == 0


def test_authorized_operations_bits() -> None:
    authorizer = StandardAuthorizer()
    authorizer.add(acl("g", Op.READ, resource_type=R.GROUP))
    bits = authorizer.authorized_operations(ALICE, HOST, R.GROUP, "g")
    assert bits == (1 << Op.READ) | (1 << Op.DESCRIBE)


@pytest.mark.parametrize(
    ("acls", "allowed"),
    [
        ((), False),
        ((acl("t", Op.WRITE),), True),
        ((acl("t", Op.WRITE), acl("t", Op.WRITE, P.DENY)), False),
        ((acl("t", Op.WRITE), acl("t", Op.WRITE, P.DENY, pattern=T.PREFIXED)), False),
        ((acl("topic", Op.WRITE), acl("t", Op.WRITE, P.DENY, pattern=T.PREFIXED)), False),
        ((acl("topic", Op.WRITE), acl("x", Op.WRITE, P.DENY, pattern=T.PREFIXED)), True),
        ((acl("*", Op.WRITE), acl("t", Op.WRITE, P.DENY)), True),
        ((acl("t", Op.WRITE), acl("*", Op.WRITE, P.DENY)), False),
        ((acl("t", Op.READ),), False),
    ],
)
def test_authorize_by_resource_type(acls: tuple[AclBinding, ...], allowed: bool) -> None:
    """Authorizer.authorizeByResourceType (Kafka's AuthorizerTest.testAuthorizeByResourceType* rows)."""
    authorizer = StandardAuthorizer()
    for binding in acls:
        authorizer.add(binding)
    assert authorizer.authorize_by_resource_type(ALICE, HOST, Op.WRITE, R.TOPIC) is allowed


def test_filters_match_as_kafkas_resource_pattern_filter() -> None:
    literal, prefixed, wildcard = acl("foo"), acl("fo", pattern=T.PREFIXED), acl("*")

    def select(pattern: PatternType, name: str | None) -> set[AclBinding]:
        f = AclBindingFilter(R.ANY, name, pattern, None, None, Op.ANY, P.ANY)
        return {b for b in (literal, prefixed, wildcard) if f.matches(b)}

    assert select(T.ANY, None) == {literal, prefixed, wildcard}
    assert select(T.ANY, "foo") == {literal}
    assert select(T.MATCH, "foo") == {literal, prefixed, wildcard}
    assert select(T.PREFIXED, "fo") == {prefixed}
    assert select(T.LITERAL, "fo") == set()


def test_creation_and_filter_validation() -> None:
    assert creation_error(acl("other", resource_type=R.CLUSTER)) is not None
    assert creation_error(acl("")) == "Invalid empty resource name"
    assert creation_error(acl("t", Op.ANY)) == "Invalid operation ANY"
    assert creation_error(acl("t", pattern=T.MATCH)) == "Invalid patternType MATCH"
    assert creation_error(acl("t", permission=P.ANY)) == "Invalid permissionType ANY"
    assert creation_error(acl("t")) is None
    unknown = AclBindingFilter(R.UNKNOWN, None, T.ANY, None, None, Op.ANY, P.ANY)
    assert filter_error(unknown) == "Unknown patternFilter."


# -- the property: the index equals a brute-force evaluation of Kafka's rules ------------------------
def brute_force(authorizer: StandardAuthorizer, caller: KafkaPrincipal, host: str, op: AclOperation,
                resource_type: ResourceType, name: str) -> bool:  # fmt: skip
    if str(caller) in authorizer.super_users:
        return True
    applying = [
        b for b in authorizer.acls()
        if b.resource_type == resource_type and (
            (b.pattern_type == T.LITERAL and b.resource_name in (name, "*"))
            or (b.pattern_type == T.PREFIXED and name.startswith(b.resource_name))
        )
    ]  # fmt: skip
    counting = [
        b for b in applying
        if b.principal in (str(caller), "User:*") and b.host in ("*", client_address(host))
        and implies(b.operation, b.permission_type, op)
    ]  # fmt: skip
    if any(b.permission_type == P.DENY for b in counting):
        return False
    if counting:
        return True
    return not applying and authorizer.allow_everyone_if_no_acl_found


NAMES = st.sampled_from(["", "a", "ab", "abc", "abd", "b", "ba", "*", "*a"])
bindings = st.builds(
    AclBinding,
    st.sampled_from([R.TOPIC, R.GROUP]),
    NAMES.filter(bool),
    st.sampled_from([T.LITERAL, T.PREFIXED]),
    st.sampled_from(["User:alice", "User:bob", "User:*"]),
    st.sampled_from(["*", "10.0.0.1", "10.0.0.2"]),
    st.sampled_from([o for o in Op if o not in (Op.UNKNOWN, Op.ANY)]),
    st.sampled_from([P.ALLOW, P.DENY]),
)


@settings(max_examples=300, deadline=None)
@given(
    acls=st.lists(bindings, max_size=12),
    removed=st.integers(0, 3),
    allow_everyone=st.booleans(),
    super_user=st.booleans(),
    queries=st.lists(
        st.tuples(
            st.sampled_from([ALICE, BOB]),
            st.sampled_from(["/10.0.0.1", "/10.0.0.2"]),
            st.sampled_from([o for o in Op if o not in (Op.UNKNOWN, Op.ANY, Op.ALL)]),
            st.sampled_from([R.TOPIC, R.GROUP]),
            NAMES,
        ),
        min_size=1,
        max_size=8,
    ),
)
def test_indexed_lookup_equals_brute_force(
    acls: list[AclBinding],
    removed: int,
    allow_everyone: bool,
    super_user: bool,
    queries: list[tuple[KafkaPrincipal, str, AclOperation, ResourceType, str]],
) -> None:
    authorizer = StandardAuthorizer(["User:bob"] if super_user else [], allow_everyone)
    for binding in acls:
        authorizer.add(binding)
    for binding in acls[:removed]:
        authorizer.remove(binding)
    for caller, host, op, resource_type, name in queries:
        expected = brute_force(authorizer, caller, host, op, resource_type, name)
        assert authorizer.authorize(caller, host, op, resource_type, name) is expected
