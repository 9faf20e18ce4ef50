"""The GPU targets regsurvey compiles for, and the hardware facts their occupancy depends on.

Each target is a frozen record: what Triton needs to compile for it offline (backend, arch, warp size),
what the driver reports about its GPU (:class:`DeviceProperties`: what a launcher reads through torch
or Triton while surveyed), and the register file and shared-memory limits that bound how many waves
or warps fit on one compute unit.
"""

from __future__ import annotations

from dataclasses import dataclass

from .figures import AMD, NVIDIA


class UnknownTargetError(ValueError):
    """A target name that regsurvey does not know."""


@dataclass(frozen=True)
class DeviceProperties:
    """What the driver reports about one GPU of a target, as a launcher can read it.

    Field names are those of torch's ``_CudaDeviceProperties`` (``torch.cuda.get_device_properties``,
    the same struct on CUDA and ROCm builds), plus the driver attributes Triton's
    ``utils.get_device_properties`` reads that torch does not show. Every figure is the driver's own
    (cudaDeviceProp / hipDeviceProp_t), not a datasheet's: HIP, for one, reports the LDS of one CU as
    the shared memory per block but that LDS times the CU count as the shared memory "per
    multiprocessor". The "What a launcher sees" table (docs/figures.md) gives each figure's source.
    """

    name: str
    major: int  # compute capability; HIP reports the gfx version: gfx942 -> 9.4, gfx950 -> 9.5
    minor: int
    multi_processor_count: int  # SMs (NVIDIA) or CUs (AMD)
    total_memory: int  # bytes of device memory the driver reports (driver-dependent, ECC on)
    warp_size: int
    regs_per_multiprocessor: int  # 32-bit registers per SM or CU
    regs_per_block: int  # CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK / hipDeviceProp.regsPerBlock
    max_threads_per_multi_processor: int
    max_threads_per_block: int
    shared_memory_per_block: int  # without opt-in: 48 KiB on NVIDIA
    shared_memory_per_block_optin: int
    shared_memory_per_multiprocessor: int
    reserved_shared_memory_per_block: int  # CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK
    L2_cache_size: int  # bytes (torch's field name)
    clock_rate: int  # kHz, the peak SM/engine clock
    memory_clock_rate: int  # kHz
    memory_bus_width: int  # bits
    gcnArchName: str  # torch's field name; torch on CUDA repeats the device name here
    is_integrated: int = 0
    is_multi_gpu_board: int = 0
    cooperative_launch: int = 1  # hipDeviceProp.cooperativeLaunch (Triton's HIP "cooperativeLaunch")


@dataclass(frozen=True)
class ManagementFacts:
    """What the vendor's management interface reports about one GPU of a target, beyond the driver's
    device properties: NVML (``pynvml``, ``nvidia-smi``) on NVIDIA, AMD SMI (``amdsmi``, ``amd-smi``,
    ``rocm-smi``) on AMD. Libraries that pick their platform, tuned configs or memory budget through these
    instead of torch read them (vLLM: NVML and amdsmi). docs/figures.md, "What a launcher sees", gives the sources.
    """

    pci_device_id: int  # the PCI device ID (vendor 0x10de or 0x1002): 0x2335 H200 SXM, 0x74a1 MI300X
    memory_total: int  # bytes; NVML's total counts what the driver reserves, torch's total_memory does not
    driver_version: str  # nvmlSystemGetDriverVersion; "" where not known (AMD: not answered)
    cuda_driver_version: int = 0  # nvmlSystemGetCudaDriverVersion (13000 = CUDA 13.0); 0 on AMD
    subsystem_id: int = 0  # NVML's pciSubSystemId (board vendor and model); 0 where not read
    vram_type: str = "HBM"  # AMD SMI's VRAM kind (amdsmi_get_gpu_vram_info, amd-smi static --vram); AMD only


