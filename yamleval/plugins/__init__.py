"""Plugins: the one resolver, binding of `with:` arguments, calling them per item."""
