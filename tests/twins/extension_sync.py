"""A sync inside a C++ extension (CuPy), invisible to torch's sync debug mode."""


def cupy_roundtrip(cupy):
    values = cupy.arange(8)
    return values.get()  # a device→host copy done by CuPy, not torch