@dataclass(frozen=True)
class Target:
    """One compile target, e.g. ``gfx950`` (MI355X) or ``sm90`` (H100/H200, compiled as sm_90a)."""

    name: str
    backend: str  # Triton's backend name: "hip" or "cuda"
    arch: str | int  # Triton's GPUTarget.arch: "gfx950" or 90
    warp_size: int
    device: DeviceProperties  # what the driver reports on the GPU this target stands for
    # Register file and scheduling limits.
    regs_per_lane: int  # AMD: VGPRs (+AGPRs) per SIMD lane; NVIDIA: 32-bit registers per SM
    max_waves_per_simd: int  # AMD: waves per SIMD; NVIDIA: warps per SM
    simds_per_cu: int  # AMD: 4 SIMDs per CU; NVIDIA: 1 (limits are per SM)
    max_blocks_per_cu: int  # workgroups / thread blocks resident on one CU or SM
    shared_bytes_per_cu: int  # LDS per CU or shared memory per SM usable by blocks
    # How the hardware allocates what occupancy counts, in the units it allocates them.
    reg_alloc_granule: int  # AMD: VGPRs per lane (unified with AGPRs); NVIDIA: registers per warp
    shared_alloc_granule: int  # bytes: LDS per workgroup (AMD), shared memory per block (NVIDIA)
    sgprs_per_simd: int = 0  # AMD only: SGPRs per SIMD (800 on CDNA3/4; 0: SGPRs never limit waves, gfx10+)
    sgpr_alloc_granule: int = 0  # AMD only: SGPRs per wave, allocated in granules of this many
    trap_sgprs: int = 0  # AMD only: SGPRs reserved per wave for the trap handler (LLVM enables it for amdhsa)
    reg_sub_partitions: int = 0  # NVIDIA only: the register file's sub-partitions (a warp's registers are in one)
    max_regs_per_thread: int = 0  # NVIDIA only: the most registers a thread may hold
    # AMD only: the LDS one workgroup may allocate, where it is less than the unit's (RDNA: 64 KiB of a WGP's
    # 128 KiB); 0: the unit's (shared_bytes_per_cu).
    lds_per_workgroup: int = 0
    max_vgprs: int = 0  # AMD: the VGPRs one wave may address (RDNA 256, gfx1250 1024); 0: regs_per_lane
    # AMD RDNA (gfx10 to gfx12.0): the unit occupancy counts over is a workgroup processor, two CUs of two SIMD32s
    # each, in WGP mode (Triton's default): simds_per_cu, shared_bytes_per_cu and max_blocks_per_cu are the WGP's.
    # A kernel compiled in CU mode (Triton's ``wgp_cu_mode="cu"``; the descriptor's COMPUTE_PGM_RSRC1.WGP_MODE
    # clear) keeps its waves on one CU: half the SIMDs and the LDS, 16 workgroups (``occupancy_unit``).
    has_cu_mode: bool = False
    # NVIDIA only: where the kernel's parameters start in constant bank 0 (c[0x0][base]) when the cubin does
    # not say (its EIATTR_PARAM_CBANK does: the lint takes that).
    param_bank_base: int = 0
    torch_hip_version: str | None = None  # what torch.version.hip reports on such a machine
    management: ManagementFacts | None = None  # what NVML / AMD SMI report (compile.management answers it)

    def vgpr_file(self, wave_size: int) -> tuple[int, int]:
        """AMD: the VGPRs a lane of a wave of ``wave_size`` may have on one SIMD and their allocation granule.
        ``regs_per_lane`` and ``reg_alloc_granule`` are a wave of ``warp_size``'s; the same file holds half
        as many registers a lane, in half the granule, for waves twice as wide (RDNA's wave64: LLVM's
        getTotalNumVGPRs and getVGPRAllocGranule)."""
        if wave_size == self.warp_size:
            return self.regs_per_lane, self.reg_alloc_granule
        return self.regs_per_lane * self.warp_size // wave_size, self.reg_alloc_granule * self.warp_size // wave_size

    def occupancy_unit(self, *, cu_mode: bool = False) -> tuple[int, int, int]:
        """AMD: the SIMDs, LDS bytes and most workgroups of the unit whose waves occupancy counts: the CU
        (CDNA), the WGP (RDNA in WGP mode), or one CU of it (RDNA in CU mode: ``cu_mode``). LLVM's
        getEUsPerCU, getLocalMemorySize and getMaxWorkGroupsPerCU (16 barriers a CU, 32 a WGP)."""
        if cu_mode and self.has_cu_mode:
            return self.simds_per_cu // 2, self.shared_bytes_per_cu // 2, self.max_blocks_per_cu // 2
        return self.simds_per_cu, self.shared_bytes_per_cu, self.max_blocks_per_cu

    @property
    def max_vgprs_per_wave(self) -> int:
        """AMD: the most VGPRs (CDNA: VGPRs and AGPRs) a lane of one wave may hold."""
        return self.max_vgprs or self.regs_per_lane

    @property
    def max_lds_per_workgroup(self) -> int:
        """AMD: the most LDS one workgroup may allocate."""
        return self.lds_per_workgroup or self.shared_bytes_per_cu

    @property
    def device_name(self) -> str:
        """What ``torch.cuda.get_device_name()`` says on this GPU."""
        return self.device.name

    @property
    def compute_units(self) -> int:
        """CUs (AMD) or SMs (NVIDIA): torch's ``multi_processor_count``."""
        return self.device.multi_processor_count

    @property
    def physical_compute_units(self) -> int:
        """AMD: the CUs the KFD and AMD SMI count (``num_compute_units``, rocminfo's "Compute Unit"). HIP in WGP
        mode (RDNA) reports the workgroup processors, two CUs each, as its multiprocessors; NVIDIA: the SMs."""
        return self.compute_units * 2 if self.has_cu_mode else self.compute_units

    @property
    def is_amd(self) -> bool:
        """True for AMD (HIP) targets: Instinct and Radeon."""
        return self.backend == "hip"

    @property
    def is_nvidia(self) -> bool:
        """True for NVIDIA (CUDA) targets."""
        return self.backend == "cuda"

    @property
    def vendor(self) -> str:
        """AMD or NVIDIA: whose figures its builds have (``model.figures``)."""
        return AMD if self.is_amd else NVIDIA

    @property
    def arch_string(self) -> str:
        """The arch as a kernel engineer writes it: ``gfx950`` or ``sm_90a``."""
        if self.is_amd:
            return str(self.arch)
        return f"sm_{self.arch}a"


