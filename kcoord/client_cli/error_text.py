"""Kafka's messages (Errors.java) for the error codes the tools show to users."""

from __future__ import annotations

from kcoord.protocol.errors import ErrorCode

__all__ = ["error_text"]

# Kafka's texts (Errors.java) for the codes this tool shows to users; other codes show their name.
_MESSAGES = {
    ErrorCode.NON_EMPTY_GROUP: "The group is not empty.",
    ErrorCode.GROUP_ID_NOT_FOUND: "The group id does not exist.",
    ErrorCode.INVALID_GROUP_ID: "The configured groupId is invalid.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "Transactional Id authorization failed.",
    ErrorCode.SECURITY_DISABLED: "Security features are disabled.",
    ErrorCode.SASL_AUTHENTICATION_FAILED: "SASL Authentication failed.",
    ErrorCode.INVALID_REQUEST: "This most likely occurs because of a request being malformed by the client "
    "library or the message was sent to an incompatible broker. See the broker logs for more details.",
    ErrorCode.RESOURCE_NOT_FOUND: "A request illegally referred to a resource that does not exist.",
    ErrorCode.DUPLICATE_RESOURCE: "A request illegally referred to the same resource twice.",
    ErrorCode.UNACCEPTABLE_CREDENTIAL: "Requested credential would not meet criteria for acceptability.",
    ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC: "The consumer group is actively subscribed to the topic",
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
    ErrorCode.UNKNOWN_MEMBER_ID: "The coordinator is not aware of this member.",
    ErrorCode.REBALANCE_IN_PROGRESS: "The group is rebalancing, so a rejoin is needed.",
    ErrorCode.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    ErrorCode.NOT_COORDINATOR: "This is not the correct coordinator.",
    ErrorCode.TRANSACTIONAL_ID_NOT_FOUND: "The transactionalId could not be found.",
    ErrorCode.INVALID_PRODUCER_EPOCH: "Producer attempted to produce with an old epoch.",
    ErrorCode.INVALID_TXN_STATE: "The producer attempted a transactional operation in an invalid state.",
    ErrorCode.TRANSACTION_COORDINATOR_FENCED: "The transaction coordinator sending a WriteTxnMarker is no "
    "longer the current coordinator for a given producer.",
}


def error_text(code: int) -> str:
    """`NAME: Kafka's message` for an error code (`NAME` alone when we carry no message for it)."""
    try:
        error = ErrorCode(code)
    except ValueError:
        return f"error code {code}"
    message = _MESSAGES.get(error)
    return f"{error.name}: {message}" if message else error.name
