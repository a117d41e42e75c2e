"""Peak throughput of GPUs: dense TFLOP/s per precision and memory bandwidth in TB/s.

The figures are the vendors' datasheet numbers (sources in docs/efficiency.md), dense (the
datasheets' "with sparsity" tensor figures halved), per device as PyTorch sees it: an MI250X is
two devices (GCDs), each with half of the package's figures.  A device is matched by the
``name`` in the trace's ``deviceProperties`` (:func:`match_device`), with the SM count and memory
size deciding between variants of one name.  No I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

#: The precisions a peak is given for (``tf32``: fp32 GEMMs on tensor cores).
PRECISIONS: tuple[str, ...] = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp4")


@dataclass(frozen=True)
class DevicePeak:
    """One device's peaks: ``tflops`` per precision (absent: the device has no such unit),
    ``tb_s`` its memory bandwidth (10^12 bytes/s), ``source`` the datasheet they come from."""

    name: str
    tflops: dict[str, float]
    tb_s: float
    source: str
    sms: int | None = None
    notes: str = field(default="")

    @property
    def cache_mib(self) -> float | None:
        """The device's last-level cache in MiB (:data:`LAST_LEVEL_CACHE_MIB`; None: not in the table)."""
        return LAST_LEVEL_CACHE_MIB.get(self.name)

    def peak_tflops(self, precision: str | None) -> float | None:
        """The compute peak for ``precision`` (fp32 where none is known), None if the device lacks it."""
        return self.tflops.get(precision or "fp32")


#: The last cache before DRAM, in MiB (the vendors' datasheets and architecture papers): NVIDIA's
#: L2 (H100/H200 50 MB, A100 40 MB, V100 6 MB, L4 48 MB, L40S 96 MB), AMD's Infinity Cache on
#: MI300X (256 MB), the L2 of one MI250X GCD and of MI210 (8 MB).  Data of a kernel that fits
#: here can be read faster than the DRAM peak.  B200: not in the table (no figure we can source).
LAST_LEVEL_CACHE_MIB: dict[str, float] = {
    **dict.fromkeys(("H100 SXM", "H100 PCIe", "H100 NVL", "H200"), 50.0),
    **dict.fromkeys(("A100 80GB SXM", "A100 80GB PCIe", "A100 40GB"), 40.0),
    **dict.fromkeys(("V100 SXM2", "V100 PCIe"), 6.0),
    "L4": 48.0,
    "L40S": 96.0,
    "MI300X": 256.0,
    "MI250X (one GCD)": 8.0,
    "MI210": 8.0,
}

