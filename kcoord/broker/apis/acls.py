"""DescribeAcls (29), CreateAcls (30), DeleteAcls (31), v0-3: Kafka's AclApis.

Each first checks the cluster operation (DESCRIBE for DescribeAcls, ALTER for the other two:
CLUSTER_AUTHORIZATION_FAILED for the whole request, per creation or per filter, as the request's
getErrorResponse spreads it), then without an authorizer answers SECURITY_DISABLED the same way.
Create and delete answer once their records are durable (AclStore); their errors are per binding /
filter: INVALID_REQUEST with AclApis' / AclControlManager's messages. v0 carries no pattern type
(LITERAL by the schema's default). A filter or creation with an UNKNOWN element gets INVALID_REQUEST
where Kafka's request parser refuses the whole request (docs/compat.md).
"""

from __future__ import annotations

from typing import Any

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.metadata.acl_model import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    filter_error,
)
from kcoord.protocol.errors import ErrorCode

__all__ = ["handle_create", "handle_delete", "handle_describe"]

DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
_NOT_AUTHORIZED = "Request is not authorized."  # ClusterAuthorizationException from authorizeClusterOperation


def _refusal(ctx: ServerContext, meta: RequestMeta, api_key: int, operation: AclOperation,
             disabled: str) -> tuple[ErrorCode, str] | None:  # fmt: skip
    if ctx.authorizer is not None and not authz.cluster_allowed(ctx, meta, api_key, operation):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, _NOT_AUTHORIZED
    if ctx.acls is None:
        return ErrorCode.SECURITY_DISABLED, disabled
    return None


def _filter(f: Request) -> AclBindingFilter:
    return AclBindingFilter(
        ResourceType.of(int(f["resource_type_filter"])),
        f["resource_name_filter"],
        PatternType.of(int(f["pattern_type_filter"])),
        f["principal_filter"],
        f["host_filter"],
        AclOperation.of(int(f["operation"])),
        AclPermissionType.of(int(f["permission_type"])),
    )


def handle_describe(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    refusal = _refusal(
        ctx, meta, DESCRIBE_ACLS, AclOperation.DESCRIBE, "No Authorizer is configured on the broker"
    )
    if refusal is not None:
        respond({"error_code": int(refusal[0]), "error_message": refusal[1], "resources": []})
        return
    assert ctx.authorizer is not None
    acl_filter = _filter(req)
    if (error := filter_error(acl_filter)) is not None:
        respond({"error_code": int(ErrorCode.INVALID_REQUEST), "error_message": error, "resources": []})
        return
    # DescribeAclsResponse.aclsResources: one entry per resource pattern, its ACLs under it.
    resources: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
    for b in ctx.authorizer.acls(acl_filter):
        entry = {"principal": b.principal, "host": b.host, "operation": int(b.operation),
                 "permission_type": int(b.permission_type)}  # fmt: skip
        resources.setdefault((int(b.resource_type), b.resource_name, int(b.pattern_type)), []).append(entry)
    respond(
        {
            "error_code": 0,
            "error_message": None,
            "resources": [
                {"resource_type": rt, "resource_name": name, "pattern_type": pt, "acls": acls}
                for (rt, name, pt), acls in resources.items()
            ],
        }
    )


def handle_create(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    creations = req["creations"]
    refusal = _refusal(ctx, meta, CREATE_ACLS, AclOperation.ALTER, "No Authorizer is configured.")
    if refusal is not None:
        result = {"error_code": int(refusal[0]), "error_message": refusal[1]}
        respond({"results": [result for _ in creations]})
        return
    assert ctx.acls is not None
    bindings = [
        AclBinding(
            ResourceType.of(int(c["resource_type"])),
            str(c["resource_name"]),
            PatternType.of(int(c["resource_pattern_type"])),
            str(c["principal"]),
            str(c["host"]),
            AclOperation.of(int(c["operation"])),
            AclPermissionType.of(int(c["permission_type"])),
        )
        for c in creations
    ]

    def done(errors: list[str | None]) -> None:
        respond({"results": [_result(error) for error in errors]})

    ctx.acls.create(bindings, done)


def _result(error: str | None) -> dict[str, object]:
    if error is None:
        return {"error_code": 0, "error_message": None}
    code = (
        ErrorCode.INVALID_REQUEST if not error.startswith("Unknown error") else ErrorCode.UNKNOWN_SERVER_ERROR
    )
    return {"error_code": int(code), "error_message": error}


def handle_delete(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    filters = req["filters"]
    refusal = _refusal(ctx, meta, DELETE_ACLS, AclOperation.ALTER, "No Authorizer is configured.")
    if refusal is not None:
        result = {"error_code": int(refusal[0]), "error_message": refusal[1], "matching_acls": []}
        respond({"filter_results": [result for _ in filters]})
        return
    assert ctx.acls is not None

    def done(results: list[tuple[str | None, list[AclBinding]]]) -> None:
        respond({"filter_results": [_filter_result(error, deleted) for error, deleted in results]})

    ctx.acls.delete([_filter(f) for f in filters], done)


def _filter_result(error: str | None, deleted: list[AclBinding]) -> dict[str, object]:
    if error is not None:
        return {**_result(error), "matching_acls": []}
    matching = [
        {
            "error_code": 0,
            "error_message": None,
            "resource_type": int(b.resource_type),
            "resource_name": b.resource_name,
            "pattern_type": int(b.pattern_type),
            "principal": b.principal,
            "host": b.host,
            "operation": int(b.operation),
            "permission_type": int(b.permission_type),
        }
        for b in deleted
    ]
    return {"error_code": 0, "error_message": None, "matching_acls": matching}
