"""Conversions between ``FlussError`` and the ``ErrorInfo`` carried in RPC responses.

A ``FlussError`` travels as its code and message. Any other exception is a bug of the server: it is logged here
with its stack and the request id, and what travels is ``UNKNOWN_SERVER_ERROR`` with a message naming the API and
the request id, never the exception's text (which may hold paths or internals). ``ErrorDoor``
(``fluss.rpc.interceptors``) applies the same rule to whole requests; this function serves per-bucket results.
"""

from __future__ import annotations

import logging

from fluss.errors import ErrorCode, FlussError
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.rpc.interceptors import current_request, internal_error_message, new_request_id

log = logging.getLogger(__name__)

OK = pb.ErrorInfo(code=ErrorCode.NONE)


def error_info(exc: BaseException) -> pb.ErrorInfo:
    """The ErrorInfo for an exception; anything that is not a FlussError is an unknown server error."""
    if isinstance(exc, FlussError):
        return pb.ErrorInfo(code=exc.error_code, message=exc.message)
    request = current_request()
    request_id = request.request_id if request else new_request_id()
    api = request.api if request else "a request"
    log.error("internal error in %s (request id %s)", api, request_id, exc_info=exc)
    return pb.ErrorInfo(code=ErrorCode.UNKNOWN_SERVER_ERROR, message=internal_error_message(api, request_id))


def raise_for_error(err: pb.ErrorInfo) -> None:
    if err.code != ErrorCode.NONE:
        raise FlussError(err.message, err.code)


def to_error(err: pb.ErrorInfo) -> FlussError | None:
    return None if err.code == ErrorCode.NONE else FlussError(err.message, err.code)
