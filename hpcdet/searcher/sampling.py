"""Seeded hyperparameter sampling, bit-compatible with Determined's ``nprand``.

Determined seeds its searchers with ``nprand.New(experiment_seed)``
(``master/pkg/nprand/nprand.go``), a Go port of NumPy's legacy RandomKit
Mersenne Twister.  :class:`NpRand` ports the same generator: seeding,
``Bits32``, the masked-rejection ``bitsLimit`` used by ``Intn``/``Int64n``
and the 53-bit ``UnitInterval``.  Its float stream equals
``numpy.random.RandomState(seed).random_sample()``.

Deviations from Determined, on purpose (so trial sets are not guaranteed
identical to a Determined master's):

* ``int`` hyperparameters are sampled over ``[minval, maxval]`` inclusive
  (``minval + Intn(maxval - minval + 1)``), as the spec asks; some Determined
  versions of ``hyperparameters.go`` use ``Intn(maxval - minval)``.
* nested hyperparameters are sampled in sorted key order; Determined ranges
  over a Go map there, whose order is random.
"""

from __future__ import annotations

import math
from typing import Any

_N = 624
_M = 397
_MATRIX_A = 0x9908B0DF
_UPPER = 0x80000000
_LOWER = 0x7FFFFFFF
_MASK32 = 0xFFFFFFFF

HParams = dict[str, Any]


class NpRand:
    """Mersenne Twister state identical to Determined's ``nprand.State``."""

    def __init__(self, seed: int) -> None:
        """Seed like ``nprand.State.Seed`` (NumPy ``init_genrand``)."""
        self.key: list[int] = []
        value = seed & _MASK32
        for pos in range(_N):
            self.key.append(value)
            value = (1812433253 * (value ^ (value >> 30)) + pos + 1) & _MASK32
        self.pos = _N

    def _twist(self) -> None:
        """Regenerate the 624-word block."""
        key = self.key
        for i in range(_N):
            y = (key[i] & _UPPER) | (key[(i + 1) % _N] & _LOWER)
            key[i] = key[(i + _M) % _N] ^ (y >> 1) ^ (_MATRIX_A if y & 1 else 0)
        self.pos = 0

    def bits32(self) -> int:
        """Return 32 tempered random bits."""
        if self.pos == _N:
            self._twist()
        y = self.key[self.pos]
        self.pos += 1
        y ^= y >> 11
        y ^= (y << 7) & 0x9D2C5680
        y ^= (y << 15) & 0xEFC60000
        return (y ^ (y >> 18)) & _MASK32

    def bits64(self) -> int:
        """Return 64 random bits (upper word drawn first)."""
        return (self.bits32() << 32) | self.bits32()

    def read(self, n: int) -> bytes:
        """Return ``n`` bytes, little-endian per 32-bit word, like ``State.Read``."""
        out = bytearray()
        while len(out) < n:
            out += self.bits32().to_bytes(4, "little")
        return bytes(out[:n])

    def bits_limit(self, limit: int) -> int:
        """Return a uniform integer in ``[0, limit]`` by masked rejection."""
        if limit == 0:
            return 0
        mask = (1 << limit.bit_length()) - 1
        draw = self.bits32 if limit <= _MASK32 else self.bits64
        while True:
            val = draw() & mask
            if val <= limit:
                return val

    def intn(self, n: int) -> int:
        """Return a uniform integer in ``[0, n)``."""
        if n <= 0:
            raise ValueError(f"intn: n must be positive, got {n}")
        return self.bits_limit(n - 1)

    def unit_interval(self) -> float:
        """Return a float in ``[0, 1)`` with 53 random bits."""
        a = self.bits32() >> 5
        b = self.bits32() >> 6
        return (a * 67108864.0 + b) / 9007199254740992.0

    def uniform(self, low: float, high: float) -> float:
        """Return a float uniformly distributed in ``[low, high)``."""
        if high <= low:
            raise ValueError(f"uniform: high {high} <= low {low}")
        return low + (high - low) * self.unit_interval()

    def to_state(self) -> dict[str, Any]:
        """Serialise as ``{"key": [...], "pos": n}`` (Determined's JSON shape)."""
        return {"key": list(self.key), "pos": self.pos}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> NpRand:
        """Rebuild a generator from :meth:`to_state` output."""
        rng = cls(0)
        rng.key = [int(k) for k in state["key"]]
        rng.pos = int(state["pos"])
        return rng


def hp_kind(spec: Any) -> str:
    """Classify a hyperparameter spec: a ``type`` name, ``nested`` or ``const``."""
    if isinstance(spec, dict):
        kind = spec.get("type")
        return kind if isinstance(kind, str) else "nested"
    return "const"


def sample_one(spec: Any, rng: NpRand) -> Any:
    """Sample one hyperparameter value from its spec."""
    kind = hp_kind(spec)
    if kind == "const":
        return spec["val"] if isinstance(spec, dict) else spec
    if kind == "int":
        lo, hi = int(spec["minval"]), int(spec["maxval"])
        return lo + rng.intn(hi - lo + 1)
    if kind == "double":
        return rng.uniform(float(spec["minval"]), float(spec["maxval"]))
    if kind == "log":
        exponent = rng.uniform(float(spec["minval"]), float(spec["maxval"]))
        return math.pow(float(spec.get("base", 10.0)), exponent)
    if kind == "categorical":
        vals = list(spec["vals"])
        return vals[rng.intn(len(vals))]
    if kind == "nested":
        return sample_all(spec, rng)
    raise ValueError(f"unknown hyperparameter type {kind!r}")


def sample_all(hparams: HParams, rng: NpRand) -> HParams:
    """Sample every hyperparameter, visiting keys in sorted order."""
    return {name: sample_one(hparams[name], rng) for name in sorted(hparams)}