_KIB = 1024
_MIB = 1024 * 1024

# What each GPU's driver reports (docs/figures.md, "What a launcher sees", gives the source of every figure).
# H200: read with torch 2.11 / driver 580.159.04 on an H200 SXM. B200: a B200's driver query and torch
# printouts (pytorch/ao#4002; torch prints memory in whole MiB). MI300X/MI355X: ROCm's
# hipGetDeviceProperties (clr hip_device.cpp) over the CDNA3/CDNA4 figures, torch printouts, rocminfo.
_H200 = DeviceProperties(
    name="NVIDIA H200", major=9, minor=0, multi_processor_count=132, total_memory=150_109_880_320,
    warp_size=32, regs_per_multiprocessor=65536, regs_per_block=65536,
    max_threads_per_multi_processor=2048, max_threads_per_block=1024,
    shared_memory_per_block=48 * _KIB, shared_memory_per_block_optin=227 * _KIB,
    shared_memory_per_multiprocessor=228 * _KIB, reserved_shared_memory_per_block=1 * _KIB,
    L2_cache_size=60 * _MIB, clock_rate=1_980_000, memory_clock_rate=3_201_000, memory_bus_width=6016,
    gcnArchName="NVIDIA H200",
)
_B200 = DeviceProperties(
    name="NVIDIA B200", major=10, minor=0, multi_processor_count=148, total_memory=182_631 * _MIB,
    warp_size=32, regs_per_multiprocessor=65536, regs_per_block=65536,
    max_threads_per_multi_processor=2048, max_threads_per_block=1024,
    shared_memory_per_block=48 * _KIB, shared_memory_per_block_optin=227 * _KIB,
    shared_memory_per_multiprocessor=228 * _KIB, reserved_shared_memory_per_block=1 * _KIB,
    L2_cache_size=126 * _MIB + 512 * _KIB, clock_rate=1_965_000, memory_clock_rate=3_996_000,
    memory_bus_width=7680, gcnArchName="NVIDIA B200",
)
# RTX 5090 (sm120, GB202): a deviceQuery on one (NVIDIA/nccl#1637, driver 570, CUDA 12.8: 33680457728 bytes, 170
# SMs, 2550 MHz, memory clock 14001 MHz, 512-bit bus, L2 100663296 bytes, 49152 / 102400 bytes of shared memory
# per block / SM, 1536 threads per SM). Per block with opt-in: 99 KiB (NVIDIA's cccl arch_traits for sm_120).
_RTX5090 = DeviceProperties(
    name="NVIDIA GeForce RTX 5090", major=12, minor=0, multi_processor_count=170, total_memory=33_680_457_728,
    warp_size=32, regs_per_multiprocessor=65536, regs_per_block=65536,
    max_threads_per_multi_processor=1536, max_threads_per_block=1024,
    shared_memory_per_block=48 * _KIB, shared_memory_per_block_optin=99 * _KIB,
    shared_memory_per_multiprocessor=100 * _KIB, reserved_shared_memory_per_block=1 * _KIB,
    L2_cache_size=96 * _MIB, clock_rate=2_550_000, memory_clock_rate=14_001_000, memory_bus_width=512,
    gcnArchName="NVIDIA GeForce RTX 5090",
)
# B300 (sm103, the "AC" SKU clouds rent): cudaGetDeviceProperties and nvidia-smi read on one (a public B300
# characterization, driver 580.126.09: 148 SMs, L2 132644864 bytes, bus 7680 bits, memory clock 3996 MHz, boost
# 2032 MHz, nvidia-smi 275040 MiB); torch's total_memory is NVML's less the B200's reserve (728 MiB), not a
# reading. Shared memory and threads as sm_100's (cccl's arch_traits: sm_103 is sm_100's).
_B300 = DeviceProperties(
    name="NVIDIA B300 SXM6 AC", major=10, minor=3, multi_processor_count=148, total_memory=274_312 * _MIB,
    warp_size=32, regs_per_multiprocessor=65536, regs_per_block=65536,
    max_threads_per_multi_processor=2048, max_threads_per_block=1024,
    shared_memory_per_block=48 * _KIB, shared_memory_per_block_optin=227 * _KIB,
    shared_memory_per_multiprocessor=228 * _KIB, reserved_shared_memory_per_block=1 * _KIB,
    L2_cache_size=126 * _MIB + 512 * _KIB, clock_rate=2_032_000, memory_clock_rate=3_996_000,
    memory_bus_width=7680, gcnArchName="NVIDIA B300 SXM6 AC",
)
_MI300X = DeviceProperties(
    name="AMD Instinct MI300X", major=9, minor=4, multi_processor_count=304, total_memory=196_592 * _MIB,
    warp_size=64, regs_per_multiprocessor=512 * 4 * 64, regs_per_block=512 * 4 * 64,
    max_threads_per_multi_processor=2048, max_threads_per_block=1024,
    shared_memory_per_block=64 * _KIB, shared_memory_per_block_optin=64 * _KIB,
    shared_memory_per_multiprocessor=64 * _KIB * 304, reserved_shared_memory_per_block=0,
    L2_cache_size=4 * _MIB, clock_rate=2_100_000, memory_clock_rate=1_300_000, memory_bus_width=8192,
    gcnArchName="gfx942:sramecc+:xnack-",
)
_MI355X = DeviceProperties(
    name="AMD Instinct MI355X", major=9, minor=5, multi_processor_count=256, total_memory=288 * 1024 * _MIB,
    warp_size=64, regs_per_multiprocessor=512 * 4 * 64, regs_per_block=512 * 4 * 64,
    max_threads_per_multi_processor=2048, max_threads_per_block=1024,
    shared_memory_per_block=160 * _KIB, shared_memory_per_block_optin=160 * _KIB,
    shared_memory_per_multiprocessor=160 * _KIB * 256, reserved_shared_memory_per_block=0,
    L2_cache_size=4 * _MIB, clock_rate=2_400_000, memory_clock_rate=2_000_000, memory_bus_width=8192,
    gcnArchName="gfx950:sramecc+:xnack-",
)

