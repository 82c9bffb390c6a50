"""UpdateFeatures (57), v0-2 (flexible): change finalized feature levels (KIP-584). v0 allow_downgrade;
v1 upgrade_type and validate_only; v2 answers the top-level error only.

Kafka's brokers forward it to the controller: ControllerApis.handleUpdateFeatures checks ALTER on the
cluster (else CLUSTER_AUTHORIZATION_FAILED), then FeatureControlManager.updateFeatures checks each update
in turn and answers the first failure as the request's error, INVALID_UPDATE_VERSION "Invalid update
version L for feature F. <reason>" (updateFeature): an unknown upgrade type; a level below 0; a level
the node does not support (QuorumFeatures.reasonNotSupported: "Local controller N does not support
this feature." for a feature it does not know, "... only supports versions A-B" otherwise); a lower
level without a downgrade type; a higher level with one. Per-feature results (v0-1) are listed only
when the whole request succeeds (UpdateFeaturesResponse.createWithErrors).

kcoord's one feature is `transaction.version` (supported 0-2, what ApiVersions reports), finalized at
startup by --transaction-version. Requests that pass Kafka's checks and leave every level as it is
succeed, as Kafka's no-change update does; one that would change a level is refused with
INVALID_UPDATE_VERSION, since kcoord does not change a finalized level while it runs (docs/compat.md).
"""

from __future__ import annotations

from typing import Any

from kcoord.broker import authz
from kcoord.broker.apis.api_versions import MAX_TRANSACTION_VERSION, TRANSACTION_VERSION
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.metadata.acl_model import AclOperation
from kcoord.protocol.errors import ErrorCode

__all__ = ["API_KEY", "handle"]

API_KEY = 57
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3  # FeatureUpdate.UpgradeType codes; others UNKNOWN
NOT_AUTHORIZED = "Request is not authorized."
_INVALID = ErrorCode.INVALID_UPDATE_VERSION
_NEEDS_DOWNGRADE_TYPE = (
    "Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe "
    "downgrade."
)


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    version = meta.api_version
    if ctx.authorizer is not None and not authz.cluster_allowed(ctx, meta, API_KEY, AclOperation.ALTER):
        respond({"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": NOT_AUTHORIZED})
        return
    updates = [
        (str(u["feature"]), int(u["max_version_level"]), _upgrade_type(u, version))
        for u in req["feature_updates"]
    ]
    error = _first_error(ctx, updates)
    if error is not None:
        respond({"error_code": _INVALID, "error_message": error})
        return
    body: dict[str, Any] = {"error_code": ErrorCode.NONE, "error_message": None}
    if version < 2:
        body["results"] = [
            {"feature": name, "error_code": ErrorCode.NONE, "error_message": None} for name, _, _ in updates
        ]
    respond(body)


def _upgrade_type(update: dict[str, Any], version: int) -> int:
    """UpdateFeaturesRequest.extractFeatureUpdates: v0's allow_downgrade means a safe downgrade."""
    if version == 0:
        return SAFE_DOWNGRADE if update["allow_downgrade"] else UPGRADE
    return int(update["upgrade_type"])


def _first_error(ctx: ServerContext, updates: list[tuple[str, int, int]]) -> str | None:
    finalized = {TRANSACTION_VERSION: ctx.config.transaction_version}
    for name, level, upgrade_type in updates:
        reason = _reason(ctx, name, level, upgrade_type, finalized.get(name, 0))
        if reason is not None:
            return f"Invalid update version {level} for feature {name}. {reason}"
    return None


def _reason(ctx: ServerContext, name: str, level: int, upgrade_type: int, current: int) -> str | None:
    """FeatureControlManager.updateFeature's checks, in its order, then kcoord's own refusal."""
    if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        return "The controller does not support the given upgrade type."
    if level < 0:
        return "A feature version cannot be less than 0."
    supported = (0, MAX_TRANSACTION_VERSION) if name == TRANSACTION_VERSION else (0, 0)
    if not supported[0] <= level <= supported[1]:
        if supported[1] == 0:
            return f"Local controller {ctx.node_id} does not support this feature."
        return f"Local controller {ctx.node_id} only supports versions {supported[0]}-{supported[1]}"
    if level < current and upgrade_type == UPGRADE:
        return _NEEDS_DOWNGRADE_TYPE
    if level > current and upgrade_type != UPGRADE:
        return "Can't downgrade to a newer version."
    if name != TRANSACTION_VERSION:  # Feature.featureFromName: a name no feature has
        return f"Feature {name} not found."
    if level != current:  # kcoord: the level is --transaction-version's for the server's lifetime
        return (
            f"kcoord finalizes {name} at startup (--transaction-version); it does not change while running."
        )
    return None
