"""The SDK's exceptions, with Determined's names (``determined.common.api.errors``).

Each is a :class:`hpcdet.errors.MasterError` (``status``, ``code``), so code that catches
hpcdet's errors catches these too; the message is the master's, never an HTTP traceback.
"""

from __future__ import annotations

from hpcdet.errors import HpcdetError, MasterError


class APIException(MasterError):
    """The master refused the request (the message says why)."""


class BadRequestException(APIException):
    """400: a value the master does not accept."""


class UnauthenticatedException(APIException):
    """401: not logged in (``det user login``, or ``DET_USER_TOKEN``)."""


class ForbiddenException(APIException):
    """403: logged in, but not allowed."""


class NotFoundException(APIException):
    """404: no such object, or one the caller may not see."""


class MasterNotFoundException(APIException):
    """The master could not be reached (``DET_MASTER``, or ``login(master=...)``)."""


class SDKError(HpcdetError):
    """A call the SDK itself refuses (a bad argument, an unsupported option)."""


_BY_STATUS: dict[int, type[APIException]] = {
    400: BadRequestException, 401: UnauthenticatedException, 403: ForbiddenException,
    404: NotFoundException}


def translate(error: MasterError) -> APIException:
    """The SDK exception for a :class:`MasterError` the client raised."""
    if isinstance(error, APIException):
        return error
    if error.status is None:
        kind: type[APIException] = MasterNotFoundException
    else:
        kind = _BY_STATUS.get(error.status, APIException)
    return kind(str(error), status=error.status, code=error.code)
