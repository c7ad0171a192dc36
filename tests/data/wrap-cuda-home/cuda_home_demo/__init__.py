from ._gpu import devices

__all__ = ["devices"]
