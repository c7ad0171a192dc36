"""A project that picks its own GPU archs."""
