"""How ``det`` and the harness verify a TLS master's certificate.

``DET_MASTER_CERT_FILE`` (as in Determined) names a PEM file holding the master's CA or the
master's own certificate; either is trusted, next to the system's CAs. The value
``noverify`` turns verification off, and only when asked for. Without the variable the
system's CAs decide.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from hpcdet.errors import MasterError

if TYPE_CHECKING:
    import ssl

CERT_FILE_VAR = "DET_MASTER_CERT_FILE"
NOVERIFY = "noverify"


class MasterTlsError(MasterError):
    """The master's certificate could not be verified (or the cert file is unusable)."""


def cert_file_from_env(environ: Mapping[str, str] | None = None) -> str | None:
    """``$DET_MASTER_CERT_FILE``, or None when unset or empty."""
    env = os.environ if environ is None else environ
    return env.get(CERT_FILE_VAR) or None


def verify_setting(cert_file: str | None) -> ssl.SSLContext | bool:
    """What the client's ``verify`` is: a context trusting ``cert_file``, False for noverify,
    True (the system's CAs) without a file."""
    if cert_file is None:
        return True
    if cert_file == NOVERIFY:
        return False
    import ssl  # here: a plain-HTTP master's commands need not load it

    context = ssl.create_default_context()
    try:
        context.load_verify_locations(cafile=cert_file)
    except (OSError, ssl.SSLError) as exc:
        reason = getattr(exc, "strerror", None) or getattr(exc, "reason", None) or str(exc)
        raise MasterTlsError(f"{CERT_FILE_VAR}={cert_file}: cannot use it as a certificate "
                             f"file: {reason}") from None
    # The master's own (e.g. self-signed or leaf) certificate is then a trust anchor too.
    context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    return context


def is_verify_failure(exc: BaseException) -> bool:
    """Whether ``exc`` (or an error it was raised from) is a failed certificate check."""
    ssl = sys.modules.get("ssl")
    if ssl is None:  # never loaded: no TLS was tried (a plain-HTTP master)
        return False
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            break
        if isinstance(seen, ssl.SSLCertVerificationError):
            return True
        seen = seen.__cause__ or seen.__context__
    return "CERTIFICATE_VERIFY_FAILED" in str(exc)


def verify_failure(url: str, exc: BaseException, cert_file: str | None) -> MasterTlsError:
    """The one-line error for a certificate the client could not verify."""
    reason = _reason(exc)
    if cert_file:
        fix = (f"check that {CERT_FILE_VAR}={cert_file} holds the master's CA or certificate "
               "and that the address matches its name")
    else:
        fix = (f"set {CERT_FILE_VAR}=/path/to/ca.pem (the master's CA or certificate), or "
               f"{CERT_FILE_VAR}={NOVERIFY} to skip the check")
    return MasterTlsError(f"cannot verify the TLS certificate of the master at {url} "
                          f"({reason}): {fix}")


def _reason(exc: BaseException) -> str:
    import ssl

    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            break
        if isinstance(seen, ssl.SSLCertVerificationError) and seen.verify_message:
            return str(seen.verify_message)
        seen = seen.__cause__ or seen.__context__
    return "certificate verify failed"