# RDNA and gfx1250 (issue 39). ROCm's hipGetDeviceProperties (clr hip_device.cpp, rocdevice.cpp) from gfx10 on
# runs in WGP mode (GPU_ENABLE_WGP_MODE, on by default; off for gfx12.5): it reports the WGPs, two CUs each, as
# multiprocessors, doubles the SIMDs and waves of one (threads per multiprocessor: 32 waves x 2 x 32 lanes), and
# counts the registers as comgr's TotalNumVGPRs (1536 on gfx1100, gfx1151, gfx1201; 1024 on gfx1250) x SIMDs x
# wave size. The LDS per block is one CU's (clr's ISA table: 64 KiB), "per multiprocessor" that times the count.
# cooperativeLaunch: amdgpu's kfd_gws_init gives gfx11 (MES 68 on) and gfx12+ GWS, so cooperative queues (Linux;
# hipInfo on Windows says 0). #N below: issue N of ROCm/ROCm. The name is the HSA product name (libdrm's
# amdgpu.ids; an older amdgpu.ids drops the "AMD ").
# RX 7900 XTX: hipInfo on one (#5871, Windows, HIP 7.12: 48 multiprocessors, 2482 MHz, memory 1250 MHz,
# 384 bits, L2 6291456, 196608 registers, 2048 threads); rocminfo on Linux, ROCm 7.2.1 (#6074: "AMD Radeon RX
# 7900 XTX", 2482 MHz); torch's printout (#5040, ROCm 6.4: total_memory=24560MB, 48, L2 6MB).
_RX7900XTX = DeviceProperties(
    name="AMD Radeon RX 7900 XTX", major=11, minor=0, multi_processor_count=48, total_memory=24_560 * _MIB,
    warp_size=32, regs_per_multiprocessor=1536 * 4 * 32, regs_per_block=1536 * 4 * 32,
    max_threads_per_multi_processor=2048, max_threads_per_block=1024,
    shared_memory_per_block=64 * _KIB, shared_memory_per_block_optin=64 * _KIB,
    shared_memory_per_multiprocessor=64 * _KIB * 48, reserved_shared_memory_per_block=0,
    L2_cache_size=6 * _MIB, clock_rate=2_482_000, memory_clock_rate=1_250_000, memory_bus_width=384,
    gcnArchName="gfx1100",
)
# Radeon 8060S (Strix Halo, Ryzen AI Max+ 395) on Linux: rocminfo and torch's printout on one (#5807, Fedora,
# ROCm 7.13: "Radeon 8060S Graphics", 40 CUs, 2900 MHz, L2 2048 KB, a 65575852 KB GPU pool: total_memory=64038MB,
# which follows what the BIOS and driver give the GPU; 20 multiprocessors, is_integrated=1). The memory clock and
# bus: torch's fields on Windows (torch 2.13, HIP 7.15: 800 MHz, 512 bits; 196608 registers, 2048 threads).
_RADEON8060S = DeviceProperties(
    name="Radeon 8060S Graphics", major=11, minor=5, multi_processor_count=20, total_memory=65_575_852 * _KIB,
    warp_size=32, regs_per_multiprocessor=1536 * 4 * 32, regs_per_block=1536 * 4 * 32,
    max_threads_per_multi_processor=2048, max_threads_per_block=1024,
    shared_memory_per_block=64 * _KIB, shared_memory_per_block_optin=64 * _KIB,
    shared_memory_per_multiprocessor=64 * _KIB * 20, reserved_shared_memory_per_block=0,
    L2_cache_size=2 * _MIB, clock_rate=2_900_000, memory_clock_rate=800_000, memory_bus_width=512,
    gcnArchName="gfx1151", is_integrated=1,
)
# RX 9070 XT: torch's printout (#5040, ROCm 6.4: total_memory=16304MB, 32 multiprocessors, L2 8MB); rocminfo on
# Linux, ROCm 7.1.1 (#5849: 2570 MHz, 64 CUs). The memory clock is hipInfo's on a Radeon AI PRO R9700 (#6167,
# Windows: the same Navi 48 and 20 Gbps GDDR6 on 256 bits, 1259 MHz; 196608 registers), not a 9070 XT reading.
_RX9070XT = DeviceProperties(
    name="AMD Radeon RX 9070 XT", major=12, minor=0, multi_processor_count=32, total_memory=16_304 * _MIB,
    warp_size=32, regs_per_multiprocessor=1536 * 4 * 32, regs_per_block=1536 * 4 * 32,
    max_threads_per_multi_processor=2048, max_threads_per_block=1024,
    shared_memory_per_block=64 * _KIB, shared_memory_per_block_optin=64 * _KIB,
    shared_memory_per_multiprocessor=64 * _KIB * 32, reserved_shared_memory_per_block=0,
    L2_cache_size=8 * _MIB, clock_rate=2_570_000, memory_clock_rate=1_259_000, memory_bus_width=256,
    gcnArchName="gfx1201",
)
# gfx1250: no reading is public. The part is the Instinct MI455X as AMD's own GPU emulator names it
# (ROCm/rocm-systems emulation/rocjitsu/configs/gfx1250_mi455x.json: 256 CUs of 4 SIMDs, 16 waves a SIMD, 320 KiB
# LDS, 432 GiB, 24576-bit bus at 1600 MHz, 2700 MHz, L2 196608 KiB); the figures are HIP's rules over that
# configuration, none read: no WGP mode on gfx12.5 (clr rocsettings.cpp), so 256 multiprocessors of 64 waves;
# registers comgr's 1024 VGPRs x 4 x 32; gcnArchName as AMD's own tests (RCCL, clr) quote HIP's on the part.
_GFX1250 = DeviceProperties(
    name="AMD Instinct MI455X", major=12, minor=5, multi_processor_count=256, total_memory=432 * 1024 * _MIB,
    warp_size=32, regs_per_multiprocessor=1024 * 4 * 32, regs_per_block=1024 * 4 * 32,
    max_threads_per_multi_processor=2048, max_threads_per_block=1024,
    shared_memory_per_block=320 * _KIB, shared_memory_per_block_optin=320 * _KIB,
    shared_memory_per_multiprocessor=320 * _KIB * 256, reserved_shared_memory_per_block=0,
    L2_cache_size=192 * _MIB, clock_rate=2_700_000, memory_clock_rate=1_600_000, memory_bus_width=24576,
    gcnArchName="gfx1250:sramecc+:xnack-",
)

