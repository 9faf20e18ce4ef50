"""regsurvey's version, and the revision of its object readers and lint, where every layer may read them."""

__version__ = "0.1.0"

# Bump when what the object readers or the lint report changes: result-cache entries, the object
# reports cached beside stored objects and stored surveys made by another revision then stop matching.
# readers3: NVIDIA shared memory without the reserve; exact AMD vgpr, vgpr_total; AMD occupancy with waves_per_eu
# lint2: every NVIDIA build is linted in a survey (before: only those with a stack frame)
# report1: one analysis per object (resources, findings, linted) cached beside it under this revision
# lint3: NVIDIA parameters where the cubin records them (a TMA descriptor first moved every later one)
# names1: a row's kernel is the name it was compiled under
# loops1: the spills inside loops (loop_spill_ops, loop_spill_depth), of both vendors
# lint4: AMD scratch slots told apart by address (an SGPR's constant past 4 KiB of frame), gfx10+ code read
READER_REVISION = f"{__version__}+readers3+lint4+report1+names1+loops1"
