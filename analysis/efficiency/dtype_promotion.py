"""The element type of a pointwise operator's result: PyTorch's type promotion, on the types a
trace records.

PyTorch promotes by category (bool < integer < floating < complex) and, within one, to the wider
type (``bfloat16`` with ``half`` gives ``float``).  Dimensioned tensors decide first; a 0-dim
tensor of a higher category lifts the result to its own type, and a Python number (the trace
records it as a 0-dim ``double`` or ``long int``: PyTorch wraps numbers so) of a higher category
to that category's default type (``float``, ``long int``).  No I/O.
"""

from __future__ import annotations

from .device_peaks import DTYPE_BYTES

_CATEGORY: dict[str, int] = {
    "bool": 0,
    **dict.fromkeys(
        ("signed char", "unsigned char", "short", "short int", "int", "unsigned int", "long", "long int"), 1
    ),
    **dict.fromkeys(("c10::BFloat16", "c10::Half", "float", "double"), 2),
    **dict.fromkeys(("c10::complex<c10::Half>", "c10::complex<float>", "c10::complex<double>"), 3),
}
#: A 0-dim argument of these types is taken for a Python number, with its category's default type.
WRAPPED_NUMBERS: dict[str, str] = {"double": "float", "long int": "long int", "long": "long int", "bool": "bool"}


def category(dtype: str) -> int:
    """0 bool, 1 integer, 2 floating, 3 complex; -1 for a type promotion does not cover (fp8, fp4)."""
    return _CATEGORY.get(dtype, -1)


def promote_pair(a: str, b: str) -> str:
    """The result type of two tensor types (fp8/fp4, which PyTorch does not promote: the first)."""
    if a == b:
        return a
    ca, cb = category(a), category(b)
    if ca < 0 or cb < 0:
        return a if ca < 0 else b
    if ca != cb:
        return a if ca > cb else b
    if {a, b} == {"c10::BFloat16", "c10::Half"}:
        return "float"
    if {a, b} == {"signed char", "unsigned char"}:
        return "short int"
    return a if DTYPE_BYTES.get(a, 0) >= DTYPE_BYTES.get(b, 0) else b


def _promote(types: list[str]) -> str | None:
    result: str | None = None
    for dtype in types:
        result = dtype if result is None else promote_pair(result, dtype)
    return result


def result_type(arguments: list[tuple[list[int], str]]) -> str | None:
    """The result type of a pointwise operator over its tensor ``arguments`` (shape, type)."""
    dimensioned = _promote([t for shape, t in arguments if shape])
    zero_dim = [t for shape, t in arguments if not shape]
    tensors = _promote([t for t in zero_dim if t not in WRAPPED_NUMBERS])
    numbers = _promote([WRAPPED_NUMBERS[t] for t in zero_dim if t in WRAPPED_NUMBERS])
    if dimensioned is None:  # 0-dim arguments alone: they promote as tensors do
        return _promote([t for _shape, t in arguments])
    result = dimensioned
    if tensors is not None and category(tensors) > category(result):
        result = promote_pair(result, tensors)
    if numbers is not None and category(numbers) > category(result):
        result = numbers
    return result