# What NVML and AMD SMI report. H200: read through libnvidia-ml on the H200 of the device machine (driver
# 580.159.04, December 2026; benchmarks/nvml_probe.py). B200: nvidia-smi printouts of B200 machines (183359 MiB),
# the same driver assumed. MI300X and MI355X: the PCI device IDs amdgpu and vLLM's device table name, the
# VRAM torch reports (HIP and AMD SMI read it from the same KFD figure).
_H200_MANAGEMENT = ManagementFacts(pci_device_id=0x2335, memory_total=150_754_820_096, driver_version="580.159.04",
                                   cuda_driver_version=13000, subsystem_id=0x18BF10DE)
_B200_MANAGEMENT = ManagementFacts(pci_device_id=0x2901, memory_total=183_359 * _MIB, driver_version="580.159.04",
                                   cuda_driver_version=13000)
# RTX 5090: PCI ID 0x2B85 (NVIDIA's open-gpu-kernel-modules, g_nv_name_released.h), nvidia-smi's 32607 MiB. B300:
# nvidia-smi's 275040 MiB; PCI ID 0x3182 from its Redfish part number 3182-887-A1 (not read from the bus). The
# driver of both assumed to be the H200's.
_RTX5090_MANAGEMENT = ManagementFacts(pci_device_id=0x2B85, memory_total=32_607 * _MIB, driver_version="580.159.04",
                                      cuda_driver_version=13000)
