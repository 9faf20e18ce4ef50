"""Presentation of surveys: pure functions of results; rendering never compiles."""
