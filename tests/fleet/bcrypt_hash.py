"""A bcrypt password hash for Prometheus' web config (`basic_auth_users` takes bcrypt only), made
by the C library's crypt (libxcrypt, on every glibc Debian and Ubuntu), which Python's `crypt`
module wrapped until 3.13 removed it: no package is needed."""

from __future__ import annotations

import ctypes
import ctypes.util


def bcrypt_hash(password: str, cost: int = 4) -> str | None:
    """`$2b$...` of `password`, or None when this system's libcrypt has no bcrypt."""
    name = ctypes.util.find_library("crypt")
    if name is None:
        return None
    lib = ctypes.CDLL(name)
    if not hasattr(lib, "crypt_gensalt"):
        return None
    lib.crypt_gensalt.restype = ctypes.c_char_p
    lib.crypt_gensalt.argtypes = [ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p, ctypes.c_int]
    lib.crypt.restype = ctypes.c_char_p
    lib.crypt.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    salt = lib.crypt_gensalt(b"$2b$", cost, None, 0)  # random bytes from the system when none given
    hashed = lib.crypt(password.encode(), salt) if salt else None
    return hashed.decode() if hashed and hashed.startswith(b"$2b$") else None
