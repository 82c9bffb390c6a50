"""DescribeUserScramCredentials (50) v0 and AlterUserScramCredentials (51) v0 (KIP-554).

Authorization as Kafka: DESCRIBE on the CLUSTER (KafkaApis.handleDescribeUserScramCredentialsRequest)
and ALTER on the CLUSTER (ControllerApis.handleAlterUserScramCredentials); a denial is the request's
getErrorResponse with CLUSTER_AUTHORIZATION_FAILED (Describe: top level and once per named user
without a name; Alter: once per distinct user, sorted). Without an authorizer everyone may. The
table and its validation are kcoord/coordinator/metadata/scram_credentials.py's.
"""

from __future__ import annotations

from typing import Any

from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.protocol.errors import ErrorCode

__all__ = ["handle_alter", "handle_describe"]

_DENIED = "Cluster authorization failed."  # Errors.CLUSTER_AUTHORIZATION_FAILED's default message


def _allowed(ctx: ServerContext, meta: RequestMeta, operation: str) -> bool:
    # The authorizer seam (issue 25, h/acl): None when no authorizer is configured.
    authorizer = getattr(ctx, "authorizer", None)
    if authorizer is None:
        return True
    return bool(authorizer.authorize(meta.principal, meta.client_host, operation, "CLUSTER", "kafka-cluster"))


def handle_describe(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    users = req["users"]
    if not _allowed(ctx, meta, "DESCRIBE"):
        denied = {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": _DENIED}
        respond({**denied, "results": [{**denied, "user": "", "credential_infos": []} for _ in users or ()]})
        return
    credentials = ctx.credentials
    names = None if users is None else [str(user["name"]) for user in users]
    respond({"results": credentials.describe(names) if credentials is not None else []})


def handle_alter(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    deletions: list[dict[str, Any]] = req["deletions"]
    upsertions: list[dict[str, Any]] = req["upsertions"]
    credentials = ctx.credentials
    if not _allowed(ctx, meta, "ALTER") or credentials is None:
        users = sorted({str(item["name"]) for item in [*deletions, *upsertions]})
        code = (
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            if credentials is not None
            else ErrorCode.UNKNOWN_SERVER_ERROR
        )
        respond({"results": [{"user": user, "error_code": code, "error_message": _DENIED} for user in users]})
        return
    credentials.alter(deletions, upsertions, lambda results: respond({"results": results}))
