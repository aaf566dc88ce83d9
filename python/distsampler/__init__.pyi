# Type stub of the distsampler package.
# SPDX-License-Identifier: MIT
__version__: str

class ConfigError(ValueError):
    """Bad configuration (rank out of range, unknown tail, malformed launcher variable, ...)."""

class StateError(ValueError):
    """Saved state that is malformed, corrupted or belongs to another dataset or option set."""
