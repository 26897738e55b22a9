"""A FAKE MUNGE for unit tests only: no key, no daemon, nothing proven.

``FakeMunge.encode`` makes ``MUNGE:fake:<uid>:<nonce>:<payload>``; ``decode`` refuses a
credential it has decoded before (as munged refuses a replay). Integration tests
(tests/integration/test_it_identity.py) use the real ``munge``/``unmunge``.
"""

from __future__ import annotations

import itertools

from hpcdet.munge import Credential, MungeError


class FakeMunge:
    def __init__(self, uid: int) -> None:
        self.uid = uid
        self.seen: set[str] = set()
        self._nonce = itertools.count()

    def encode(self, payload: str) -> str:
        return f"MUNGE:fake:{self.uid}:{next(self._nonce)}:{payload}"

    def decode(self, credential: str) -> Credential:
        if credential in self.seen:
            raise MungeError("the MUNGE credential was refused: Replayed credential",
                             status="17")
        self.seen.add(credential)
        try:
            _, _, uid, _, payload = credential.split(":", 4)
            return Credential(uid=int(uid), gid=int(uid), payload=payload)
        except ValueError:
            raise MungeError("the MUNGE credential was refused: Invalid credential") from None
