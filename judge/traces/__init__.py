"""Traces recorded in production (OpenTelemetry spans, proxy logs) read as cases."""

from judge.traces._import import FORMATS, Imported, import_traces

__all__ = ["FORMATS", "Imported", "import_traces"]
