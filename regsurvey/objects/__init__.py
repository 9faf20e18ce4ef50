"""The only readers of each vendor's compiled objects: ``amd_object`` (HSACO), ``nvidia_object`` (cubin),
with ELF checks (``elfcheck``) and section comparison (``object_sections``)."""
