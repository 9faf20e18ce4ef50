"""Compiling a captured launch offline: the only package that touches Triton's internals (``toolchain``)."""
