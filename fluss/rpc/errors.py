"""Conversions between ``FlussError`` and the ``ErrorInfo`` carried in RPC responses."""

from __future__ import annotations

import logging

from fluss.errors import ErrorCode, FlussError
from fluss.rpc.gen import fluss_api_pb2 as pb

log = logging.getLogger(__name__)

OK = pb.ErrorInfo(code=ErrorCode.NONE)


def error_info(exc: BaseException) -> pb.ErrorInfo:
    """The ErrorInfo for an exception; anything that is not a FlussError is an unknown server error."""
    if isinstance(exc, FlussError):
        return pb.ErrorInfo(code=exc.error_code, message=exc.message)
    log.exception("unexpected server error", exc_info=exc)
    return pb.ErrorInfo(code=ErrorCode.UNKNOWN_SERVER_ERROR, message=f"{type(exc).__name__}: {exc}")


def raise_for_error(err: pb.ErrorInfo) -> None:
    if err.code != ErrorCode.NONE:
        raise FlussError(err.message, err.code)


def to_error(err: pb.ErrorInfo) -> FlussError | None:
    return None if err.code == ErrorCode.NONE else FlussError(err.message, err.code)