_B300_MANAGEMENT = ManagementFacts(pci_device_id=0x3182, memory_total=275_040 * _MIB, driver_version="580.159.04",
                                   cuda_driver_version=13000)
_MI300X_MANAGEMENT = ManagementFacts(pci_device_id=0x74A1, memory_total=_MI300X.total_memory, driver_version="")
_MI355X_MANAGEMENT = ManagementFacts(pci_device_id=0x75A3, memory_total=_MI355X.total_memory, driver_version="")

# RDNA and gfx1250: the PCI device IDs rocminfo gives as Chip ID and amdgpu.ids names (0x744C C8 RX 7900 XTX,
# 0x1586 C1 Radeon 8060S, 0x7550 C0 RX 9070 XT); gfx1250's 0x75C1 is the device ID of AMD's emulator
# configuration for the MI455X (no amdgpu.ids entry). AMD SMI's memory kind: amd-smi's "GDDR6" on Navi 31, LPDDR5
# (amdgpu's kind for LPDDR5X) on Strix Halo. The VRAM as torch reports it.
_RX7900XTX_MANAGEMENT = ManagementFacts(pci_device_id=0x744C, memory_total=_RX7900XTX.total_memory, driver_version="",
                                        vram_type="GDDR6")
_RADEON8060S_MANAGEMENT = ManagementFacts(pci_device_id=0x1586, memory_total=_RADEON8060S.total_memory,
                                          driver_version="", vram_type="LPDDR5")
_RX9070XT_MANAGEMENT = ManagementFacts(pci_device_id=0x7550, memory_total=_RX9070XT.total_memory, driver_version="",
                                       vram_type="GDDR6")
_GFX1250_MANAGEMENT = ManagementFacts(pci_device_id=0x75C1, memory_total=_GFX1250.total_memory, driver_version="")

