"""Compiling a captured launch offline: the only package that touches Triton's internals (``toolchain``), and
what regsurvey knows of Triton besides (``triton_facts``)."""
