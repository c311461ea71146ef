"""Whether the Hugging Face hub can be reached from here, decided quickly and without downloading anything."""

from __future__ import annotations

import os
import socket
from urllib.parse import urlparse

from huggingface_hub import constants

_TRUE = {"1", "on", "yes", "true"}


def offline_requested() -> bool:
    """HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE set to a true value (as huggingface_hub reads them)."""
    return any(os.environ.get(name, "").strip().lower() in _TRUE for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def hub_reachable(timeout_s: float = 1.5) -> bool:
    """False when offline mode is requested, else whether a TCP connection to the hub endpoint opens in time.

    Only a connection is opened (no request is sent): enough to tell an air-gapped runner from a connected one.
    """
    if offline_requested():
        return False
    if constants.HF_HUB_OFFLINE:
        return False
    endpoint = constants.ENDPOINT
    url = urlparse(endpoint)
    host = url.hostname or "huggingface.co"
    port = url.port or (443 if url.scheme != "http" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False