# Occupancy facts: AMD CDNA3/CDNA4 ISA guides and ROCm docs (512 unified VGPRs+AGPRs per lane,
# 8 waves per SIMD, 4 SIMDs per CU, LDS 64 KiB on MI300X and 160 KiB on MI355X); NVIDIA's CUDA
# occupancy tables for cc 9.0 and 10.0 (64K registers, 64 warps, 32 blocks, 228 KiB shared per SM); 10.3 as
# 10.0 and 12.0 (64K registers, 48 warps, 24 blocks, 100 KiB shared per SM, 99 KiB a block): the CUDA
# programming guide's compute capability tables and NVIDIA's cccl (libcudacxx cuda/__device/arch_traits.h).
# Allocation: LLVM AMDGPU for gfx90a+ (getVGPRAllocGranule with FeatureGFX90AInsts: 8; getSGPRAllocGranule,
# gfx8-gfx9: 16; TRAP_NUM_SGPRS: 16) and AMDGPUUsage's COMPUTE_PGM_RSRC2.GRANULATED_LDS_SIZE (LDS blocks of
# 128 dwords up to gfx942, 320 dwords on gfx950); CUDA's cuda_occupancy.h for sm80+ (registers per warp
# in units of 256, in 4 sub-partitions, at most 255 a thread; shared memory in units of 128 bytes; CUDA 13's
# header gives compute capability 10 and 12 the same). The parameter area: ptxas' EIATTR_PARAM_CBANK on sm_90
# (0x210) and sm_100, sm_103, sm_120 (0x380) cubins (tested).
TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target(
            name="gfx942", backend="hip", arch="gfx942", warp_size=64, device=_MI300X,
            regs_per_lane=512, max_waves_per_simd=8, simds_per_cu=4, max_blocks_per_cu=32,
            shared_bytes_per_cu=64 * 1024, sgprs_per_simd=800, torch_hip_version="6.4.43482",
            management=_MI300X_MANAGEMENT, reg_alloc_granule=8, shared_alloc_granule=128 * 4,
            sgpr_alloc_granule=16, trap_sgprs=16,
        ),
        Target(
            name="gfx950", backend="hip", arch="gfx950", warp_size=64, device=_MI355X,
            regs_per_lane=512, max_waves_per_simd=8, simds_per_cu=4, max_blocks_per_cu=32,
            shared_bytes_per_cu=160 * 1024, sgprs_per_simd=800, torch_hip_version="7.0.51831",
            management=_MI355X_MANAGEMENT, reg_alloc_granule=8, shared_alloc_granule=320 * 4,
            sgpr_alloc_granule=16, trap_sgprs=16,
        ),
        # RDNA 3, 3.5, 4 (wave32; Triton compiles them in WGP mode): 1536 VGPRs a lane on a SIMD32 for wave32 in
        # granules of 24 (LLVM's Feature1_5xVGPRs: gfx1100, gfx1151, gfx1201), 16 waves a SIMD, no SGPR limit; a
        # WGP of 4 SIMDs with 128 KiB of LDS, of which one workgroup may have 64 KiB, in blocks of 512 B.
        Target(
            name="gfx1100", backend="hip", arch="gfx1100", warp_size=32, device=_RX7900XTX,
            regs_per_lane=1536, max_waves_per_simd=16, simds_per_cu=4, max_blocks_per_cu=32,
            shared_bytes_per_cu=128 * 1024, torch_hip_version="7.0.51831", management=_RX7900XTX_MANAGEMENT,
            reg_alloc_granule=24, shared_alloc_granule=512, lds_per_workgroup=64 * 1024, has_cu_mode=True,
            max_vgprs=256,
        ),
        Target(
            name="gfx1151", backend="hip", arch="gfx1151", warp_size=32, device=_RADEON8060S,
            regs_per_lane=1536, max_waves_per_simd=16, simds_per_cu=4, max_blocks_per_cu=32,
            shared_bytes_per_cu=128 * 1024, torch_hip_version="7.0.51831", management=_RADEON8060S_MANAGEMENT,
            reg_alloc_granule=24, shared_alloc_granule=512, lds_per_workgroup=64 * 1024, has_cu_mode=True,
            max_vgprs=256,
        ),
        Target(
            name="gfx1201", backend="hip", arch="gfx1201", warp_size=32, device=_RX9070XT,
            regs_per_lane=1536, max_waves_per_simd=16, simds_per_cu=4, max_blocks_per_cu=32,
            shared_bytes_per_cu=128 * 1024, torch_hip_version="7.0.51831", management=_RX9070XT_MANAGEMENT,
            reg_alloc_granule=24, shared_alloc_granule=512, lds_per_workgroup=64 * 1024, has_cu_mode=True,
            max_vgprs=256,
        ),
        # gfx1250 (wave32 only, no WGP mode): 1024 VGPRs a lane in granules of 16, 16 waves a SIMD, 4 SIMDs sharing
        # 320 KiB of LDS (any of it one workgroup's) in blocks of 2 KiB, 16 workgroups of more than one wave (the
        # barriers of a CU: LLVM gives 32 only to an RDNA WGP).
        Target(
            name="gfx1250", backend="hip", arch="gfx1250", warp_size=32, device=_GFX1250,
            regs_per_lane=1024, max_waves_per_simd=16, simds_per_cu=4, max_blocks_per_cu=16,
            shared_bytes_per_cu=320 * 1024, torch_hip_version="7.0.51831", management=_GFX1250_MANAGEMENT,
            reg_alloc_granule=16, shared_alloc_granule=2048, max_vgprs=1024,
        ),
        Target(
            name="sm90", backend="cuda", arch=90, warp_size=32, device=_H200,
            regs_per_lane=65536, max_waves_per_simd=64, simds_per_cu=1, max_blocks_per_cu=32,
            shared_bytes_per_cu=228 * 1024, management=_H200_MANAGEMENT, reg_alloc_granule=256,
            shared_alloc_granule=128, reg_sub_partitions=4, max_regs_per_thread=255, param_bank_base=0x210,
        ),
        Target(
            name="sm100", backend="cuda", arch=100, warp_size=32, device=_B200,
            regs_per_lane=65536, max_waves_per_simd=64, simds_per_cu=1, max_blocks_per_cu=32,
            shared_bytes_per_cu=228 * 1024, management=_B200_MANAGEMENT, reg_alloc_granule=256,
            shared_alloc_granule=128, reg_sub_partitions=4, max_regs_per_thread=255, param_bank_base=0x380,
        ),
        Target(
            name="sm103", backend="cuda", arch=103, warp_size=32, device=_B300,
            regs_per_lane=65536, max_waves_per_simd=64, simds_per_cu=1, max_blocks_per_cu=32,
            shared_bytes_per_cu=228 * 1024, management=_B300_MANAGEMENT, reg_alloc_granule=256,
            shared_alloc_granule=128, reg_sub_partitions=4, max_regs_per_thread=255, param_bank_base=0x380,
        ),
        Target(
            name="sm120", backend="cuda", arch=120, warp_size=32, device=_RTX5090,
            regs_per_lane=65536, max_waves_per_simd=48, simds_per_cu=1, max_blocks_per_cu=24,
            shared_bytes_per_cu=100 * 1024, management=_RTX5090_MANAGEMENT, reg_alloc_granule=256,
            shared_alloc_granule=128, reg_sub_partitions=4, max_regs_per_thread=255, param_bank_base=0x380,
        ),
    )
}