#: The peak table (dense figures).  ``sms``: the SM/CU count of the variant, used to tell apart
#: variants a trace names alike.
PEAKS: tuple[DevicePeak, ...] = (
    DevicePeak(
        "H100 SXM",
        {"fp64": 67.0, "fp32": 67.0, "tf32": 494.7, "bf16": 989.4, "fp16": 989.4, "fp8": 1978.9},
        3.35,
        "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column)",
        132,
    ),
    DevicePeak(
        "H100 PCIe",
        {"fp64": 51.0, "fp32": 51.0, "tf32": 378.0, "bf16": 756.0, "fp16": 756.0, "fp8": 1513.0},
        2.0,
        "NVIDIA H100 Tensor Core GPU datasheet (H100 PCIe column)",
        114,
    ),
    DevicePeak(
        "H100 NVL",
        {"fp64": 60.0, "fp32": 60.0, "tf32": 417.5, "bf16": 835.5, "fp16": 835.5, "fp8": 1670.5},
        3.9,
        "NVIDIA H100 Tensor Core GPU datasheet (H100 NVL column)",
        132,
    ),
    DevicePeak(
        "H200",
        {"fp64": 67.0, "fp32": 67.0, "tf32": 494.7, "bf16": 989.4, "fp16": 989.4, "fp8": 1978.9},
        4.8,
        "NVIDIA H200 Tensor Core GPU datasheet (H200 SXM column)",
        132,
    ),
    DevicePeak(
        "A100 80GB SXM",
        {"fp64": 19.5, "fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0},
        2.039,
        "NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM column)",
        108,
    ),
    DevicePeak(
        "A100 80GB PCIe",
        {"fp64": 19.5, "fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0},
        1.935,
        "NVIDIA A100 Tensor Core GPU datasheet (A100 80GB PCIe column)",
        108,
    ),
    DevicePeak(
        "A100 40GB",
        {"fp64": 19.5, "fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0},
        1.555,
        "NVIDIA A100 Tensor Core GPU datasheet (A100 40GB PCIe and SXM columns)",
        108,
    ),
    DevicePeak(
        "V100 SXM2",
        {"fp64": 7.8, "fp32": 15.7, "fp16": 125.0},
        0.9,
        "NVIDIA Tesla V100 GPU datasheet (V100 SXM2 column)",
        80,
    ),
    DevicePeak(
        "V100 PCIe",
        {"fp64": 7.0, "fp32": 14.0, "fp16": 112.0},
        0.9,
        "NVIDIA Tesla V100 GPU datasheet (V100 PCIe column)",
        80,
    ),
    DevicePeak(
        "L4",
        {"fp32": 30.3, "tf32": 60.0, "bf16": 121.0, "fp16": 121.0, "fp8": 242.5},
        0.3,
        "NVIDIA L4 Tensor Core GPU datasheet",
        58,
    ),
    DevicePeak(
        "L40S",
        {"fp32": 91.6, "tf32": 183.0, "bf16": 362.05, "fp16": 362.05, "fp8": 733.0},
        0.864,
        "NVIDIA L40S GPU datasheet",
        142,
    ),
    DevicePeak(
        "B200",
        {"fp64": 37.0, "fp32": 75.0, "tf32": 1125.0, "bf16": 2250.0, "fp16": 2250.0, "fp8": 4500.0, "fp4": 9000.0},
        8.0,
        "NVIDIA DGX B200 / HGX B200 datasheet (per-GPU share of the 8-GPU figures)",
        148,
    ),
    DevicePeak(
        "MI300X",
        {"fp64": 163.4, "fp32": 163.4, "tf32": 653.7, "bf16": 1307.4, "fp16": 1307.4, "fp8": 2614.9},
        5.3,
        "AMD Instinct MI300X accelerator datasheet (matrix figures)",
        304,
    ),
    DevicePeak(
        "MI250X (one GCD)",
        {"fp64": 47.85, "fp32": 47.85, "bf16": 191.5, "fp16": 191.5},
        1.6384,
        "AMD Instinct MI250X accelerator datasheet (matrix figures, half of the two-GCD package)",
        110,
        "PyTorch sees each of the package's two GCDs as a device",
    ),
    DevicePeak(
        "MI210",
        {"fp64": 45.3, "fp32": 45.3, "bf16": 181.0, "fp16": 181.0},
        1.6384,
        "AMD Instinct MI210 accelerator datasheet (matrix figures)",
        104,
    ),
)
_BY_NAME = {peak.name: peak for peak in PEAKS}

#: (regex on the deviceProperties name, table entry or a function of the properties), in order.
_GIB = 1024**3


def _a100(props: dict[str, Any]) -> str:
    memory = props.get("totalGlobalMem") or 0
    name = str(props.get("name") or "")
    if memory > 60 * _GIB:
        return "A100 80GB PCIe" if re.search(r"(?i)pcie", name) else "A100 80GB SXM"
    return "A100 40GB"


def _h100(props: dict[str, Any]) -> str:
    name = str(props.get("name") or "")
    if re.search(r"(?i)nvl", name):
        return "H100 NVL"
    if re.search(r"(?i)pcie", name) or props.get("numSms") == 114:
        return "H100 PCIe"
    return "H100 SXM"


_RULES: tuple[tuple[str, Any], ...] = (
    (r"(?i)\bH200\b", "H200"),
    (r"(?i)\bH100\b", _h100),
    (r"(?i)\bA100\b", _a100),
    (r"(?i)\bV100\b.*PCIE", "V100 PCIe"),
    (r"(?i)\bV100\b", "V100 SXM2"),
    (r"(?i)\bL40S\b", "L40S"),
    (r"(?i)\bL4\b", "L4"),
    (r"(?i)\bB200\b", "B200"),
    (r"(?i)\bMI300X\b", "MI300X"),
    (r"(?i)\bMI250X?\b", "MI250X (one GCD)"),
    (r"(?i)\bMI210\b", "MI210"),
)
#: Compute-unit counts that name one device when the name says nothing (ROCm writes "" or
#: "AMD Radeon Graphics" in some traces): only counts no other device in the table shares.
_UNIQUE_SMS = {304: "MI300X"}


def match_device(props: dict[str, Any]) -> DevicePeak | None:
    """The table entry for one ``deviceProperties`` entry, or None when the device is not known."""
    name = str(props.get("name") or "")
    for pattern, entry in _RULES:
        if re.search(pattern, name):
            return _BY_NAME[entry(props) if callable(entry) else entry]
    if not name.strip() or re.search(r"(?i)^AMD Radeon Graphics$", name):
        sms = props.get("numSms")
        if isinstance(sms, int) and sms in _UNIQUE_SMS:
            return _BY_NAME[_UNIQUE_SMS[sms]]
    return None


def trace_device(metadata: dict[str, Any], device: int | None = None) -> tuple[str | None, DevicePeak | None]:
    """(the device's name as the trace writes it, its table entry) for device ``device`` (the
    first listed when None) of a trace's metadata; (None, None) when the trace lists none."""
    listed = [p for p in metadata.get("deviceProperties") or [] if isinstance(p, dict)]
    if not listed:
        return None, None
    chosen = next((p for p in listed if p.get("id") == device), listed[0])
    return str(chosen.get("name") or ""), match_device(chosen)


def device_inferred(metadata: dict[str, Any], device: int | None) -> str | None:
    """Why the device :func:`trace_device` picks for ``device`` is inferred, not recorded, or None
    when ``deviceProperties`` lists the device the GPU work ran on (or the GPU events name none).
    A ROCm trace can number its devices one way in its events (the process's HIP index) and
    another in ``deviceProperties``: the peak is then that of a listed device, which is a guess
    the MFU line must label."""
    listed = [p for p in metadata.get("deviceProperties") or [] if isinstance(p, dict)]
    if not listed or device is None or any(p.get("id") == device for p in listed):
        return None
    first = listed[0]
    others = "the only device it lists" if len(listed) == 1 else f"the first of the {len(listed)} it lists"
    return (
        f"device inferred: the GPU work ran on device {device}, which deviceProperties does not list; "
        f"{others} is {first.get('id', '?')}: {first.get('name') or '(no name)'}"
    )


#: Element sizes in bytes of the ``Input type`` names PyTorch writes.
DTYPE_BYTES: dict[str, int] = {
    "c10::BFloat16": 2,
    "c10::Half": 2,
    "float": 4,
    "double": 8,
    "c10::Float8_e4m3fn": 1,
    "c10::Float8_e5m2": 1,
    "c10::Float8_e4m3fnuz": 1,
    "c10::Float8_e5m2fnuz": 1,
    "c10::Float8_e8m0fnu": 1,
    "c10::Float4_e2m1fn_x2": 1,  # two fp4 values a byte: the recorded shape counts bytes
    "int": 4,
    "long int": 8,
    "long": 8,
    "short": 2,
    "short int": 2,
    "unsigned int": 4,
    "signed char": 1,
    "unsigned char": 1,
    "bool": 1,
    "c10::complex<float>": 8,
    "c10::complex<double>": 16,
    "c10::complex<c10::Half>": 4,
}
#: The precision whose peak applies to work on a dtype (integer work: none).
DTYPE_PRECISION: dict[str, str] = {
    "c10::BFloat16": "bf16",
    "c10::Half": "fp16",
    "float": "fp32",
    "double": "fp64",
    "c10::Float8_e4m3fn": "fp8",
    "c10::Float8_e5m2": "fp8",
    "c10::Float8_e4m3fnuz": "fp8",
    "c10::Float8_e5m2fnuz": "fp8",
    "c10::Float4_e2m1fn_x2": "fp4",
    "c10::complex<float>": "fp32",
}
