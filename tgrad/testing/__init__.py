"""Test support shipped with tgrad: the op database (OpInfo) used by the op tests and the AOT check."""