# The device keys files are first imported under when a survey names no target: the matrices declare
# their targets, but only importing the files tells which.
DEFAULT_LIST_TARGET = "sm90"
# A worker target that takes keys of every target from one import: only for measuring what the
# per-target import costs (REGSURVEY_SHARED_IMPORT=1; it gives launchers that cache the device the
# first target's state, which is wrong).
ANY_TARGET = "*"

# Spellings a user may type for a target.
_ALIASES = {
    "mi300x": "gfx942", "mi300": "gfx942", "mi355x": "gfx950", "mi350x": "gfx950",
    "sm_90": "sm90", "sm_90a": "sm90", "sm90a": "sm90", "h100": "sm90", "h200": "sm90",
    "sm_100": "sm100", "sm_100a": "sm100", "sm100a": "sm100", "b200": "sm100",
    "sm_103": "sm103", "sm_103a": "sm103", "sm103a": "sm103", "b300": "sm103", "gb300": "sm103",
    "rx7900xtx": "gfx1100", "7900xtx": "gfx1100", "strix-halo": "gfx1151", "rx9070xt": "gfx1201", "9070xt": "gfx1201",
    "mi455x": "gfx1250", "mi450x": "gfx1250", "mi450": "gfx1250",
    "sm_120": "sm120", "sm_120a": "sm120", "sm120a": "sm120", "rtx5090": "sm120", "rtx-5090": "sm120",
}


def get_target(name: str) -> Target:
    """Look a target up by name or common alias; raise UnknownTargetError listing the known ones."""
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in TARGETS:
        raise UnknownTargetError(
            f"unknown target {name!r}; known targets: {', '.join(TARGETS)}"
        )
    return TARGETS[key]
